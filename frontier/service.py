"""The frontier's public interface: admit URLs, lease hosts, record results.

Other apps (fetch, the runners, the API) call only these functions. Every write that claims
work is a conditional UPDATE whose row count is checked (healthchecks' claim pattern), and
every claim carries an expiring lease so a dead worker's host comes back by itself.
"""

import dataclasses
import uuid
from collections import defaultdict
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Iterable, NamedTuple

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Exists, F, OuterRef, Q, Sum
from django.db.models.functions import Least
from django.utils import timezone

from . import pacing, politeness, scope
from .controls import (  # noqa: F401  (the frontier's steering, for the API, admin and beat)
    UNSET,
    InvalidDomain,
    LimitsChange,
    canonical_domain,
    origin_excluded,
    resume_excluded_urls,
    stop_queued_urls,
    sweep_expired_leases,
    update_limits,
)
from .filters import rejection_reason
from .limits import current_limits
from .models import CrawlScope, DeadLetter, Host, Seed, ServerAddress, Url, UrlState
from .normalize import InvalidUrl, normalize
from .outcomes import FetchReport, next_state
from .scope import InvalidScope, ScopeSpec, parse_spec  # noqa: F401  (for the API, admin and commands)
from .stats import dead_letter_count, host_figures, recent_errors, top_hosts, url_figures  # noqa: F401


@dataclass(frozen=True)
class Candidate:
    """A URL that wants in: a seed (depth 0), a link (parent depth + 1) or a redirect
    target (parent depth, hops + 1). `url` may be relative to `base` (a link as written,
    a Location header); `scopes` is the key of the scopes it was found under."""

    url: str
    depth: int = 0
    hops: int = 0
    referrer_id: int | None = None
    base: str | None = None
    scopes: str = ""


@dataclass
class AdmitResult:
    admitted: int = 0  # new rows
    known: int = 0  # already in the frontier (the seen test)
    rejected: dict[str, int] = field(default_factory=dict)
    # Per input position: the canonical URL or "rejected:<reason>", for API answers.
    verdicts: list[str] = field(default_factory=list)

    def reject(self, reason: str) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1
        self.verdicts.append(f"rejected:{reason}")


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


def add_urls(candidates: Iterable[Candidate]) -> AdmitResult:
    """Normalize, filter, seen-test and store candidates in as few queries as possible.

    Called outside a transaction, on PostgreSQL each statement commits by itself and rows
    are taken in one global order (url_hash, then host id): concurrent workers admitting
    overlapping links wait briefly for each other but never deadlock, and no host row
    stays locked while other statements run (the dispatcher leases those rows). The
    per-host URL count is therefore a quota counter, not an exact figure: a crash between
    the insert and the count update leaves it a batch short. On SQLite (one writer) it is
    all one transaction, which is simply cheaper.
    """
    with transaction.atomic() if connection.vendor == "sqlite" else nullcontext():
        return _add_urls(candidates)


