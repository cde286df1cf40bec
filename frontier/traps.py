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
stopped. A host that has shown one trap is watched more closely: its other patterns are
judged after a quarter of those pages (at least SUSPECT_MIN_PAGES), at once when the first
trap is stopped and then as their pages are stored, as a trap host tends to make several
(an endless calendar and ever-deeper relative links, each its own pattern).
A stopped pattern: its queued URLs are set aside (state `excluded`, outcome
`trap_pattern`) and no more of its URLs are admitted (rejection `trap_pattern`). An
operator resumes a pattern in the admin: its URLs are queued again and it is never stopped
again.

Mirrors: a host counts as a pattern of its own (the pattern is the bare origin), where a
page is "new" unless it is a copy (exact or near duplicate) of a page of ANOTHER host, or
another host's page turned out to be a copy of it (both hosts share that text: counting
only the later copy, a mirror crawled at the same pace as its original holds half the
originals and neither host ever reaches the share). Once a host has
CRAWLER_MIRROR_MIN_PAGES pages stored and at least CRAWLER_MIRROR_MIN_SHARE of them were
shared with other hosts, the whole host is stopped the same way (outcome and rejection
`mirror_host`) — unless it is the one the crawl found first of the two (the lower host id):
that one is the original. A mirror costs a few fetches, not a crawl. Copies within one
host (`/` and `/index.html`) do not count: that host is not a mirror.

