"""The crawl log: one JSON line per request (robots.txt and pages), from every runner, in a
size-rotated file, and the recent past in the database for the admin (fetch/admin.py).
Heritrix's crawl.log is the model: when, what, how it ended, how big, how long, by whom.
README "The crawl log" documents every field.

record_request() is an observe.py listener: it runs on the fetch thread after every
request, so it only formats the line and hands it over; it never waits and never touches
the database:

- the file: the line goes to the logger `crawlerweb.crawl`, whose QueueHandler puts it in a
  bounded queue; one thread per process (logging's QueueListener) writes it with
  concurrent-log-handler's ConcurrentRotatingFileHandler. A slow disk then delays that
  thread, not the fetch threads; a full queue drops the line and counts it.
- the database: the record goes into a bounded buffer that the process's writer thread
  (fetch/writer.py) inserts in each group commit (store_pending) and prunes (prune_if_due).
  A full buffer drops the record and counts it; the writer logs the count.

Why concurrent-log-handler: all processes of a machine (Celery prefork children, several
workers, the embedded crawler) append to the same file. The standard RotatingFileHandler
is not safe for that: each process decides to roll over on its own and renames files the
others still write to, so lines land in rotated files or are lost (the logging cookbook
says so). concurrent-log-handler takes an exclusive lock on a lock file (`.__crawl.jsonl.lock`
beside the log) around every write and rollover, and reopens the file when another
process has rotated it; each line is written and flushed whole under the lock, so lines
never interleave.

The file and its queue are set up per process on first use (a forked pool child must not
inherit its parent's writing thread), and again when the settings change (tests).
"""

import atexit
import json
import logging
import logging.handlers
import os
import queue
import threading
import time
from collections import deque
from datetime import UTC, datetime, timedelta
from pathlib import Path

from concurrent_log_handler import ConcurrentRotatingFileHandler
from django.conf import settings
from django.utils import timezone

from .models import CrawlLogEntry
from .observe import RequestRecord

log = logging.getLogger(__name__)

LOGGER_NAME = "crawlerweb.crawl"  # operators may add handlers to it in LOGGING (e.g. stdout)
crawl_logger = logging.getLogger(LOGGER_NAME)

# Rows per INSERT: one statement per group commit, below PostgreSQL's 65,535 parameters.
INSERT_BATCH = 2000
# Pruning deletes a few minutes' worth of rows at a time, not every group's worth.
PRUNE_EVERY_SECONDS = 300.0


# --- the line ------------------------------------------------------------------------------

