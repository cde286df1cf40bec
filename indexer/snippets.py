"""Snippets in bounded time: a window around the first match in a bounded prefix of the text.

Re-analyzing whole bodies per hit (what FTS5 snippet() and ts_headline do) is most of a
query's time. Instead one compiled regex of the forms a match can take (the query's words
as typed and their stems, as prefixes: `queri` finds "queries") scans at most
CRAWLER_SEARCH_SNIPPET_SCAN_CHARS of the body in C; each candidate is confirmed by the
analyzer (its tokens meet the query's, identifier parts included), and only the window
around the first confirmed match is analyzed to mark every match in it.
"""

import re

from .analyzer import iter_group_spans
from .backends.base import MARK_END, MARK_START

WINDOW_BEFORE, WINDOW_AFTER = 60, 220


def candidate_pattern(highlight: set[str], typed: str) -> re.Pattern | None:
    """Prefixes that can begin a matching word: the query's typed words and its tokens."""
    forms = {w.lower() for w in re.findall(r"[^\W_]{2,}", typed)}
    forms |= {t for t in highlight if len(t) >= 2 and not t.startswith("site=")}
    for token in list(forms):
        forms |= set(re.findall(r"[^\W_]{2,}", token))  # parts of identifiers, as written
    if not forms:
        return None
    alternatives = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True)[:64])
    return re.compile(rf"(?i)(?<![^\W_])(?:{alternatives})")


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
    begin = head.find(" ", begin, first) + 1 if begin else 0
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
