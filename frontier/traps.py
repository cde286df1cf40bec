"""Traps that stop themselves: a URL pattern whose pages stopped bringing new text.

A crawler trap (an endless calendar, relative links that nest ever deeper, a faceted search
with every filter combination) makes URLs without end, and its pages say nothing new: the
same template, a date or a path changed. Fixed limits (depth, the per-host quota, repeated
segments in frontier/filters.py) stop it late; this stops it by what it yields.

A URL's pattern is its origin and the shape of its path: digit runs abstracted to `#`, the
first two segments kept and anything deeper folded into `…`, a query into `?…`
(`/cal/2026/05/` and `/cal/1999/12/` are one pattern, `/deep/other/deep/…` another).
Every stored page counts for its pattern (UrlPattern): one page more, and one new page if
it was indexed (not an exact or near duplicate, not noindex). Once a pattern has
CRAWLER_TRAP_MIN_PAGES pages and at most CRAWLER_TRAP_MAX_YIELD of them were new, it is
stopped: its queued URLs are set aside (state `excluded`, outcome `trap_pattern`) and no
more of its URLs are admitted (rejection `trap_pattern`), in every process within
STOPPED_RECHECK_SECONDS. An operator resumes a pattern in the admin: its URLs are queued
again and it is never stopped again.

Cost: one UPSERT per writer batch for the batch's few patterns; nothing per link but a
set lookup.
"""

import hashlib
import re
import threading
import time

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from .models import Host, Url, UrlPattern, UrlState
from .normalize import NormalUrl, origin_of

_DIGITS = re.compile(r"\d+")
STOPPED_RECHECK_SECONDS = 5.0
TRAP_OUTCOME = "trap_pattern"
_PATTERNS = UrlPattern._meta.db_table


def pattern_of(url: str) -> str:
    """The pattern of a URL in the frontier's form."""
    origin = origin_of(url)
    rest = url[len(origin):]
    path, question, _ = rest.partition("?")
    segments = [_DIGITS.sub("#", s) for s in path.split("/")[1:]]
    shape = "/" + "/".join(segments[:2]) + ("/…" if len(segments) > 2 else "")
    return origin + shape + ("?…" if question else "")


def pattern_key(pattern: str) -> int:
    return int.from_bytes(hashlib.blake2b(pattern.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big",
                          signed=True)


# --- admission: is the URL's pattern stopped? ------------------------------------------------

_lock = threading.Lock()
_stopped: tuple[float, frozenset] = (0.0, frozenset())


def stopped(url: NormalUrl) -> bool:
    keys = _stopped_keys()
    return bool(keys) and pattern_key(pattern_of(url.url)) in keys


def url_stopped(url: str) -> bool:
    """stopped() for a URL in the frontier's form, from this process's last look at the
    stopped patterns (no query: fetch threads call it, and they keep no database
    connection; admission, in the writer, refreshes the look)."""
    keys = _stopped[1]
    return bool(keys) and pattern_key(pattern_of(url)) in keys


def _stopped_keys() -> frozenset:
    global _stopped
    checked_at, keys = _stopped
    if time.monotonic() - checked_at < STOPPED_RECHECK_SECONDS:
        return keys
    with _lock:
        keys = frozenset(UrlPattern.objects.filter(stopped_at__isnull=False).values_list("key", flat=True))
        _stopped = (time.monotonic(), keys)
    return keys


def forget_stopped() -> None:
    global _stopped
    _stopped = (0.0, frozenset())


# --- the yield of stored pages ----------------------------------------------------------------

def count_yield(pages: list[tuple[str, bool]]) -> list[str]:
    """Count stored pages, (url, new text?) each, for their patterns; stop the patterns
    whose yield collapsed. Returns the patterns stopped now."""
    if not pages or not settings.CRAWLER_TRAP_MIN_PAGES:
        return []
    counts: dict[str, list[int]] = {}
    for url, new in pages:
        count = counts.setdefault(pattern_of(url), [0, 0])
        count[0] += 1
        count[1] += int(new)
    rows = sorted((pattern_key(p), p, n, new) for p, (n, new) in counts.items())  # key order: no deadlocks
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    with connection.cursor() as cursor:
        cursor.executemany(
            f"""INSERT INTO {_PATTERNS} (key, pattern, pages, new_pages, allowed, created_at)
                VALUES (%s, %s, %s, %s, %s, %s)
                ON CONFLICT (key) DO UPDATE SET pages = {_PATTERNS}.pages + excluded.pages,
                    new_pages = {_PATTERNS}.new_pages + excluded.new_pages""",
            [(key, pattern, n, new, False, now) for key, pattern, n, new in rows])
    collapsed = list(UrlPattern.objects.filter(
        key__in=[row[0] for row in rows], stopped_at__isnull=True, allowed=False,
        pages__gte=settings.CRAWLER_TRAP_MIN_PAGES).values_list("key", "pattern", "pages", "new_pages"))
    stopped_now = [pattern for key, pattern, n, new in collapsed if new <= settings.CRAWLER_TRAP_MAX_YIELD * n]
    for pattern in stopped_now:
        stop(pattern)
    return stopped_now


def stop(pattern: str) -> int:
    """Stop a pattern: its queued URLs set aside; returns how many."""
    with transaction.atomic():
        UrlPattern.objects.filter(key=pattern_key(pattern), stopped_at__isnull=True).update(stopped_at=timezone.now())
        ids = _queued_ids(pattern, UrlState.QUEUED)
        if ids:
            Url.objects.filter(id__in=ids, state=UrlState.QUEUED).update(state=UrlState.EXCLUDED,
                                                                         outcome=TRAP_OUTCOME)
    forget_stopped()
    return len(ids)


def resume(pattern: str) -> int:
    """An operator's word: the pattern is not a trap. Its set-aside URLs are queued again
    and it is never stopped again; returns how many URLs."""
    with transaction.atomic():
        UrlPattern.objects.filter(key=pattern_key(pattern)).update(stopped_at=None, allowed=True)
        ids = _queued_ids(pattern, UrlState.EXCLUDED)
        if ids:
            Url.objects.filter(id__in=ids, state=UrlState.EXCLUDED, outcome=TRAP_OUTCOME).update(
                state=UrlState.QUEUED, outcome="", next_fetch_at=timezone.now())
    forget_stopped()
    return len(ids)


def _queued_ids(pattern: str, state: str) -> list[int]:
    host = Host.objects.filter(origin=origin_of(pattern)).values_list("id", flat=True).first()
    if host is None:
        return []
    rows = Url.objects.filter(host_id=host, state=state).values_list("id", "url").iterator(chunk_size=5000)
    return [url_id for url_id, url in rows if pattern_of(url) == pattern]
