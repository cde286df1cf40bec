"""HTML -> title, headings, visible text, links and robots directives, with lxml.

Decoding: as browsers decode (indexer/decoding.py: BOM, HTTP charset, meta prescan, XML
declaration, then a detector); undecodable bytes become U+FFFD rather than failing. The
page records the encoding and the rule that chose it.
Links: <a>/<area> href as written, with the document's base URL (<base href> when present,
resolved as browsers do); rel=nofollow links are dropped; meta robots nofollow drops them
all. The frontier resolves each link against the base and canonicalizes it in one step
(frontier.normalize, a WHATWG parser), so a link is parsed once.
"""

import re
import threading
from dataclasses import dataclass, field

import ada_url
from lxml import etree

from common import stagetime

from . import decoding, maincontent

# Characters XML 1.0 does not allow; lxml refuses them in text set from Python.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
MAX_HEADINGS_CHARS = 10_000
# <meta name=description>, else og:description: a page's summary, a search engine's snippet,
# searchable with the headings of a page whose own text (outside its furniture) is shorter
# than THIN_PAGE_CHARS (about a hundred words).
_DESCRIPTIONS = ("description", "og:description")
MAX_DESCRIPTION_CHARS = 500
THIN_PAGE_CHARS = 600
FEED_TYPES = ("application/rss+xml", "application/atom+xml", "application/rdf+xml")
MAX_FEEDS = 4  # feeds taken from one page: a site announces one or two
# <noscript> is what a reader without scripts sees, as the crawler is (Discourse serves its
# posts there); a short one ("enable JavaScript") is furniture (indexer/maincontent.py).
_INVISIBLE = ("script", "style", "template", "svg", "head")
# Elements that end a run of words: their text must not fuse with the next element's.
_BLOCKS = (
    "p", "div", "br", "li", "ul", "ol", "dl", "dt", "dd", "tr", "td", "th", "table", "h1", "h2",
    "h3", "h4", "h5", "h6", "section", "article", "header", "footer", "nav", "aside", "main",
    "blockquote", "pre", "form", "figure", "figcaption", "hr", "address", "option", "a",
)


@dataclass
class ParsedPage:
    title: str = ""
    headings: str = ""
    text: str = ""
    links: list[str] = field(default_factory=list)  # hrefs as written, relative to `base`
    base: str = ""  # the URL links resolve against
    canonical: str = ""
    feeds: list[str] = field(default_factory=list)  # RSS/Atom it announces (<link rel=alternate>), as written
    noindex: bool = False
    nofollow: bool = False
    # Where `text` is the page's furniture, not its content (navigation, banners, footers,
    # sidebars, cookie notices: indexer/maincontent.py): (start, end) character ranges, in
    # order. Neither the index nor snippets read them (maincontent.main_text).
    boilerplate: list[tuple[int, int]] = field(default_factory=list)
    encoding: str = ""  # the WHATWG name of the encoding the bytes were decoded with
    encoding_source: str = ""  # the rule that chose it (decoding.SOURCES)
    declared_language: str = ""  # <html lang> (or xml:lang) as written
    language: str = ""  # identified (indexer/language.py), a primary subtag or ""


# XPath's normalize-space() collapses whitespace runs in C: about 4x faster on a 25 KB page
# than collecting the text and collapsing it in Python. (It knows only XML whitespace, so a
# no-break space stays, as it should.)
_NORMALIZED_TEXT = etree.XPath("normalize-space(.)", smart_strings=False)


def _text(element) -> str:
    return _NORMALIZED_TEXT(element)


# Plain lxml elements: lxml.html's element-class lookup costs a Python call per element.
# A parser is not thread-safe, so each thread gets its own (one per input encoding: None
# for str input). No id table (collect_ids): nothing looks elements up by id.
_parsers = threading.local()


def _parser(encoding: str | None = None) -> etree.HTMLParser:
    parsers = getattr(_parsers, "by_encoding", None)
    if parsers is None:
        parsers = _parsers.by_encoding = {}
    parser = parsers.get(encoding)
    if parser is None:
        parser = parsers[encoding] = etree.HTMLParser(remove_comments=True, remove_pis=True, no_network=True,
                                                      collect_ids=False, encoding=encoding)
    return parser


