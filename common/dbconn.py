"""Long-running threads (a session engine's, the writer, heartbeats) share one rule for a
failed statement: drop this thread's connection, so that the next query opens a fresh one
(a database that restarted must not fail every later write)."""

from django.db import connection


def reset_connection() -> None:
    """Close this thread's connection, unless a transaction is open on it (the transaction's
    owner decides)."""
    if connection.in_atomic_block:
        return
    try:
        connection.close()
    except Exception:  # noqa: BLE001 - closing a dead connection may raise; it is gone either way
        pass
