"""Sphinx's general index (genindex.html) parsed into entries: term -> the pages it links to.

Why the index: it is a list of (what a reader looks for, where it is) written by the
authors, so each entry is a known-item query with a ground-truth answer, at no labelling
cost.

Sphinx writes the index in one of two shapes, and splits it or not:
- `<table class="indextable genindextable">` cells holding `<ul><li>` entries (the basic
  theme of Sphinx 4 and later), or `<dl><dt>` entries with `<dd><dl><dt>` sub-entries
  (older themes; SQLAlchemy's docs still use it). Python's split pages have class
  "indextable" alone.
- An entry: `<li><a href="page.html#anchor">term (qualifier)</a>, <a href="...">[1]</a>`
  or `<li>term` without a link of its own; nested sub-entries (`<ul><li>` inside it) are
  either the same term's other objects ("(asyncio.Barrier method)") or the term's kinds
  ("dbshell command line option", "module").
- Split: genindex.html only links to genindex-A.html ... genindex-all.html. Read
  genindex-all.html when there is one, else every genindex*.html (entries are merged).

An entry's pages are every href of the term and its sub-entries, the #fragment dropped,
resolved against the index page's own path (relative to the site root).
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from lxml import html


@dataclass(frozen=True)
class IndexEntry:
    term: str  # as printed, whitespace collapsed, e.g. "a2b_base64() (in module binascii)"
    pages: tuple[str, ...]  # site-relative paths, no fragment, sorted, distinct
    subentries: tuple[str, ...] = ()  # the sub-entries' texts, as printed


def _text(element) -> str:
    return " ".join(element.text_content().split())


def _own_text(element) -> str:
    """The element's leading text (a term without a link of its own)."""
    return " ".join((element.text or "").split())


def _page(href: str, index_path: str) -> str | None:
    """The site-relative path an index link points to, or None for an off-site link."""
    split = urlsplit(href)
    if split.scheme or split.netloc:
        return None
    if not split.path:  # "#anchor": the index page itself
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(index_path), unquote(split.path)))
    if joined.startswith(("../", "/")) or joined == "..":
        return None
    return joined


def _entry(term: str, hrefs: list[str], subentries: list[str], index_path: str) -> IndexEntry | None:
    pages = {page for page in (_page(h, index_path) for h in hrefs) if page is not None}
    if not term or not pages:
        return None
    return IndexEntry(term, tuple(sorted(pages)), tuple(subentries))


def _list_entries(item, index_path: str) -> IndexEntry | None:
    """One `<li>` entry of the `<ul>` shape."""
    links = item.xpath("./a")
    term = _text(links[0]) if links else _own_text(item)
    subentries = [_text(sub.xpath("./a")[0]) if sub.xpath("./a") else _own_text(sub) for sub in item.xpath("./ul/li")]
    return _entry(term, item.xpath(".//a/@href"), subentries, index_path)


def _definition_entries(term_element, index_path: str) -> IndexEntry | None:
    """One `<dt>` entry of the `<dl>` shape; its sub-entries are in the `<dd>` after it."""
    links = term_element.xpath("./a")
    term = _text(links[0]) if links else _own_text(term_element)
    hrefs = list(term_element.xpath(".//a/@href"))
    subentries = []
    following = term_element.getnext()
    if following is not None and following.tag == "dd":
        for sub in following.xpath(".//dt"):
            sub_links = sub.xpath("./a")
            subentries.append(_text(sub_links[0]) if sub_links else _own_text(sub))
        hrefs += following.xpath(".//a/@href")
    return _entry(term, hrefs, subentries, index_path)


_TABLES = '//table[contains(concat(" ", normalize-space(@class), " "), " indextable ")]'


def parse_genindex(markup: str | bytes, index_path: str = "genindex.html") -> list[IndexEntry]:
    """The entries of one index page, in page order. `index_path`: the page's path relative
    to the site root (links resolve against it)."""
    if not markup or not markup.strip():
        return []
    tree = html.fromstring(markup)
    entries = []
    for table in tree.xpath(_TABLES):
        for item in table.xpath("./tr/td/ul/li | ./tbody/tr/td/ul/li"):
            entries.append(_list_entries(item, index_path))
        for term in table.xpath("./tr/td/dl/dt | ./tbody/tr/td/dl/dt"):
            entries.append(_definition_entries(term, index_path))
    return [entry for entry in entries if entry is not None]


def index_files(root: Path) -> list[Path]:
    """The index pages of a site to read: genindex-all.html if the index is split and has
    one, else genindex.html and every genindex-*.html."""
    root = Path(root)
    whole = root / "genindex-all.html"
    if whole.is_file():
        return [whole]
    return sorted(p for p in root.glob("genindex*.html") if p.is_file())


def read_index(root: Path) -> list[IndexEntry]:
    """Every entry of a site's index, entries of the same term on several pages merged."""
    merged: dict[str, tuple[set, list]] = {}
    for path in index_files(root):
        relative = path.relative_to(root).as_posix()
        for entry in parse_genindex(path.read_bytes(), relative):
            pages, subentries = merged.setdefault(entry.term, (set(), []))
            pages.update(entry.pages)
            subentries.extend(s for s in entry.subentries if s not in subentries)
    return [IndexEntry(term, tuple(sorted(pages)), tuple(subs)) for term, (pages, subs) in merged.items()]