# A UTF-8 body (or an ASCII one in any encoding that reads ASCII as ASCII) goes to libxml2
# as bytes (no str copy; libxml2 decodes it faster than lxml takes a str) when that builds
# the very tree the str path below builds: no NUL, a document that starts (after ASCII
# spaces) with "<" but not with an XML declaration. libxml2 turns each invalid byte into
# U+FFFD, but not always into as many as Python's errors="replace", so a body with one
# (ERR_INVALID_ENCODING) takes the str path. Other encodings take the str path: Python's
# decoders are the WHATWG's (libxml2's iso-8859-1 is not windows-1252), and decoding in
# Python then parsing the str was as fast as libxml2's iconv for every legacy encoding
# measured (docs/encodings.md).
_BYTES_START = re.compile(rb"[ \t\n\r\x0b\x0c\x1c-\x1f]*<(?!\?xml)")
_INVALID_BYTES = (etree.ErrorTypes.ERR_INVALID_ENCODING,)
# Encodings in which ASCII bytes are not (all) ASCII text.
_NOT_ASCII_COMPATIBLE = frozenset({"UTF-16LE", "UTF-16BE", "UTF-32LE", "UTF-32BE", "ISO-2022-JP", "replacement"})


def _parse_bytes(body: bytes, chosen: decoding.Decision):
    """The tree of `body` parsed as bytes, or False when the str path must parse it."""
    as_utf8 = chosen.encoding == decoding.UTF8 or (chosen.encoding not in _NOT_ASCII_COMPATIBLE and body.isascii())
    if not as_utf8 or chosen.bom_length or b"\x00" in body or not _BYTES_START.match(body):
        return False
    parser = _parser("utf-8")
    try:
        doc = etree.fromstring(body, parser)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        doc = None
    if parser.error_log.filter_types(_INVALID_BYTES):
        return False
    return doc


# A page's furniture: the landmarks of ARIA's banner, navigation, contentinfo, complementary
# and search roles, as elements or as role attributes (Sphinx marks its sidebars and its
# "related" bars role="navigation"). <header>/<footer> inside an article, a main or a
# section belong to that content (they are a banner or contentinfo only at the page's
# level, in HTML-ARIA's mapping). The tags are found by lxml's tag filter; role attributes
# by an XPath walk, only on pages whose bytes say "role=". parse_html took 0.64 ms a page
# without this and 0.69 with it (1,500 real HTML files of 17 KB, the best of six passes).
_FURNITURE_TAGS = ("nav", "aside", "header", "footer")
_FURNITURE_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})
_WITH_ROLE = etree.XPath("/descendant::*[@role]")
_ROLE_BYTES = re.compile(rb"(?i)\srole\s*=")
_SECTIONING = ("article", "main", "section")
# Markers around furniture while the text is made (noncharacters: Unicode reserves them
# for a program's internal use; any a page carries are dropped from its text).
_START, _END = "\ufdd0", "\ufdd1"
_MARKS = re.compile("([\ufdd0\ufdd1])")
MAX_BOILERPLATE_SPANS = 400


def _mark_furniture(doc, roles: bool = True, body=None) -> list:
    """Put _START/_END around the outermost furniture elements (roles: look at role
    attributes too; body: look for unmarked furniture under it too, indexer/maincontent.py);
    the elements marked."""
    found = [el for el in doc.iter(*_FURNITURE_TAGS)
             if el.tag in ("nav", "aside") or not any(True for _ in el.iterancestors(*_SECTIONING))]
    if roles:
        found += [el for el in _WITH_ROLE(doc) if (el.get("role") or "").strip().lower() in _FURNITURE_ROLES]
    if body is not None:
        found = maincontent.furniture(body, found)
    if not found:
        return []
    candidates = dict.fromkeys(found)  # lxml keeps one proxy per element while it is referenced: identity works
    marked = []
    for el in candidates:  # each once (a <nav role=navigation> is found twice)
        if len(marked) >= MAX_BOILERPLATE_SPANS:
            break
        if any(a in candidates for a in el.iterancestors()):
            continue  # inside other furniture
        tail = el.tail
        try:
            el.tail = _END + (tail or "")
        except ValueError:  # a control character the parser let in, which lxml refuses back
            continue
        try:
            el.text = _START + (el.text or "")
        except ValueError:
            el.tail = tail
            continue
        marked.append(el)
    return marked


