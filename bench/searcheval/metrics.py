"""Scoring a search function on known-item queries: MRR@10, success@1 and @10, empty
results, latency, and MRR per query kind.

Plain functions on purpose: evaluate(queries, search_fn) takes any search_fn(query) ->
ranked URLs, so the same code scores our backends in-process, the baselines' precomputed
rankings, and a deliberately broken ranking in the tests.

A hit is right when it is the target page: both URLs are compared with the fragment
dropped and "dir/index.html" read as "dir/" (the crawler keeps the URL it fetched, and a
site's "/" and "/index.html" are one page; frontier/normalize.py canonicalizes the rest the
same way for both, as the crawled URLs and the targets come from the same server).

Latency: the wall time of each search_fn call, timed in a second pass after a warm-up pass
over every query (caches and the database's pages are warm, as on a live site).
"""
from __future__ import annotations

import math
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

K = 10


@dataclass(frozen=True)
class Query:
    text: str
    target: str  # the target page's URL
    kind: str = "words"


@dataclass(frozen=True)
class Outcome:
    query: Query
    urls: tuple[str, ...]  # what the search returned, best first
    seconds: float | None = None  # the timed call's wall time


@dataclass
class Metrics:
    queries: int
    mrr: float  # mean reciprocal rank of the target within the first K hits (0 if absent)
    success_at_1: float
    success_at_10: float
    no_result: int  # queries with an empty result
    latency_ms_median: float | None
    latency_ms_p95: float | None
    mrr_by_kind: dict = field(default_factory=dict)  # kind -> {"queries", "mrr"}

    def as_dict(self) -> dict:
        return {
            "queries": self.queries, "mrr_at_10": round(self.mrr, 4), "success_at_1": round(self.success_at_1, 4),
            "success_at_10": round(self.success_at_10, 4), "no_result": self.no_result,
            "latency_ms_median": _round(self.latency_ms_median), "latency_ms_p95": _round(self.latency_ms_p95),
            "mrr_by_kind": self.mrr_by_kind,
        }


def _round(value):
    return None if value is None else round(value, 2)


def page_key(url: str) -> str:
    """A URL in the form hits and targets are compared in (module docstring)."""
    split = urlsplit(url)
    path = split.path or "/"
    if path.endswith("/index.html"):
        path = path[: -len("index.html")]
    return urlunsplit((split.scheme.lower(), split.netloc.lower(), path, split.query, ""))


def rank_of(urls, target: str, k: int = K) -> int | None:
    """1-based rank of the target among the first k URLs, or None."""
    wanted = page_key(target)
    for rank, url in enumerate(list(urls)[:k], start=1):
        if page_key(url) == wanted:
            return rank
    return None


def run_queries(queries: list[Query], search_fn, warmup: bool = True) -> list[Outcome]:
    """Each query's ranked URLs and the wall time of its (timed) search_fn call."""
    if warmup:
        for query in queries:
            list(search_fn(query.text))
    outcomes = []
    for query in queries:
        start = time.perf_counter()
        urls = tuple(search_fn(query.text))
        outcomes.append(Outcome(query, urls, time.perf_counter() - start))
    return outcomes


def percentile(values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile (fraction 0.95 = p95); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def score(outcomes: list[Outcome], k: int = K) -> Metrics:
    """The metrics of a list of outcomes (each query once)."""
    n = len(outcomes)
    ranks = [rank_of(o.urls, o.query.target, k) for o in outcomes]
    reciprocal = [1.0 / r if r else 0.0 for r in ranks]
    by_kind = defaultdict(list)
    for outcome, rr in zip(outcomes, reciprocal, strict=True):
        by_kind[outcome.query.kind].append(rr)
    times = [o.seconds * 1000 for o in outcomes if o.seconds is not None]
    return Metrics(
        queries=n,
        mrr=sum(reciprocal) / n if n else 0.0,
        success_at_1=sum(1 for r in ranks if r == 1) / n if n else 0.0,
        success_at_10=sum(1 for r in ranks if r) / n if n else 0.0,
        no_result=sum(1 for o in outcomes if not o.urls),
        latency_ms_median=statistics.median(times) if times else None,
        latency_ms_p95=percentile(times, 0.95),
        mrr_by_kind={kind: {"queries": len(v), "mrr": round(sum(v) / len(v), 4)} for kind, v in sorted(by_kind.items())},
    )


def evaluate(queries: list[Query], search_fn, warmup: bool = True, k: int = K) -> Metrics:
    """Run every query through search_fn(text) -> ranked URLs and score the result."""
    return score(run_queries(queries, search_fn, warmup), k)
