"""What the dashboard shows live (not from a metrics sample): the hosts held back and why,
and whether the crawl is alive — processes, beat, and a clear state: paused, crawling,
waiting, idle, or stalled.

Every query here is bounded: heartbeats are one row per process, periodic tasks a handful,
the host lists are short (frontier/stats.py host_health), and the one question about the
URL table (is work overdue?) is asked only once nothing has been fetched for
CRAWLER_STALLED_SECONDS, and stops at the first overdue URL.
"""

from datetime import timedelta

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from frontier import service as frontier

from .models import ProcessHeartbeat, ProcessKind
from .schedules import SCHEDULES

# Processes listed: those heard from within this many seconds (older rows are history).
LISTED_SECONDS = 3600
LISTED_MAX = 50


def host_health(limit: int = 20) -> dict:
    health = frontier.host_health(limit)
    for state in health.values():
        for host in state["hosts"]:
            host["reason_text"] = frontier.WAIT_REASON_TEXT.get(host["reason"], host["reason"])
    return health


# --- liveness ----------------------------------------------------------------------------

def liveness(now=None) -> dict:
    now = now or timezone.now()
    processes = _processes(now)
    online = [p for p in processes if p["state"] == "online"]
    return {
        "processes": processes,
        "workers_online": sum(p["kind"] != ProcessKind.DISPATCHER for p in online),
        "dispatchers_online": sum(p["kind"] == ProcessKind.DISPATCHER for p in online),
        "beat": beat_runs(now),
        "crawl": crawl_state(now),
        "stale_after_seconds": settings.CRAWLER_HEARTBEAT_STALE_SECONDS,
    }


def _processes(now) -> list[dict]:
    stale = timedelta(seconds=settings.CRAWLER_HEARTBEAT_STALE_SECONDS)
    rows = (ProcessHeartbeat.objects.filter(seen_at__gte=now - timedelta(seconds=LISTED_SECONDS))
            .order_by(F("stopped_at").asc(nulls_first=True), "kind", "-seen_at")[:LISTED_MAX])  # running first
    found = []
    for row in rows:
        if row.stopped_at:
            state = "stopped"
        elif now - row.seen_at > stale:
            state = "stale"  # stopped writing without saying goodbye: killed, or stuck
        else:
            state = "online"
        found.append({
            "kind": row.kind, "name": row.name, "hostname": row.hostname, "pid": row.pid, "state": state,
            "started_at": _iso(row.started_at), "seen_at": _iso(row.seen_at),
            "seen_seconds_ago": round((now - row.seen_at).total_seconds(), 1),
            "sessions": row.sessions, "requests": row.requests, "last_request_at": _iso(row.last_request_at),
            "leases": row.leases, "last_lease_at": _iso(row.last_lease_at),
        })
    return found


def beat_runs(now) -> dict:
    """When beat last sent each of our periodic tasks (django-celery-beat's last_run_at, saved
    after every task: CELERY_BEAT_SYNC_EVERY), and whether it looks late: nothing sent for
    twice the shortest enabled interval plus a minute."""
    from django_celery_beat.models import PeriodicTask

    names = [name for name, _, _ in SCHEDULES]
    tasks = list(PeriodicTask.objects.filter(name__in=names).select_related("interval")
                 .values("name", "task", "enabled", "last_run_at", "total_run_count",
                         "interval__every", "interval__period"))
    enabled = [t for t in tasks if t["enabled"]]
    last = max((t["last_run_at"] for t in enabled if t["last_run_at"]), default=None)
    shortest = min((_seconds(t["interval__every"], t["interval__period"]) for t in enabled), default=None)
    late = bool(enabled) and (last is None or (shortest is not None
                                               and (now - last).total_seconds() > 2 * shortest + 60))
    return {
        "last_run_at": _iso(last),
        "seconds_ago": round((now - last).total_seconds(), 1) if last else None,
        "late": late,
        "tasks": [{"name": t["name"], "task": t["task"], "enabled": t["enabled"], "last_run_at": _iso(t["last_run_at"]),
                   "runs": t["total_run_count"]} for t in tasks],
    }


_PERIOD_SECONDS = {"days": 86400, "hours": 3600, "minutes": 60, "seconds": 1, "microseconds": 1e-6}


def _seconds(every, period) -> float | None:
    return every * _PERIOD_SECONDS[period] if every and period in _PERIOD_SECONDS else None


def crawl_state(now=None) -> dict:
    """One word for the whole crawl, and why:
    - paused: an operator paused it;
    - idle: nothing is queued and no host is leased;
    - crawling: some process sent a request within CRAWLER_STALLED_SECONDS;
    - stalled: URLs have been due that long on hosts free to be fetched, and nothing was
      fetched (no worker, no dispatcher, a broker that is away …);
    - waiting: URLs are queued, but each waits for its host (politeness, back-off, pauses)."""
    now = now or timezone.now()
    window = settings.CRAWLER_STALLED_SECONDS
    paused_since = frontier.crawl_paused_since()
    last_request = (ProcessHeartbeat.objects.filter(last_request_at__isnull=False)
                    .order_by("-last_request_at").values_list("last_request_at", flat=True).first())
    state = {"paused_since": _iso(paused_since), "last_request_at": _iso(last_request),
             "stalled_after_seconds": window}
    if paused_since:
        return state | {"state": "paused", "detail": "an operator paused the crawl: nothing is fetched until it "
                                                     "is resumed"}
    if not frontier.has_pending_work():
        return state | {"state": "idle", "detail": "nothing is queued"}
    if last_request and (now - last_request).total_seconds() <= window:
        return state | {"state": "crawling", "detail": "requests are being sent"}
    if frontier.overdue_work(window):
        return state | {"state": "stalled", "detail": f"URLs have been due for over {window:g} s and nothing was "
                                                      "fetched: are the workers, the dispatcher and the broker up?"}
    return state | {"state": "waiting", "detail": "queued URLs wait for their hosts (politeness delays, "
                                                  "back-off, paused hosts)"}


def _iso(value) -> str | None:
    return value.isoformat() if value else None