def _unmark(marked: str) -> tuple[str, list[tuple[int, int]]]:
    """The text without the markers, exactly as normalize-space() would have made it
    without them, and the (start, end) of each marked range in it."""
    out, length, spans, start = [], 0, [], None
    for piece in _MARKS.split(marked):
        if piece == _START:
            start = length
        elif piece == _END:
            if start is not None and length > start:
                spans.append((start, length))
            start = None
        elif piece:
            if piece[0] == " " and (not length or out[-1][-1] == " "):  # the marker split a space run
                piece = piece[1:]
            if piece:
                out.append(piece)
                length += len(piece)
    if start is not None and length > start:
        spans.append((start, length))
    text = "".join(out)
    if text.endswith(" "):
        text = text[:-1]
    merged = []
    for a, b in spans:
        if a >= len(text):
            break
        if merged and a - merged[-1][1] <= 1:  # ranges a space apart are one
            merged[-1] = (merged[-1][0], min(b, len(text)))
        else:
            merged.append((a, min(b, len(text))))
    return text, merged


_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"


@stagetime.timed("parse")
def parse_html(body: bytes, url: str, http_charset: str | None = None, *,
               max_links: int = 1000, max_chars: int = 200_000, main_content: bool = True) -> ParsedPage:
    """main_content: look for the furniture the landmarks do not mark (indexer/maincontent.py)."""
    chosen = decoding.choose(body, http_charset, tld=_host_of(url))
    page = ParsedPage(encoding=chosen.encoding, encoding_source=chosen.source)
    doc = _parse_bytes(body, chosen)
    if doc is False:
        text = chosen.decode(body)
        # lxml rejects str input with an XML declaration naming an encoding; it carries no
        # information once decoded.
        text = _XML_DECLARATION.sub("", text, count=1).replace("\x00", "")  # lxml and PostgreSQL refuse NUL
        if not text.strip():
            return page
        try:
            doc = etree.fromstring(text, _parser())
        except (etree.ParserError, etree.XMLSyntaxError, ValueError):
            return page
    if doc is None:
        return page
    page.declared_language = (doc.get("lang") or doc.get(_XML_LANG) or "")[:35]

    # One walk for the robots metas, the first <title>, the first canonical <link>, the feeds
    # (<link rel=alternate>) and the first <base href> (each as the separate searches found
    # it: the root element excluded from title and base, as .find(".//…") excludes it).
    title = canonical = base_el = None
    og_title = description = ""
    feeds = []
    for el in doc.iter("meta", "title", "link", "base"):
        tag = el.tag
        if tag == "meta":
            name = (el.get("name") or el.get("property") or "").strip().lower()
            if not og_title and name == "og:title":
                og_title = " ".join((el.get("content") or "").split())
            elif name in _DESCRIPTIONS and (not description or name == "description"):
                said = " ".join((el.get("content") or "").split())[:MAX_DESCRIPTION_CHARS]
                description = said or description  # an empty one says nothing
            elif (el.get("name") or "").lower() in ("robots", "crawlerweb"):
                directives = {d.strip().lower() for d in (el.get("content") or "").split(",")}
                page.noindex |= bool(directives & {"noindex", "none"})
                page.nofollow |= bool(directives & {"nofollow", "none"})
        elif tag == "link":
            rel = (el.get("rel") or "").lower().split()
            if canonical is None and "canonical" in rel and el.get("href"):
                canonical = el.get("href")
            elif ("alternate" in rel and (el.get("type") or "").strip().lower() in FEED_TYPES and el.get("href")
                  and len(feeds) < MAX_FEEDS and el.get("href") not in feeds):
                feeds.append(el.get("href"))
        elif tag == "title":
            if title is None and el is not doc:
                title = el
        elif base_el is None and el.get("href") is not None and el is not doc:
            base_el = el
    title_text = _text(title) if title is not None else ""
    if canonical is not None:
        page.canonical = _safe_join(url, canonical)

    page.base = url
    if base_el is not None:
        page.base = _safe_join(url, base_el.get("href")) or url
    if not page.nofollow:
        page.feeds = feeds
        seen = set()
        for el in doc.iter("a", "area"):
            href = el.get("href")
            if not href or href[0] == "#" or "nofollow" in (el.get("rel") or "").lower().split():
                continue  # "#…" is a place in the page itself (with <base>, in the base: known)
            if href not in seen:
                seen.add(href)
                page.links.append(href)
                if len(page.links) >= max_links:
                    break

    # Headings, and the terms a page defines (<dt>: glossaries, API references, option
    # lists): the words a page is about, weighted above its prose by the ranking.
    with stagetime.stage("text"):
        headings = [(h, _text(h)) for h in doc.iter("h1", "h2", "h3", "dt")]
        etree.strip_elements(doc, *_INVISIBLE, with_tail=False)
        for el in doc.iter(*_BLOCKS):
            tail = el.tail
            if not tail:
                el.tail = " "
            elif tail[0] not in " \t\n\r":  # a space before XML whitespace changes no normalize-space()
                try:
                    el.tail = " " + tail
                except ValueError:  # a control character (&#1;) the parser let in, which lxml refuses back
                    el.tail = " " + _NOT_XML.sub(" ", tail)
        body_el = doc.find("body")
        furniture = _mark_furniture(doc, _ROLE_BYTES.search(body) is not None,
                                    body_el if main_content and body_el is not None else None)
        # The first <h1> wherever it is (a page-level <header> holds many an article's title:
        # 74 % of WCXB's titles right, 72 % with the first outside the furniture).
        h1 = next((text for h, text in headings if h.tag == "h1" and text), "")
        page.title = maincontent.choose_title(title_text, og_title, h1)[:500]
        # Every heading stays, furniture's too: leaving out those inside furniture (a Sphinx
        # sidebar's, a menu's) cost make bench-search 0.007 MRR on PostgreSQL (0.805 -> 0.798).
        shown = [text for _, text in headings]
        if title_text and not maincontent.is_part_of(page.title, title_text):
            shown.insert(0, title_text)  # words of the <title> the title kept lacks stay searchable
        text = _text(body_el if body_el is not None else doc)
        if furniture or _START in text or _END in text:
            # Every marker where it was put, or (a page that carries the characters itself) none.
            whole = text.count(_START) == text.count(_END) == len(furniture)
            text, spans = _unmark(text)
            page.boilerplate = [(a, min(b, max_chars)) for a, b in spans if a < max_chars] if whole else []
        own_chars = len(text) - sum(b - a for a, b in page.boilerplate)
        if description and own_chars < THIN_PAGE_CHARS and description not in text:
            # A page with little text of its own (a shell its scripts fill, a product's few
            # lines) is found by the summary it gives, where its text does not hold it.
            shown.insert(0, description)
        page.headings = " · ".join(shown)[:MAX_HEADINGS_CHARS]
        page.text = text[:max_chars]
    return page


