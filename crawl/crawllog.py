"""The crawl log: one JSON line per request (robots.txt and pages), from every runner, in a
size-rotated file, and the recent past in the database for the admin (crawl/admin.py).
Heritrix's crawl.log is the model: when, what, how it ended, how big, how long, by whom.
docs/operations.md "The crawl log" documents every field.

record_request() is an observe.py listener: it runs on the fetch thread after every
request, so it only formats the line and hands it over; it never waits and never touches
the database:

- the file: the line goes into a bounded queue; one thread per process writes what is
  waiting, up to WRITE_BATCH_CHARS at once, with concurrent-log-handler's
  ConcurrentRotatingFileHandler (one file lock per batch, not per line). A slow disk then
  delays that thread, not the fetch threads; a full queue drops the line and counts it.
  Handlers an operator adds to the logger `crawlerweb.crawl` get each line too.
- the database: the record goes into a bounded buffer that the process's writer thread
  (crawl/writer.py) inserts in each group commit (store_pending) and prunes (prune_if_due).
  A full buffer drops the record and counts it; the writer logs the count.

Why concurrent-log-handler: all processes of a machine (Celery prefork children, several
workers, the embedded crawler) append to the same file. The standard RotatingFileHandler
is not safe for that: each process decides to roll over on its own and renames files the
others still write to, so lines land in rotated files or are lost (the logging cookbook
says so). concurrent-log-handler takes an exclusive lock on a lock file (`.__crawl.jsonl.lock`
beside the log) around every write and rollover, and reopens the file when another
process has rotated it; each batch of whole lines is written and flushed under the lock,
so lines never interleave.

The file and its queue are set up per process on first use (a forked pool child must not
inherit its parent's writing thread), and again when the settings change (tests).
"""

import atexit
import dataclasses
import json
import logging
import os
import queue
import threading
import time
from collections import deque
from datetime import UTC, datetime, timedelta
from pathlib import Path

from concurrent_log_handler import ConcurrentRotatingFileHandler
from django.conf import settings
from django.db import connection
from django.utils import timezone

from common import stagetime
from common.bulksql import arrays, marks

from .models import CrawlLogEntry
from .observe import RequestRecord

log = logging.getLogger(__name__)

LOGGER_NAME = "crawlerweb.crawl"  # operators may add handlers to it in LOGGING (e.g. stdout)
crawl_logger = logging.getLogger(LOGGER_NAME)

# Rows per INSERT (one statement per group commit; on SQLite, one executemany).
INSERT_BATCH = 2000
# Pruning deletes a few minutes' worth of rows at a time, not every group's worth.
PRUNE_EVERY_SECONDS = 300.0


# --- the line ------------------------------------------------------------------------------

