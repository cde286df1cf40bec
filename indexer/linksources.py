"""Sitemaps and feeds: responses read for their links only, never indexed.

A sitemap (sitemaps.org) is a `<urlset>` of `<url><loc>`, a `<sitemapindex>` of
`<sitemap><loc>` (more sitemaps), or a plain text file of one URL per line, possibly
gzip-compressed; a feed is RSS 2.0 / RSS 1.0 (RDF) `<item><link>` or Atom
`<entry><link href>`. The bytes come from the fetch path (the host's session: politeness,
robots.txt, the SSRF guard and the body cap already applied); this module only reads them.

Safety contract, for bytes written by anyone:
- no entity is expanded and no DTD loaded (billion laughs and XXE read as nothing), no
  network and no file access (lxml's parser with resolve_entities/load_dtd off, no_network);
- a gzip body is inflated to at most `max_bytes` (a bomb is cut there: `truncated`);
- at most `max_urls` links per document (sitemaps.org: 50,000), each at most 2,048
  characters; malformed or cut-off XML yields the links read before the fault.
The caller records the outcome; nothing here raises on bad input.
"""

import io
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone

from lxml import etree

from common import stagetime

from . import decoding, encodings

SITEMAP, SITEMAP_INDEX, FEED, TEXT_SITEMAP = "sitemap", "sitemap_index", "feed", "text_sitemap"
MAX_URL_CHARS = 2048
_GZIP_MAGIC = b"\x1f\x8b"
# Elements whose text (or href) is a link, by the local name of the element and its parent.
_SITEMAP_LOC_PARENTS = {"url": SITEMAP, "sitemap": SITEMAP_INDEX}
_ENTRIES = frozenset({"url", "sitemap", "item", "entry"})


@dataclass
class LinkSource:
    """What a sitemap or feed lists."""

    kind: str = ""  # SITEMAP, SITEMAP_INDEX, FEED, TEXT_SITEMAP; "" when it is none of them
    links: list[str] = field(default_factory=list)  # as written (absolute in a sitemap; a feed's may be relative)
    priorities: list[float | None] = field(default_factory=list)  # a sitemap's <priority> per link (None: absent)
    lastmods: list[float | None] = field(default_factory=list)  # a sitemap's <lastmod> per link, Unix seconds
    truncated: bool = False  # cut at max_bytes or max_urls
    malformed: bool = False  # the XML broke off: the links before the fault are kept


def gunzip(body: bytes, max_bytes: int) -> tuple[bytes, bool]:
    """The body inflated when it is gzip (by its magic number: servers label .gz sitemaps
    every which way), to at most max_bytes; (bytes, cut short)."""
    if not body.startswith(_GZIP_MAGIC):
        return body, False
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, max_bytes + 1)
    except zlib.error:
        return b"", True
    return out[:max_bytes], len(out) > max_bytes or (bool(inflater.unconsumed_tail) and len(out) >= max_bytes)


def _local(tag) -> str:
    return tag.rsplit("}", 1)[-1].lower() if isinstance(tag, str) else ""


@stagetime.timed("parse")
def read_sitemap(body: bytes, max_urls: int = 50_000, max_bytes: int = 50 * 1024 * 1024,
                 charset: str | None = None) -> LinkSource:
    """The URLs a sitemap lists: XML (urlset or sitemapindex) or text, gzip or not;
    `charset`: the Content-Type's (decoding rules: indexer/decoding.py)."""
    body, cut = gunzip(body, max_bytes)
    mark = decoding.sniff_bom(body)
    start = mark.decode(body[:64]).lstrip()[:1] if mark else body.lstrip()[:1].decode("latin-1")
    if start == "<":
        source = _read_xml(body, max_urls, charset)
    else:
        source = _read_text(body, max_urls, charset)
    source.truncated |= cut
    return source


@stagetime.timed("parse")
def read_feed(body: bytes, max_urls: int = 50_000, max_bytes: int = 50 * 1024 * 1024,
              charset: str | None = None) -> LinkSource:
    """The item links of an RSS or Atom feed."""
    body, cut = gunzip(body, max_bytes)
    source = _read_xml(body, max_urls, charset)
    source.truncated |= cut
    return source


