"""Admission: URLs and seeds entering the frontier (DESIGN.md, "the path of a URL", step 1).

normalize -> filter -> scope -> seen test -> store with a score, in as few queries as
possible. Seeds come through here too, from frontier/seeding.py, which logs them with the
scope their links are judged by.
"""

import dataclasses
import threading
from collections import defaultdict
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Iterable

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, Sum

from common import stagetime

from . import bulk, importance, inlinks, instate, scope, seen, traps, wakeups
from .filters import rejection_reason
from .limits import current_limits
from .controls import origin_hostname
from .models import CrawlScope, Host, Seed, Url, UrlKind, UrlState
from .normalize import InvalidUrl, normalize, url_key
from .scope import ScopeSpec
from .vocabulary import Rejection


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
    kind: str = UrlKind.PAGE  # a sitemap or feed is read for its links only (a URL keeps its first kind)
    hint: int = 0  # score points a sitemap gives it (frontier/importance.py)
    via: str = ""  # the origin of the page it was found on: a link from another host counts for it


@dataclass
class AdmitResult:
    admitted: int = 0  # new rows
    known: int = 0  # already in the frontier (the seen test)
    rejected: dict[str, int] = field(default_factory=dict)
    # Per input position: the canonical URL or "rejected:<reason>", for API answers.
    verdicts: list[str] = field(default_factory=list)
    # Seeds only (frontier/seeding.py), by input position: the limit a rejection broke, and
    # (code, message) of an accepted seed the crawler will not fetch as things stand.
    details: dict[int, str] = field(default_factory=dict)
    warnings: dict[int, tuple[str, str]] = field(default_factory=dict)
    # host id -> the best score among its URLs this batch added or raised: a session of that
    # host carrying worse may want to swap (crawl/session.py).
    raised: dict[int, int] = field(default_factory=dict)

    def raise_to(self, host_id: int, score: int) -> None:
        if score > self.raised.get(host_id, -importance.MAX_SCORE - 1):
            self.raised[host_id] = score

    def reject(self, reason: str) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1
        self.verdicts.append(f"rejected:{reason}")