A stop takes effect in the process that made it at once (its fetch threads skip the
pattern's URLs from their next request), in the others within STOPPED_RECHECK_SECONDS.

Cost: one UPSERT per writer batch for the batch's few patterns; per link, while anything is
stopped, a set lookup of its origin and a hash of its pattern.
"""

import hashlib
import re
import threading
import time

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from common.bulksql import arrays

from . import idle, instate
from .models import Host, Url, UrlPattern, UrlState
from .normalize import NormalUrl, origin_of

_DIGITS = re.compile(r"\d+")
STOPPED_RECHECK_SECONDS = 5.0
SUSPECT_MIN_PAGES = 3  # the least a pattern needs on a host that has shown a trap
TRAP_OUTCOME = "trap_pattern"
MIRROR_OUTCOME = "mirror_host"
_PATTERNS = UrlPattern._meta.db_table


def pattern_of(url: str) -> str:
    """The pattern of a URL in the frontier's form."""
    origin = origin_of(url)
    rest = url[len(origin):]
    path, question, _ = rest.partition("?")
    segments = [_DIGITS.sub("#", s) for s in path.split("/")[1:]]
    shape = "/" + "/".join(segments[:2]) + ("/…" if len(segments) > 2 else "")
    return origin + shape + ("?…" if question else "")


def is_host_pattern(pattern: str) -> bool:
    """A host's own row (its mirror count): the bare origin, where a path pattern has a path."""
    return "/" not in pattern.partition("//")[2]


def pattern_key(pattern: str) -> int:
    return int.from_bytes(hashlib.blake2b(pattern.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big",
                          signed=True)


# --- admission: is the URL's pattern stopped? ------------------------------------------------

_lock = threading.Lock()
# This process's look at what is stopped: (when, the patterns' keys, the origins with a
# stopped pattern, the origins stopped as mirrors).
_stopped: tuple[float, frozenset, frozenset, frozenset] = (0.0, frozenset(), frozenset(), frozenset())


def stopped(url: NormalUrl) -> str | None:
    """Why the URL is not admitted (its host a mirror, its pattern a trap), or None."""
    _stopped_keys()
    return _reason(url.url)


def pattern_stopped(url: str) -> str | None:
    """stopped() for a URL in the frontier's form, from this process's last look at the
    stopped patterns (no query: fetch threads call it, and they keep no database
    connection; admission, in the writer, refreshes the look)."""
    return _reason(url)


def _reason(url: str) -> str | None:
    _, keys, _, mirrors = _stopped
    if not keys:
        return None
    if mirrors and origin_of(url) in mirrors:
        return MIRROR_OUTCOME
    return TRAP_OUTCOME if pattern_key(pattern_of(url)) in keys else None


def _stopped_keys() -> frozenset:
    global _stopped
    if time.monotonic() - _stopped[0] < STOPPED_RECHECK_SECONDS:
        return _stopped[1]
    with _lock:
        rows = list(UrlPattern.objects.filter(stopped_at__isnull=False).values_list("key", "pattern"))
        _stopped = (time.monotonic(), frozenset(key for key, _ in rows),
                    frozenset(origin_of(p) for _, p in rows if not is_host_pattern(p)),
                    frozenset(p for _, p in rows if is_host_pattern(p)))
    return _stopped[1]


def forget_stopped() -> None:
    global _stopped
    _stopped = (0.0, frozenset(), frozenset(), frozenset())


def _note(pattern: str, is_stopped: bool) -> None:
    """This process's look updated at once (the next periodic look reads the table again)."""
    global _stopped
    key = pattern_key(pattern)
    with _lock:
        checked_at, keys, trapped, mirrors = _stopped
        if not is_stopped:
            keys, mirrors = keys - {key}, mirrors - {pattern}
        elif is_host_pattern(pattern):
            keys, mirrors = keys | {key}, mirrors | {pattern}
        else:
            keys, trapped = keys | {key}, trapped | {origin_of(pattern)}
        _stopped = (checked_at, keys, trapped, mirrors)


# --- the yield of stored pages ----------------------------------------------------------------

def count_pattern_yield(pages: list[tuple[str, bool, str]]) -> list[str]:
    """Count stored pages, (url, new text?, the origin of another host's page it copies, or
    "") each, for their patterns and their hosts; stop the patterns whose yield collapsed
    and the hosts that are mirrors. Returns the patterns stopped now."""
    if not pages:
        return []
    counts: dict[str, list[int]] = {}
    partners: dict[str, str] = {}  # host <-> the other host it shares a text with, in this batch
    for url, new, copied_from in pages:
        if settings.CRAWLER_TRAP_MIN_PAGES:
            count = counts.setdefault(pattern_of(url), [0, 0])
            count[0] += 1
            count[1] += int(new)
        if settings.CRAWLER_MIRROR_MIN_PAGES:
            origin = origin_of(url)
            count = counts.setdefault(origin, [0, 0])
            count[0] += 1
            count[1] += int(not copied_from)
            if copied_from:
                # The original's page is no longer its own either: a mirror crawled at the
                # same pace as its original would otherwise hold half the originals, and
                # neither host would reach the share.
                counts.setdefault(copied_from, [0, 0])[1] -= 1
                partners[origin], partners[copied_from] = copied_from, origin
    if not counts:
        return []
    rows = sorted((pattern_key(p), p, n, new) for p, (n, new) in counts.items())  # key order: no deadlocks
    _add_counts(rows)
    least = min(n for n in (_suspect_min_pages(), settings.CRAWLER_MIRROR_MIN_PAGES) if n)
    candidates = UrlPattern.objects.filter(key__in=[row[0] for row in rows], stopped_at__isnull=True, allowed=False,
                                           pages__gte=least).values_list("pattern", "pages", "new_pages")
    _stopped_keys()  # a fresh look at which hosts have a trap
    collapsed = [pattern for pattern, n, new in candidates if _collapsed(pattern, n, new)]
    stopped_now = [p for p in collapsed if not is_host_pattern(p)] + _mirrors(
        [p for p in collapsed if is_host_pattern(p)], partners)
    for pattern in stopped_now:
        stop(pattern)
    # A host that has just shown a trap: its other patterns are judged now, by the closer
    # measure, not when their next page happens to be stored.
    for origin in {origin_of(p) for p in stopped_now if not is_host_pattern(p)}:
        for pattern, n, new in _open_patterns_of(origin):
            if _collapsed(pattern, n, new):
                stop(pattern)
                stopped_now.append(pattern)
    return stopped_now


def _add_counts(rows: list[tuple[int, str, int, int]]) -> None:
    """Add (key, pattern, pages, new pages) to the patterns' counts, in key order; new pages
    may be negative (a host's page another host copies) and a count stays at 0 or more.
    On PostgreSQL one statement for the batch (a page stored brings two rows: its pattern
    and its host), and one more for the negative counts when the batch has any."""
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    # One transaction: the second statement's rows are locked by the first, in key order.
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        if connection.vendor != "postgresql":  # SQLite: one writer, and no array parameters
            cursor.executemany(
                f"""INSERT INTO {_PATTERNS} (key, pattern, pages, new_pages, allowed, created_at)
                    VALUES (%s, %s, %s, %s, %s, %s)
                    ON CONFLICT (key) DO UPDATE SET pages = {_PATTERNS}.pages + excluded.pages,
                        new_pages = MAX({_PATTERNS}.new_pages + %s, 0)""",
                [(key, pattern, n, max(new, 0), False, now, new) for key, pattern, n, new in rows])
            return
        cursor.execute(
            f"""INSERT INTO {_PATTERNS} AS p (key, pattern, pages, new_pages, allowed, created_at)
                SELECT key, pattern, pages, GREATEST(new_pages, 0), false, %s
                FROM unnest({arrays(UrlPattern, ("key", "pattern", "pages", "new_pages"))})
                    AS v(key, pattern, pages, new_pages)
                ORDER BY key
                ON CONFLICT (key) DO UPDATE SET pages = p.pages + excluded.pages,
                    new_pages = p.new_pages + excluded.new_pages""",
            [now, *(list(column) for column in zip(*rows))])
        fewer = [(key, new) for key, _, _, new in rows if new < 0]
        if fewer:
            cursor.execute(
                f"""UPDATE {_PATTERNS} p SET new_pages = GREATEST(p.new_pages + v.new_pages, 0)
                    FROM unnest({arrays(UrlPattern, ("key", "new_pages"))}) AS v(key, new_pages)
                    WHERE p.key = v.key""",
                [[key for key, _ in fewer], [new for _, new in fewer]])


def _mirrors(collapsed: list[str], partners: dict[str, str]) -> list[str]:
    """Which hosts to stop of those whose pages are mostly shared with other hosts, judged
    in a batch that shows whom they share with. Only ever the one of two the crawl found
    later (the higher host id), whichever stored the shared texts first: a host mostly
    shared with one found before it is its copy; a host found first is never stopped as
    the mirror of a later one — the later one is, once it is mostly shared too (a mirror
    crawled ahead of its original waits until the original's copies show it)."""
    known = [h for h in collapsed if h in partners]
    if not known:
        return []
    hosts = set(known) | {partners[h] for h in known}
    rows = {pattern: (n, new, stopped_at, allowed) for pattern, n, new, stopped_at, allowed in UrlPattern.objects.filter(
        key__in=[pattern_key(h) for h in hosts]).values_list("pattern", "pages", "new_pages", "stopped_at", "allowed")}
    found = dict(Host.objects.filter(origin__in=hosts).values_list("origin", "id"))
    mirrors = set()
    for host in known:
        partner = partners[host]
        n, new, stopped_at, allowed = rows.get(partner, (0, 0, None, False))
        if stopped_at is not None:
            continue  # its partner is already the mirror
        if found.get(host, 0) > found.get(partner, 0):
            mirror = host  # it shares its texts with a host found before it: the copy
        elif _collapsed(partner, n, new):
            mirror = partner  # a pair both mostly shared: the one found later
        else:
            continue  # its partner came later and is mostly its own (or not judged yet): wait
        if not rows.get(mirror, (0, 0, None, True))[3]:  # an operator resumed it: never again
            mirrors.add(mirror)
    return sorted(mirrors)


def _open_patterns_of(origin: str) -> list[tuple[str, int, int]]:
    """The path patterns of one origin that are not stopped and have pages enough to judge."""
    rows = UrlPattern.objects.filter(pattern__startswith=origin + "/", stopped_at__isnull=True, allowed=False,
                                     pages__gte=_suspect_min_pages()).values_list("pattern", "pages", "new_pages")
    return [row for row in rows if origin_of(row[0]) == origin]


def _suspect_min_pages() -> int:
    """The pages a pattern needs on a host that already has a stopped pattern."""
    return min(settings.CRAWLER_TRAP_MIN_PAGES, max(SUSPECT_MIN_PAGES, settings.CRAWLER_TRAP_MIN_PAGES // 4))


def _collapsed(pattern: str, pages: int, new: int) -> bool:
    if is_host_pattern(pattern):
        minimum = settings.CRAWLER_MIRROR_MIN_PAGES
        return bool(minimum) and pages >= minimum and pages - new >= settings.CRAWLER_MIRROR_MIN_SHARE * pages
    minimum = _suspect_min_pages() if origin_of(pattern) in _stopped[2] else settings.CRAWLER_TRAP_MIN_PAGES
    return bool(minimum) and pages >= minimum and new <= settings.CRAWLER_TRAP_MAX_YIELD * pages


def stop(pattern: str) -> int:
    """Stop a pattern (or a host, by its bare origin): its queued URLs set aside; returns
    how many."""
    with transaction.atomic():
        UrlPattern.objects.filter(key=pattern_key(pattern), stopped_at__isnull=True).update(stopped_at=timezone.now())
        ids = _queued_ids(pattern, UrlState.QUEUED)
        if ids:
            instate.update_in_state(UrlState.QUEUED, dict(state=UrlState.EXCLUDED, outcome=_outcome(pattern)), ids=ids)
    _note(pattern, True)
    return len(ids)


def resume(pattern: str) -> int:
    """An operator's word: the pattern is not a trap. Its set-aside URLs are queued again
    and it is never stopped again; returns how many URLs."""
    with transaction.atomic():
        UrlPattern.objects.filter(key=pattern_key(pattern)).update(stopped_at=None, allowed=True)
        ids = _queued_ids(pattern, UrlState.EXCLUDED)
        queued = instate.update_in_state(UrlState.EXCLUDED, dict(state=UrlState.QUEUED, outcome="",
                                                                 next_fetch_at=timezone.now()),
                                         ids=ids, where={"outcome": _outcome(pattern)}) if ids else []
        if queued:
            idle.wake(url_ids=queued)
    _note(pattern, False)
    return len(queued)


def _outcome(pattern: str) -> str:
    return MIRROR_OUTCOME if is_host_pattern(pattern) else TRAP_OUTCOME


def _queued_ids(pattern: str, state: str) -> list[int]:
    host = Host.objects.filter(origin=origin_of(pattern)).values_list("id", flat=True).first()
    if host is None:
        return []
    if is_host_pattern(pattern):
        return list(Url.objects.filter(host_id=host, state=state).values_list("id", flat=True))
    rows = Url.objects.filter(host_id=host, state=state).values_list("id", "url").iterator(chunk_size=5000)
    return [url_id for url_id, url in rows if pattern_of(url) == pattern]
