"""Waking an idle dispatcher when work may have become ready, instead of it polling.

A dispatcher that finds nothing to lease used to look again every 0.05-0.4 s: on a
frontier where nothing is due for hours, a few queries a second for nothing (issue 55:
1.3 % of a core, and the database's share). Now it waits for the earliest of: the next
host's ready time (frontier.next_due_in), a notification, or
CRAWLER_DISPATCH_IDLE_WAIT_LONGEST for what nothing announces (an expired lease, a pause
that ends).

What announces (`announce()`, a PostgreSQL NOTIFY on CHANNEL, delivered at commit): hosts
given back by their sessions or by recovery, URLs added (seeds, discovered links), due
revisits released, and an operator's steering. All of these are frontier writes, so the
calls sit here, in the frontier, next to the writes. On SQLite (the embedded crawler runs
its dispatch loop in the same process) both ends do nothing.
"""

import logging
import select
import threading
import time

import psycopg
from django.db import connection

log = logging.getLogger(__name__)

CHANNEL = "crawler_work"


def announce() -> None:
    """Tell idle dispatchers to look again (on PostgreSQL; sent when the transaction commits)."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, '')", [CHANNEL])


class WorkListener:
    """A dispatcher's own connection, listening on CHANNEL. `wait(timeout, stop)` returns
    True when notified (all pending notifications are taken), False when the timeout
    passed or `stop` was set. Without PostgreSQL, or while its connection is lost, it only
    waits (the dispatcher then polls, as it did before); a lost connection is made again
    at most every RECONNECT_SECONDS, when `available()` is asked."""

    STOP_CHECK_SECONDS = 1.0  # how soon a stop is seen while waiting
    RECONNECT_SECONDS = 60.0  # a database that went away is asked again this often

    def __init__(self):
        self._conn = None
        self._postgres = connection.vendor == "postgresql"
        self._retry_at = 0.0
        self.available()

    @property
    def postgres(self) -> bool:
        """Notifications can exist here (PostgreSQL), whether or not it listens right now."""
        return self._postgres

    def available(self) -> bool:
        """Listening now (connecting again first, when it was lost long enough ago)."""
        if self._conn is None and self._postgres and time.monotonic() >= self._retry_at:
            self._connect()
        return self._conn is not None

    def _connect(self) -> None:
        self._retry_at = time.monotonic() + self.RECONNECT_SECONDS
        try:
            params = connection.get_connection_params()
            params.pop("cursor_factory", None)
            params.pop("context", None)
            self._conn = psycopg.connect(**params, autocommit=True)
            self._conn.execute(f"LISTEN {CHANNEL}")
        except Exception:
            log.warning("cannot listen for work notifications; the dispatcher polls", exc_info=True)
            self.close()

    def wait(self, timeout: float, stop: threading.Event) -> bool:
        if self._conn is None:
            stop.wait(timeout)
            return False
        deadline = time.monotonic() + timeout
        while not stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                ready, _, _ = select.select([self._conn.fileno()], [], [], min(left, self.STOP_CHECK_SECONDS))
                if ready and list(self._conn.notifies(timeout=0)):
                    return True
            except Exception:  # the connection broke: poll from now on, the old way
                log.warning("lost the work-notification connection; the dispatcher polls", exc_info=True)
                self.close()
                stop.wait(max(0.0, deadline - time.monotonic()))
                return False
        return False

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:
                pass
        self._conn = None
