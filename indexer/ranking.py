"""The ranking formula, one for every backend: two-group BM25F.

For each query term t (a word, an identifier's whole token, and each part of a queried
identifier at weight w_t = CRAWLER_SEARCH_PART_WEIGHT, in the title group only):

    score(d) = Σ_t w_t · idf(t) · ( W_title · sat(short_t) + sat(long_t) )

    short_t = tf_title / norm(title) + W_url · tf_url / norm(url)
    long_t  = (W_headings · tf_headings + tf_body) / norm(headings + body)
    norm(f) = 1 − b + b · len(f) / avglen(f)          (BM25 length normalisation)
    sat(x)  = x · (k1 + 1) / (k1 + x)                  (BM25 saturation)
    idf(t)  = ln(1 + (N − df + 0.5) / (df + 0.5))

Fields are combined before saturation within a group (BM25F: a word twice in the title is
not worth twice once), and the short group (title, URL path words) saturates apart from the
long one (headings, body): a page whose title names the term gains on top of its text, so a
table of contents that mentions a function once does not outrank the function's own page.
Every W, k1 and b is a setting (CRAWLER_SEARCH_*). On SQLite the long group is FTS5's own
bm25() over the headings and body columns, the same formula with FTS5's idf.
"""

import math
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings

from .analyzer import stemmer_language, tokens
from .query import Term

STRIP_EXTENSIONS = (".html", ".htm", ".php", ".asp", ".aspx", ".jsp", ".shtml")


@dataclass(frozen=True)
class CorpusStats:
    documents: int
    avg_title: float
    avg_url: float
    avg_long: float


@dataclass(frozen=True)
class Weights:
    title: float
    url: float
    headings: float
    k1: float
    b: float

    @classmethod
    def from_settings(cls) -> "Weights":
        return cls(settings.CRAWLER_SEARCH_TITLE_WEIGHT, settings.CRAWLER_SEARCH_URL_WEIGHT,
                   settings.CRAWLER_SEARCH_HEADINGS_WEIGHT, settings.CRAWLER_SEARCH_K1, settings.CRAWLER_SEARCH_B)


def url_words(url: str) -> str:
    """The words of a URL's path (the host is matched by site:, not scored)."""
    path = url.split("://", 1)[-1].partition("/")[2].split("?")[0].split("#")[0]
    for extension in STRIP_EXTENSIONS:
        if path.endswith(extension):
            path = path[: -len(extension)]
    return path.replace("/", " ").replace(".", " ")


def idf(df: int, documents: int) -> float:
    return math.log(1 + (documents - df + 0.5) / (df + 0.5))


def saturate(x: float, k1: float) -> float:
    return x * (k1 + 1) / (k1 + x) if x > 0 else 0.0


def norm(length: int, average: float, b: float) -> float:
    return 1 - b + b * length / average if average > 0 else 1.0


def term_frequency(term: Term, counts: Counter, analysis: str = "en") -> int:
    """Occurrences of a term's tokens in a page of this analysis (its language's stemmer)."""
    return sum(counts.get(token, 0) for token in term.matching_in(analysis))


@dataclass
class ShortFields:
    """A candidate's title and URL, analyzed at query time (a few dozen tokens)."""

    title: list[str]
    url: list[str]
    analysis: str = "en"  # the page's (indexer.analyzer.stemmer_language)

    @classmethod
    def of(cls, title: str, url: str, language: str = "en") -> "ShortFields":
        """Analysed in the page's language, as its index row was."""
        return _short_fields(title, url, language)


@lru_cache(maxsize=50_000)  # the pages that rank for something rank again
def _short_fields(title: str, url: str, language: str) -> ShortFields:
    return ShortFields(tokens(title, language), tokens(url_words(url), language), stemmer_language(language))


def short_score(fields: ShortFields, terms: list[Term], idfs: list[float], stats: CorpusStats, w: Weights) -> float:
    title_norm = norm(len(fields.title), stats.avg_title, w.b)
    url_norm = norm(len(fields.url), stats.avg_url, w.b)
    title_counts, url_counts = Counter(fields.title), Counter(fields.url)
    score = 0.0
    for term, term_idf in zip(terms, idfs):
        tf_title = term_frequency(term, title_counts, fields.analysis)
        tf_url = term_frequency(term, url_counts, fields.analysis)
        score += term_idf * w.title * saturate(tf_title / title_norm + w.url * tf_url / url_norm, w.k1)
    return score


def long_score(tf_headings: list[float], tf_body: list[float], long_length: int, idfs: list[float],
               stats: CorpusStats, w: Weights) -> float:
    long_norm = norm(long_length, stats.avg_long, w.b)
    return sum(term_idf * saturate((w.headings * h + b) / long_norm, w.k1)
               for h, b, term_idf in zip(tf_headings, tf_body, idfs))
