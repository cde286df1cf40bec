"""Figures about the frontier for /metrics and the dashboard, in as few scans as possible.

The URL table is the big one (millions of rows): the counts by state, status, score,
outcome and recent window all come out of ONE grouped scan; the host table gets one
aggregate query plus one for hosts ready now. The dashboard's lists (top hosts, recent
errors) add four queries restricted to fetched, failed or gone URLs. Host health (the hosts
held back, and why) reads only the host table: one aggregate and four short lists.
"""

from collections import Counter
from datetime import timedelta

from django.conf import settings
from django.db.models import Case, Count, IntegerField, Q, When
from django.utils import timezone

from . import hoststate, importance
from .models import CrawlLimits, DeadLetter, Host, Url, UrlState
from .robots_state import VERDICT_FILTERS, RobotsVerdict

RECENT_WINDOWS = {"1m": 60, "5m": 300, "15m": 900}
BAND_NAMES = ("high", "middle", "low")
# Where the last attempt went wrong and stays wrong: the dashboard's "errors", with the
# queued URLs waiting for a retry (RETRYING) beside them. BACKOFF is one: its retries are
# spent and it waits weeks (a host resetting every connection ends there). GONE (404/410)
# is not: the server answered that the page is no more, which is news about the site, not
# a failure of the crawl; gone pages are counted apart (top_hosts' by_gone, by_state).
ERROR_STATES = (UrlState.FAILED, UrlState.DENIED, UrlState.HTTP_ERROR, UrlState.BACKOFF)
# A retry leaves the URL queued with its attempts counted and the error as its outcome
# (frontier/outcomes.py); every requeue (recrawl, recrawl-now, dead-letter requeue) sets
# attempts back to 0.
RETRYING = Q(state=UrlState.QUEUED, attempts__gt=0)


def _by_band(by_score: Counter) -> dict[str, int]:
    """Queued URLs by score band (frontier/importance.py), best first."""
    bands = Counter()
    for score, n in by_score.items():
        bands[importance.score_band(int(score))] += n
    return {name: bands[band] for band, name in enumerate(BAND_NAMES)}


def url_figures() -> dict:
    now = timezone.now()
    windows = {name: Count("id", filter=Q(last_fetched_at__gte=now - timedelta(seconds=s)))
               for name, s in RECENT_WINDOWS.items()}
    queued_score = Case(When(state=UrlState.QUEUED, then="score"), output_field=IntegerField())
    rows = (Url.objects.order_by().values("state", "last_status", "outcome")
            .annotate(queued_score=queued_score, n=Count("id"),
                      due=Count("id", filter=Q(state=UrlState.QUEUED, next_fetch_at__lte=now)),
                      retrying=Count("id", filter=Q(state=UrlState.QUEUED, attempts__gt=0)),
                      fetched=Count("id", filter=Q(last_fetched_at__isnull=False)), **windows))
    by_state, by_status, by_score, errors = Counter(), Counter(), Counter(), Counter()
    fetched, due, retrying, recent = 0, 0, 0, Counter()
    for row in rows:
        n = row["n"]
        by_state[row["state"]] += n
        if row["last_status"] is not None:
            by_status[str(row["last_status"])] += n
        if row["queued_score"] is not None:
            by_score[str(row["queued_score"])] += n
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
        "queued_by_score": dict(sorted(by_score.items(), key=lambda kv: -int(kv[0]))),
        "queued_by_band": _by_band(by_score),
        "queued_due_now": due,
        "retrying": retrying,
        "errors_by_kind": dict(errors.most_common()),
    }


def host_figures() -> dict:
    """Hosts by where each one is, one state per host so that the states add up to the
    total: leased (a session holds it), paused (by an operator), backing_off (its next
    allowed time is ahead), ready (due URLs, may be leased now), idle (nothing due).
    circuit_open cuts across them; so do the robots.txt figures' `cached`."""
    now = timezone.now()
    states = hoststate.predicates(now)  # one definition of each state: the admin's and the dashboard's
    threshold = settings.CRAWLER_HOST_FAILURE_THRESHOLD
    figures = Host.objects.aggregate(
        total=Count("id"),
        leased=Count("id", filter=states[hoststate.LEASED]),
        paused=Count("id", filter=states[hoststate.PAUSED]),
        backing_off=Count("id", filter=states[hoststate.BACKING_OFF]),
        circuit_open=Count("id", filter=Q(failures__gte=threshold)),
        robots_cached=Count("id", filter=Q(robots_expires_at__gt=now)),
        # One definition of what each robots.txt answer means (robots_state): every host in one.
        robots_never=Count("id", filter=VERDICT_FILTERS[RobotsVerdict.NOT_FETCHED]),
        robots_ok=Count("id", filter=VERDICT_FILTERS[RobotsVerdict.RULES]),
        robots_allow_all=Count("id", filter=VERDICT_FILTERS[RobotsVerdict.ALLOW_ALL]),
        robots_unavailable=Count("id", filter=VERDICT_FILTERS[RobotsVerdict.DISALLOW_ALL]),
    )
    figures["ready"] = Host.objects.filter(states["free"]).filter(hoststate.due_urls(now)).count()
    # The rest; two queries a few ms apart may disagree by a host or two, never below zero.
    placed = figures["leased"] + figures["paused"] + figures["backing_off"] + figures["ready"]
    figures["idle"] = max(0, figures["total"] - placed)
    robots = {k.removeprefix("robots_"): figures.pop(k) for k in list(figures) if k.startswith("robots_")}
    return {"hosts": figures, "robots": robots}


