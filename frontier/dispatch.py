"""The dispatcher: lease ready hosts and send each lease to one of N fetch queues.

A host always lands on the same queue (a stable CRC32 of its origin, never Python's
per-process hash()), like Mercator's back queues sharded rather than one queue per host.
Several dispatchers may run at once on several machines: leasing uses SKIP LOCKED, so they
never hand out the same host twice. A dispatcher never waits out a politeness delay: hosts
that are not ready are simply not leased.
"""

import logging
import threading
import zlib

from django.conf import settings
from django.db import close_old_connections

from . import service

log = logging.getLogger(__name__)
FETCH_TASK = "fetch.fetch_batch"  # by name: the frontier does not import the fetch app


def queue_for(origin: str, queues: int | None = None) -> str:
    return f"fetch.{zlib.crc32(origin.encode()) % (queues or settings.CRAWLER_FETCH_QUEUES)}"


def fetch_queue_names() -> list[str]:
    return [f"fetch.{i}" for i in range(settings.CRAWLER_FETCH_QUEUES)]


def queued_messages(app) -> int:
    """Messages waiting in all fetch queues (a few LLENs on Redis)."""
    with app.pool.acquire(block=True) as conn:  # pooled: no new broker connection per round
        return sum(_queue_depths(conn).values())


def queue_depths(app, timeout: float = 2.0) -> dict[str, int] | None:
    """Messages waiting per fetch queue, or None when the broker does not answer within
    `timeout` (the embedded crawler has none). For metrics: a fresh connection, no retries."""
    try:
        with app.connection_for_read() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, timeout=timeout)
            return _queue_depths(conn)
    except Exception:  # noqa: BLE001 - any broker trouble means "unknown", never a failed page
        log.info("broker unreachable for queue depths", exc_info=True)
        return None


def _queue_depths(conn) -> dict[str, int]:
    channel = conn.default_channel
    depths = {}
    for queue in fetch_queue_names():
        try:
            depths[queue] = channel.queue_declare(queue=queue, passive=True).message_count
        except conn.channel_errors:  # never declared yet: nothing in it
            depths[queue] = 0
    return depths


def dispatch_room(app) -> int:
    """Leases this round may send: back-pressure stops adding at 80% of
    CRAWLER_MAX_QUEUED_MESSAGES (the frontier design seed's rule), so a slow or absent
    consumer never makes the broker grow without bound. (Outstanding leases are capped too,
    but an expired lease's message may still sit in a queue while its host is leased again.)"""
    high_water = int(settings.CRAWLER_MAX_QUEUED_MESSAGES * 0.8)
    return max(0, min(settings.CRAWLER_DISPATCH_BATCH, high_water - queued_messages(app)))


def dispatch_once(name: str, app) -> int:
    """One round: lease and send. Returns the number of leases sent."""
    room = dispatch_room(app)
    if room == 0:
        log.info("fetch queues at their high-water mark; not dispatching")
        return 0
    leases = service.lease_ready_hosts(name, room)
    sent = 0
    for lease in leases:
        try:
            app.send_task(
                FETCH_TASK, args=[lease.host_id, lease.token, lease.url_ids], queue=queue_for(lease.origin)
            )
            sent += 1
        except Exception:  # broker down: give the host back rather than wait for expiry
            log.exception("could not send lease for %s; releasing it", lease.origin)
            service.release_host(lease.host_id, lease.token, None, leased_address=lease.address)
    return sent


def run(name: str, app, stop: threading.Event) -> None:
    """Dispatch until `stop` is set. After an empty round the wait doubles, from
    CRAWLER_DISPATCH_IDLE_WAIT up to CRAWLER_DISPATCH_IDLE_WAIT_MAX, so an idle frontier
    costs a few queries a second, not dozens; any lease sent resets it."""
    wait = settings.CRAWLER_DISPATCH_IDLE_WAIT
    while not stop.is_set():
        close_old_connections()
        try:
            sent = dispatch_once(name, app)
        except Exception:  # database hiccup: keep the dispatcher alive, try again shortly
            log.exception("dispatch round failed")
            sent = 0
        if sent:
            wait = settings.CRAWLER_DISPATCH_IDLE_WAIT
        else:
            stop.wait(wait)
            wait = min(wait * 2, settings.CRAWLER_DISPATCH_IDLE_WAIT_MAX)