@stagetime.timed("links")
def add_urls(candidates: Iterable[Candidate]) -> AdmitResult:
    """Normalize, filter, seen-test and store candidates in as few statements as possible.

    The seen test starts in this process (frontier/seen.py): a link whose URL it knows is
    dropped without a query. The rest go in one INSERT per batch (frontier/bulk.py), which
    also reports the rows that were there already and need a change (found again by a
    shorter path, or under other scopes).

    Called outside a transaction, on PostgreSQL each statement commits by itself and rows
    are taken in one global order (url_key, then host id): concurrent workers admitting
    overlapping links wait briefly for each other but never deadlock, and no host row
    stays locked while other statements run (the dispatcher leases those rows). The
    per-host URL count is therefore a quota counter, not an exact figure: a crash between
    the insert and the count update leaves it a batch short. On SQLite (one writer) it is
    all one transaction, which is simply cheaper.
    """
    candidates = list(candidates)
    for attempt in (1, 2):
        # Inside a caller's transaction, a savepoint: a failed try leaves that one usable.
        atomic = connection.vendor == "sqlite" or connection.in_atomic_block
        try:
            with transaction.atomic() if atomic else nullcontext():
                result = _add_urls(candidates)
                if result.admitted or result.raised:
                    wakeups.announce()
                return result
        except IntegrityError:
            # A host this process remembered was deleted (an admin deleted it, and its URLs
            # with it): forget what the caches say and look again, once.
            _hosts_known.clear()
            seen.forget()
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _add_urls(candidates: list[Candidate]) -> AdmitResult:
    result = AdmitResult()
    limits = current_limits()
    best: dict[int, tuple] = {}  # url_key -> (NormalUrl, Candidate): shallowest wins
    positions = defaultdict(list)  # url_key -> its places in result.verdicts
    scopes_of = {}  # scope key -> its scopes, once per batch
    referrers = defaultdict(set)  # url_key -> other hosts linking to it, not counted before
    counting_inlinks = settings.CRAWLER_SCORE_INLINK_HOST > 0  # off: no UPDATE for known URLs either
    counting_sites = settings.CRAWLER_SCORE_SITE_INLINK_HOST > 0
    site_referrers = set()  # (origin, another host linking to it) not counted before
    out_of_scope = defaultdict(int)  # scope id -> links it left out
    # The scopes the batch names, loaded in one query (10,000 seeds may bring 10,000 scopes).
    scope.load_scopes({int(i) for key in {cand.scopes for cand in candidates} if key for i in key.split(",")},
                      limits.version)
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
                result.reject(Rejection.OUT_OF_SCOPE)
                continue
        stopped = traps.stopped(norm)
        if stopped:
            result.reject(Rejection(stopped))
            continue
        key = norm.key
        positions[key].append(len(result.verdicts))
        result.verdicts.append(norm.url)
        if cand.via and cand.via != norm.origin:
            if counting_inlinks and key not in _closed and _inlinks.new((key, cand.via)):
                referrers[key].add(cand.via)
            if counting_sites and _site_inlinks.new((norm.origin, cand.via)):
                site_referrers.add((norm.origin, cand.via))
        if key in best:
            kept = best[key][1] if best[key][1].depth <= cand.depth else cand
            kind = cand.kind if best[key][1].kind == UrlKind.PAGE else best[key][1].kind  # a link source wins
            cand = dataclasses.replace(kept, scopes=scope.merge_keys(best[key][1].scopes, cand.scopes), kind=kind,
                                       hint=max(cand.hint, best[key][1].hint))
        best[key] = (norm, cand)
    if out_of_scope:
        scope.count_out_of_scope(out_of_scope)
    if not best:
        return result

    _forget_caches_if_reconnected()
    items = list(best.items())
    # A sitemap's listing (a hint) reaches the database even for a URL the seen-cache knows:
    # it may raise a waiting URL's score (sitemaps are few; their entries bounded).
    todo = [(key, norm, cand) for (key, (norm, cand)), unknown in
            zip(items, seen.unknown([(key, cand.scopes, cand.depth) for key, (_, cand) in items]))
            if unknown or cand.hint > 0]
    result.known = len(best) - len(todo)
    if not todo:
        _hold_inlinks(referrers, site_referrers, result)
        return result

    hosts, url_counts = _hosts({norm.origin for _, norm, _ in todo})
    domain_counts = _domain_counts(hosts.values())
    domains_before = dict(domain_counts)
    rows, quota_rejected = [], {}
    for (host_id, url_count), host_items in _by_host(todo, hosts, url_counts).items():
        domain = _hosts_known.domains.get(host_id, "")
        allowed = max(0, limits.max_urls_per_host - url_count)
        domain_allows = settings.CRAWLER_MAX_URLS_PER_DOMAIN - domain_counts.get(domain, 0) if domain else allowed
        reason = Rejection.HOST_QUOTA if allowed <= domain_allows else Rejection.DOMAIN_QUOTA
        allowed = max(0, min(allowed, domain_allows))
        if len(host_items) > allowed:  # near a quota: count only the URLs it does not have
            known_keys = bulk.existing_keys([key for key, _, _ in host_items])
            fresh = [item for item in host_items if item[0] not in known_keys]
            quota_rejected.update((key, reason) for key, _, _ in fresh[allowed:])
            host_items = [item for item in host_items if item[0] in known_keys] + fresh[:allowed]
        if domain:  # the batch's next host of this domain sees these (an upper bound: some are known)
            domain_counts[domain] = domain_counts.get(domain, 0) + len(host_items)
        for key, norm, cand in host_items:
            inlink_bits = importance.referrer_mask(referrers.get(key, ()))
            inlink_hosts = inlink_bits.bit_count()
            score = importance.score(norm.url, norm.host, cand.depth, inlink_hosts, cand.hint)
            rows.append((key, norm.url, host_id, cand.depth, cand.hops, score, cand.referrer_id, cand.scopes,
                         cand.kind, inlink_hosts, cand.hint, inlink_bits))
    for key, reason in quota_rejected.items():
        for position in positions[key]:
            result.rejected[reason] = result.rejected.get(reason, 0) + 1
            result.verdicts[position] = f"rejected:{reason}"

    inserted, existing = bulk.insert_urls(rows)
    _update_known(existing, best, result)
    counts, bands = defaultdict(int), {}
    for row in rows:
        if row[0] in inserted:
            counts[row[2]] += 1
            bands[row[2]] = min(bands.get(row[2], 2), importance.score_band(row[5]))
            result.raise_to(row[2], row[5])
    domain_totals = dict(domains_before)  # what the domains hold once this commits
    for host_id, n in counts.items():
        domain = _hosts_known.domains.get(host_id, "")
        if domain:
            domain_totals[domain] += n
    url_counts.update(bulk.add_host_counts(counts, bands))
    # After _hosts: a host first seen in this batch has its row when its pairs are counted.
    _hold_inlinks({key: hosts for key, hosts in referrers.items() if key not in inserted}, site_referrers, result)
    # What the caches learnt holds once it is committed (a rolled-back seed list must not
    # leave its URLs "known"); outside a transaction that is now.
    remembered = [(row[0], row[7], row[3]) for row in rows]
    transaction.on_commit(lambda: (seen.remember(remembered), _hosts_known.learn(hosts, url_counts, domain_totals)))
    result.admitted = len(inserted)
    result.known += len(rows) - len(inserted)
    return result