# X-Robots-Tag directives that carry a value after a colon ("unavailable_after: <date>"): not
# a crawler's name.
_VALUED_DIRECTIVES = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})


def header_directives(value: str, token: str) -> tuple[bool, bool]:
    """(noindex, nofollow) from an X-Robots-Tag header (several are joined by commas): the
    directives for every crawler, and those after "<token>:" for ours (the robots.txt
    product token, or "crawlerweb" as the meta tag's name); another crawler's are not ours."""
    noindex = nofollow = False
    agent = None
    for part in value.lower().split(","):
        name, colon, rest = part.partition(":")
        if colon and name.strip() not in _VALUED_DIRECTIVES:  # "otherbot: noindex": that crawler's from here on
            agent, part = name.strip(), rest
        if agent is not None and agent not in (token, "crawlerweb"):
            continue
        directive = part.strip()
        noindex |= directive in ("noindex", "none")
        nofollow |= directive in ("nofollow", "none")
    return noindex, nofollow


def _host_of(url: str) -> str:
    """The host of a URL, cheaply (the detector only wants its last label)."""
    rest = url.partition("//")[2]
    return rest.partition("/")[0].partition(":")[0] if rest else ""


def _safe_join(base: str, href: str) -> str:
    try:
        return ada_url.join_url(base, href)
    except ValueError:  # no valid URL (an invalid host, a bad port…)
        return ""