def dead_letter_count() -> int:
    return DeadLetter.objects.count()


def top_hosts(limit: int = 10) -> dict:
    """Hosts with the most pages fetched; with the most errors: URLs whose last attempt
    failed, retrying ones included (a host that resets every connection has only those);
    and with the most pages gone (404/410), which are answers, not errors."""
    def top(which: Q):
        rows = (Url.objects.filter(which).order_by().values("host")
                .annotate(n=Count("id")).order_by("-n", "host")[:limit])
        origins = dict(Host.objects.filter(id__in=[r["host"] for r in rows]).values_list("id", "origin"))
        return [{"host": origins.get(r["host"], "?"), "count": r["n"]} for r in rows]

    return {"by_pages": top(Q(state=UrlState.FETCHED)), "by_errors": top(Q(state__in=ERROR_STATES) | RETRYING),
            "by_gone": top(Q(state=UrlState.GONE))}


def recent_errors(limit: int = 20) -> list[dict]:
    rows = (Url.objects.filter(Q(state__in=ERROR_STATES) | RETRYING)
            .exclude(last_fetched_at=None).order_by("-last_fetched_at")
            .values("url", "state", "outcome", "last_status", "attempts", "last_fetched_at")[:limit])
    return [dict(row, last_fetched_at=row["last_fetched_at"].isoformat()) for row in rows]


# --- host health and stalls (the dashboard's live panels) ----------------------------------

def host_health(limit: int = 20) -> dict:
    """The hosts held back, each in the first of these states that applies to it (so each
    host is listed once): paused by an operator; breaker open (CRAWLER_HOST_FAILURE_THRESHOLD
    network failures in a row); robots.txt unreachable (disallow-all until it is fetched
    again, RFC 9309); backing off (not leased, next request not before `until`, with the
    reason the session that released it wrote). Per state: how many hosts, and the `limit`
    paused longest or waiting longest."""
    now = timezone.now()
    paused = Q(paused_at__isnull=False)
    breaker = ~paused & Q(failures__gte=settings.CRAWLER_HOST_FAILURE_THRESHOLD)
    robots = ~paused & ~breaker & VERDICT_FILTERS[RobotsVerdict.DISALLOW_ALL]
    leased = Q(leased_until__gt=now)
    backing_off = ~paused & ~breaker & ~VERDICT_FILTERS[RobotsVerdict.DISALLOW_ALL] & ~leased & Q(next_fetch_at__gt=now)
    states = {"paused": paused, "breaker_open": breaker, "robots_unavailable": robots, "backing_off": backing_off}
    counts = Host.objects.aggregate(**{name: Count("id", filter=q) for name, q in states.items()})
    columns = ("origin", "next_fetch_at", "wait_reason", "failures", "paused_at", "robots_status", "robots_error",
               "robots_expires_at")
    order = {"paused": "paused_at", "breaker_open": "-next_fetch_at", "robots_unavailable": "-next_fetch_at",
             "backing_off": "-next_fetch_at"}
    health = {}
    for name, which in states.items():
        rows = Host.objects.filter(which).order_by(order[name], "id").values(*columns)[:limit] if counts[name] else []
        health[name] = {"count": counts[name], "hosts": [_host_row(row, now) for row in rows]}
    return health


def _host_row(row: dict, now) -> dict:
    until = row["next_fetch_at"]
    waiting = bool(until and until > now)
    return {
        "host": row["origin"],
        "until": until.isoformat() if waiting else None,  # None: free to go now
        # The stored reason says why the last wait was set: stale once it is over (hoststate.py).
        "reason": row["wait_reason"] if waiting else "",
        "failures": row["failures"],
        "paused_at": row["paused_at"].isoformat() if row["paused_at"] else None,
        "robots_status": row["robots_status"],
        "robots_error": row["robots_error"],
        "robots_retry_at": row["robots_expires_at"].isoformat() if row["robots_expires_at"] else None,
    }


def crawl_paused_since():
    """When an operator paused the whole crawl, or None."""
    return CrawlLimits.objects.filter(pk=1).values_list("paused_at", flat=True).first()


def overdue_work(seconds: float) -> bool:
    """Whether a queued URL has been due for `seconds` on a host that has been free to be
    fetched as long (not paused, its own next request time passed): work that a running
    crawl would have fetched by now. Stops at the first such URL (the state/due index
    leads); meant to be asked only once nothing has been fetched for a while."""
    cutoff = timezone.now() - timedelta(seconds=seconds)
    return Url.objects.filter(state=UrlState.QUEUED, next_fetch_at__lte=cutoff, host__paused_at__isnull=True,
                              host__next_fetch_at__lte=cutoff).exists()
