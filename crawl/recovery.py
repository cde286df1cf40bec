"""Recovery in seconds: the hosts of a crawling process that died (or froze, or lost its
database) come back long before its leases would expire.

Every session engine writes a heartbeat every CRAWLER_HEARTBEAT_SECONDS with a holder id
(crawl/liveness.py) and names that holder in every lease it begins (Host.lease_holder).
Every other crawling process (each engine's lease keeper, each dispatcher round) calls
`sweep()`: holders whose heartbeat is older than CRAWLER_LEASE_STALE_SECONDS have their
leases released (frontier.release_leases_of: fenced by the lease token, the host's next
allowed time pushed one delay on), a few seconds after the death instead of the lease's
CRAWLER_LEASE_SECONDS. Their URLs were never taken out of `queued`, so the next session
fetches them, once.

Why it is safe for politeness:
- a process that is alive writes its heartbeat far more often than the staleness limit,
  and its own sessions stop sending once its last written heartbeat is older than that
  limit less one heartbeat (crawl/session.py, lease_held): by the time the others may take
  it for dead, it has stopped starting requests. A frozen process (SIGSTOP) that wakes up
  finds its heartbeat old and sends nothing until its keeper has found its leases gone.
- what a dead process may have sent just before it died is covered by the pushed next
  allowed time of its hosts (and their server addresses).
What is left: a request a process had already begun sending when it froze completes when
it wakes, possibly beside its successor's (the window is the request's own start).

The sweep costs one indexed read of the heartbeat table per process every
SWEEP_EVERY_SECONDS; the host table is touched only when a holder went stale.
"""

import logging
import threading
import time

from django.conf import settings

from . import liveness
from common.dbconn import end_idle_transactions, reset_connection
from frontier import service as frontier

log = logging.getLogger(__name__)

_lock = threading.Lock()
_next_sweep = 0.0


# Seconds a transaction may sit idle at least (idle_transaction_seconds): a busy machine can
# hold a live process between two statements for a while; the default staleness is 15 s.
IDLE_TRANSACTION_FLOOR = 5.0


def idle_transaction_seconds() -> float:
    """How long a crawling process's transaction may sit idle before the database ends it:
    as long as it takes for the process to be taken for dead (its leases are released
    then, so its row locks must go too), at least IDLE_TRANSACTION_FLOOR."""
    return max(settings.CRAWLER_LEASE_STALE_SECONDS, IDLE_TRANSACTION_FLOOR)


def end_idle_transactions_of_this_thread(tuned=None):
    """common.dbconn.end_idle_transactions at idle_transaction_seconds()."""
    return end_idle_transactions(idle_transaction_seconds(), tuned)


def sweep_every() -> float:
    return settings.CRAWLER_HEARTBEAT_SECONDS / 2


def sweep(force: bool = False) -> list[int]:
    """Release the leases of stale holders (at most every sweep_every() seconds per
    process, unless `force`); returns the host ids released. Never raises: a database
    that is away is asked again at the next sweep."""
    global _next_sweep
    now = time.monotonic()
    with _lock:
        if not force and now < _next_sweep:
            return []
        _next_sweep = now + sweep_every()
    try:
        holders = liveness.stale_holders()
        if not holders:
            return []
        released = frontier.release_leases_of(holders)
        liveness.forget_holders(holders)
    except Exception:  # noqa: BLE001 - the caller's own work (a dispatch round) must go on
        log.exception("could not release the leases of stale crawling processes")
        reset_connection()
        return []
    if released:
        log.warning("released %d host leases of %d crawling processes whose heartbeat stopped", len(released),
                    len(holders))
    return released


def forget() -> None:
    """Tests: the next sweep() runs at once."""
    global _next_sweep
    _next_sweep = 0.0
