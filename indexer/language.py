"""A document's language: what the page declares, checked by a detector.

The declaration (`<html lang>`, else the Content-Language header) is a prior, not the
answer: templates keep `lang="en"` on pages written in other languages, and most pages
declare nothing. The detector is CLD2 (pycld2), Chromium's compact language detector: its
tables are compiled into the package (nothing is downloaded, ever), it takes the
declaration as a hint (hintLanguage, hintLanguageHTTPHeaders, as Chromium feeds it), and
it costs ~50 µs for the 1,000 characters it is shown, 6x less than fastText's bundled lite
model and 10x less than py3langid at equal accuracy on Debian's translated pages
(bench/langid_eval.py; the figures are in docs/search.md).

The detector reads the title and SAMPLE_CHARS of the page's text: its start without the
furniture the parser marked (navigation, banners, footers) and, on a long page, windows
from its middle and its last quarter: a documentation page's first thousand characters are
often its menu (a SQLAlchemy changelog's menu of version numbers and "orm engine sql mysql"
was read as Danish, which made every query of an English index be stemmed as Danish too).

The rule: the detector's language when it is sure (CLD2's "reliable" and most of the
text), else the declaration, else the detector's best guess when it has one, else "".
Stored as a BCP 47 primary subtag ("zh", not "zh-Hant"), lower case.
"""

import re

import pycld2

from common import stagetime

SAMPLE_CHARS = 1000  # characters of title + text the detector sees: the cost is linear in it
MIN_SURE_PERCENT = 60  # of the text in the detected language, for it to overrule the declaration
# CLD2's own codes that are not the BCP 47 ones.
_CLD2_CODES = {"iw": "he", "jw": "jv", "in": "id", "mo": "ro", "tl": "fil", "zh-hant": "zh", "nb": "no",
               "sr-me": "sr", "xxx": "", "un": ""}
# CLD2 refuses text with C0/C1 control characters ("invalid UTF-8") and lone surrogates.
_REFUSED = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_TAG = re.compile(r"^\s*([A-Za-z]{2,3})(?:[-_][A-Za-z0-9]{1,8})*\s*$")
_ALIASES = {"iw": "he", "in": "id", "ji": "yi", "jw": "jv", "nb": "no", "nn": "no"}


def primary_subtag(tag: str) -> str:
    """'de-AT' -> 'de', 'zh_TW' -> 'zh', 'iw' -> 'he'; '' for anything that is no language
    tag ('x-klingon', '', 'English'). A Content-Language list gives its first."""
    match = _TAG.match(tag.split(",")[0]) if tag else None
    if not match:
        return ""
    code = match.group(1).lower()
    return _ALIASES.get(code, code)


def content_sample(title: str, text: str, furniture=(), chars: int = SAMPLE_CHARS) -> str:
    """What the detector reads of a page, about `chars` characters: the title, the start of
    the text outside the furniture ranges, and on a long page two windows from its middle and
    its last quarter (the head of a page is where its menus are; a page that is all
    furniture: its text)."""
    windows = []
    if len(text) > 4 * chars:
        width = chars // 4
        windows = [text[len(text) // 2:len(text) // 2 + width], text[3 * len(text) // 4:3 * len(text) // 4 + width]]
    room = chars - sum(map(len, windows))
    pieces, length, position = [], 0, 0
    for start, end in sorted(furniture):
        if length >= room:
            break
        if start > position:
            piece = text[position:min(start, position + room - length)]
            pieces.append(piece)
            length += len(piece) + 1
        position = max(position, end)
    if length < room and position < len(text):
        pieces.append(text[position:position + room - length])
    head = " ".join(pieces) if "".join(pieces).strip() else text[:room]
    return " ".join([f"{title}.", head, *windows])


def _detector_code(code: str) -> str:
    code = code.lower()
    code = _CLD2_CODES.get(code, code)
    return primary_subtag(code) if code else ""


@stagetime.timed("language")
def identify(text: str, declared: str = "", content_language: str = "") -> str:
    """The language of a page's text (title and body, in that order): a primary subtag or ""."""
    prior = primary_subtag(declared) or primary_subtag(content_language)
    sample = _REFUSED.sub(" ", text[:SAMPLE_CHARS])
    if not sample.strip():
        return prior
    try:
        reliable, _, details = pycld2.detect(sample, isPlainText=True, hintLanguage=prior or None,
                                             hintLanguageHTTPHeaders=content_language[:100] or None)
    except (pycld2.error, ValueError):  # a hint it does not know, or text it still refuses
        return prior
    detected, percent = _detector_code(details[0][1]), details[0][2]
    if detected and reliable and (percent >= MIN_SURE_PERCENT or not prior):
        return detected
    return prior or detected
