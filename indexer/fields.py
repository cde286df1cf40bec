"""A document as the index sees it: the analyzer's tokens of its four fields."""

from dataclasses import dataclass
from urllib.parse import urlsplit

from .analyzer import tokens
from .maincontent import indexed_text
from .query import site_tokens
from .ranking import url_words


@dataclass
class IndexedFields:
    title: list[str]
    url: list[str]  # the URL path's words
    headings: list[str]
    body: list[str]
    sites: list[str]  # site=host tokens, matched by site: and never scored

    @property
    def long_length(self) -> int:
        return len(self.headings) + len(self.body)


def index_fields(document) -> IndexedFields:
    """document: anything with address, title, headings and body (an indexer.Document), and
    maybe boilerplate (Document.boilerplate's ranges) and content_type. The body field is an
    HTML page's main text: its furniture is not indexed (docs/content.md says why)."""
    host = urlsplit(document.address).hostname or ""
    body = indexed_text(document.body, getattr(document, "boilerplate", ""), getattr(document, "content_type", ""))
    return IndexedFields(tokens(document.title), tokens(url_words(document.address)), tokens(document.headings),
                         tokens(body), site_tokens(host) if host else [])
