"""Admission: URLs and seeds entering the frontier (DESIGN.md, "the path of a URL", step 1).

normalize -> filter -> scope -> seen test -> store with a priority, in as few queries as
possible; seeds are logged with the scope their links are judged by.
"""

import dataclasses
from collections import defaultdict
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Iterable

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, F, Sum
from django.db.models.functions import Least

from . import scope
from .filters import rejection_reason
from .limits import current_limits
from .models import CrawlScope, Host, Seed, Url, UrlState
from .normalize import InvalidUrl, normalize
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
                result.reject(Rejection.OUT_OF_SCOPE)
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
                result.rejected[Rejection.HOST_QUOTA] = result.rejected.get(Rejection.HOST_QUOTA, 0) + 1
                result.verdicts[position] = f"rejected:{Rejection.HOST_QUOTA}"
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
