"""The search backend interface. One implementation per database; one contract test suite
(tests/indexer/test_search_contract.py) runs against each.

Both index the analyzer's tokens (indexer.analyzer), never the database's own text parser,
so a page and a query are cut into the same tokens on every backend. The search algorithm
is shared (SearchBackend.search): parse the query, count the pages that have every term
(falling back to any term when none has them all), rank a bounded candidate set with the
two-group BM25F of indexer.ranking, cut snippets from a bounded prefix of each shown page.
A backend supplies the database parts: match expressions, counts, candidates and the texts'
prefixes.
"""

import contextlib
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime
from datetime import timezone as dt_timezone

from django.conf import settings
from django.db import connections
from django.utils.dateparse import parse_datetime
from django.utils.html import escape

from .. import ranking
from ..query import Query, Term, as_typed_phrase, parse
from ..analyzer import stemmer_language
from ..snippets import MARK_END, MARK_START, make_snippet, snippet_source

# The documents' distinct languages by walking the index on Document.language one value at a
# time (a loose index scan: one seek per language, however many documents), on both databases.
DISTINCT_LANGUAGES_SQL = """
    WITH RECURSIVE found(language) AS (
        SELECT min(language) FROM indexer_document
        UNION ALL
        SELECT (SELECT min(language) FROM indexer_document WHERE language > found.language)
        FROM found WHERE found.language IS NOT NULL)
    SELECT language FROM found WHERE language IS NOT NULL"""


@dataclass(frozen=True)
class SearchHit:
    document_id: int
    url: str
    title: str
    snippet: str  # with MARK_START/MARK_END around matches
    score: float  # higher is better
    fetched_at: datetime | None = None
    cached_url: str | None = None  # its archived copy in the replay (CRAWLER_REPLAY_URL), filled by the service
    content_type: str = ""  # its response's type ("application/pdf" for a PDF, however served), filled by the service

    @property
    def is_pdf(self) -> bool:
        return self.content_type == "application/pdf"

    @property
    def snippet_text(self) -> str:
        return self.snippet.replace(MARK_START, "").replace(MARK_END, "")

    @property
    def snippet_html(self) -> str:
        return escape(self.snippet).replace(MARK_START, "<mark>").replace(MARK_END, "</mark>")

    def as_dict(self) -> dict:
        return {"url": self.url, "title": self.title, "snippet": self.snippet_text, "score": round(self.score, 4),
                "fetched_at": self.fetched_at.isoformat() if self.fetched_at else None,
                "content_type": self.content_type}


@dataclass
class SearchResults:
    """One page of hits, best first, and how many pages matched in all."""

    query: Query
    hits: list[SearchHit] = field(default_factory=list)
    total: int = 0
    total_is_lower_bound: bool = False  # counting stopped at CRAWLER_SEARCH_COUNT_LIMIT
    any_word: bool = False  # no page had every term: these have some of them
    order: str = "relevance"  # or "url": a site: with no words lists the site's pages by URL

    def __iter__(self):
        return iter(self.hits)

    def __len__(self):
        return len(self.hits)

    def __getitem__(self, item):
        return self.hits[item]


@dataclass
class Candidate:
    """A page that matched, with what the backend knows of it for ranking."""

    document_id: int
    url: str
    title: str
    fetched_at: datetime | None
    long_score: float  # the headings+body group of the formula, computed by the backend
    score: float = 0.0
    language: str = "en"  # Document.language: its title is analysed in it for the short group


def as_datetime(value) -> datetime | None:
    """A raw cursor's timestamp (SQLite returns text) as an aware datetime."""
    if value is None or isinstance(value, datetime):
        return value
    parsed = parse_datetime(value)
    return parsed if parsed is None or parsed.tzinfo else parsed.replace(tzinfo=dt_timezone.utc)


