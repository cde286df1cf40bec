"""Figures about the frontier for /metrics and the dashboard, in as few scans as possible.

The URL table is the big one (millions of rows): the counts by state, status, priority,
outcome and recent window all come out of ONE grouped scan; the host table gets one
aggregate query plus one for hosts ready now. The dashboard's lists (top hosts, recent
errors) add three queries restricted to fetched or failed URLs.
"""

from collections import Counter
from datetime import timedelta

from django.conf import settings
from django.db.models import Case, Count, Exists, IntegerField, OuterRef, Q, When
from django.utils import timezone

from .models import DeadLetter, Host, Url, UrlState
from .robots_state import VERDICT_FILTERS, RobotsVerdict

RECENT_WINDOWS = {"1m": 60, "5m": 300, "15m": 900}
# Where the last attempt went wrong (retrying, or given up): the dashboard's "errors".
ERROR_STATES = (UrlState.FAILED, UrlState.GONE, UrlState.DENIED, UrlState.HTTP_ERROR)


def url_figures() -> dict:
    now = timezone.now()
    windows = {name: Count("id", filter=Q(last_fetched_at__gte=now - timedelta(seconds=s)))
               for name, s in RECENT_WINDOWS.items()}
    queued_priority = Case(When(state=UrlState.QUEUED, then="priority"), output_field=IntegerField())
    rows = (Url.objects.order_by().values("state", "last_status", "outcome")
            .annotate(queued_priority=queued_priority, n=Count("id"),
                      due=Count("id", filter=Q(state=UrlState.QUEUED, next_fetch_at__lte=now)),
                      retrying=Count("id", filter=Q(state=UrlState.QUEUED, attempts__gt=0)),
                      fetched=Count("id", filter=Q(last_fetched_at__isnull=False)), **windows))
    by_state, by_status, by_priority, errors = Counter(), Counter(), Counter(), Counter()
    fetched, due, retrying, recent = 0, 0, 0, Counter()
    for row in rows:
        n = row["n"]
        by_state[row["state"]] += n
        if row["last_status"] is not None:
            by_status[str(row["last_status"])] += n
        if row["queued_priority"] is not None:
            by_priority[str(row["queued_priority"])] += n
        if row["outcome"] and (row["state"] in ERROR_STATES or row["retrying"]):
            errors[row["outcome"]] += n if row["state"] in ERROR_STATES else row["retrying"]
        fetched += row["fetched"]
        due += row["due"]
        retrying += row["retrying"]
        for name in RECENT_WINDOWS:
            recent[name] += row[name]
    return {
        "total": sum(by_state.values()),
        "by_state": {state: by_state.get(state, 0) for state in UrlState.values},
        "by_status": dict(sorted(by_status.items())),
        "fetched": fetched,
        "fetched_recently": {name: recent[name] for name in RECENT_WINDOWS},
        "pages_per_second": {name: round(recent[name] / s, 3) for name, s in RECENT_WINDOWS.items()},
        "queued_by_priority": dict(sorted(by_priority.items(), key=lambda kv: -int(kv[0]))),
        "queued_due_now": due,
        "retrying": retrying,
        "errors_by_kind": dict(errors.most_common()),
    }


def host_figures() -> dict:
    now = timezone.now()
    leased = Q(leased_until__gt=now)
    threshold = settings.CRAWLER_HOST_FAILURE_THRESHOLD
    figures = Host.objects.aggregate(
        total=Count("id"),
        leased=Count("id", filter=leased),
        backing_off=Count("id", filter=~leased & Q(next_fetch_at__gt=now)),
        circuit_open=Count("id", filter=Q(failures__gte=threshold)),
        robots_cached=Count("id", filter=Q(robots_expires_at__gt=now)),
        # One definition of what each robots.txt answer means (robots_state): every host in one.
        robots_never=Count("id", filter=VERDICT_FILTERS[RobotsVerdict.NOT_FETCHED]),
        robots_ok=Count("id", filter=VERDICT_FILTERS[RobotsVerdict.RULES]),
        robots_allow_all=Count("id", filter=VERDICT_FILTERS[RobotsVerdict.ALLOW_ALL]),
        robots_unavailable=Count("id", filter=VERDICT_FILTERS[RobotsVerdict.DISALLOW_ALL]),
    )
    due = Url.objects.filter(host=OuterRef("pk"), state=UrlState.QUEUED, next_fetch_at__lte=now)
    free = Q(leased_until__isnull=True) | Q(leased_until__lte=now)
    figures["ready"] = Host.objects.filter(free, next_fetch_at__lte=now).filter(Exists(due)).count()
    robots = {k.removeprefix("robots_"): figures.pop(k) for k in list(figures) if k.startswith("robots_")}
    return {"hosts": figures, "robots": robots}


def dead_letter_count() -> int:
    return DeadLetter.objects.count()


def top_hosts(limit: int = 10) -> dict:
    """Hosts with the most pages fetched, and with the most errors."""
    def top(states):
        rows = (Url.objects.filter(state__in=states).order_by().values("host")
                .annotate(n=Count("id")).order_by("-n", "host")[:limit])
        origins = dict(Host.objects.filter(id__in=[r["host"] for r in rows]).values_list("id", "origin"))
        return [{"host": origins.get(r["host"], "?"), "count": r["n"]} for r in rows]

    return {"by_pages": top([UrlState.FETCHED]), "by_errors": top(list(ERROR_STATES))}


def recent_errors(limit: int = 20) -> list[dict]:
    rows = (Url.objects.filter(Q(state__in=ERROR_STATES) | Q(state=UrlState.QUEUED, attempts__gt=0))
            .exclude(last_fetched_at=None).order_by("-last_fetched_at")
            .values("url", "state", "outcome", "last_status", "attempts", "last_fetched_at")[:limit])
    return [dict(row, last_fetched_at=row["last_fetched_at"].isoformat()) for row in rows]