def _add_urls(candidates: Iterable[Candidate]) -> AdmitResult:
    result = AdmitResult()
    limits = current_limits()
    best: dict[str, tuple] = {}  # url_hash -> (NormalUrl, Candidate): shallowest wins
    positions = defaultdict(list)  # url_hash -> its places in result.verdicts
    scopes_of = {}  # scope key -> its scopes, once per batch
    out_of_scope = defaultdict(int)  # scope id -> links it left out
    for cand in candidates:
        try:
            norm = normalize(cand.url, cand.base)
        except InvalidUrl as exc:
            result.reject(exc.args[0])
            continue
        reason = rejection_reason(norm, cand.depth, cand.hops, limits)
        if reason:
            result.reject(reason)
            continue
        if cand.scopes not in scopes_of:
            scopes_of[cand.scopes] = scope.scopes_for(cand.scopes, limits.version)
        if not scope.allowed(norm, scopes_of[cand.scopes]):
            if cand.depth == 0 and cand.hops > 0:  # a seed's redirect: the seed moved, follow it
                cand = dataclasses.replace(cand, scopes=scope.widened_for_redirect(cand.scopes, norm, limits.version))
            else:
                out_of_scope[int(cand.scopes.split(",", 1)[0])] += 1
                result.reject("out_of_scope")
                continue
        key = norm.url_hash
        positions[key].append(len(result.verdicts))
        result.verdicts.append(norm.url)
        if key in best:
            kept = best[key][1] if best[key][1].depth <= cand.depth else cand
            cand = dataclasses.replace(kept, scopes=scope.merge_keys(best[key][1].scopes, cand.scopes))
        best[key] = (norm, cand)
    if out_of_scope:
        scope.count_out_of_scope(out_of_scope)
    if not best:
        return result

    existing = {h: (depth, keys) for h, depth, keys in
                Url.objects.filter(url_hash__in=list(best)).values_list("url_hash", "depth", "scopes")}
    shallower = sorted((h, best[h][1].depth) for h, (depth, _) in existing.items() if best[h][1].depth < depth)
    for url_hash, depth in shallower:
        # Found again by a shorter path while still waiting: its links deserve that depth.
        Url.objects.filter(url_hash=url_hash, state=UrlState.QUEUED).update(
            depth=Least(F("depth"), depth), priority=-depth
        )
    _widen_known_scopes({h: (keys, best[h][1].scopes) for h, (_, keys) in existing.items()})
    result.known = len(existing)
    fresh = {h: v for h, v in best.items() if h not in existing}
    if not fresh:
        return result

    hosts = _hosts({norm.origin for norm, _ in fresh.values()})
    per_host = defaultdict(list)
    for url_hash, (norm, cand) in fresh.items():
        per_host[hosts[norm.origin]].append((url_hash, norm, cand))
    rows = []
    for (host_id, url_count), items in sorted(per_host.items()):
        allowed = max(0, limits.max_urls_per_host - url_count)
        for url_hash, norm, cand in items[allowed:]:
            for position in positions[url_hash]:
                result.rejected["host_quota"] = result.rejected.get("host_quota", 0) + 1
                result.verdicts[position] = "rejected:host_quota"
        for url_hash, norm, cand in items[:allowed]:
            rows.append(
                Url(
                    url_hash=url_hash, url=norm.url, host_id=host_id, depth=cand.depth,
                    redirect_hops=cand.hops, priority=-cand.depth, referrer_id=cand.referrer_id,
                    scopes=cand.scopes,
                )
            )
    rows.sort(key=lambda row: row.url_hash)
    Url.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
    counts = defaultdict(int)
    for row in rows:
        counts[row.host_id] += 1
    for host_id, n in sorted(counts.items()):
        Host.objects.filter(id=host_id).update(url_count=F("url_count") + n)
    result.admitted = len(rows)
    return result


def _widen_known_scopes(known: dict[str, tuple[str, str]]) -> None:
    """URLs still waiting that were found again under other scopes gain them (url hash ->
    (scopes they have, scopes they were found under)): their links are judged by all."""
    changes = defaultdict(list)  # (old key, new key) -> url hashes
    for url_hash, (keys, found) in sorted(known.items()):
        merged = scope.merge_keys(keys, found)
        if merged != keys:
            changes[(keys, merged)].append(url_hash)
    for (keys, merged), hashes in sorted(changes.items()):
        Url.objects.filter(url_hash__in=hashes, state=UrlState.QUEUED, scopes=keys).update(scopes=merged)


def _hosts(origins: set[str]) -> dict[str, tuple[int, int]]:
    """origin -> (host id, URLs admitted so far), creating the hosts not seen before."""

    def load(subset):
        return {o: (i, n) for o, i, n in Host.objects.filter(origin__in=subset).values_list("origin", "id", "url_count")}

    found = load(origins)
    missing = origins - found.keys()
    if missing:
        Host.objects.bulk_create([Host(origin=o) for o in sorted(missing)], ignore_conflicts=True)
        found.update(load(missing))
    return found


def default_scope() -> ScopeSpec:
    return ScopeSpec(settings.CRAWLER_DEFAULT_SCOPE)


