"""The Geminispace's request log, read back, and the politeness audit of a crawl.

Why from the server's log: a crawl is judged from the outside, without trusting the
crawler, as webs/sampleweb/audit.py does for the web. A Gemini request is a connection,
so an entry lives from the TCP accept (before the TLS handshake) to the moment the answer
was handed to the kernel; a polite crawler that waits `delay` from reading the end of one
answer to connecting again leaves a gap of at least `delay` in this log.

Violations, per capsule (its netloc), in start order, on monotonic times:
- overlap: a connection accepted before an earlier one to the capsule has ended;
- gap: a connection accepted less than the required delay after the previous one ended
  (the required delay: the capsule's robots.txt Crawl-delay when it has one and the space
  is given, else `delay`, the crawler's default delay: as the sample web's audit);
- slow down: a connection accepted before the seconds of a 44 SLOW DOWN have passed since
  that answer ended;
- robots: a page fetched that robots.txt disallows (if the space is given).
`tolerance` (5 ms) absorbs the log's rounding and the kernel's scheduling.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import NamedTuple
from urllib.parse import urlsplit

from .model import DEFAULT_AGENTS

TEMPORARY = ("40", "41", "42", "43", "44")  # a crawler may ask again after these


class Entry(NamedTuple):
    start: float        # time.time() at the accept
    end: float          # time.time() when the answer was handed to the kernel
    start_mono: float   # time.monotonic(), the same instants
    end_mono: float
    capsule: str        # the capsule's netloc (address:port)
    client: str         # address:port of the client
    sni: str            # the server name the client sent, "-" if none
    status: str         # "20", "44", "xx", ...; "-" without a header
    meta: str
    request: str        # the request line as received, "-" if none

    @property
    def path(self) -> str:
        if self.request == "-":
            return "-"
        try:
            return urlsplit(self.request).path or "/"
        except ValueError:
            return "-"

    @property
    def is_robots(self) -> bool:
        return self.path == "/robots.txt"


def read_log(path) -> list[Entry]:
    """Every well-formed line of the log (a torn last line is skipped)."""
    entries = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 10:
                continue
            try:
                entries.append(Entry(float(fields[0]), float(fields[1]), float(fields[2]), float(fields[3]),
                                     *fields[4:]))
            except ValueError:
                continue
    return entries


def _seconds(meta: str) -> float:
    try:
        return float(meta.split()[0])
    except (ValueError, IndexError):
        return 0.0


def audit(entries: list[Entry], delay: float = 0.0, *, space=None, agents=DEFAULT_AGENTS,
          star: str = "fallback", tolerance: float = 0.005, depth_limit: int = 20) -> dict:
    """The audit of a crawl's log entries (module docstring). With the space (a
    GeminiSpace) it also compares what was fetched with space.reachable()."""
    by_capsule: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        by_capsule[entry.capsule].append(entry)
    overlaps, gaps, slow_downs = [], [], []
    for capsule, items in sorted(by_capsule.items()):
        items.sort(key=lambda e: (e.start_mono, e.end_mono))
        required = delay
        if space is not None:
            # A capsule's Crawl-delay is the gap it asks for, in place of the crawler's
            # default delay (as the sample web's audit holds a host's Crawl-delay).
            index = space.capsule_of("gemini://" + capsule + "/")
            crawl_delay = space.crawl_delay(index, agents, star) if index is not None else None
            required = crawl_delay if crawl_delay is not None else delay
        last_end = None
        blocked_until = None
        for entry in items:
            if last_end is not None:
                if entry.start_mono < last_end - tolerance:
                    overlaps.append(entry)
                elif entry.start_mono - last_end < required - tolerance:
                    gaps.append((entry, round(entry.start_mono - last_end, 6), required))
            if blocked_until is not None and entry.start_mono < blocked_until - tolerance:
                slow_downs.append(entry)
            if entry.status == "44":
                blocked_until = max(blocked_until or 0.0, entry.end_mono + _seconds(entry.meta))
            last_end = entry.end_mono if last_end is None else max(last_end, entry.end_mono)

    fetched: Counter = Counter()
    retried: Counter = Counter()
    robots: Counter = Counter()
    for entry in entries:
        if entry.request == "-":
            continue
        if entry.is_robots:
            robots[entry.capsule] += 1
            continue
        fetched[entry.request] += 1
        if entry.status in TEMPORARY:
            retried[entry.request] += 1
    report = {
        "requests": len(entries),
        "capsules": len(by_capsule),
        "overlaps": [e._asdict() for e in overlaps],
        "gap_violations": [{"entry": e._asdict(), "gap": gap, "required": req} for e, gap, req in gaps],
        "slow_down_violations": [e._asdict() for e in slow_downs],
        "duplicate_fetches": {url: n for url, n in sorted(fetched.items()) if n - retried[url] > 1},
        "robots_fetches": dict(sorted(robots.items())),
        "fetched": sorted(fetched),
        "status_counts": dict(sorted(Counter(e.status for e in entries).items())),
    }
    disallowed = []
    if space is not None:
        disallowed = sorted(url for url in fetched if not space.allowed(url, agents, star))
        truth = space.reachable(agents, star, depth_limit)
        report["missing"] = sorted(truth - set(fetched))
        report["unexpected"] = sorted(set(fetched) - truth)
    report["robots_disallowed_fetched"] = disallowed
    report["violations"] = len(overlaps) + len(gaps) + len(slow_downs) + len(disallowed)
    return report


def audit_log(path, delay: float = 0.0, **options) -> dict:
    """audit() of the log file at `path`."""
    return audit(read_log(path), delay, **options)


def count_violations(path, delay: float = 0.0, **options) -> int:
    """How many politeness violations the log at `path` shows (audit()'s "violations")."""
    return audit_log(path, delay, **options)["violations"]
