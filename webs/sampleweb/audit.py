"""Politeness and completeness audit of a sample-web request log.

Why: the server logs every request with its start and end time, so a crawl
can be judged afterwards, from the outside, without trusting the crawler:
did it overlap requests to one host, keep the per-host gap (Crawl-delay or
the default), wait Retry-After after a 429/503, obey robots.txt, fetch each
page once, and fetch exactly the ground truth?

Log line format (written by server.py):
    start_ts \t end_ts \t netloc \t method \t path \t status \t connection \n
(older logs have no connection column).

Besides the violations it reports how a crawler paces hosts: TCP connections per host
and the most a host had open at once, and each gap between two requests to a host
divided by the gap that host asks for (its Crawl-delay, else `default_delay`): 1.0 is a
host crawled exactly as fast as allowed.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import NamedTuple

RETRY_STATUSES = (429, 503)


class Entry(NamedTuple):
    start: float
    end: float
    netloc: str
    method: str
    path: str
    status: int
    connection: int = 0

    @property
    def url(self) -> str:
        return f"http://{self.netloc}{self.path}"

    @property
    def is_robots(self) -> bool:
        return self.path == "/robots.txt"

    @property
    def is_sitemap_guess(self) -> bool:
        """/sitemap.xml, which a crawler may ask of a host whose robots.txt names no
        sitemap (the sample web has none): like robots.txt, not a page."""
        return self.path == "/sitemap.xml"


def read_log(log_path) -> list[Entry]:
    """Parse the log; malformed lines (e.g. a torn last line) are skipped."""
    entries = []
    with open(log_path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            fields = line.rstrip("\n").split("\t")
            if len(fields) not in (6, 7):
                continue
            try:
                entries.append(Entry(float(fields[0]), float(fields[1]), fields[2],
                                     fields[3], fields[4], int(fields[5]),
                                     int(fields[6]) if len(fields) == 7 else 0))
            except ValueError:
                continue
    return entries


def _max_overlap(entries: list[Entry]) -> int:
    """Max number of simultaneously open [start, end] intervals.

    Ends sort before starts at equal times: touching intervals don't overlap.
    """
    events = sorted([(e.start, 1) for e in entries] + [(e.end, -1) for e in entries])
    current = best = 0
    for _, delta in events:
        current += delta
        best = max(best, current)
    return best


def audit_log(log_path, web, default_delay: float, tolerance: float = 0.005,
              depth_limit: int = 20, max_redirects: int = 3, scope: str = "web") -> dict:
    """Audit the log at `log_path` against `web` (a SampleWeb); see module doc."""
    entries = read_log(log_path)
    by_host: dict[str, list[Entry]] = defaultdict(list)
    counts: Counter = Counter()
    retried: Counter = Counter()
    robots: Counter = Counter()
    sitemap_guesses = 0
    statuses: Counter = Counter()
    disallowed = set()
    for entry in entries:
        by_host[entry.netloc].append(entry)
        statuses[str(entry.status)] += 1
        if entry.is_robots:
            robots[entry.netloc] += 1
            continue
        if entry.is_sitemap_guess:
            sitemap_guesses += 1
            continue
        url = entry.url
        counts[url] += 1
        if entry.status in RETRY_STATUSES:
            retried[url] += 1            # the next request for it is legitimate
        if web.robots_disallowed(url):
            disallowed.add(url)

    duplicates = {url: n for url, n in sorted(counts.items()) if n - retried[url] > 1}
    max_in_flight = {}
    gaps = []
    ratios = []  # gap / required gap, for every host that asks for one
    retry_violations = []
    retry_after = float(web.config.retry_after)
    for netloc, host_entries in sorted(by_host.items()):
        host_entries.sort(key=lambda e: (e.start, e.end))
        max_in_flight[netloc] = _max_overlap(host_entries)
        delay = web.delay_for(netloc)
        required = delay if delay is not None else default_delay
        blocked_until = None
        for prev, cur in zip([None] + host_entries[:-1], host_entries):
            if prev is not None:
                gap = cur.start - prev.end
                if required > 0 and prev.status not in RETRY_STATUSES:
                    ratios.append(gap / required)
                if gap < required - tolerance:
                    gaps.append({"netloc": netloc, "prev_end": prev.end, "start": cur.start,
                                 "gap": round(gap, 6), "required": required,
                                 "path": cur.path})
            if blocked_until is not None and cur.start < blocked_until - tolerance:
                retry_violations.append({"netloc": netloc, "path": cur.path,
                                         "start": cur.start, "blocked_until": blocked_until})
            if cur.status in RETRY_STATUSES:
                until = cur.end + retry_after
                blocked_until = until if blocked_until is None else max(blocked_until, until)

    truth = web.ground_truth(depth_limit=depth_limit, max_redirects=max_redirects, scope=scope)
    fetched = set(counts)
    in_flight_violations = sum(1 for n in max_in_flight.values() if n > 1)
    first = min((e.start for e in entries), default=0.0)
    last = max((e.end for e in entries), default=0.0)
    return {
        "pacing": _pacing(by_host, ratios),
        "requests": len(entries),
        "fetched": sorted(fetched),
        "duplicate_fetches": duplicates,
        "robots_fetches": dict(sorted(robots.items())),
        "sitemap_guesses": sitemap_guesses,
        "robots_disallowed_fetched": sorted(disallowed),
        "max_in_flight": max_in_flight,
        "in_flight_violations": in_flight_violations,
        "gap_violations": gaps,
        "retry_after_violations": retry_violations,
        "missing": sorted(truth - fetched),
        "unexpected": sorted(fetched - truth),
        "violations": (in_flight_violations + len(gaps) + len(retry_violations)
                       + len(disallowed)),
        "status_counts": dict(sorted(statuses.items())),
        "elapsed": round(last - first, 6),
    }


def _pacing(by_host: dict[str, list[Entry]], ratios: list[float]) -> dict:
    """Connections per host (distinct connection serials), the most open at once to one
    host (a connection lives from its first request's start to its last one's end), and
    the median and 90th percentile of gap / required gap."""
    connections, parallel = [], 0
    for entries in by_host.values():
        lives: dict[int, list[float]] = {}
        for e in entries:
            if e.connection:
                life = lives.setdefault(e.connection, [e.start, e.end])
                life[0], life[1] = min(life[0], e.start), max(life[1], e.end)
        if lives:
            connections.append(len(lives))
            events = sorted([(a, 1) for a, _ in lives.values()] + [(b, -1) for _, b in lives.values()])
            current = 0
            for _, delta in events:
                current += delta
                parallel = max(parallel, current)
    ratios = sorted(ratios)

    def quantile(q: float):
        return round(ratios[min(len(ratios) - 1, int(q * len(ratios)))], 3) if ratios else None

    return {
        "connections_per_host": round(sum(connections) / len(connections), 2) if connections else None,
        "max_connections_per_host": max(connections, default=None),
        "max_parallel_connections_per_host": parallel if connections else None,
        "median_gap_ratio": quantile(0.5),
        "p90_gap_ratio": quantile(0.9),
    }
