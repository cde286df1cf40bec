"""What the dashboard shows live (not from a metrics sample): the hosts held back and why,
and whether the crawl is alive — processes, beat, how the crawl runs (embedded or
distributed), and a clear state: paused, crawling, waiting, idle, or stalled, with the
command that would move it on in the way it runs.

Every query here is bounded: heartbeats are one row per process, periodic tasks a handful,
the host lists are short (frontier/stats.py host_health), and the one question about the
URL table (is work overdue?) is asked only once nothing has been fetched for
CRAWLER_STALLED_SECONDS, and stops at the first overdue URL.
"""

from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.db.models import F
from django.utils import timezone

from common.humanize import duration, moment
from frontier import service as frontier

from crawl.models import ProcessHeartbeat, ProcessKind
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

def liveness(now=None, *, broker_answers: bool | None = None) -> dict:
    """`broker_answers`: whether the broker told its queue lengths (None: not asked)."""
    now = now or timezone.now()
    processes = _processes(now)
    online = [p for p in processes if p["state"] == "online"]
    beat = beat_runs(now)
    mode = run_mode(processes, beat)
    return {
        "processes": processes,
        "workers_online": sum(p["kind"] != ProcessKind.DISPATCHER for p in online),
        "dispatchers_online": sum(p["kind"] == ProcessKind.DISPATCHER for p in online),
        "beat": beat | _beat_card(mode, beat, now),
        "mode": mode,
        "crawl": crawl_state(now, mode=mode, broker_answers=broker_answers),
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
        "every_seconds": shortest,
        "tasks": [{"name": t["name"], "task": t["task"], "enabled": t["enabled"], "last_run_at": _iso(t["last_run_at"]),
                   "runs": t["total_run_count"]} for t in tasks],
    }


_PERIOD_SECONDS = {"days": 86400, "hours": 3600, "minutes": 60, "seconds": 1, "microseconds": 1e-6}


def _seconds(every, period) -> float | None:
    return every * _PERIOD_SECONDS[period] if every and period in _PERIOD_SECONDS else None


# --- how the crawl runs ----------------------------------------------------------------------

EMBEDDED, DISTRIBUTED, UNKNOWN = "embedded", "distributed", "unknown"

# The commands as README.md and docs/operations.md document them; the dashboard shows them in `code`.
CRAWL = "`python manage.py crawl`"
CRAWL_CONTINUOUS = "`python manage.py crawl --continuous`"
WORKER = "`celery -A crawlerweb worker`"
DISPATCH = "`python manage.py dispatch`"
BEAT = "`celery -A crawlerweb beat`"


def run_mode(processes: list[dict], beat: dict) -> dict:
    """Embedded (`manage.py crawl`, one process, no beat) or distributed (Celery workers and
    dispatchers, beat optional), from what is known: SQLite is embedded only (one machine,
    no broker); else processes online now say it (workers or dispatchers: distributed; an
    embedded crawler alone: embedded), or beat running, or the kind of the process heard from
    last; with none of these (a new PostgreSQL database) it is unknown."""
    online = [p for p in processes if p["state"] == "online"]
    workers = sum(p["kind"] == ProcessKind.WORKER for p in online)
    dispatchers = sum(p["kind"] == ProcessKind.DISPATCHER for p in online)
    embedded = sum(p["kind"] == ProcessKind.EMBEDDED for p in online)
    beat_running = bool(beat["last_run_at"]) and not beat["late"]
    if connection.vendor == "sqlite":
        mode = EMBEDDED
    elif workers or dispatchers or beat_running:
        mode = DISTRIBUTED
    elif embedded:
        mode = EMBEDDED
    elif processes:
        latest = max(processes, key=lambda p: p["seen_at"])
        mode = EMBEDDED if latest["kind"] == ProcessKind.EMBEDDED else DISTRIBUTED
    else:
        mode = DISTRIBUTED if beat["last_run_at"] else UNKNOWN
    found = {"mode": mode, "database": connection.display_name, "workers": workers, "dispatchers": dispatchers,
             "embedded": embedded, "beat_running": beat_running}
    return found | {"label": _mode_label(found, beat)}


def _mode_label(mode: dict, beat: dict) -> str:
    if mode["mode"] == EMBEDDED:
        running = "a crawl running" if mode["embedded"] else "no crawl running"
        return f"embedded ({mode['database']}, {running})"
    if mode["mode"] == UNKNOWN:
        return "no crawling process has reported yet"
    if mode["beat_running"]:
        beat_text = f"beat every {duration(beat['every_seconds'])}"
    elif beat["last_run_at"]:
        beat_text = f"beat late (last run {duration(beat['seconds_ago'])} ago)"
    else:
        beat_text = "no beat"
    return f"distributed: {_count(mode['workers'], 'worker')}, {_count(mode['dispatchers'], 'dispatcher')}, {beat_text}"


def _count(n: int, noun: str) -> str:
    return f"no {noun}" if n == 0 else f"{n} {noun}{'s' if n > 1 else ''}"


def _beat_card(mode: dict, beat: dict, now) -> dict:
    """The beat card: `off` where there is no beat to have (embedded: `crawl --continuous`
    releases revisits itself), `warn` where a missing beat costs something: it ran and
    stopped, or it never ran and revisits wait for it."""
    if mode["mode"] != DISTRIBUTED:  # unknown: nothing has run yet, a missing beat is no news
        return {"off": mode["mode"] == EMBEDDED, "warn": False}
    warn = beat["late"] and (beat["last_run_at"] is not None or frontier.has_revisits_due(now))
    return {"off": False, "warn": warn}


