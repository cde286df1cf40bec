"""Links from other hosts, gathered in this process and counted in the database a few
batches at a time (frontier/importance.py says what they are worth).

Admission finds, in every batch of links, URLs it knows linked from a host not counted
for them yet (a URL's score rises), and hosts linked from a host not counted for them yet
(a host's standing rises). Sent with each batch, that was two statements a batch, each
for a few dozen rows. Here they wait until CRAWLER_INLINK_FLUSH_SECONDS have passed since
the oldest, or CRAWLER_INLINK_FLUSH_PAIRS are waiting, and go in one statement each: a URL
linked from several hosts meanwhile is written once. (Measured: a sixth of the statements,
about the same time in them: the rows are the cost, docs/benchmarks.md, 2026-12-06.)

The price, stated: a score rises up to CRAWLER_INLINK_FLUSH_SECONDS late (a link itself
is admitted at once; only the points wait), and what a process holds when it dies
without stopping is not counted (a score is a hint: the pages are fetched all the same).
A process that stops flushes (crawl/writer.py, when it closes).
"""

import threading
import time

from django.conf import settings


class PendingInlinks:
    """Referring hosts not sent yet: {url_key: their bits (importance.referrer_mask)} of
    known URLs, and {(origin, referring origin)} of hosts. Thread-safe; `take` hands
    everything over at once, so two flushes never send the same pair."""

    def __init__(self):
        self._lock = threading.Lock()
        self._masks: dict[int, int] = {}
        self._site_pairs: set[tuple[str, str]] = set()
        self._oldest: float | None = None

    def add(self, masks: dict[int, int], site_pairs: set[tuple[str, str]]) -> None:
        if not masks and not site_pairs:
            return
        with self._lock:
            for key, mask in masks.items():
                self._masks[key] = self._masks.get(key, 0) | mask
            self._site_pairs |= site_pairs
            if self._oldest is None:
                self._oldest = time.monotonic()

    def __len__(self) -> int:
        return len(self._masks) + len(self._site_pairs)

    def due(self) -> bool:
        oldest = self._oldest
        return oldest is not None and (
            time.monotonic() - oldest >= settings.CRAWLER_INLINK_FLUSH_SECONDS
            or len(self) >= settings.CRAWLER_INLINK_FLUSH_PAIRS)

    def take(self) -> tuple[dict[int, int], set[tuple[str, str]]]:
        with self._lock:
            taken = self._masks, self._site_pairs
            self._masks, self._site_pairs, self._oldest = {}, set(), None
        return taken

    def clear(self) -> None:
        self.take()
