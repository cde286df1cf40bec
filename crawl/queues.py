"""The Celery fetch queues: which queue a host's sessions go to, and how full they are.

A host always lands on the same queue (a stable CRC32 of its origin, never Python's
per-process hash()), like Mercator's back queues sharded rather than one queue per host.
"""

import logging
import zlib

from django.conf import settings

log = logging.getLogger(__name__)


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
    """Sessions a dispatch round may send: back-pressure stops adding at 80% of
    CRAWLER_MAX_QUEUED_MESSAGES (the frontier design seed's rule), so a slow or absent
    consumer never makes the broker grow without bound. (Outstanding leases are capped too,
    but an expired lease's message may still sit in a queue while its host is leased again.)"""
    high_water = int(settings.CRAWLER_MAX_QUEUED_MESSAGES * 0.8)
    return max(0, min(settings.CRAWLER_DISPATCH_BATCH, high_water - queued_messages(app)))
