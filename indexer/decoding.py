"""Bytes to text as a browser decodes them (HTML Standard "determining the character
encoding", WHATWG Encoding Standard), for HTML, XML (feeds, sitemaps) and plain text.

The order, first rule that gives a known encoding wins:
1. `bom`: a UTF-8, UTF-16LE or UTF-16BE byte-order mark. It overrides the HTTP charset.
   (UTF-32 marks are read as UTF-32: browsers read them as UTF-16LE and show garbage.)
2. `http`: the Content-Type charset. (The spec takes UTF-16 from HTTP as it is.)
3. `meta` (HTML): the spec's prescan of the first 1024 bytes for `<meta charset>` or
   `<meta http-equiv="Content-Type" content="...; charset=...">`; then, as Chromium does,
   on through the rest of the head (until a tag a head cannot hold) up to
   META_SCAN_BYTES. A meta naming UTF-16 means UTF-8; x-user-defined means windows-1252.
4. `xml`: the `<?xml ... encoding="..."?>` declaration (XML, and XHTML served as HTML).
5. `detected`: a page that declares nothing, or declares UTF-8 and is not (most of its
   non-ASCII bytes are no UTF-8), goes to the statistical detector (chardetng, Firefox's),
   which sees at most DETECT_BYTES from the first non-ASCII byte; a country-code TLD is
   its hint, else the page's `<html lang>`.
6. `default`: nothing to detect (the page is ASCII, or empty): UTF-8; and UTF-8 for XML
   without a declaration and for plain text (Gemini's default), unless most of its
   non-ASCII bytes are no UTF-8 (then the detector decides).
Labels map to encodings by the standard's table (indexer/encodings.py); a label the
table does not know is ignored and the next rule decides. No Django here.
"""

import codecs
import re
from dataclasses import dataclass

import chardetng_py

from . import encodings
from .encodings import UTF8, UTF16BE, UTF16LE, WINDOWS_1252, X_USER_DEFINED

BOM, HTTP, META, XML, DETECTED, DEFAULT = "bom", "http", "meta", "xml", "detected", "default"
SOURCES = (BOM, HTTP, META, XML, DETECTED, DEFAULT)
PRESCAN_BYTES = 1024  # the HTML Standard's prescan
META_SCAN_BYTES = 16 * 1024  # how far a meta in the head is still looked for (Chromium: the whole head)
DETECT_BYTES = 8 * 1024  # what the detector sees at most (docs/encodings.md: as right as 64 KB, a quarter the cost)


@dataclass(frozen=True)
class Decision:
    """How a body is to be decoded: the WHATWG encoding name, the rule that chose it, and
    how many bytes of byte-order mark to skip."""

    encoding: str
    source: str
    bom_length: int = 0

    def decode(self, body: bytes) -> str:
        return encodings.decode(body[self.bom_length:] if self.bom_length else body, self.encoding)


_BOMS = ((b"\xef\xbb\xbf", UTF8), (b"\xff\xfe\x00\x00", "UTF-32LE"), (b"\x00\x00\xfe\xff", "UTF-32BE"),
         (b"\xfe\xff", UTF16BE), (b"\xff\xfe", UTF16LE))


def sniff_bom(body: bytes) -> Decision | None:
    for mark, name in _BOMS:
        if body.startswith(mark):
            return Decision(name, BOM, len(mark))
    return None


