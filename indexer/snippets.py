"""Snippets in bounded time: a window around the first match in a bounded prefix of the text.

The text a snippet is cut from is the page's main content (snippet_source): the ranges
the parser found to be the page's furniture (navigation, banners, footers, sidebars,
cookie notices: indexer/maincontent.py, stored in Document.boilerplate) are left out, as
the index leaves them out, and so is the title when the text starts by repeating it (a
page's <h1>).

Re-analyzing whole bodies per hit (what FTS5 snippet() and ts_headline do) is most of a
query's time. Instead one compiled regex of the forms a match can take (the query's words
as typed and their stems, as prefixes: `queri` finds "queries") scans at most
CRAWLER_SEARCH_SNIPPET_SCAN_CHARS of the body in C; each candidate is confirmed by the
analyzer (its tokens meet the query's, identifier parts included), and only the window
around the first confirmed match is analyzed to mark every match in it.
"""

import re

from .analyzer import NO_SPACE_RUN, iter_group_spans
from .maincontent import main_text

# Snippets mark matched terms with these control characters; callers render them as
# <mark> (HTML) or strip them (plain text). They never occur in extracted page text.
MARK_START, MARK_END = "\x02", "\x03"

WINDOW_BEFORE, WINDOW_AFTER = 60, 220
# What separates a title's parts: "os.path — Common pathname manipulations — Python docs",
# "Site | Page", "Django: models".
_TITLE_SEPARATOR = re.compile(r"\s+[—–|·•-]\s+|\s*::\s*|:\s+")
# What may follow a repeated title before the content: Sphinx's "¶", anchors' "#", dashes, a stop.
_AFTER_TITLE = " \t¶#§:.·•|—–-"


def without_title(text: str, title: str) -> str:
    """text without a leading repetition of the title or of a part of it (the longest that
    it starts with: "os.path — Common pathname manipulations¶" under the title "os.path —
    Common pathname manipulations — Python 3.11 documentation")."""
    title = " ".join(title.split())
    if not title:
        return text
    forms = {title, *_TITLE_SEPARATOR.split(title)}
    for m in _TITLE_SEPARATOR.finditer(title):
        forms.update((title[:m.start()], title[m.end():]))
    head = text[:len(title) + 1].casefold()
    for form in sorted(forms, key=len, reverse=True):
        if len(form) >= 3 and head.startswith(form.casefold()):
            end = len(form)
            if end < len(text) and (text[end - 1].isalnum() and text[end].isalnum()):
                continue  # "Page" of "Pages of results": a word goes on
            rest = text[end:].lstrip(_AFTER_TITLE)
            return rest if rest.strip() else text
    return text


def snippet_source(prefix: str, boilerplate: str, title: str) -> str:
    """What a snippet is cut from: the text's prefix without the page's furniture and a
    repeated title. A page where no main content was found keeps its text (main_text)."""
    text = main_text(prefix, boilerplate) if boilerplate else prefix
    return without_title(text if text.strip() else prefix, title)


def candidate_pattern(highlight: set[str], typed: str) -> re.Pattern | None:
    """Prefixes that can begin a matching word: the query's typed words and its tokens."""
    forms = {w.lower() for w in re.findall(r"[^\W_]{2,}", typed)}
    forms |= {t for t in highlight if len(t) >= 2 and not t.startswith("site=")}
    for token in list(forms):
        forms |= set(re.findall(r"[^\W_]{2,}", token))  # parts of identifiers, as written
    if not forms:
        return None
    kept = sorted(forms, key=len, reverse=True)[:64]
    # A bigram of Chinese, Japanese, Korean or Thai starts anywhere in its run: no word start.
    inside = [f for f in kept if NO_SPACE_RUN.fullmatch(f)]
    words = "|".join(re.escape(f) for f in kept if f not in inside)
    pattern = rf"(?<![^\W_])(?:{words})" if words else ""
    if inside:
        pattern += ("|" if pattern else "") + "|".join(re.escape(f) for f in inside)
    return re.compile(rf"(?i){pattern}")


def _confirmed(text: str, position: int, highlight: set[str]) -> int | None:
    """The start of the matching group at position, if its tokens meet the query's."""
    left = max(0, position - 80)
    for start, end, group in iter_group_spans(text[left:position + 80]):
        if left + start <= position < left + end:
            return left + start if highlight.intersection(group.tokens) else None
    return None


def _matches(text: str, highlight: set[str]):
    for start, end, group in iter_group_spans(text):
        if highlight.intersection(group.tokens):
            yield start, end


def make_snippet(text: str, highlight: set[str], typed: str, scan_chars: int, fallback_chars: int = 240) -> str:
    """A window of text with MARK_START/MARK_END around the query's matches."""
    head = text[:scan_chars]
    pattern = candidate_pattern(highlight, typed)
    first = None
    if pattern is not None:
        for m in pattern.finditer(head):
            first = _confirmed(head, m.start(), highlight)
            if first is not None:
                break
    if first is None:
        return _cut(head, 0, fallback_chars)
    begin = max(0, first - WINDOW_BEFORE)
    if begin:  # from a word's start; text without spaces (Chinese, Japanese, Thai) from where it is
        space = head.find(" ", begin, first)
        begin = space + 1 if space >= 0 else begin
    end = min(len(head), first + WINDOW_AFTER)
    window = head[begin:end]
    if end < len(head):
        window = window[: window.rfind(" ")] if " " in window[WINDOW_BEFORE:] else window
    marked, position = [], 0
    for start, stop in _matches(window, highlight):
        marked.append(window[position:start] + MARK_START + window[start:stop] + MARK_END)
        position = stop
    marked.append(window[position:])
    return ("… " if begin else "") + "".join(marked).strip() + (" …" if begin + len(window) < len(text) else "")


def _cut(text: str, start: int, chars: int) -> str:
    piece = text[start:start + chars]
    if len(text) > start + chars and " " in piece:
        piece = piece[: piece.rfind(" ")] + " …"
    return piece.strip()