def fields_of(record: RequestRecord) -> dict:
    """The crawl log's fields, in their documented order (docs/operations.md "The crawl log")."""
    return {
        "ts": datetime.fromtimestamp(record.at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "kind": record.kind,
        "url": record.url,
        "url_id": record.url_id if record.url_id is None or record.url_id > 0 else None,  # < 0: taken from its page
        "host": record.origin,
        "host_id": record.host_id,
        "status": record.status,
        "error": record.error,
        "outcome": record.outcome,
        "bytes": record.bytes,
        "ms": round(record.duration * 1000),
        "attempt": record.attempt,
        "retry": record.attempt > 1,
        "not_modified": record.status == 304,
        "retry_after": None if record.retry_after is None else round(record.retry_after, 3),
        "address": record.address,
        "type": record.content_type,
        "worker": record.worker,
        "lease": record.lease,
    }


def line_of(record: RequestRecord) -> str:
    return json.dumps(fields_of(record), separators=(",", ":"))


# --- the listener --------------------------------------------------------------------------

@stagetime.timed("crawl_log")
def record_request(record: RequestRecord) -> None:
    """observe.py listener: hand the record to the database buffer, the file's writer and
    the handlers an operator gave the logger `crawlerweb.crawl`."""
    if settings.CRAWLER_CRAWL_LOG_DB:
        _buffer.put(record)
    writer = _file_writer()
    others = crawl_logger.handlers and crawl_logger.isEnabledFor(logging.INFO)
    if writer is None and not others:
        return
    line = line_of(record)
    if writer is not None:
        writer.put(line)
    if others:
        crawl_logger.info(line)


class _Buffer:
    """Records waiting for the writer; bounded, dropping (and counting) the newest when full."""

    def __init__(self):
        self._lock = threading.Lock()
        self._records: deque[RequestRecord] = deque()
        self.dropped = 0

    def put(self, record: RequestRecord) -> None:
        with self._lock:
            if len(self._records) >= settings.CRAWLER_CRAWL_LOG_BUFFER:
                self.dropped += 1
            else:
                self._records.append(record)

    def put_back(self, records: list[RequestRecord]) -> None:
        """Records taken that must wait for the next take, ahead of the newer ones."""
        with self._lock:
            self._records.extendleft(reversed(records))

    def take(self) -> tuple[list[RequestRecord], int]:
        """Everything waiting, and how many were dropped since the last take."""
        with self._lock:
            records, dropped = list(self._records), self.dropped
            self._records.clear()
            self.dropped = 0
        return records, dropped


_buffer = _Buffer()


def take_pending() -> tuple[list[RequestRecord], int]:
    return _buffer.take()


# --- the database copy (called by the writer thread) ---------------------------------------

ENTRY_COLUMNS = ("at", "kind", "url", "url_id", "host_id", "origin", "status", "error", "outcome", "bytes", "ms",
                 "attempt", "retry_after", "address", "content_type", "worker", "lease")


def entry_row(record: RequestRecord) -> tuple:
    """A record as a CrawlLogEntry row, values in ENTRY_COLUMNS' order."""
    return (
        datetime.fromtimestamp(record.at, UTC), record.kind[:8], record.url, record.url_id, record.host_id,
        record.origin, record.status, record.error[:40], record.outcome[:40], record.bytes,
        round(record.duration * 1000), record.attempt, record.retry_after, record.address[:64],
        # A header value comes from the web: cut to the column's size (and no NUL, which
        # PostgreSQL text cannot hold) rather than fail the group's insert.
        record.content_type.replace("\x00", "")[:100], record.worker[:200], record.lease[:100],
    )



@stagetime.timed("crawl_log")
def store_pending(url_id=None) -> int:
    """Insert what the fetch threads buffered, in one statement (per INSERT_BATCH rows).
    Returns the number of rows written.

    `url_id`: the frontier's id (or None) for the temporary id of a URL a session took from
    its page (crawl/ownlinks.py), or PENDING while the writer has not admitted it yet: such
    a request waits in the buffer for the next group (for up to PENDING_SECONDS; then it is
    stored without its id)."""
    _report_dropped_lines()
    records, dropped = _buffer.take()
    if dropped:
        log.warning("%d crawl log entries did not reach the database: its buffer (CRAWLER_CRAWL_LOG_BUFFER=%d) "
                    "was full", dropped, settings.CRAWLER_CRAWL_LOG_BUFFER)
    if not records:
        return 0
    if url_id is not None:
        records = _with_frontier_ids(records, url_id)
        if not records:
            return 0
    table = CrawlLogEntry._meta.db_table
    with connection.cursor() as cursor:
        for start in range(0, len(records), INSERT_BATCH):
            rows = [entry_row(record) for record in records[start:start + INSERT_BATCH]]
            if connection.vendor == "postgresql":
                cursor.execute(f"INSERT INTO {table} ({', '.join(ENTRY_COLUMNS)}) SELECT * FROM "
                               f"unnest({arrays(CrawlLogEntry, ENTRY_COLUMNS)})", [list(c) for c in zip(*rows)])
            else:
                adapt = connection.ops.adapt_datetimefield_value
                cursor.executemany(f"INSERT INTO {table} ({', '.join(ENTRY_COLUMNS)}) VALUES "
                                   f"({marks(len(ENTRY_COLUMNS))})", [(adapt(row[0]), *row[1:]) for row in rows])
    return len(records)


PENDING = object()  # store_pending's url_id(): not known yet
PENDING_SECONDS = 60.0


def _with_frontier_ids(records: list[RequestRecord], url_id) -> list[RequestRecord]:
    ready, waiting, now = [], [], time.time()
    for record in records:
        if record.url_id is not None and record.url_id < 0:
            found = url_id(record.url_id)
            if found is PENDING and now - record.at < PENDING_SECONDS:
                waiting.append(record)
                continue
            record = dataclasses.replace(record, url_id=None if found is PENDING else found)
        ready.append(record)
    _buffer.put_back(waiting)
    return ready


_next_prune = 0.0  # monotonic; one writer per process prunes


def prune_if_due() -> int:
    """prune(), at most every PRUNE_EVERY_SECONDS per process."""
    global _next_prune
    now = time.monotonic()
    if now < _next_prune:
        return 0
    _next_prune = now + PRUNE_EVERY_SECONDS
    return prune()


def prune(now: datetime | None = None) -> int:
    """Delete entries older than CRAWLER_CRAWL_LOG_RETENTION_HOURS (one statement, on the
    time index). Returns the number deleted."""
    cutoff = (now or timezone.now()) - timedelta(hours=settings.CRAWLER_CRAWL_LOG_RETENTION_HOURS)
    deleted, _ = CrawlLogEntry.objects.filter(at__lt=cutoff).delete()
    return deleted


# --- the file --------------------------------------------------------------------------------

class _FileHandler(ConcurrentRotatingFileHandler):
    """Counts the lines it could not write (disk full, file removed under it) instead of
    printing a traceback for each; the writer logs the count."""

    failed = 0

    def handleError(self, record):
        self.failed += 1 + record.getMessage().count("\n")


# Characters written under one lock (and one rotation check) at most: a busy process writes
# its queue in batches instead of taking the file lock per line.
WRITE_BATCH_CHARS = 256 * 1024
_STOP = object()


class _FileLog:
    """The file of this process: a bounded queue of lines and one thread writing them with
    concurrent-log-handler, as many as are waiting at a time (one lock, one write)."""

    def __init__(self, key: tuple, file_handler: logging.Handler | None):
        self.key, self.file_handler = key, file_handler
        self.lines: queue.Queue = queue.Queue(settings.CRAWLER_CRAWL_LOG_BUFFER)
        self.dropped = 0  # lines the queue had no room for
        self.reported = 0  # of those, how many the writer has logged a warning about
        self.failed_reported = 0
        self.thread = None
        if file_handler is not None:
            self.thread = threading.Thread(target=self._write_lines, name="crawl-log-file", daemon=True)
            self.thread.start()

    def put(self, line: str) -> None:
        try:
            self.lines.put_nowait(line)
        except queue.Full:
            self.dropped += 1

    def _write_lines(self) -> None:
        # A batch at most a quarter of a file: a file ends at most that far past its size.
        max_chars = max(1, min(WRITE_BATCH_CHARS, self.key[2] // 4)) if self.key[2] else WRITE_BATCH_CHARS
        while True:
            batch = [self.lines.get()]
            chars = len(batch[0]) if batch[0] is not _STOP else 0
            while chars < max_chars:
                try:
                    line = self.lines.get_nowait()
                except queue.Empty:
                    break
                batch.append(line)
                chars += len(line) if line is not _STOP else 0
            lines = [line for line in batch if line is not _STOP]
            try:
                if lines:
                    with stagetime.stage("crawl_log"):
                        self.file_handler.handle(logging.makeLogRecord(
                            {"name": LOGGER_NAME, "levelno": logging.INFO, "levelname": "INFO", "msg": "\n".join(lines)}))
            finally:
                for _ in batch:
                    self.lines.task_done()
            if len(lines) < len(batch):
                return

    def stop(self) -> None:
        """Write what is queued and stop the thread (bounded: a stuck disk keeps its lines)."""
        if self.thread is None:
            return
        try:
            self.lines.put(_STOP, timeout=5.0)
        except queue.Full:
            return  # the thread is stuck on the disk: leave it (a daemon) its file
        self.thread.join(5.0)


_file_lock = threading.Lock()
_file: _FileLog | None = None


def _file_key() -> tuple:
    return (os.getpid(), settings.CRAWLER_CRAWL_LOG_FILE, settings.CRAWLER_CRAWL_LOG_MAX_BYTES,
            settings.CRAWLER_CRAWL_LOG_BACKUPS)


def _file_writer() -> _FileLog | None:
    """This process's file writer, set up on first use; None: no file."""
    key = _file_key()
    current = _file
    if current is not None and current.key == key:
        return current if current.thread is not None else None
    with _file_lock:
        if _file is None or _file.key != key:
            _reopen(key)
        return _file if _file.thread is not None else None


def _reopen(key: tuple) -> None:
    global _file
    _close(inherited=_file is not None and _file.key[0] != key[0])
    pid, path, max_bytes, backups = key
    file_handler = None
    if path:
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            file_handler = _FileHandler(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")
            file_handler.setFormatter(logging.Formatter("%(message)s"))
        except OSError:  # once per process and setting: the crawl goes on without the file
            log.exception("the crawl log file %s cannot be opened; lines are not written", path)
            file_handler = None
    if file_handler is not None:
        crawl_logger.setLevel(logging.INFO)
        crawl_logger.propagate = False  # a line per request is not for the console
    _file = _FileLog(key, file_handler)


def _close(inherited: bool = False) -> None:
    """Stop writing the file (after writing what is queued). In a forked child the parent's
    writing thread does not exist: its queue is dropped, its files closed."""
    global _file
    current, _file = _file, None
    if current is None:
        return
    if not inherited:
        current.stop()
    if current.file_handler is not None:
        current.file_handler.close()


def flush(timeout: float = 5.0) -> bool:
    """Wait until the lines queued so far are in the file (the writer calls it on close)."""
    current = _file
    if current is None or current.thread is None or current.key[0] != os.getpid():
        return True
    return _wait_written(current, timeout)


def _wait_written(current: _FileLog, timeout: float) -> bool:
    """Queue.join() with a timeout: wait on the condition join() waits on, which the
    writing thread's task_done() notifies when the last queued line is written."""
    lines = current.lines
    deadline = time.monotonic() + timeout
    with lines.all_tasks_done:
        while lines.unfinished_tasks:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            lines.all_tasks_done.wait(left)
    return True


def close() -> None:
    """Write what is queued and close the file (tests; process exit)."""
    with _file_lock:
        _close(inherited=_file is not None and _file.key[0] != os.getpid())


atexit.register(close)  # the embedded crawler's last lines; a Celery child also flushes via its writer


def dropped_lines() -> int:
    """Lines the file's queue had no room for, in this process."""
    current = _file
    return current.dropped if current is not None else 0


def _report_dropped_lines() -> None:
    current = _file
    if current is None:
        return
    if current.dropped > current.reported:
        log.warning("%d crawl log lines were not written: the file's queue (CRAWLER_CRAWL_LOG_BUFFER=%d) was full",
                    current.dropped - current.reported, settings.CRAWLER_CRAWL_LOG_BUFFER)
        current.reported = current.dropped
    failed = current.file_handler.failed if current.file_handler is not None else 0
    if failed > current.failed_reported:
        log.warning("%d crawl log lines could not be written to %s", failed - current.failed_reported, current.key[1])
        current.failed_reported = failed