def _by_host(todo: list[tuple], hosts: dict[str, int], url_counts: dict[int, int]) -> dict[tuple[int, int], list]:
    """(host id, its URL count) -> its items, hosts in id order."""
    grouped = defaultdict(list)
    for item in todo:
        grouped[hosts[item[1].origin]].append(item)
    return {(host_id, url_counts.get(host_id, 0)): grouped[host_id] for host_id in sorted(grouped)}


def _hold_inlinks(referrers: dict[int, set[str]], site_pairs: set[tuple[str, str]], result: AdmitResult) -> None:
    """Known URLs found from hosts this process had not counted for them, and hosts linked
    from hosts it had not counted for them: held with what earlier batches found, and
    counted once CRAWLER_INLINK_FLUSH_SECONDS or CRAWLER_INLINK_FLUSH_PAIRS say so
    (frontier/inlinks.py)."""
    _pending.add({key: importance.referrer_mask(hosts) for key, hosts in referrers.items() if hosts}, site_pairs)
    if _pending.due():
        _count_inlinks(result)


def flush_inlinks(due_only: bool = False) -> dict[int, int]:
    """Count the referring hosts this process holds (only when due, with `due_only`);
    returns {host id: best score} of the waiting URLs they raised. A stopping process
    calls it (crawl/writer.py), and so may anyone who reads scores right after a batch."""
    if not len(_pending) or (due_only and not _pending.due()):
        return {}  # the writer asks after every group: nothing to build then
    result = AdmitResult()
    _count_inlinks(result)
    return result.raised


def _count_inlinks(result: AdmitResult) -> None:
    """One UPDATE counts the held URLs' referring hosts no process counted yet (their bits)
    and raises their scores, and their hosts' bands with them; one statement the hosts'."""
    masks, site_pairs = _pending.take()
    raised, closed = bulk.add_inlinks(masks, settings.CRAWLER_SCORE_INLINK_HOST,
                                      settings.CRAWLER_SCORE_INLINK_HOSTS_MAX)
    # A URL fetched (or at the cap) takes no more: this process stops sending its links'
    # hosts, which most links to known URLs are (each cost an index probe and a heap read).
    transaction.on_commit(lambda: _closed.add_all(closed))
    _raised(raised, result)
    referring = defaultdict(list)
    for origin, via in site_pairs:
        referring[origin].append(via)
    bulk.add_host_referrers({origin: importance.referrer_sketch(vias) for origin, vias in referring.items()})