def choose(body: bytes, http_charset: str | None = None, *, kind: str = "html", tld: str = "") -> Decision:
    """The encoding of `body` (kind "html", "xml" or "text"), by the rules above."""
    found = sniff_bom(body)
    if found:
        return found
    name = encodings.name_of(http_charset)
    if name:
        return _unless_broken_utf8(body, Decision(name, HTTP), tld)
    if kind == "html":
        name = prescan(body)
        if name:
            return _unless_broken_utf8(body, Decision(name, META), tld)
    if kind in ("html", "xml"):
        name = xml_declared(body)
        if name:
            return _unless_broken_utf8(body, Decision(name, XML), tld)
        if kind == "xml":  # XML without a declaration is UTF-8 (XML 1.0 section 4.3.3)
            return _unless_broken_utf8(body, Decision(UTF8, DEFAULT), tld)
    if kind == "text":  # plain text's default (Gemini's, sitemaps.org's): UTF-8, unless it plainly is not
        return _unless_broken_utf8(body, Decision(UTF8, DEFAULT), tld)
    return detect(body, tld)


def decode(body: bytes, http_charset: str | None = None, *, kind: str = "html",
           tld: str = "") -> tuple[str, Decision]:
    decision = choose(body, http_charset, kind=kind, tld=tld)
    return decision.decode(body), decision


def _unless_broken_utf8(body: bytes, decision: Decision, tld: str) -> Decision:
    """A page declared UTF-8 whose detector window is not UTF-8 and which has more invalid
    UTF-8 sequences than valid non-ASCII characters goes to the detector (a few stray bytes
    in a UTF-8 page, mixed encodings, stay UTF-8 with U+FFFD for them)."""
    if decision.encoding != UTF8 or _mostly_utf8(body):
        return decision
    return detect(body, tld)


_NON_ASCII = re.compile(rb"[\x80-\xff]")


def _mostly_utf8(body: bytes) -> bool:
    window, last = detector_window(body)
    if window is None or _is_utf8(window, last):
        return True  # what the detector would see is UTF-8 (later stray bytes become U+FFFD)
    text = body.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    return len(text) - len(text.encode("ascii", errors="ignore")) >= 2 * bad  # as many good as bad


def detect(body: bytes, tld: str = "") -> Decision:
    """A page that declares nothing: chardetng's guess (Firefox's detector: the encodings
    of the web, UTF-8 included, the TLD as its prior) on the detector window; UTF-8 for a
    page with no non-ASCII byte (every ASCII-compatible encoding reads it alike)."""
    window, last = detector_window(body)
    if window is None:
        return Decision(UTF8, DEFAULT)
    if _is_utf8(window, last):  # what chardetng would say, for a fraction of its cost
        return Decision(UTF8, DETECTED)
    detector = chardetng_py.EncodingDetector()
    detector.feed(window, last=last)  # last=False: a character cut at the window's end is no error
    guess = detector.guess(tld=_tld_hint(tld) or _lang_hint(body), allow_utf8=True)
    return Decision(encodings.name_of(guess) or encodings.name_of_codec(guess) or WINDOWS_1252, DETECTED)


def _is_utf8(window: bytes, last: bool) -> bool:
    try:
        codecs.getincrementaldecoder("utf-8")().decode(window, final=last)  # a character cut at the end is fine
        return True
    except UnicodeDecodeError:
        return False


def detector_window(body: bytes) -> tuple[bytes | None, bool]:
    """What the detector sees: at most DETECT_BYTES from just before the first non-ASCII
    byte (a page's markup before its text says nothing of its encoding), and whether that
    is the end of the body; (None, True) for a body without a non-ASCII byte."""
    first = _NON_ASCII.search(body)
    if first is None:
        return None, True
    start = max(0, first.start() - 256)
    return body[start:start + DETECT_BYTES], start + DETECT_BYTES >= len(body)


def _tld_hint(tld: str) -> bytes | None:
    """The host's country-code TLD for chardetng, or None: a generic TLD (.com, .org) says
    nothing of a language, an IP address has no TLD."""
    label = tld.rsplit(".", 1)[-1].lower() if tld else ""
    return label.encode("ascii") if len(label) == 2 and label.isascii() and label.isalpha() else None


