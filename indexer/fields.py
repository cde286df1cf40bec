"""A document as the index sees it: the analyzer's tokens of its four fields."""

from dataclasses import dataclass
from urllib.parse import urlsplit

from .analyzer import stemmer_language, tokens
from .maincontent import indexed_text
from .query import analysis_token, language_token, site_tokens
from .ranking import url_words


@dataclass
class IndexedFields:
    title: list[str]
    url: list[str]  # the URL path's words
    headings: list[str]
    body: list[str]
    sites: list[str]  # site=host, analysis=xx and lang=xx tokens: matched by site:, a query's words, lang:

    @property
    def long_length(self) -> int:
        return len(self.headings) + len(self.body)


def index_fields(document) -> IndexedFields:
    """document: anything with page_url, title, headings and body (an indexer.Document), and
    language (its text is analysed in it; none: English, as before issue 53), and maybe
    boilerplate (Document.boilerplate's ranges) and content_type. The body field is an HTML
    page's main text: its furniture is not indexed (docs/content.md says why)."""
    host = urlsplit(document.page_url).hostname or ""
    language = getattr(document, "language", "en")
    body = indexed_text(document.body, getattr(document, "boilerplate", ""), getattr(document, "content_type", ""))
    markers = (site_tokens(host) if host else []) + [analysis_token(stemmer_language(language))] + (
        [language_token(language)] if language else [])
    return IndexedFields(tokens(document.title, language), tokens(url_words(document.page_url), language),
                         tokens(document.headings, language), tokens(body, language), markers)