def fetched_here(urls: list[str]) -> None:
    """Canonical URLs this process has just stored as fetched: their scores take no more
    links, so links to them found later are not sent to be counted. The database would say
    so (bulk.add_inlinks names them), but only after an index probe for each: most links
    from other hosts point at pages fetched already, and on one web most of those were
    fetched by the process that finds the link (its hosts' neighbours link back)."""
    _closed.add_all(url_key(url) for url in urls)


def _raised(raised: list[tuple[int, int]], result: AdmitResult) -> None:
    """(host id, new score) of waiting URLs whose score rose: their hosts' bands rise with
    them, and the batch's result names them."""
    bands = {}
    for host_id, score in raised:
        bands[host_id] = min(bands.get(host_id, 2), importance.score_band(score))
        result.raise_to(host_id, score)
    bulk.raise_host_bands(bands)


class _DoneWith:
    """What this process is done with: (url_key, referring origin) pairs it sent to be
    counted (a link from another host raises a URL's score once per host, not once per
    page of it, and a pair sent before costs the database nothing), or URL keys whose score
    takes no more links. Bounded: past LIMIT it starts again (the database counts a pair
    once whoever sends it: bulk.add_inlinks)."""

    LIMIT = 1_000_000

    def __init__(self):
        self.pairs: set = set()
        self.lock = threading.Lock()

    def clear(self) -> None:
        with self.lock:
            self.pairs = set()

    def __contains__(self, item) -> bool:
        return item in self.pairs  # a set's lookup is atomic under the GIL

    def add_all(self, items) -> None:
        for item in items:
            self.new(item)

    def new(self, pair) -> bool:
        with self.lock:
            if pair in self.pairs:
                return False
            if len(self.pairs) >= self.LIMIT:
                self.pairs = set()
            self.pairs.add(pair)
            return True


_inlinks = _DoneWith()
_site_inlinks = _DoneWith()  # (origin, referring origin)
_closed = _DoneWith()  # url_keys whose score takes no more links (bulk.add_inlinks)
_pending = inlinks.PendingInlinks()  # what _inlinks and _site_inlinks let through, not counted yet


def _update_known(existing: dict[int, tuple[int, str, str, int]], best: dict[int, tuple], result: AdmitResult) -> None:
    """Rows that were there before: a URL still waiting that was found again by a shorter
    path gets that depth (its links deserve it), one found under other scopes gains them
    (its links are judged by all), and one a sitemap lists (again, or with a higher
    <priority>) gains that hint (a sitemap is often read after the pages linked its URLs)."""
    shallower, widened, hinted = defaultdict(list), defaultdict(list), defaultdict(list)
    for key, (depth, keys, state, hint) in sorted(existing.items()):
        if state != UrlState.QUEUED:
            continue
        cand = best[key][1]
        if cand.depth < depth:
            shallower[cand.depth].append(key)
        if cand.hint > hint:
            hinted[cand.hint].append(key)
        merged = scope.merge_keys(keys, cand.scopes)
        if merged != keys:
            widened[(keys, merged)].append(key)
    for depth, keys in sorted(shallower.items()):  # the score's depth part moves with the depth
        instate.update_in_state(UrlState.QUEUED, dict(
            depth=depth, score=F("score") + settings.CRAWLER_SCORE_DEPTH * (depth - F("depth"))),
            keys=keys, where={"depth__gt": depth})
    for (keys, merged), url_keys in sorted(widened.items()):
        instate.update_in_state(UrlState.QUEUED, dict(scopes=merged), keys=url_keys, where={"scopes": keys})
    if hinted:  # the score's hint part moves with the hint
        _raised(bulk.raise_hints(hinted), result)


