"""Leases: which worker may talk to which host, and for how long (DESIGN.md section 4).

Every write that claims work is a conditional UPDATE whose row count is checked
(healthchecks' claim pattern), and every claim carries an expiring lease so a dead
worker's host comes back by itself.
"""

import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

from django.conf import settings
from django.db import connection, transaction
from django.db.models import BooleanField, Exists, OuterRef, Q
from django.db.models.expressions import RawSQL
from django.utils import timezone

from common import stagetime

from . import bulk, idle, importance, pacing, politeness, wakeups
from .models import CrawlLimits, Host, ServerAddress, Url, UrlState
from .records import QUEUED_FIELDS, QueuedUrl


# The end of a range that excludes no lease. With both ends a planner without statistics
# estimates a range (half a percent of the rows) and reads the partial index host_leased,
# which holds the leased hosts only; given `leased_until > now` alone it guesses a third
# of the table and scans every host a crawl has known, once a dispatch round.
_NO_LEASE_ENDS_AFTER = datetime(9999, 1, 1, tzinfo=dt_timezone.utc)


def leased_at(now: datetime) -> Q:
    """Hosts whose lease runs at `now`, found through host_leased."""
    return Q(leased_until__gt=now, leased_until__lt=_NO_LEASE_ENDS_AFTER)


def leases_held(now: datetime | None = None) -> int:
    return Host.objects.filter(leased_at(now or timezone.now())).count()


@dataclass(frozen=True)
class Lease:
    host_id: int
    token: str
    origin: str
    url_ids: list[int]
    address: str = ""  # the server address leased with the host ("" = not known yet)


@dataclass(frozen=True)
class HostView:
    id: int
    origin: str
    crawl_delay: float | None
    robots_status: int | None
    robots_body: str
    robots_error: str  # why robots.txt gave no verdict (5xx, network, refused address)
    robots_fetched_at: datetime | None
    robots_expires_at: datetime | None
    address: str = ""
    response_time: float | None = None
    failures: int = 0
    tls_fingerprint: str = ""  # the certificate it showed last (gemini://)
    inlink_hosts: int = 0  # distinct other hosts seen linking to it (its standing)


@stagetime.timed("leases")
def lease_ready_hosts(owner: str, max_hosts: int, loaded: bool = False) -> list[Lease]:
    """Lease up to max_hosts hosts whose politeness time has passed and that have due URLs,
    each with the URLs of one host session (crawl/session.py).

    Which hosts: a biased draw over the score bands (frontier/importance.py), each band's
    share of the round its longest-ready hosts; `loaded` (the caller's queues or sessions
    near full, or the leases past 80 % of CRAWLER_MAX_ACTIVE_LEASES) favours the best band
    more.

    On PostgreSQL the candidate rows are locked with FOR UPDATE SKIP LOCKED, so concurrent
    dispatchers on many machines each get different hosts without waiting on each other.
    The UPDATE is conditional as well, which is what keeps SQLite (no row locks, but one
    writer at a time) correct.
    """
    # An operator paused the crawl (frontier/steering.py): read the row itself, not the
    # limits snapshot (up to LIMITS_RECHECK_SECONDS old), so that no dispatcher hands out a
    # host once the pause is committed. One primary-key lookup per round.
    if CrawlLimits.objects.filter(pk=1, paused_at__isnull=False).exists():
        return []
    idle.sweep_when_due()
    now = timezone.now()
    active = leases_held(now)
    max_hosts = min(max_hosts, settings.CRAWLER_MAX_ACTIVE_LEASES - active)
    if max_hosts <= 0:
        return []
    loaded = loaded or active >= 0.8 * settings.CRAWLER_MAX_ACTIVE_LEASES
    free = Q(leased_until__isnull=True) | Q(leased_until__lte=now)
    token = f"{owner}:{uuid.uuid4().hex[:12]}"
    lease_seconds = settings.CRAWLER_LEASE_SECONDS
    by_address = politeness.per_address()
    with transaction.atomic():
        ready = Host.objects.filter(free, next_fetch_at__lte=now, paused_at__isnull=True).filter(_has_due_url(now))
        if by_address:
            busy = ServerAddress.objects.filter(address=OuterRef("address")).filter(
                Q(leased_until__gt=now) | Q(next_fetch_at__gt=now))
            ready = ready.exclude(Exists(busy))
        if connection.features.has_select_for_update_skip_locked:
            ready = ready.select_for_update(skip_locked=True)
        candidates = _draw_by_band(ready, max_hosts, loaded)
        if by_address:
            candidates = _one_host_per_address(candidates, token, now, lease_seconds)
        if not candidates:
            return []
        Host.objects.filter(free, id__in=[c[0] for c in candidates]).update(
            lease_owner=token, leased_until=now + timedelta(seconds=lease_seconds), lease_holder=""
        )
    # host id -> the address claimed with it ("" when none was: unknown, or host scope)
    addresses = {h: (a or "") if by_address else "" for h, a in candidates}
    hosts = list(Host.objects.filter(id__in=list(addresses), lease_owner=token)
                 .values_list("id", "origin", "crawl_delay", "response_time"))
    url_ids, worst = _best_urls({h[0]: _session_size(h[2], h[3]) for h in hosts}, now)
    # What a host has left waiting is no better than the worst URL its session took.
    bulk.set_host_bands({host_id: importance.score_band(score) for host_id, score in worst.items()})
    leases = []
    for host_id, origin, _, _ in hosts:
        ids_for_host = url_ids.get(host_id, [])
        if ids_for_host:
            leases.append(Lease(host_id, token, origin, ids_for_host, addresses[host_id]))
        else:  # its URLs were taken meanwhile
            release_host(host_id, token, None, leased_address=addresses[host_id])
    return leases


