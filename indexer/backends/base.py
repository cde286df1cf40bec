"""The search backend interface. One implementation per database; one contract test suite
(tests/test_search_contract.py) runs against each."""

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass

from django.utils.html import escape

# Snippets mark matched terms with these control characters; callers render them as
# <mark> (HTML) or strip them (plain text). They never occur in extracted page text.
MARK_START, MARK_END = "\x02", "\x03"
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class SearchHit:
    document_id: int
    url: str
    title: str
    snippet: str  # with MARK_START/MARK_END around matches
    score: float  # higher is better

    @property
    def snippet_text(self) -> str:
        return self.snippet.replace(MARK_START, "").replace(MARK_END, "")

    @property
    def snippet_html(self) -> str:
        return escape(self.snippet).replace(MARK_START, "<mark>").replace(MARK_END, "</mark>")

    def as_dict(self) -> dict:
        return {"url": self.url, "title": self.title, "snippet": self.snippet_text, "score": self.score}


def query_terms(query: str) -> list[str]:
    """Words of a user query; punctuation and operators are ignored (AND of all words)."""
    return _WORD.findall(query.lower())[:32]


class SearchBackend(ABC):
    """Documents are rows of indexer.Document; a backend keeps its own index of them.

    Title weighs most, then headings, then body. Search is an AND of the query's words,
    best first, with a snippet of the body around the matches.
    """

    def __init__(self, using: str = "default"):
        self.using = using

    @abstractmethod
    def add(self, document_ids: list[int]) -> None:
        """Index (or re-index) these documents."""

    @abstractmethod
    def delete(self, document_ids: list[int]) -> None:
        """Remove these documents from the index."""

    @abstractmethod
    def clear(self) -> None:
        """Empty the index (tests; a full re-index)."""

    @abstractmethod
    def search(self, query: str, limit: int = 10, offset: int = 0) -> list[SearchHit]:
        """Hits for the query's words, best first."""