# Where the host says nothing (a generic TLD, an address), the page's <html lang> stands in
# for it (browsers do not do this): the country-code TLD of the language's legacy
# encodings, for the languages whose encodings are not windows-1252's. A wrong lang="en"
# (a template's) maps to nothing, so it costs nothing.
_LANG_TLD = {
    "ar": "sa", "fa": "ir", "ur": "pk", "he": "il", "iw": "il", "yi": "il", "el": "gr", "th": "th", "vi": "vn",
    "tr": "tr", "az": "az", "ja": "jp", "ko": "kr", "zh": "cn", "ru": "ru", "uk": "ua", "be": "by", "bg": "bg",
    "mk": "mk", "sr": "rs", "kk": "kz", "cs": "cz", "sk": "sk", "pl": "pl", "hu": "hu", "sl": "si", "hr": "hr",
    "bs": "ba", "ro": "ro", "lt": "lt", "lv": "lv", "et": "ee", "is": "is",
}
_TRADITIONAL = {b"tw", b"hk", b"mo", b"hant"}
_HTML_LANG = re.compile(rb"""<html\b[^>]{0,500}?[\t\n\f\r ]lang[\t\n\f\r ]*=[\t\n\f\r ]*["']?([A-Za-z]{2,3})"""
                        rb"""(?:[-_]([A-Za-z]{2,4}))?""", re.I)


def _lang_hint(body: bytes) -> bytes | None:
    match = _HTML_LANG.search(body, 0, 2048)
    if match is None:
        return None
    language, region = match.group(1).lower().decode("ascii"), (match.group(2) or b"").lower()
    if language == "zh" and region in _TRADITIONAL:
        return b"tw"
    tld = _LANG_TLD.get(language)
    return tld.encode("ascii") if tld else None


# --- the meta prescan (HTML Standard 13.2.3.2, "prescan a byte stream to determine its encoding")

# One token of the prescan: a comment, a tag with its attributes (quoted values may hold
# ">"), or a "<!", "</", "<?" construct skipped to its ">". A "<" that starts none of these
# is passed over, as the spec's "advance position" does.
_TOKEN = re.compile(
    rb"<!--.*?-->"
    rb"|<(/?)([a-zA-Z][^\t\n\f\r />]*)((?:[^>\"']|\"[^\"]*\"|'[^']*')*)>?"
    rb"|<[!/?][^>]*>?",
    re.S)
_ATTRIBUTE = re.compile(rb"""[\t\n\f\r /]*([^\t\n\f\r />=][^\t\n\f\r /=>]*)"""
                        rb"""(?:[\t\n\f\r ]*=[\t\n\f\r ]*("[^"]*"|'[^']*'|[^\t\n\f\r >]*))?""")
_CONTENT_CHARSET = re.compile(rb"""charset[\t\n\f\r ]*=[\t\n\f\r ]*("[^"]*"|'[^']*'|[^\t\n\f\r ;"']+)""", re.I)
# Tags a head may hold: past the first 1024 bytes the scan stops at any other (Chromium).
_HEAD_TAGS = frozenset({b"html", b"head", b"meta", b"link", b"title", b"base", b"script", b"style", b"noscript",
                        b"object", b"template"})
_RAW_TEXT_END = {b"script": re.compile(rb"</script", re.I), b"style": re.compile(rb"</style", re.I),
                 b"title": re.compile(rb"</title", re.I)}
_META_START = re.compile(rb"<meta[\t\n\f\r /]", re.I)


def prescan(body: bytes) -> str | None:
    """The encoding a <meta> names (spec rules for `charset`, `http-equiv` + `content`,
    UTF-16 -> UTF-8, x-user-defined -> windows-1252), or None.

    The quick path looks at each "<meta" of the first 1024 bytes that no comment holds (a
    page's tags cost nothing to pass over); only a page with a "<meta" past them is walked
    tag by tag (the head rule needs the tags). The quick path differs from the spec's walk
    only for "<meta" written inside another tag's quoted attribute value."""
    head = body[:META_SCAN_BYTES]
    for candidate in _META_START.finditer(head):
        start = candidate.start()
        if start >= PRESCAN_BYTES:
            return _walk(head)
        if _in_comment(head, start):
            continue
        token = _TOKEN.match(head, start)
        found = _meta_encoding(token.group(3)) if token and token.group(3) is not None else None
        if found:
            return found
    return None