def add_seeds(urls: list[str], spec: ScopeSpec | None = None) -> AdmitResult:
    """Admit seeds (depth 0) under a scope each (`spec` anchored on the seed; default
    CRAWLER_DEFAULT_SCOPE) and log them, all or nothing: one transaction, so an API call
    that fails midway leaves no trace (a seed list is small; link batches are not).

    A seed already in the frontier keeps its state; a new scope then applies to the
    links found from now on (while it waits, it gains the scope)."""
    spec = spec or default_scope()
    try:
        return _add_seeds(urls, spec)
    except BaseException:
        scope.forget_loaded_scopes()  # rows loaded inside the rolled-back transaction
        raise


def _add_seeds(urls: list[str], spec: ScopeSpec) -> AdmitResult:
    with transaction.atomic():
        candidates, scope_ids = [], []
        for url in urls:
            try:
                scope_id = scope.scope_for(spec, normalize(url)).id
            except InvalidUrl:
                scope_id = None  # add_urls rejects it, with the reason
            scope_ids.append(scope_id)
            candidates.append(Candidate(url=url, scopes=str(scope_id or "")))
        result = add_urls(candidates)
        accepted = {(verdict, scope_id): None for verdict, scope_id in zip(result.verdicts, scope_ids)
                    if not verdict.startswith("rejected:")}
        known = set(Seed.objects.filter(url__in=[url for url, _ in accepted]).values_list("url", "scope_id"))
        Seed.objects.bulk_create([Seed(url=url, scope_id=scope_id) for url, scope_id in accepted
                                  if (url, scope_id) not in known])
    return result


def seed_rejection(url: str) -> str | None:
    """Why a seed would not be admitted under the limits in force (None: it would be)."""
    try:
        norm = normalize(url)
    except InvalidUrl as exc:
        return exc.args[0]
    return rejection_reason(norm, 0, 0, current_limits())


scope_key_taken = scope.key_taken
save_scope_patterns = scope.save_patterns


def scope_summary(limit: int = 20) -> dict:
    """The scopes seeds were given, most used first: for the crawl summary and `status`."""
    rows = (CrawlScope.objects.annotate(seed_count=Count("seeds")).order_by("-seed_count", "id")
            .values_list("id", "kind", "anchor", "include", "exclude", "out_of_scope", "seed_count")[:limit])
    return {
        "scopes": [{"id": i, "kind": kind, "anchor": anchor, "include": include.splitlines(),
                    "exclude": exclude.splitlines(), "out_of_scope": left_out, "seeds": seeds}
                   for i, kind, anchor, include, exclude, left_out, seeds in rows],
        "total": CrawlScope.objects.count(),
        "unscoped_seeds": Seed.objects.filter(scope=None).count(),
        "out_of_scope": CrawlScope.objects.aggregate(n=Sum("out_of_scope"))["n"] or 0,
    }


def lease_ready_hosts(owner: str, max_hosts: int) -> list[Lease]:
    """Lease up to max_hosts hosts whose politeness time has passed and that have due URLs,
    each with the URLs of one host session (fetch/session.py).

    On PostgreSQL the candidate rows are locked with FOR UPDATE SKIP LOCKED, so concurrent
    dispatchers on many machines each get different hosts without waiting on each other.
    The UPDATE is conditional as well, which is what keeps SQLite (no row locks, but one
    writer at a time) correct.
    """
    now = timezone.now()
    active = Host.objects.filter(leased_until__gt=now).count()
    max_hosts = min(max_hosts, settings.CRAWLER_MAX_ACTIVE_LEASES - active)
    if max_hosts <= 0:
        return []
    free = Q(leased_until__isnull=True) | Q(leased_until__lte=now)
    due = Url.objects.filter(host=OuterRef("pk"), state=UrlState.QUEUED, next_fetch_at__lte=now)
    token = f"{owner}:{uuid.uuid4().hex[:12]}"
    lease_seconds = settings.CRAWLER_LEASE_SECONDS
    by_address = politeness.per_address()
    with transaction.atomic():
        ready = Host.objects.filter(free, next_fetch_at__lte=now).filter(Exists(due))
        if by_address:
            busy = ServerAddress.objects.filter(address=OuterRef("address")).filter(
                Q(leased_until__gt=now) | Q(next_fetch_at__gt=now))
            ready = ready.exclude(Exists(busy))
        if connection.features.has_select_for_update_skip_locked:
            ready = ready.select_for_update(skip_locked=True)
        candidates = list(ready.order_by("next_fetch_at").values_list("id", "address")[:max_hosts])
        if by_address:
            candidates = _one_host_per_address(candidates, token, now, lease_seconds)
        if not candidates:
            return []
        Host.objects.filter(free, id__in=[c[0] for c in candidates]).update(
            lease_owner=token, leased_until=now + timedelta(seconds=lease_seconds)
        )
    # host id -> the address claimed with it ("" when none was: unknown, or host scope)
    addresses = {h: (a or "") if by_address else "" for h, a in candidates}
    hosts = list(Host.objects.filter(id__in=list(addresses), lease_owner=token)
                 .values_list("id", "origin", "crawl_delay", "response_time"))
    url_ids = _best_urls({h[0]: _session_size(h[2], h[3]) for h in hosts}, now)
    leases = []
    for host_id, origin, _, _ in hosts:
        ids_for_host = url_ids.get(host_id, [])
        if ids_for_host:
            leases.append(Lease(host_id, token, origin, ids_for_host, addresses[host_id]))
        else:  # its URLs were taken meanwhile
            release_host(host_id, token, None, leased_address=addresses[host_id])
    return leases


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


