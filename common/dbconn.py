"""Long-running threads (a session engine's, the writer, heartbeats, a dispatcher) share two
rules for their connections: after a failed statement, drop this thread's connection, so
that the next query opens a fresh one (a database that restarted must not fail every later
write); and on PostgreSQL, let the database end a transaction the thread leaves idle too
long (a stopped process must not hold its locks)."""

from django.db import connection


def end_idle_transactions(seconds: float, tuned=None):
    """On PostgreSQL, have the database end a transaction this thread's connection leaves
    idle for `seconds` (idle_in_transaction_session_timeout): a process stopped inside one
    (SIGSTOP, a stalled VM) would hold its row locks, and everyone waiting on them, for as
    long as it is stopped. Returns the connection it was set on: pass it back as `tuned`
    and a connection is set once. None elsewhere."""
    if connection.vendor != "postgresql":
        return None
    connection.ensure_connection()
    if connection.connection is not tuned:
        with connection.cursor() as cursor:
            cursor.execute(f"SET idle_in_transaction_session_timeout = {int(seconds * 1000)}")
    return connection.connection


def reset_connection() -> None:
    """Close this thread's connection, unless a transaction is open on it (the transaction's
    owner decides)."""
    if connection.in_atomic_block:
        return
    try:
        connection.close()
    except Exception:  # noqa: BLE001 - closing a dead connection may raise; it is gone either way
        pass