def fields_of(record: RequestRecord) -> dict:
    """The crawl log's fields, in their documented order (README "The crawl log")."""
    return {
        "ts": datetime.fromtimestamp(record.at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "kind": record.kind,
        "url": record.url,
        "url_id": record.url_id,
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

def record_request(record: RequestRecord) -> None:
    """observe.py listener: hand the record to the database buffer and to the file."""
    if settings.CRAWLER_CRAWL_LOG_DB:
        _buffer.put(record)
    handler = _file_handler()
    if crawl_logger.isEnabledFor(logging.INFO) and (handler is not None or crawl_logger.handlers):
        crawl_logger.info(line_of(record))


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

def entry_of(record: RequestRecord) -> CrawlLogEntry:
    return CrawlLogEntry(
        at=datetime.fromtimestamp(record.at, UTC), kind=record.kind[:8], url=record.url, url_id=record.url_id,
        host_id=record.host_id, origin=record.origin, status=record.status, error=record.error[:40],
        outcome=record.outcome[:40], bytes=record.bytes, ms=round(record.duration * 1000), attempt=record.attempt,
        retry_after=record.retry_after, address=record.address[:64],
        # A header value comes from the web: cut to the column's size (and no NUL, which
        # PostgreSQL text cannot hold) rather than fail the group's insert.
        content_type=record.content_type.replace("\x00", "")[:100], worker=record.worker[:200], lease=record.lease[:100],
    )


def store_pending() -> int:
    """Insert what the fetch threads buffered, in one statement (per INSERT_BATCH rows).
    Returns the number of rows written."""
    _report_dropped_lines()
    records, dropped = _buffer.take()
    if dropped:
        log.warning("%d crawl log entries did not reach the database: its buffer (CRAWLER_CRAWL_LOG_BUFFER=%d) "
                    "was full", dropped, settings.CRAWLER_CRAWL_LOG_BUFFER)
    if not records:
        return 0
    CrawlLogEntry.objects.bulk_create([entry_of(record) for record in records], batch_size=INSERT_BATCH)
    return len(records)


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

class _DroppingQueueHandler(logging.handlers.QueueHandler):
    """Never waits: a full queue drops the line and counts it (the standard handler would
    print a traceback for each)."""

    dropped = 0
    reported = 0  # of those, how many the writer has logged a warning about

    def enqueue(self, record):
        try:
            self.queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1


class _FileHandler(ConcurrentRotatingFileHandler):
    """Counts the lines it could not write (disk full, file removed under it) instead of
    printing a traceback for each; the writer logs the count."""

    failed = 0

    def handleError(self, record):
        self.failed += 1


class _FileLog:
    def __init__(self, key: tuple, queue_handler: _DroppingQueueHandler,
                 listener: logging.handlers.QueueListener | None, file_handler: logging.Handler | None):
        self.key, self.queue_handler, self.listener, self.file_handler = key, queue_handler, listener, file_handler
        self.failed_reported = 0


_file_lock = threading.Lock()
_file: _FileLog | None = None


def _file_key() -> tuple:
    return (os.getpid(), settings.CRAWLER_CRAWL_LOG_FILE, settings.CRAWLER_CRAWL_LOG_MAX_BYTES,
            settings.CRAWLER_CRAWL_LOG_BACKUPS)


def _file_handler() -> _DroppingQueueHandler | None:
    """This process's queue handler for the file, set up on first use; None: no file."""
    key = _file_key()
    current = _file
    if current is not None and current.key == key:
        return current.queue_handler if current.listener is not None else None
    with _file_lock:
        if _file is None or _file.key != key:
            _reopen(key)
        return _file.queue_handler if _file.listener is not None else None


def _reopen(key: tuple) -> None:
    global _file
    _close(inherited=_file is not None and _file.key[0] != key[0])
    pid, path, max_bytes, backups = key
    queue_handler = _DroppingQueueHandler(queue.Queue(settings.CRAWLER_CRAWL_LOG_BUFFER))
    listener = file_handler = None
    if path:
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            file_handler = _FileHandler(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")
        except OSError:  # once per process and setting: the crawl goes on without the file
            log.exception("the crawl log file %s cannot be opened; lines are not written", path)
            path = ""
    if path:
        file_handler.setFormatter(logging.Formatter("%(message)s"))
        listener = logging.handlers.QueueListener(queue_handler.queue, file_handler)
        listener.start()
        crawl_logger.addHandler(queue_handler)
        crawl_logger.setLevel(logging.INFO)
        crawl_logger.propagate = False  # a line per request is not for the console
    _file = _FileLog(key, queue_handler, listener, file_handler)


def _close(inherited: bool = False) -> None:
    """Stop writing the file (after writing what is queued). In a forked child the parent's
    writing thread does not exist: its queue is dropped, its files closed."""
    global _file
    current, _file = _file, None
    if current is None:
        return
    crawl_logger.removeHandler(current.queue_handler)
    if current.listener is not None and not inherited:
        _wait_written(current, 5.0)
        try:
            current.listener.stop()
        except queue.Full:  # lines arrived meanwhile and filled it: leave the (daemon) thread its file
            return
    if current.file_handler is not None:
        current.file_handler.close()


def flush(timeout: float = 5.0) -> bool:
    """Wait until the lines queued so far are in the file (the writer calls it on close)."""
    current = _file
    if current is None or current.listener is None or current.key[0] != os.getpid():
        return True
    return _wait_written(current, timeout)


def _wait_written(current: _FileLog, timeout: float) -> bool:
    """Queue.join() with a timeout: wait on the condition join() waits on, which the
    listener's task_done() notifies when the last queued line is written."""
    lines = current.queue_handler.queue
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
    return current.queue_handler.dropped if current is not None else 0


def _report_dropped_lines() -> None:
    current = _file
    if current is None:
        return
    handler = current.queue_handler
    if handler.dropped > handler.reported:
        log.warning("%d crawl log lines were not written: the file's queue (CRAWLER_CRAWL_LOG_BUFFER=%d) was full",
                    handler.dropped - handler.reported, settings.CRAWLER_CRAWL_LOG_BUFFER)
        handler.reported = handler.dropped
    failed = current.file_handler.failed if current.file_handler is not None else 0
    if failed > current.failed_reported:
        log.warning("%d crawl log lines could not be written to %s", failed - current.failed_reported, current.key[1])
        current.failed_reported = failed