def _best_urls(limits: dict[int, int], now: datetime) -> dict[int, list[int]]:
    """host id -> ids of its best due URLs (highest priority, then oldest), at most
    limits[host] each. One UNION ALL of per-host LIMIT queries: each walks the partial
    index url_host_queue from its top and stops, so the cost does not grow with the
    number of URLs a host has waiting (a window function over them all did)."""
    found = defaultdict(list)
    items = list(limits.items())
    for start in range(0, len(items), 200):  # SQLite allows 500 terms in a compound SELECT
        _best_urls_into(found, items[start:start + 200], now)
    return found


def _best_urls_into(found: dict, items: list[tuple[int, int]], now: datetime) -> None:
    one = (f"SELECT * FROM (SELECT host_id, id FROM {Url._meta.db_table} WHERE host_id = %s AND state = %s"
           " AND next_fetch_at <= %s ORDER BY priority DESC, id LIMIT %s) AS h{}")
    sql = " UNION ALL ".join(one.format(i) for i in range(len(items)))
    when = connection.ops.adapt_datetimefield_value(now)
    params = [p for host_id, n in items for p in (host_id, UrlState.QUEUED.value, when, n)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for host_id, url_id in cursor.fetchall():
            found[host_id].append(url_id)


def renew_leases(leases: list[tuple[int, str, str]]) -> set[int]:
    """Extend the leases still held, given as (host id, token, address leased with it or
    ""), by CRAWLER_LEASE_SECONDS from now. Returns the ids of the hosts renewed; a lease
    that expired or was taken over is not (its session must stop).

    One statement per token: a lease counts only for its exact (host, token) pair, never
    for another worker that leased the host from the same dispatcher round."""
    now = timezone.now()
    until = now + timedelta(seconds=settings.CRAWLER_LEASE_SECONDS)
    by_token = defaultdict(list)
    for host_id, token, address in leases:
        by_token[token].append((host_id, address))
    renewed = set()
    for token, items in sorted(by_token.items()):
        ids = sorted(host_id for host_id, _ in items)
        with connection.cursor() as cursor:
            marks = ", ".join(["%s"] * len(ids))
            adapt = connection.ops.adapt_datetimefield_value
            cursor.execute(
                f"UPDATE {Host._meta.db_table} SET leased_until = %s WHERE lease_owner = %s AND id IN ({marks})"
                " AND leased_until > %s RETURNING id", [adapt(until), token, *ids, adapt(now)])
            renewed.update(row[0] for row in cursor.fetchall())
        addresses = sorted({address for host_id, address in items if address and host_id in renewed})
        if addresses:
            ServerAddress.objects.filter(lease_owner=token, address__in=addresses).update(leased_until=until)
    return renewed


def claim_address(address: str, token: str) -> bool:
    """Lease a server address for a session that learned it mid-way (a new host's first
    contact): True when it was free and ready, and is now held with the session's token."""
    now = timezone.now()
    politeness.remember_address(address, now)
    return address in politeness.claim_addresses([address], token, now, settings.CRAWLER_LEASE_SECONDS)


def begin_lease(host_id: int, token: str) -> HostView | None:
    """Confirm a lease is still ours and extend it; None means drop the work."""
    now = timezone.now()
    claimed = Host.objects.filter(id=host_id, lease_owner=token, leased_until__gt=now).update(
        leased_until=now + timedelta(seconds=settings.CRAWLER_LEASE_SECONDS)
    )
    if not claimed:
        return None
    row = Host.objects.get(id=host_id)
    return HostView(
        row.id, row.origin, row.crawl_delay, row.robots_status, row.robots_body, row.robots_error,
        row.robots_fetched_at, row.robots_expires_at, row.address or "", row.response_time, row.failures,
    )


@dataclass(frozen=True)
class HostUpdate:
    """What a finished lease learned about its host and server."""

    next_fetch_at: datetime  # the host's next allowed time (delay and any pause)
    address: str = ""  # the address the requests went to ("" = none made)
    address_next_at: datetime | None = None  # that address's next allowed time
    response_time: float | None = None
    failures: int = 0


def release_host(host_id: int, token: str, next_fetch_at: datetime | None, *, leased_address: str = "",
                 update: HostUpdate | None = None) -> bool:
    """Give a leased host (and the address leased with it) back.

    `update` carries what the lease measured; without it only the lease is cleared (and
    next_fetch_at set, when given)."""
    changes = {"lease_owner": "", "leased_until": None}
    if update is not None:
        next_fetch_at = update.next_fetch_at
        changes.update(response_time=update.response_time, failures=update.failures)
        if update.address:
            changes["address"] = update.address
    if next_fetch_at is not None:
        changes["next_fetch_at"] = next_fetch_at
    released = bool(Host.objects.filter(id=host_id, lease_owner=token).update(**changes))
    address_next_at = update.address_next_at if update is not None else None
    if leased_address:
        politeness.release_address(leased_address, token, address_next_at)
    if update is not None and update.address and update.address != leased_address and address_next_at:
        politeness.push_address(update.address, address_next_at)  # first contact, or the host moved
    return released


# Sitemap URLs kept per host at most (a robots.txt may list thousands).
MAX_SITEMAPS = 100


def save_robots(host_id: int, status: int | None, body: str, crawl_delay: float | None,
                error: str, fetched_at: datetime, expires_at: datetime, sitemaps: Iterable[str] = ()) -> None:
    Host.objects.filter(id=host_id).update(
        robots_status=status, robots_body=body, crawl_delay=crawl_delay, robots_error=error[:40],
        robots_fetched_at=fetched_at, robots_expires_at=expires_at,
        robots_sitemaps="\n".join(list(dict.fromkeys(sitemaps))[:MAX_SITEMAPS]),
    )


class QueuedUrl(NamedTuple):
    id: int
    url: str
    depth: int
    hops: int
    attempts: int
    scopes: str  # the key its links are judged by (frontier.scope)


def queued_urls(url_ids: list[int]) -> list[QueuedUrl]:
    """Those of the URLs still queued, in the given order."""
    rows = {
        r[0]: QueuedUrl(*r)
        for r in Url.objects.filter(id__in=url_ids, state=UrlState.QUEUED).values_list(
            "id", "url", "depth", "redirect_hops", "attempts", "scopes"
        )
    }
    return [rows[i] for i in url_ids if i in rows]


def record_fetch(report: FetchReport, attempts: int) -> str | None:
    """Apply one fetch result; returns the new state, or None if another worker got there
    first (the row was no longer queued)."""
    return record_fetches([(report, attempts)])[report.url_id]


# One statement shape for every result, so a whole batch goes in one executemany.
# CASE keeps last_status/last_fetched_at/content_hash when the report carries none.
_RECORD_SQL = """UPDATE frontier_url SET state = %s, outcome = %s, attempts = %s, next_fetch_at = %s,
    last_status = CASE WHEN %s THEN %s ELSE last_status END,
    last_fetched_at = CASE WHEN %s THEN %s ELSE last_fetched_at END,
    content_hash = CASE WHEN %s THEN %s ELSE content_hash END
    WHERE id = %s AND state = 'queued'"""


def record_fetches(results: list[tuple[FetchReport, int]]) -> dict[int, str | None]:
    """Apply a batch of fetch results (report, attempts before it) in one transaction.

    Returns url id -> new state. A URL that was no longer queued (its lease had expired
    and another worker recorded it first) is left alone; its state is then reported as
    None only when it is the single result (the per-row count of a batch is not known).
    """
    if not results:
        return {}
    now = timezone.now()
    adapt = connection.ops.adapt_datetimefield_value
    now_db = adapt(now)
    rows, states, dead = [], {}, []
    for report, attempts in results:
        t = next_state(
            report, attempts, now,
            max_attempts=settings.CRAWLER_MAX_ATTEMPTS, retry_base=settings.CRAWLER_RETRY_BASE_DELAY,
        )
        fetched = report.status is not None or bool(report.error)
        rows.append((
            t.state, t.outcome[:40], t.attempts, adapt(t.next_fetch_at),
            fetched, report.status, fetched, now_db, bool(report.content_hash), report.content_hash,
            report.url_id,
        ))
        states[report.url_id] = str(t.state)
        if t.dead_letter:
            dead.append((report, t))
    with transaction.atomic(), connection.cursor() as cursor:
        if len(rows) == 1:
            cursor.execute(_RECORD_SQL, rows[0])
            if cursor.rowcount == 0:
                return {results[0][0].url_id: None}
        else:
            cursor.executemany(_RECORD_SQL, rows)
        for report, t in dead:
            if not Url.objects.filter(id=report.url_id, state=UrlState.FAILED).exists():
                continue  # the update above did not apply to this row
            DeadLetter.objects.update_or_create(
                url_id=report.url_id,
                defaults=dict(reason=t.outcome, last_status=report.status, attempts=t.attempts),
            )
    return states


def requeue_dead_letters(dead_letter_ids: Iterable[int]) -> int:
    """Put dead-lettered URLs back in the queue with fresh attempts (admin action)."""
    with transaction.atomic():
        letters = DeadLetter.objects.filter(id__in=list(dead_letter_ids))
        url_ids = list(letters.values_list("url_id", flat=True))
        Url.objects.filter(id__in=url_ids).update(
            state=UrlState.QUEUED, attempts=0, outcome="requeued", next_fetch_at=timezone.now()
        )
        letters.delete()
    return len(url_ids)


def has_pending_work() -> bool:
    """True while any URL waits (now or later) or any host is leased: the crawl isn't over."""
    now = timezone.now()
    return (
        Url.objects.filter(state=UrlState.QUEUED).exists()
        or Host.objects.filter(leased_until__gt=now).exists()
    )


def next_due_in(max_wait: float) -> float:
    """Seconds until some host that is not leased may become ready, capped to max_wait
    (idle waiting; a leased host comes back when its session ends)."""
    now = timezone.now()
    free = Q(leased_until__isnull=True) | Q(leased_until__lte=now)
    soonest = (
        Host.objects.filter(free).filter(Exists(Url.objects.filter(host=OuterRef("pk"), state=UrlState.QUEUED)))
        .order_by("next_fetch_at").values_list("next_fetch_at", flat=True).first()
    )
    if soonest is None:
        return max_wait
    return min(max_wait, max(0.0, (soonest - now).total_seconds()))


def crawl_summary() -> dict:
    """Counts for the crawl summary, `status` command and tests."""
    by_state = dict(Url.objects.values_list("state").annotate(n=Count("id")))
    by_status = {
        str(k): v for k, v in Url.objects.exclude(last_status=None).values_list("last_status").annotate(n=Count("id"))
    }
    by_outcome = {
        f"{s}:{o}": n for s, o, n in Url.objects.values_list("state", "outcome").annotate(n=Count("id"))
    }
    now = timezone.now()
    return {
        "urls": sum(by_state.values()),
        "by_state": by_state,
        "by_status": dict(sorted(by_status.items())),
        "by_outcome": dict(sorted(by_outcome.items())),
        "fetched": Url.objects.exclude(last_fetched_at=None).count(),
        "hosts": Host.objects.count(),
        "hosts_leased": Host.objects.filter(leased_until__gt=now).count(),
        "dead_letters": DeadLetter.objects.count(),
        "scope": scope_summary(),
    }
