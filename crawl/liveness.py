"""Heartbeats: every process that crawls or dispatches says, in the database, that it is alive
and what it has done (one ProcessHeartbeat row per process). The dashboard reads them
(console/health.py): workers online, the last lease of each dispatcher, and whether
anything has been fetched lately.

The database rather than the broker's own heartbeats, because the embedded crawler has no
broker, and because a dead process must show as a row that stopped being written: Celery's
worker heartbeats vanish with the worker, and they do not carry what was fetched.

Callers are the engine's lease keeper (crawl/engine.py) and the dispatcher's loop
(crawl/runners.py), on their hot paths. So `beat` is throttled (one write per process every
CRAWLER_HEARTBEAT_SECONDS, whatever the caller's rhythm) and never raises: a heartbeat that
cannot be written is skipped and logged, the crawl goes on.

An engine's heartbeat also carries a `holder` id, random per run, which the engine writes
into every host lease it begins (Host.lease_holder). When that heartbeat goes stale
(CRAWLER_LEASE_STALE_SECONDS), the other processes release those leases at once
(crawl/recovery.py) rather than after the lease's expiry. `written_ago` tells the engine
how old its own last written heartbeat is, so that its sessions stop sending before the
others could take it for dead (crawl/session.py: a frozen process that wakes up).
"""

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from common.dbconn import reset_connection

from .models import ProcessHeartbeat, ProcessKind

log = logging.getLogger(__name__)

CLEANUP_EVERY_SECONDS = 3600.0  # how often one process deletes the rows past retention


@dataclass
class _Beating:
    """What this process remembers of one of its heartbeats between two writes."""

    row_id: int | None = None
    next_write: float = 0.0
    next_cleanup: float = 0.0
    started_at: object = None
    requests: int = 0  # as last reported: a higher count means requests were sent since
    last_request_at: object = None
    leases: int = 0
    last_lease_at: object = None
    holder: str = ""
    written_at: float | None = None  # time.monotonic() of the last write that succeeded (taken before it)


_lock = threading.Lock()
_beating: dict[tuple, _Beating] = {}


def engine_kind(engine_name: str) -> str:
    """The embedded runner names its engine "embedded"; Celery workers "worker-<pid>"."""
    return ProcessKind.EMBEDDED if engine_name.startswith("embedded") else ProcessKind.WORKER


def holder(kind: str, name: str) -> str:
    """This run's holder id for the heartbeat (kind, name) of this process."""
    with _lock:
        state = _beating.setdefault((kind, name, os.getpid()), _Beating(started_at=timezone.now()))
        if not state.holder:
            state.holder = uuid.uuid4().hex[:16]
        return state.holder


def written_ago(kind: str, name: str) -> float:
    """Seconds since this process's last written heartbeat (kind, name) was taken (infinite:
    never written)."""
    state = _beating.get((kind, name, os.getpid()))
    if state is None or state.written_at is None:
        return float("inf")
    return time.monotonic() - state.written_at


def stale_holders(now=None) -> list[str]:
    """Holder ids of processes whose heartbeat is older than CRAWLER_LEASE_STALE_SECONDS
    (dead, frozen or cut off from the database), among those recent enough to hold a lease
    still. One indexed range of the heartbeat table."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.CRAWLER_LEASE_STALE_SECONDS)
    oldest = stale - timedelta(seconds=settings.CRAWLER_LEASE_SECONDS)
    return list(ProcessHeartbeat.objects.filter(seen_at__lt=stale, seen_at__gte=oldest).exclude(holder="")
                .values_list("holder", flat=True))


def forget_holders(holders: list[str], now=None) -> None:
    """Their leases were released: not stale holders any more (unless one wakes up and
    beats again, which writes its holder back)."""
    stale = (now or timezone.now()) - timedelta(seconds=settings.CRAWLER_LEASE_STALE_SECONDS)
    ProcessHeartbeat.objects.filter(holder__in=holders, seen_at__lt=stale).update(holder="")


def beat(kind: str, name: str, *, sessions: int = 0, requests: int = 0, leased: int = 0,
         stopped: bool = False) -> bool:
    """Report this process alive. Workers pass their open `sessions` and `requests` so
    far; dispatchers the sessions `leased` since their previous call (they are added up
    between writes). Writes at most every CRAWLER_HEARTBEAT_SECONDS, except the last one
    (`stopped`). Returns whether a row was written; never raises."""
    key = (kind, name, os.getpid())
    now_mono, now = time.monotonic(), timezone.now()
    with _lock:
        state = _beating.setdefault(key, _Beating(started_at=now))
        if leased:
            state.leases += leased
            state.last_lease_at = now
        if requests > state.requests:
            state.requests, state.last_request_at = requests, now
        if not stopped and now_mono < state.next_write:
            return False
        # The next write is due one period on, whether this one works or not: a database
        # that is away is not asked again on every call of a hot loop.
        state.next_write = now_mono + settings.CRAWLER_HEARTBEAT_SECONDS
        cleanup = now_mono >= state.next_cleanup
        if cleanup:
            state.next_cleanup = now_mono + CLEANUP_EVERY_SECONDS
        fields = dict(seen_at=now, stopped_at=now if stopped else None, sessions=sessions,
                      requests=max(requests, 0), last_request_at=state.last_request_at,
                      leases=state.leases, last_lease_at=state.last_lease_at,
                      holder="" if stopped else state.holder)  # a clean stop gave its leases back
        if stopped:
            _beating.pop(key, None)
    try:
        row_id = _write(kind, name, state, fields)
    except Exception:  # noqa: BLE001 - liveness must never stop a crawl
        log.warning("could not write the heartbeat of %s %s", kind, name, exc_info=True)
        reset_connection()
        return False
    with _lock:
        state.row_id = row_id
        state.written_at = now_mono
    if cleanup:
        _delete_old_rows()
    return True


def _write(kind: str, name: str, state: _Beating, fields: dict) -> int:
    if state.row_id is not None and ProcessHeartbeat.objects.filter(pk=state.row_id).update(**fields):
        return state.row_id
    # First beat of this process (or its row was deleted meanwhile): one row per process.
    row, _ = ProcessHeartbeat.objects.update_or_create(
        kind=kind, hostname=socket.gethostname()[:120], pid=os.getpid(), name=name[:120],
        defaults=dict(fields, started_at=state.started_at))
    return row.pk


def _delete_old_rows() -> None:
    cutoff = timezone.now() - timedelta(hours=settings.CRAWLER_HEARTBEAT_RETENTION_HOURS)
    try:
        ProcessHeartbeat.objects.filter(seen_at__lt=cutoff).delete()
    except Exception:  # noqa: BLE001 - housekeeping; the next process tries again
        log.warning("could not delete old heartbeats", exc_info=True)
        reset_connection()


def forget() -> None:
    """Drop this process's throttling state (tests: each starts with a fresh process view)."""
    with _lock:
        _beating.clear()