def _in_comment(head: bytes, position: int) -> bool:
    opened = head.rfind(b"<!--", 0, position)
    return opened >= 0 and head.find(b"-->", opened + 2, position) < 0


def _walk(head: bytes) -> str | None:
    """The prescan tag by tag: the spec's within PRESCAN_BYTES, the head rule past them."""
    pos = 0
    while True:
        start = head.find(b"<", pos)
        if start < 0:
            return None
        token = _TOKEN.match(head, start)
        if token is None:
            pos = start + 1
            continue
        pos = token.end()
        name = token.group(2)
        if name is None:
            continue  # a comment or <! </ <?
        lowered = name.lower()
        if start >= PRESCAN_BYTES and (lowered not in _HEAD_TAGS or (token.group(1) and lowered == b"head")):
            return None  # past the prescan's 1024 bytes, only the head is still searched
        if token.group(1):
            continue  # an end tag
        if lowered == b"meta":
            found = _meta_encoding(token.group(3))
            if found:
                return found
        elif lowered in _RAW_TEXT_END:
            # Raw text that reaches past the prescan's bytes holds no tags (Chromium: "<meta"
            # in a script is not a meta); within them the spec's prescan reads on.
            end = _RAW_TEXT_END[lowered].search(head, pos)
            end_at = end.start() if end else len(head)
            if end_at > PRESCAN_BYTES:
                pos = end_at


def _meta_encoding(attributes: bytes) -> str | None:
    seen, got_pragma, need_pragma, charset = set(), False, None, None
    for match in _ATTRIBUTE.finditer(attributes):
        name = match.group(1).lower()
        if name in seen:
            continue
        seen.add(name)
        value = _unquote(match.group(2) or b"")
        if name == b"http-equiv":
            got_pragma = value.lower() == b"content-type"
        elif name == b"content" and charset is None:
            label = _charset_in_content(value)
            if label is not None:
                charset, need_pragma = encodings.name_of(label) or "", True
        elif name == b"charset":
            charset, need_pragma = encodings.name_of(value.decode("latin-1")) or "", False
    if need_pragma is None or (need_pragma and not got_pragma) or not charset:
        return None
    if charset in (UTF16LE, UTF16BE):
        return UTF8
    return WINDOWS_1252 if charset == X_USER_DEFINED else charset


def _charset_in_content(content: bytes) -> str | None:
    match = _CONTENT_CHARSET.search(content)
    if match is None:
        return None
    value = match.group(1)
    if value[:1] in (b'"', b"'"):
        if len(value) < 2 or value[-1:] != value[:1]:
            return None  # an unmatched quote: the spec's "return nothing"
        value = value[1:-1]
    return value.decode("latin-1")


def _unquote(value: bytes) -> bytes:
    return value[1:-1] if len(value) >= 2 and value[:1] in (b'"', b"'") and value[-1:] == value[:1] else value


_XML_DECLARATION = re.compile(
    rb"""<\?xml[\t\n\r ][^>]{0,200}?encoding[\t\n\r ]*=[\t\n\r ]*["']([A-Za-z0-9._:-]+)["']""")


def xml_declared(body: bytes) -> str | None:
    """The encoding an XML declaration at the very start names (UTF-16 -> UTF-8: a
    declaration readable as ASCII is not UTF-16), or None."""
    if not body.startswith(b"<?xml"):
        return None
    match = _XML_DECLARATION.match(body)
    name = encodings.name_of(match.group(1).decode("ascii")) if match else None
    return UTF8 if name in (UTF16LE, UTF16BE) else name