# --- the crawl's state -------------------------------------------------------------------------

def crawl_state(now=None, *, mode: dict | None = None, broker_answers: bool | None = None) -> dict:
    """One word for the whole crawl, and why:
    - paused: an operator paused it;
    - idle: nothing is queued and no host is leased;
    - crawling: some process sent a request within CRAWLER_STALLED_SECONDS;
    - stalled: URLs have been due that long on hosts free to be fetched, and nothing was
      fetched (no crawl running, no worker, no dispatcher, a broker that is away …);
    - waiting: URLs are queued, but each waits for its host (politeness, back-off, pauses).
    `detail` says why in a sentence; `advice` (maybe empty) names the command that would
    move the crawl on, in the way it runs (`mode`: run_mode's answer)."""
    now = now or timezone.now()
    if mode is None:
        mode = run_mode(_processes(now), beat_runs(now))
    window = settings.CRAWLER_STALLED_SECONDS
    paused_since = frontier.crawl_paused_since()
    last_request = (ProcessHeartbeat.objects.filter(last_request_at__isnull=False)
                    .order_by("-last_request_at").values_list("last_request_at", flat=True).first())
    state = {"paused_since": _iso(paused_since), "last_request_at": _iso(last_request),
             "stalled_after_seconds": window, "mode": mode["mode"]}
    if paused_since:
        return state | {"state": "paused",
                        "detail": f"An operator paused the crawl at {moment(paused_since)}: nothing is fetched "
                                  "until it is resumed.",
                        "advice": "Resume it in the admin (crawl limits: the resume action) or with "
                                  "`POST /crawl/resume`."}
    if not frontier.has_pending_work():
        return state | {"state": "idle", "detail": "Nothing is queued.", "advice": _idle_advice(mode, now)}
    if last_request and (now - last_request).total_seconds() <= window:
        return state | {"state": "crawling", "detail": "Requests are being sent.", "advice": _beat_advice(mode, now)}
    if frontier.overdue_work(window):
        return state | {"state": "stalled",
                        "detail": f"URLs have been due for over {duration(window)} on hosts free to be fetched, "
                                  "and nothing was fetched.",
                        "advice": _join(_stalled_advice(mode, broker_answers), _beat_advice(mode, now))}
    return state | {"state": "waiting",
                    "detail": "Queued URLs wait for their hosts (politeness delays, back-off, paused hosts).",
                    "advice": _join(_waiting_advice(mode), _beat_advice(mode, now))}


def _stalled_advice(mode: dict, broker_answers: bool | None) -> str:
    if mode["mode"] == EMBEDDED:
        if mode["embedded"]:
            return ("The embedded crawl is online but sends nothing: see its output, or stop it and run "
                    f"{CRAWL} again.")
        return f"No crawl is running: {CRAWL} resumes the frontier ({CRAWL_CONTINUOUS} keeps it fresh)."
    if mode["mode"] == UNKNOWN:
        return (f"No crawling process has reported: run {CRAWL} (embedded, one machine), or {WORKER} and "
                f"{DISPATCH} (distributed).")
    missing = _missing_processes(mode)
    if missing:
        return missing
    if broker_answers is False:
        return "Workers and dispatchers are online but the broker does not answer: check `CELERY_BROKER_URL`."
    return "Workers and dispatchers are online but fetch nothing: see their logs, and the broker's queues."


def _missing_processes(mode: dict) -> str:
    missing = []
    if not mode["workers"]:
        missing.append(f"no worker is online (start {WORKER})")
    if not mode["dispatchers"]:
        missing.append(f"no dispatcher is online (start {DISPATCH})")
    if not missing:
        return ""
    text = "; ".join(missing)
    return f"{text[0].upper()}{text[1:]}."


def _waiting_advice(mode: dict) -> str:
    if mode["mode"] == EMBEDDED and not mode["embedded"]:
        return (f"No crawl is running to fetch them when due: {CRAWL} resumes the frontier ({CRAWL_CONTINUOUS} "
                "waits for work due later).")
    if mode["mode"] == DISTRIBUTED:
        return _missing_processes(mode)
    return ""


def _idle_advice(mode: dict, now) -> str:
    if mode["mode"] == DISTRIBUTED:
        return _beat_advice(mode, now) or "Add seeds with `python manage.py seed URL …` or `POST /seed/urls`."
    if frontier.has_revisits_due(now):
        return f"Revisits are due: {CRAWL_CONTINUOUS} releases and fetches them (a one-shot crawl does not)."
    return f"Add seeds with {CRAWL[:-1]} URL …`."


def _beat_advice(mode: dict, now) -> str:
    """Distributed without beat, revisits due: nothing releases them."""
    if mode["mode"] != DISTRIBUTED or mode["beat_running"] or not frontier.has_revisits_due(now):
        return ""
    return f"Revisits are due and beat is not running: start {BEAT} to release them."


def _join(*sentences: str) -> str:
    return " ".join(s for s in sentences if s)


def _iso(value) -> str | None:
    return value.isoformat() if value else None