def _has_due_url(now: datetime) -> RawSQL:
    """The host has a URL due now, probed per host (idle.waiting_url_sql says why)."""
    return RawSQL(idle.waiting_url_sql(f"{Host._meta.db_table}.id", due=True),
                  [UrlState.QUEUED.value, connection.ops.adapt_datetimefield_value(now)], output_field=BooleanField())


def _draw_by_band(ready, max_hosts: int, loaded: bool) -> list[tuple[int, str | None]]:
    """(host id, address) of up to max_hosts ready hosts: each band's quota of its
    longest-ready hosts, then the room a band could not fill to the others, best first."""
    quotas = importance.quotas(max_hosts, loaded)
    picked = {band: list(ready.filter(band=band).order_by("next_fetch_at").values_list("id", "address")[:quota])
              if quota else [] for band, quota in enumerate(quotas)}
    spare = max_hosts - sum(len(hosts) for hosts in picked.values())
    for band in range(3):
        if spare <= 0:
            break
        if len(picked[band]) == quotas[band]:  # it may have more
            more = list(ready.filter(band=band).order_by("next_fetch_at")
                        .values_list("id", "address")[quotas[band]:quotas[band] + spare])
            picked[band] += more
            spare -= len(more)
    return [host for band in range(3) for host in picked[band]]


def _one_host_per_address(candidates: list[tuple[int, str | None]], token: str, now: datetime,
                          lease_seconds: float) -> list[tuple[int, str | None]]:
    """Keep hosts whose address is unknown, and one host per address this round could lease."""
    first_per_address = {}
    for host_id, address in candidates:
        if address:
            first_per_address.setdefault(address, host_id)
    claimed = politeness.claim_addresses(list(first_per_address), token, now, lease_seconds)
    return [(h, a) for h, a in candidates if not a or (a in claimed and first_per_address[a] == h)]


def _session_size(crawl_delay: float | None, response_time: float | None) -> int:
    """URLs for one host session: as many as CRAWLER_SESSION_SECONDS allows at the host's
    current pace (its delay plus its response time), at most CRAWLER_SESSION_MAX_URLS."""
    cycle = pacing.delay_for(crawl_delay, response_time) + (response_time or 0.0)
    fits = int(settings.CRAWLER_SESSION_SECONDS / max(cycle, 0.01))
    return max(1, min(fits, settings.CRAWLER_SESSION_MAX_URLS))


def _best_urls(limits: dict[int, int], now: datetime) -> tuple[dict[int, list[int]], dict[int, int]]:
    """host id -> ids of its best due URLs (highest score, then oldest), at most limits[host]
    each; and host id -> the lowest score among them. One UNION ALL of per-host LIMIT
    queries: each walks the partial index url_host_queue from its top and stops, so the
    cost does not grow with the number of URLs a host has waiting (a window function over
    them all did). (`priority` in the SQL is the column of Url.score.)"""
    found, worst = defaultdict(list), {}
    items = list(limits.items())
    for start in range(0, len(items), 200):  # SQLite allows 500 terms in a compound SELECT
        _best_urls_into(found, worst, items[start:start + 200], now)
    return found, worst