def _read_text(body: bytes, max_urls: int, charset: str | None = None) -> LinkSource:
    """sitemaps.org's text format: one absolute URL per line, UTF-8 (unless the
    Content-Type or a byte-order mark says otherwise)."""
    source = LinkSource(TEXT_SITEMAP)
    for line in decoding.decode(body, charset, kind="text")[0].splitlines():
        line = line.strip()
        if line.lower().startswith(("http://", "https://")) and len(line) <= MAX_URL_CHARS:
            if len(source.links) >= max_urls:
                source.truncated = True
                break
            source.links.append(line)
            source.priorities.append(None)
            source.lastmods.append(None)
    if not source.links:
        source.kind = ""
    return source


# libxml2's names where they are not the WHATWG's (decoders as indexer/encodings.py picks them).
_LIBXML_NAMES = {"GBK": "GB18030", "Shift_JIS": "CP932", "EUC-KR": "CP949", "Big5": "BIG5-HKSCS",
                 "ISO-8859-8-I": "ISO-8859-8"}


def _xml_encoding(body: bytes, charset: str | None) -> str | None:
    """The encoding libxml2 is told to read the document in, as a browser would decide it
    (the HTTP charset over the XML declaration, labels as the WHATWG maps them: ISO-8859-1
    is windows-1252); None where libxml2's own reading is that (a byte-order mark) or it
    knows no such decoder."""
    chosen = decoding.choose(body, charset, kind="xml")
    if chosen.source == decoding.BOM or chosen.encoding in (encodings.REPLACEMENT, encodings.X_USER_DEFINED,
                                                            "x-mac-cyrillic"):
        return None
    return _LIBXML_NAMES.get(chosen.encoding, chosen.encoding)


def _read_xml(body: bytes, max_urls: int, charset: str | None = None) -> LinkSource:
    source = LinkSource()
    events = etree.iterparse(io.BytesIO(body), events=("start", "end"), resolve_entities=False, load_dtd=False,
                             no_network=True, huge_tree=False, remove_comments=True, remove_pis=True,
                             encoding=_xml_encoding(body, charset))
    depth = 0
    try:
        for event, el in events:
            if event == "start":
                depth += 1
                if depth == 1:
                    source.kind = _root_kind(_local(el.tag))
                    if not source.kind:
                        break
                continue
            depth -= 1
            link, priority, lastmod = _link_of(source.kind, el)
            if link:
                if len(source.links) >= max_urls:
                    source.truncated = True
                    break
                source.links.append(link)
                source.priorities.append(priority)
                source.lastmods.append(lastmod)
            if _local(el.tag) in _ENTRIES:  # done with it: keep the tree small
                el.clear(keep_tail=False)
                while el.getprevious() is not None:
                    del el.getparent()[0]
    except (etree.XMLSyntaxError, ValueError):
        source.malformed = True
    return source


def _root_kind(name: str) -> str:
    if name == "urlset":
        return SITEMAP
    if name == "sitemapindex":
        return SITEMAP_INDEX
    if name in ("rss", "rdf", "feed"):
        return FEED
    return ""


def _link_of(kind: str, el) -> tuple[str, float | None, float | None]:
    """The link an element closes (and a sitemap entry's <priority> and <lastmod>), if it is
    one of the kind's link elements: a sitemap's <url> or <sitemap> entry, a feed item's <link>."""
    name = _local(el.tag)
    if kind in (SITEMAP, SITEMAP_INDEX):
        if _SITEMAP_LOC_PARENTS.get(name) != kind:
            return "", None, None
        loc = priority = lastmod = None
        for child in el:
            child_name = _local(child.tag)
            if child_name == "loc" and loc is None:
                loc = child.text
            elif child_name == "priority" and priority is None:
                priority = _number(child.text)
            elif child_name == "lastmod" and lastmod is None:
                lastmod = w3c_datetime(child.text)
        return _clean(loc), priority, lastmod
    parent = el.getparent()
    if kind == FEED and name == "link" and parent is not None and _local(parent.tag) in ("item", "entry"):
        href = el.get("href")
        if href is not None:  # Atom: the entry's alternate (rel absent or "alternate") link
            return (_clean(href) if (el.get("rel") or "alternate") == "alternate" else ""), None, None
        return _clean(el.text), None, None  # RSS
    return "", None, None


def w3c_datetime(text) -> float | None:
    """A sitemap's <lastmod> (W3C Datetime: a date, or a date and time with a zone) as Unix
    seconds; a value without a zone is taken as UTC; None if it is none of those."""
    text = (text or "").strip()
    if not 10 <= len(text) <= 40:
        return None
    try:
        value = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).timestamp()


def _number(text) -> float | None:
    try:
        value = float((text or "").strip())
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


def _clean(text) -> str:
    text = (text or "").strip()
    return text if 0 < len(text) <= MAX_URL_CHARS else ""