class _HostCache:
    """origin -> host id, host id -> URLs admitted (as last seen) and its registered domain,
    and domain -> URLs admitted, in this process: host ids never change, so a batch of
    links needs no host query once its hosts are known.
    The counts only grow; one seen a little late lets a host pass its quota by a batch at
    most, which is what a quota counter is here anyway (see add_urls). Bounded."""

    LIMIT = 100_000

    def __init__(self):
        self.ids: dict[str, int] = {}
        self.counts: dict[int, int] = {}
        self.domains: dict[int, str] = {}  # host id -> registered domain ("" when not known)
        self.domain_counts: dict[str, int] = {}  # registered domain -> URLs admitted (as last seen)

    def clear(self) -> None:
        self.ids, self.counts, self.domains, self.domain_counts = {}, {}, {}, {}

    def learn(self, ids: dict[str, int], counts: dict[int, int], domain_counts: dict[str, int] | None = None) -> None:
        if len(self.ids) + len(ids) > self.LIMIT:
            self.clear()
        self.ids.update(ids)
        self.counts.update(counts)
        self.domain_counts.update(domain_counts or {})


_hosts_known = _HostCache()


def _hosts(origins: set[str]) -> tuple[dict[str, int], dict[int, int]]:
    """origin -> host id, and host id -> URLs admitted so far (as last seen), creating the
    hosts not seen before."""
    known = _hosts_known
    ids = {o: known.ids[o] for o in origins if o in known.ids}
    counts = {i: known.counts.get(i, 0) for i in ids.values()}
    missing = origins - ids.keys()

    def load(rows):
        for origin, host_id, url_count, domain in rows:
            ids[origin], counts[host_id] = host_id, url_count
            known.domains[host_id] = domain

    columns = ("id", "url_count", "domain")
    if missing:
        load(bulk.find(Host, "origin", columns, missing))
        new = missing - ids.keys()
        if new:
            load(bulk.insert_new(Host, ("origin", "domain"),
                                 [(o, scope.registered_domain(origin_hostname(o))) for o in new],
                                 returning=("origin", *columns)))
            if new - ids.keys():  # SQLite, or hosts a concurrent writer inserted first
                load(bulk.find(Host, "origin", columns, new - ids.keys()))
    return ids, counts


def _domain_counts(host_ids) -> dict[str, int]:
    """Registered domain -> URLs admitted under it (the per-domain quota), for the domains
    of these hosts: from this process's cache, one query for the domains it has not seen.
    Like the host counts, a quota counter, not an exact figure."""
    known = _hosts_known.domain_counts
    domains = {_hosts_known.domains.get(host_id, "") for host_id in host_ids} - {""}
    counts = {domain: known[domain] for domain in domains if domain in known}
    missing = sorted(domains - counts.keys())
    if missing:
        found = dict(Host.objects.filter(domain__in=missing).values("domain").annotate(n=Sum("url_count"))
                     .values_list("domain", "n"))
        counts.update({domain: found.get(domain, 0) for domain in missing})
    return counts


_connection_seen = threading.local()  # each thread's Django connection is its own


def _forget_caches_if_reconnected() -> None:
    """The seen-cache and the host cache hold what this process's database connections
    committed. A thread whose connection was replaced (the old one was lost, perhaps with
    the database's last asynchronous commits) starts them again from empty
    (frontier/seen.py)."""
    connection.ensure_connection()
    current, before = connection.connection, getattr(_connection_seen, "connection", None)
    if before is not current:
        # SQLite's commits are in the file this process writes, whatever connection reads it:
        # a new one (the embedded writer closes its own after every batch, CONN_MAX_AGE 0)
        # loses nothing, and forgetting there emptied the caches at every batch.
        if before is not None and connection.vendor != "sqlite":
            seen.forget()
            _hosts_known.clear()
        _connection_seen.connection = current


def forget_caches() -> None:
    """Tests, and whoever changed hosts or URLs behind this process's back."""
    seen.forget()
    _hosts_known.clear()
    _inlinks.clear()
    _site_inlinks.clear()
    _closed.clear()
    _pending.clear()


def default_scope() -> ScopeSpec:
    return ScopeSpec(settings.CRAWLER_DEFAULT_SCOPE)


def canonical_url(url: str, base: str | None = None) -> str | None:
    """The frontier's form of a URL (frontier/normalize.py), or None when it has none."""
    try:
        return normalize(url, base).url
    except InvalidUrl:
        return None


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