def _best_urls_into(found: dict, worst: dict, items: list[tuple[int, int]], now: datetime) -> None:
    one = (f"SELECT * FROM (SELECT host_id, id, priority FROM {Url._meta.db_table} WHERE host_id = %s AND state = %s"
           " AND next_fetch_at <= %s ORDER BY priority DESC, id LIMIT %s) AS h{}")
    sql = " UNION ALL ".join(one.format(i) for i in range(len(items)))
    when = connection.ops.adapt_datetimefield_value(now)
    params = [p for host_id, n in items for p in (host_id, UrlState.QUEUED.value, when, n)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for host_id, url_id, score in cursor.fetchall():
            found[host_id].append(url_id)
            worst[host_id] = min(worst.get(host_id, score), score)


@stagetime.timed("leases")
def renew_leases(leases: list[tuple[int, str, str]]) -> set[int]:
    """Extend the leases still held, given as (host id, token, address leased with it or
    ""), by CRAWLER_LEASE_SECONDS from now. Returns the ids of the hosts renewed; a lease
    that expired or was taken over is not (its session must stop).

    A lease counts only for its exact (host, token) pair, never for another worker that
    leased the host from the same dispatcher round: one statement for all of them."""
    now = timezone.now()
    until = now + timedelta(seconds=settings.CRAWLER_LEASE_SECONDS)
    renewed = bulk.extend_leases(sorted((host_id, token) for host_id, token, _ in leases), now, until)
    by_token = defaultdict(list)
    for host_id, token, address in leases:
        if address and host_id in renewed:
            by_token[token].append(address)
    for token, addresses in sorted(by_token.items()):
        ServerAddress.objects.filter(lease_owner=token, address__in=sorted(addresses)).update(leased_until=until)
    return renewed


@stagetime.timed("leases")
def claim_address(address: str, token: str) -> bool:
    """Lease a server address for a session that learned it mid-way (a new host's first
    contact): True when it was free and ready, and is now held with the session's token."""
    now = timezone.now()
    politeness.remember_address(address, now)
    return address in politeness.claim_addresses([address], token, now, settings.CRAWLER_LEASE_SECONDS)


def begin_lease(host_id: int, token: str) -> HostView | None:
    """Confirm a lease is still ours and extend it; None means drop the work."""
    return begin_leases([(host_id, token)]).get(host_id)


_HOST_VIEW_FIELDS = ("id", "origin", "crawl_delay", "robots_status", "robots_body", "robots_error", "robots_fetched_at",
                     "robots_expires_at", "address", "response_time", "failures", "tls_fingerprint", "referrer_bits",
                     "referrer_ranks")


@stagetime.timed("leases")
def begin_leases(leases: list[tuple[int, str]], holder: str = "") -> dict[int, HostView]:
    """Confirm leases (host id, token) are still ours and extend them, all in one
    statement, naming the process that runs them (`holder`: its heartbeat's id, so that
    its death releases them early, release_leases_of); host id -> its view for those
    confirmed (the others: drop the work)."""
    if not leases:
        return {}
    now = timezone.now()
    claimed = bulk.extend_leases(sorted(leases), now, now + timedelta(seconds=settings.CRAWLER_LEASE_SECONDS),
                                 holder=holder)
    if not claimed:
        return {}
    return {row[0]: HostView(*row[:8], row[8] or "", *row[9:12], importance.referring_hosts(*row[12:]))
            for row in Host.objects.filter(id__in=claimed).values_list(*_HOST_VIEW_FIELDS)}


@stagetime.timed("leases")
def release_leases_of(holders: list[str]) -> list[int]:
    """Release the leases run by these processes (their heartbeats went stale: dead, frozen
    or cut off), long before the leases' own expiry. Fenced like every lease write: only
    rows still held with the token they had, so a holder that was only slow and renews or
    releases meanwhile keeps what it has, and its later writes (conditional on its token)
    change nothing. Each host's next allowed time moves to at least one delay from now: the
    dead process may have sent a request just before it stopped beating. Its queued URLs
    were never taken out of `queued`, so the next session fetches them. Returns the host ids."""
    if not holders:
        return []
    now = timezone.now()
    rows = list(Host.objects.filter(lease_holder__in=holders, leased_until__gt=now)
                .values_list("id", "lease_owner", "next_fetch_at", "crawl_delay", "response_time", "address"))
    released = []
    for host_id, token, next_fetch_at, crawl_delay, response_time, address in sorted(rows):
        not_before = max(next_fetch_at, now + timedelta(seconds=pacing.delay_for(crawl_delay, response_time)))
        if Host.objects.filter(id=host_id, lease_owner=token, lease_holder__in=holders).update(
                lease_owner="", leased_until=None, lease_holder="", next_fetch_at=not_before):
            released.append(host_id)
            ServerAddress.objects.filter(lease_owner=token).update(lease_owner="", leased_until=None)
            if address:
                politeness.push_address(address, not_before)
    if released:
        wakeups.announce()
    return released


@dataclass(frozen=True)
class HostUpdate:
    """What a finished lease learned about its host and server."""

    next_fetch_at: datetime  # the host's next allowed time (delay and any pause)
    address: str = ""  # the address the requests went to ("" = none made)
    address_next_at: datetime | None = None  # that address's next allowed time
    response_time: float | None = None
    failures: int = 0
    wait_reason: str = ""  # why next_fetch_at is where it is (pacing.HostClock.wait_reason)


@stagetime.timed("leases")
def release_host(host_id: int, token: str, next_fetch_at: datetime | None, *, leased_address: str = "",
                 update: HostUpdate | None = None) -> bool:
    """Give a leased host (and the address leased with it) back.

    `update` carries what the lease measured; without it only the lease is cleared (and
    next_fetch_at set, when given)."""
    changes = {"lease_owner": "", "leased_until": None}
    if update is not None:
        next_fetch_at = update.next_fetch_at
        changes.update(response_time=update.response_time, failures=update.failures,
                       wait_reason=update.wait_reason[:24])
        if update.address:
            changes["address"] = update.address
    if next_fetch_at is not None:
        changes["next_fetch_at"] = next_fetch_at
    with transaction.atomic():  # the row locked by the release, then the look (frontier/idle.py)
        released = bool(Host.objects.filter(id=host_id, lease_owner=token).update(**changes))
        if released:
            idle.set_aside([host_id], locked=True)
    address_next_at = update.address_next_at if update is not None else None
    if leased_address:
        politeness.release_address(leased_address, token, address_next_at)
    if update is not None and update.address and update.address != leased_address and address_next_at:
        politeness.push_address(update.address, address_next_at)  # first contact, or the host moved
    if released:
        wakeups.announce()
    return released


@stagetime.timed("leases")
def release_hosts(ended: list[tuple[int, str, str, HostUpdate]]) -> set[int]:
    """Give back the hosts of ended sessions, (host id, token, address leased with it or
    "", what the session learned), with what each learned: the set-based release_host of
    a writer's group (one statement for the hosts, one for their addresses). Returns the
    ids of the hosts released (a lease that expired and was taken over is not)."""
    if not ended:
        return set()
    ended = sorted(ended, key=lambda item: item[0])  # host id order: concurrent releases never cross locks
    adapt = connection.ops.adapt_datetimefield_value
    host_rows = [(host_id, token, adapt(u.next_fetch_at), u.response_time, u.failures, u.wait_reason[:24],
                  u.address or None) for host_id, token, _, u in ended]
    with transaction.atomic():  # the rows locked by the release, then the look (frontier/idle.py)
        released = bulk.release_hosts(host_rows)
        idle.set_aside(released, locked=True)
    addresses = [(address, token, adapt(u.address_next_at) if u.address_next_at else None)
                 for _, token, address, u in ended if address]
    if addresses:
        bulk.release_addresses(addresses)
    for _, _, address, u in ended:
        if u.address and u.address != address and u.address_next_at:
            politeness.push_address(u.address, u.address_next_at)  # first contact, or the host moved
    if released:
        wakeups.announce()
    return released


@stagetime.timed("leases")
def more_urls(host_id: int, token: str, taken: frozenset, limit: int, above: int | None = None) -> list[QueuedUrl]:
    """A running session's next URLs: its host's best due URLs that it has not had (only
    those scoring above `above`, when given: better than what it carries), as long as its
    lease holds (crawl/session.py: one visit, one connection). A refresh (`above` given)
    skips the lease query: the session checks its lease before each request anyway."""
    if limit <= 0 or (above is None and not Host.objects.filter(id=host_id, lease_owner=token).exists()):
        return []
    urls = Url.objects.filter(host_id=host_id, state=UrlState.QUEUED, next_fetch_at__lte=timezone.now())
    if above is not None:
        urls = urls.filter(score__gt=above)  # a range of url_host_queue: nearly always empty, and cheap
    rows = urls.exclude(id__in=list(taken)).order_by("-score", "id").values_list(*QUEUED_FIELDS)[:limit]
    return [QueuedUrl(*row) for row in rows]

