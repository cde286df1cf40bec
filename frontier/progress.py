"""Progress: where the crawl stands (is there work, when is the next, the summary)."""

from django.db.models import Count, Exists, OuterRef, Q
from django.utils import timezone

from .admission import scope_summary
from .models import DeadLetter, Host, Url, UrlState


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
