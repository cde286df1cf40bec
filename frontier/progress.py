"""Progress: where the crawl stands (is there work, when is the next, the summary)."""

from datetime import timedelta

from django.db.models import Count, Exists, Min, OuterRef, Q, Sum
from django.db.models.functions import Greatest
from django.utils import timezone

from .admission import scope_summary
from .leases import leased_at, leases_held
from .models import DeadLetter, Host, Url, UrlState


def has_pending_work() -> bool:
    """True while any URL waits (now or later) or any host is leased: the crawl isn't over."""
    now = timezone.now()
    return (
        Url.objects.filter(state=UrlState.QUEUED).exists()
        or Host.objects.filter(leased_at(now)).exists()
    )


def has_work_due_within(seconds: float) -> bool:
    """True while a host is leased or a queued URL may be fetched within `seconds` (its own
    time and its host's have both come): what keeps a one-shot crawl running. Work due
    later is deferred (deferred_work) and a later crawl picks it up."""
    now = timezone.now()
    soon = now + timedelta(seconds=seconds)
    return (Host.objects.filter(leased_at(now)).exists()
            or Url.objects.filter(state=UrlState.QUEUED, next_fetch_at__lte=soon, host__next_fetch_at__lte=soon).exists())


def deferred_work(limit: int = 20) -> list[dict]:
    """What waits: queued URLs by their last outcome (a retry, robots.txt unavailable, a
    Retry-After…) and URLs on the failure back-off ladder, each group with its size and
    when its first URL is due (its own time or its host's, whichever is later)."""
    due = Greatest("next_fetch_at", "host__next_fetch_at")
    groups = [
        {"state": UrlState.QUEUED.value, "reason": outcome or "new", "urls": n, "due": first}
        for outcome, n, first in Url.objects.filter(state=UrlState.QUEUED).annotate(due=due)
        .values("outcome").annotate(n=Count("id"), first=Min("due")).values_list("outcome", "n", "first")
    ]
    groups += [
        {"state": UrlState.BACKOFF.value, "reason": outcome, "urls": n, "due": first}
        for outcome, n, first in Url.objects.filter(state=UrlState.BACKOFF).values("outcome")
        .annotate(n=Count("id"), first=Min("next_fetch_at")).values_list("outcome", "n", "first")
    ]
    return sorted(groups, key=lambda g: (g["due"], g["reason"]))[:limit]


def next_due_in(max_wait: float) -> float:
    """Seconds until some host that is not leased may become ready, capped to max_wait
    (idle waiting; a leased host comes back when its session ends)."""
    now = timezone.now()
    return _seconds_until(_soonest_free_host(now), now, max_wait)


def next_change_in(max_wait: float) -> float:
    """Seconds until the next moment something not ready now may become ready, capped to
    max_wait: a free host's next allowed time, or a queued URL's (a retry that backs off).
    Both read from the top of an index. What is due already but was not leased (its server
    address busy, the lease cap) becomes ready by a release, which is announced
    (frontier/wakeups.py), so it is not counted."""
    now = timezone.now()
    url_at = (Url.objects.filter(state=UrlState.QUEUED, next_fetch_at__gt=now).order_by("next_fetch_at")
              .values_list("next_fetch_at", flat=True).first())
    soonest = min((at for at in (_soonest_free_host(now, later=True), url_at) if at is not None), default=None)
    return _seconds_until(soonest, now, max_wait)


def _soonest_free_host(now, later: bool = False):
    """The earliest next allowed time of a host not leased with a URL queued (only those
    after `now`, when `later`); None when there is none."""
    hosts = Host.objects.filter(Q(leased_until__isnull=True) | Q(leased_until__lte=now))
    if later:
        hosts = hosts.filter(next_fetch_at__gt=now)
    return (hosts.filter(Exists(Url.objects.filter(host=OuterRef("pk"), state=UrlState.QUEUED)))
            .order_by("next_fetch_at").values_list("next_fetch_at", flat=True).first())


def _seconds_until(when, now, max_wait: float) -> float:
    return max_wait if when is None else min(max_wait, max(0.0, (when - now).total_seconds()))


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
        "hosts_leased": leases_held(now),
        "dead_letters": DeadLetter.objects.count(),
        "recrawl": recrawl_summary(),
        "scope": scope_summary(),
    }


def recrawl_summary() -> dict:
    """What revisits saw: observations made in all, and URLs by what their last visit saw."""
    last = dict(Url.objects.exclude(last_observation="").values_list("last_observation").annotate(n=Count("id")))
    return {
        "observations": Url.objects.aggregate(n=Sum("observations"))["n"] or 0,
        "by_last_observation": dict(sorted(last.items())),
        "changed": last.get("changed", 0),
        "not_modified": last.get("not_modified", 0),
        "backoff": Url.objects.filter(state=UrlState.BACKOFF).count(),
    }