class SearchBackend(ABC):
    """Documents are rows of indexer.Document; a backend keeps its own index of them."""

    _stats_cache: dict = {}
    _df_cache: dict = {}

    def __init__(self, using: str = "default"):
        self.using = using

    # -- writing -------------------------------------------------------------------------

    @abstractmethod
    def prepare(self, document) -> tuple:
        """A document's index row (document: anything with page_url, title, headings, body):
        the analyzer's work, no database, so it runs where the page is parsed (a fetch
        thread, a parse pool process) and the writer only sends it."""

    @abstractmethod
    def add_prepared(self, rows: list[tuple[int, tuple]]) -> None:
        """Index (or re-index) documents given as (document id, prepare(document))."""

    def add(self, documents: list) -> None:
        """Index (or re-index) these documents (objects with id, page_url, title, headings, body)."""
        self.add_prepared([(doc.id, self.prepare(doc)) for doc in documents])

    @abstractmethod
    def delete(self, document_ids: list[int]) -> None:
        """Remove these documents from the index."""

    @abstractmethod
    def clear(self) -> None:
        """Empty the index (tests; a full re-index)."""

    # -- the database's part of searching -------------------------------------------------

    @abstractmethod
    def count(self, query: Query, any_word: bool, cap: int) -> int:
        """Pages matching the query (every term, or any term), counting at most cap."""

    @abstractmethod
    def document_frequencies(self, terms: list[Term], cap: int) -> list[int]:
        """Pages containing each term, each counted up to cap."""

    @abstractmethod
    def candidates(self, query: Query, any_word: bool, limit: int, exhaustive: bool, terms: list[Term],
                   idfs: list[float], stats: ranking.CorpusStats, weights: ranking.Weights) -> list[Candidate]:
        """At most limit matching pages, the likely best, with their long-group score over
        terms (the typed terms; idfs: theirs). exhaustive: every match fits in limit, so no
        pre-ordering is needed."""

    @abstractmethod
    def listed(self, query: Query, limit: int, offset: int) -> list[Candidate]:
        """The pages of the query's sites (it has no words), by URL (byte order) then id:
        limit of them from offset, with no score."""

    @abstractmethod
    def matching(self, query: Query, document_ids: list[int]) -> set[int]:
        """Those of these documents (a few dozen) that the query matches."""

    def _lift_typed_phrase(self, parsed: Query, found: list[Candidate], query_idf: float) -> None:
        """Words typed without quotes that a page holds as typed, in that order, say more
        than the same words apart (BM25 knows no order): among the best
        CRAWLER_SEARCH_PHRASE_CANDIDATES, those that hold the phrase gain
        CRAWLER_SEARCH_PHRASE_WEIGHT times the query's summed idf, the backend's own
        phrase match (as for a quoted phrase) telling which."""
        weight, depth = settings.CRAWLER_SEARCH_PHRASE_WEIGHT, settings.CRAWLER_SEARCH_PHRASE_CANDIDATES
        if not weight or not depth or len(found) < 2:
            return
        phrased = as_typed_phrase(parsed, self.indexed_languages())
        if phrased is None:
            return
        top = found[:depth]
        holding = self.matching(phrased, [c.document_id for c in top])
        if not holding:
            return
        for candidate in top:
            if candidate.document_id in holding:
                candidate.score += weight * query_idf
        found.sort(key=lambda c: (-c.score, c.document_id))

    def snippet_sources(self, document_ids: list[int], chars: int) -> dict[int, tuple[str, str]]:
        """(the first chars characters of the body, Document.boilerplate) of each document."""

    def prefixes(self, document_ids: list[int], chars: int) -> dict[int, str]:
        """The first chars characters of each document's body."""
        return {i: prefix for i, (prefix, _) in self.snippet_sources(document_ids, chars).items()}

    def snippets(self, shown: list[Candidate], query: Query) -> list[str]:
        """The snippet of each page shown, cut from its content (indexer.snippets)."""

        scan = settings.CRAWLER_SEARCH_SNIPPET_SCAN_CHARS
        sources = self.snippet_sources([c.document_id for c in shown], scan)
        highlight = query.highlight_tokens if not query.empty else set()
        out = []
        for c in shown:
            prefix, boilerplate = sources.get(c.document_id, ("", ""))
            out.append(make_snippet(snippet_source(prefix, boilerplate, c.title), highlight,
                                    query.text if not query.empty else "", scan))
        return out

    @abstractmethod
    def read_corpus_stats(self) -> ranking.CorpusStats:
        """Document count and average field lengths, in tokens."""

    def corpus_stats(self) -> ranking.CorpusStats:
        """read_corpus_stats, cached per process for CRAWLER_SEARCH_STATS_SECONDS: averages
        move slowly, and reading them is a scan of the index's small side columns."""
        key = (type(self).__name__, self.using)
        cached = self._stats_cache.get(key)
        if cached and time.monotonic() - cached[0] < settings.CRAWLER_SEARCH_STATS_SECONDS:
            return cached[1]
        stats = self.read_corpus_stats()
        SearchBackend._stats_cache[key] = (time.monotonic(), stats)
        return stats

    def forget_corpus_stats(self) -> None:
        SearchBackend._stats_cache.pop((type(self).__name__, self.using), None)
        SearchBackend._df_cache.pop((type(self).__name__, self.using), None)
        SearchBackend._languages_cache.pop((type(self).__name__, self.using), None)

    _languages_cache: dict = {}

    def indexed_languages(self) -> tuple[str, ...]:
        """The analyses the index holds (a stemmer's language, or NO_STEMMER), English first:
        a query's words are analysed in each. Read from the documents (DISTINCT_LANGUAGES_SQL)
        and kept per process as long as the corpus statistics."""
        key = (type(self).__name__, self.using)
        cached = self._languages_cache.get(key)
        if cached and time.monotonic() - cached[0] < settings.CRAWLER_SEARCH_STATS_SECONDS:
            return cached[1]
        with connections[self.using].cursor() as cur:
            cur.execute(DISTINCT_LANGUAGES_SQL)
            stored = [row[0] for row in cur.fetchall()]
        analyses = sorted({stemmer_language(language) for language in stored}, key=lambda lang: (lang != "en", lang))
        languages = tuple(analyses) or ("en",)
        SearchBackend._languages_cache[key] = (time.monotonic(), languages)
        return languages

    def parse(self, query: str) -> Query:
        """A query parsed for this index (its words analysed in the index's languages)."""
        return parse(query, self.indexed_languages())

    def cached_document_frequencies(self, terms: list[Term], cap: int) -> list[int]:
        """document_frequencies, each token's kept per process as long as the corpus
        statistics (they move as slowly): an identifier's parts recur across queries."""
        key = (type(self).__name__, self.using)
        now = time.monotonic()
        cached = SearchBackend._df_cache.get(key)
        if cached is None or now - cached[0] > settings.CRAWLER_SEARCH_STATS_SECONDS or len(cached[1]) > 100_000:
            cached = SearchBackend._df_cache[key] = (now, {})
        known = cached[1]
        missing = [t for t in dict.fromkeys(terms) if (t.matching, cap) not in known]
        if missing:
            for term, df in zip(missing, self.document_frequencies(missing, cap)):
                known[(term.matching, cap)] = df
        return [known[(t.matching, cap)] for t in terms]

    # -- the shared algorithm ---------------------------------------------------------------

    def reading(self):
        """A context the search's statements run in (a backend may set planner options)."""
        return contextlib.nullcontext()

    def search(self, query: str | Query, limit: int = 10, offset: int = 0) -> SearchResults:
        """Hits offset to offset + limit, best first, and the count (limit 0: the count only)."""
        parsed = query if isinstance(query, Query) else self.parse(query)
        results = SearchResults(parsed)
        if parsed.lists_sites:
            with self.reading():
                return self._list(parsed, results, limit, offset)
        if parsed.empty:
            return results
        with self.reading():
            return self._search(parsed, results, limit, offset)

    def _list(self, parsed: Query, results: SearchResults, limit: int, offset: int) -> SearchResults:
        """site: and no words: the sites' pages by URL, matched by the same site tokens as
        a search with words (a host and its subdomains), each with its content's start."""
        cap = settings.CRAWLER_SEARCH_COUNT_LIMIT
        results.order = "url"
        results.total = self.count(parsed, False, cap)
        results.total_is_lower_bound = results.total >= cap
        if not results.total or offset >= results.total or limit <= 0:
            return results
        shown = self.listed(parsed, limit, offset)
        results.hits = [SearchHit(c.document_id, c.url, c.title, snippet, 0.0, c.fetched_at)
                        for c, snippet in zip(shown, self.snippets(shown, parsed))]
        return results

    def _search(self, parsed: Query, results: SearchResults, limit: int, offset: int) -> SearchResults:
        cap = settings.CRAWLER_SEARCH_COUNT_LIMIT
        total = self.count(parsed, False, cap)
        if not total and len(parsed.terms) + len(parsed.phrases) > 1:
            total = self.count(parsed, True, cap)
            results.any_word = bool(total)
        results.total, results.total_is_lower_bound = total, total >= cap
        if not total or offset >= total or limit <= 0:  # limit 0: the count only
            return results
        stats = self.corpus_stats()
        weights = ranking.Weights.from_settings()
        scored = parsed.scored_terms
        terms = [term for term, _ in scored]
        dfs = self.cached_document_frequencies(terms, cap)
        idfs = [ranking.idf(df, max(stats.documents, df)) * weight for df, (_, weight) in zip(dfs, scored)]
        pool = max(settings.CRAWLER_SEARCH_CANDIDATES, offset + limit)
        typed = len(parsed.typed_terms)  # the parts of identifiers weigh in the short group only
        found = self.candidates(parsed, results.any_word, pool, total < min(pool, cap), terms[:typed], idfs[:typed],
                                stats, weights)
        for candidate in found:
            fields = ranking.ShortFields.of(candidate.title, candidate.url, candidate.language)
            candidate.score = ranking.short_score(fields, terms, idfs, stats, weights) + candidate.long_score
        found.sort(key=lambda c: (-c.score, c.document_id))
        self._lift_typed_phrase(parsed, found, sum(idfs[:typed]))
        shown = found[offset:offset + limit]
        results.hits = [SearchHit(c.document_id, c.url, c.title, snippet, c.score, c.fetched_at)
                        for c, snippet in zip(shown, self.snippets(shown, parsed))]
        return results
