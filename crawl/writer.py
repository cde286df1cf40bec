"""The writer: what every session of a process produces is stored by one thread, in
group commits by time or by pages, whatever the sessions' sizes.

A write costs mostly per statement, not per row (a dozen statements whether it holds one
page or sixty), so the writer gathers what arrives for up to CRAWLER_COMMIT_INTERVAL
seconds, or until CRAWLER_COMMIT_GROUP_PAGES pages are waiting, and stores it at once:
a session of one URL and a session of a hundred cost the same per page to store.

Order is kept: items are written in the order they arrived, so a host's robots.txt and its
URLs are stored before the host is released (a session puts its end after its URLs), and
no other session can lease the host and fetch a URL again before its result is in.

If a group cannot be written, each host's part is written alone, then each URL's, so one
bad page costs only its own result: a URL the database refuses is settled as a dead letter
(a poisoned row must not be fetched and fail again forever), and while the database is
away nothing is settled and the URLs stay queued, to be fetched again. The hosts are
released either way, but a host whose results could not be stored is released paused, on
the circuit breaker's ladder (CRAWLER_HOST_PAUSE_SECONDS, doubling with each failure in a
row, wait reason `store_failed`, a crawl log line of kind `store`): a failure that repeats
(a row the database refuses with an OperationalError) must not refetch and fail in a loop.
What is still waiting when the process dies is lost: those URLs are still queued, and the
next session (after the lease expires) fetches them again. The queue is bounded
(CRAWLER_COMMIT_MAX_PENDING_PAGES): when the database falls behind, sessions wait for it
instead of filling memory.

Before the results of a group, the writer admits the links sessions took from their own
pages (LinksTaken, crawl/ownlinks.py) and stores what was fetched from them under the
frontier's ids. After the results, it answers the sessions that ran out of URLs
(MoreUrlsWanted): their hosts' due URLs found now.

Each group also inserts the crawl log entries the fetch threads buffered meanwhile
(crawl/crawllog.py), in a statement of its own after the results: a failure there loses
only those entries (the crawl log file has them), never a URL's result.
"""

import dataclasses
import logging
import threading
import time
from collections import defaultdict, deque
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections, connection
from django.utils import timezone
from psycopg import errors as pg_errors

from common.dbconn import reset_connection
from frontier import service as frontier

from . import crawllog, recovery, robots
from .observe import RequestRecord
from .ownlinks import LinksTaken, ProvisionalIds
from .pipeline import Results, store
from .session import CertificateSeen, MoreUrlsWanted, RobotsFetched, SessionEnded, UrlsDone

log = logging.getLogger(__name__)

_TRANSIENT = (pg_errors.DeadlockDetected, pg_errors.SerializationFailure, pg_errors.LockNotAvailable)


class Writer:
    def __init__(self, interval: float | None = None, group_pages: int | None = None,
                 max_pending_pages: int | None = None, on_release=None, on_more_urls=None, on_raised=None,
                 on_written=None):
        self.interval = settings.CRAWLER_COMMIT_INTERVAL if interval is None else interval
        self.group_pages = group_pages or settings.CRAWLER_COMMIT_GROUP_PAGES
        self.max_pending = max_pending_pages or settings.CRAWLER_COMMIT_MAX_PENDING_PAGES
        self.on_release = on_release  # called with each SessionEnded once its host is released
        self.on_more_urls = on_more_urls  # called with each MoreUrlsWanted and the URLs found (maybe none)
        self.on_raised = on_raised  # called with {host id: best score} of the URLs a store added or raised
        self.on_written = on_written  # called with `written` after each group
        self._cond = threading.Condition()
        self._items: deque = deque()
        self._pending_pages = 0
        self._writing = False
        self._closing = False
        self._flushing = 0  # someone waits for everything to be written: do not gather
        self._parked = 0  # sessions waiting for their next URLs among the items: do not gather
        self._tuned = None  # the database connection _tune_connection has set
        self._unstored: dict[int, int] = {}  # host id -> stores of its results that failed in a row
        self.errors = 0  # stores that failed (a group, a host's part, a URL's result)
        self.crawl_log_errors = 0  # groups whose crawl log entries could not be stored
        self.groups = 0
        self.pages = 0
        self.provisional = ProvisionalIds()  # ids of URLs sessions took from their pages
        self._handed = 0  # items handed over so far (put() returns an item's number)
        self._gathered = 0  # of those, taken into groups
        # Of those, written (or tried): sessions read it to know how far the writer is behind
        # them (crawl/session.py, writer_keeps_up). An int, set by this thread only.
        self.written = 0
        self._thread = threading.Thread(target=self._run, name="writer", daemon=True)
        self._thread.start()

    # --- producers ----------------------------------------------------------------------

    def put(self, item) -> int:
        """Hand over a session's item; waits while too many pages are waiting already.
        Returns the item's number: it is written once `written` reaches it."""
        weight = _pages(item)
        with self._cond:
            while weight and self._pending_pages >= self.max_pending and not self._closing:
                self._cond.wait(1.0)
            self._items.append(item)
            self._handed += 1
            self._pending_pages += weight
            if _parks(item):
                self._parked += 1
            self._cond.notify_all()
            return self._handed

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything handed over so far is written."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._flushing += 1
            self._cond.notify_all()
            try:
                while self._items or self._writing:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        return False
                    self._cond.wait(left)
            finally:
                self._flushing -= 1
        return True

    def close(self, timeout: float = 60.0) -> None:
        self.flush(timeout)
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._thread.join(timeout)
        crawllog.flush()  # the file's last lines, before a worker process exits

    @property
    def idle(self) -> bool:
        with self._cond:
            return not self._items and not self._writing

    # --- the writing thread -------------------------------------------------------------

    def _run(self) -> None:
        try:
            while True:
                group = self._next_group()
                if group is None:
                    self._guarded(self._count_inlinks, due_only=False)  # all it holds, before the process ends
                    return
                if group:
                    try:
                        self._write(group)
                    finally:
                        with self._cond:
                            self._writing = False
                            self.written = self._gathered  # items are gathered in the order handed over
                            self._cond.notify_all()
                    if self.on_written:
                        self.on_written(self.written)
                else:
                    close_old_connections()  # idle a while: the connection may have gone
                self._guarded(self._count_inlinks, due_only=True)
        finally:
            connection.close()

    def _count_inlinks(self, due_only: bool) -> None:
        """Links from other hosts the admissions held (frontier/inlinks.py), counted when
        due: after a group, and while idle, so none waits for the next page."""
        raised = frontier.flush_inlinks(due_only)
        if raised and self.on_raised:
            self.on_raised(raised)

    def _next_group(self) -> list | None:
        """The next group to write; [] when nothing came for CRAWLER_INLINK_FLUSH_SECONDS
        (held inlinks may be due); None once closing with nothing left."""
        with self._cond:
            while not self._items:
                if self._closing:
                    return None
                if not self._cond.wait(max(0.1, settings.CRAWLER_INLINK_FLUSH_SECONDS)):
                    return []
            # Something waits: gather more for up to `interval`, or until a group is full;
            # not while a session waits for its next URLs (its host would sit idle).
            deadline = time.monotonic() + self.interval
            while self._pending_pages < self.group_pages and not (self._closing or self._flushing or self._parked):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            group, pages = [], 0
            while self._items and (not group or pages + _pages(self._items[0]) <= self.group_pages):
                item = self._items.popleft()
                pages += _pages(item)
                if _parks(item):
                    self._parked -= 1
                group.append(item)
            self._pending_pages -= pages
            self._gathered += len(group)
            self._writing = True
            self._cond.notify_all()
            return group

    def _write(self, group: list) -> None:
        close_old_connections()
        self._guarded(self._tune_connection)  # the database away: the stores below say so
        for item in group:
            if isinstance(item, RobotsFetched):
                self._guarded(robots.save, item.host_id, item.answer, item.origin, item.depth, item.scopes)
            elif isinstance(item, CertificateSeen):
                self._guarded(_record_certificate, item)
        taken = [item for item in group if isinstance(item, LinksTaken)]
        if taken and self._guarded(self.provisional.admit, taken) is None:
            self.provisional.refuse(taken)  # what was fetched from them is dropped, and found again later
        done = [item for item in group if isinstance(item, UrlsDone)]
        for item in done:
            self.provisional.resolve(item.results)
        if done:
            self._store(done)
        for item in group:  # after the stores: the sessions' last pages' links are in
            if isinstance(item, MoreUrlsWanted) and self.on_more_urls:
                found = self._guarded(frontier.more_urls, item.host_id, item.token, item.taken, item.limit, item.above)
                self.on_more_urls(item, found or [])
        ended = [self._paused_if_unstored(item) for item in group if isinstance(item, SessionEnded)]
        if ended:
            self._guarded(frontier.release_hosts, [(i.host_id, i.token, i.leased_address, i.update) for i in ended])
            for item in ended:
                if self.on_release:
                    self.on_release(item)
        self._store_crawl_log()
        self.provisional.forget(item.host_id for item in ended)
        self.groups += 1

    def _paused_if_unstored(self, ended: SessionEnded) -> SessionEnded:
        """A host whose results could not be stored is released paused (the module doc)."""
        failures = self._unstored.get(ended.host_id)
        if not failures:
            return ended
        pause = frontier.store_failure_pause(failures)
        until = timezone.now() + timedelta(seconds=pause)
        log.warning("host %s: its results could not be stored %d time(s) in a row; paused for %.0f s",
                    ended.host_id, failures, pause)
        crawllog.record_request(RequestRecord(
            at=time.time(), kind="store", url=ended.origin, url_id=None, host_id=ended.host_id, origin=ended.origin,
            status=None, error=frontier.STORE_FAILED, outcome=f"paused_{pause:.0f}s", bytes=0, duration=0.0,
            attempt=failures, retry_after=None, address=ended.update.address, content_type="", worker=ended.worker,
            lease=ended.token))
        update = dataclasses.replace(ended.update, next_fetch_at=max(ended.update.next_fetch_at, until),
                                     wait_reason=frontier.STORE_FAILED)
        return dataclasses.replace(ended, update=update)

    def _store(self, done: list[UrlsDone]) -> None:
        """Store a group's results; if that fails, each host's part alone, then each URL's
        alone: what can be stored is, and a URL whose own result cannot be (a poisoned row)
        is settled as a dead letter rather than fetched and failed again forever. When the
        database is away (a lost connection, a deadlock: OperationalError) nothing is
        settled: the URLs stay queued and are fetched again."""
        merged = Results()
        for item in done:
            merged.extend(item.results)
        hosts = {item.host_id for item in done}
        try:
            raised = _store_retrying(merged)
            if raised and self.on_raised:
                self.on_raised(raised)
            self.pages += len(merged.pages)
            for host_id in hosts:
                self._unstored.pop(host_id, None)
            return
        except Exception as exc:
            reset_connection()
            self.errors += 1
            url_ids = merged.url_ids()
            if _database_away(exc):  # the URLs wait
                log.exception("%d results could not be stored; their URLs stay queued", len(url_ids))
                for host_id in hosts:  # their hosts are released paused, not to refetch at once
                    self._unstored[host_id] = self._unstored.get(host_id, 0) + 1
                return
            if len(url_ids) == 1:
                log.exception("the result of URL %s could not be stored; settling it as a dead letter", url_ids[0])
                self._guarded(frontier.settle_unstorable, url_ids, f"store_failed:{type(exc).__name__}")
                return
            log.warning("%d results of %d hosts could not be stored together (%s); storing them apart",
                        len(url_ids), len({item.host_id for item in done}), exc)
        if len(hosts) > 1:  # each host's part alone
            by_host = defaultdict(list)
            for item in done:
                by_host[item.host_id].append(item)
            for items in by_host.values():
                self._store(items)
            return
        for part in merged.split():  # one host: each URL alone
            self._store([UrlsDone(done[0].host_id, part)])

    def _tune_connection(self) -> None:
        """PostgreSQL settings of the writer's connection, once per connection.

        Asynchronous commits (CRAWLER_DB_ASYNC_COMMIT): the writer's commits do not wait for
        the WAL to reach the disk. A crash of the database machine loses at most its last
        few hundred milliseconds of them, and everything they held is fetched again: the
        lost commits are a suffix, in order, so a page's record is never kept while the
        links it found (committed before it) are lost, and this process forgets its
        seen-cache when its connection breaks (frontier/seen.py). Leases stay synchronous.

        Custom plans for the foreign-key checks of the rows it inserts (plan_cache_mode):
        PostgreSQL plans such a check once per connection and keeps the plan; made while a
        table was nearly empty (a new crawl, or after the bench empties it), the plan is a
        sequential scan, run for every row for the connection's life — measured on the
        standard bench, 1,000 pages read per document inserted, 1.3 ms each. Planning each
        check instead costs microseconds.

        A transaction left idle ends (idle_in_transaction_session_timeout) once its process
        could be taken for dead (recovery.idle_transaction_seconds()): a process frozen
        mid-store (SIGSTOP, a stalled VM) holds the row locks of the links and host counts
        it was writing, and every other writer storing the same links or hosts waited on
        them for as long as the freeze lasted, its pages fetched but recorded nowhere. Its leases are released by then (crawl/recovery.py); its store
        fails when it wakes, and its URLs stay queued."""
        if connection.vendor != "postgresql":
            return
        connection.ensure_connection()
        if self._tuned is not connection.connection:
            recovery.end_idle_transactions_of_this_thread()
            with connection.cursor() as cursor:
                cursor.execute("SET plan_cache_mode = force_custom_plan")
                if settings.CRAWLER_DB_ASYNC_COMMIT:
                    cursor.execute("SET synchronous_commit = off")
            self._tuned = connection.connection

    def _store_crawl_log(self) -> None:
        try:
            crawllog.store_pending(self.provisional.logged_id)
            crawllog.prune_if_due()
        except Exception:  # the results are stored already; only these entries are lost
            log.exception("crawl log entries could not be stored in the database")
            self.crawl_log_errors += 1
            reset_connection()

    def _guarded(self, action, *args, **kwargs):
        try:
            return action(*args, **kwargs)
        except Exception:  # the lease expires by itself; never stop the writer
            log.exception("%s failed", getattr(action, "__name__", action))
            self.errors += 1
            reset_connection()
            return None


# A deadlock or a serialization failure aborts a store that may well go through when tried
# again (the other transaction is done by then): a few tries before its URLs are left queued.
STORE_TRIES = 3


def _store_retrying(results: Results) -> dict[int, int]:
    for attempt in range(1, STORE_TRIES + 1):
        try:
            return store(results)
        except OperationalError as exc:
            if attempt == STORE_TRIES or not isinstance(exc.__cause__, _TRANSIENT):
                raise
            log.warning("storing %d results was aborted (%s); trying again", len(results.url_ids()), exc)


def _database_away(exc: Exception) -> bool:
    """The store failed for the connection's sake, not its rows': a lost connection, a
    deadlock, or its transaction ended for sitting idle (this process was frozen)."""
    return (isinstance(exc, (OperationalError, InterfaceError))
            or isinstance(exc.__cause__, pg_errors.IdleInTransactionSessionTimeout))  # Django wraps it as InternalError


def _record_certificate(seen: CertificateSeen) -> None:
    not_after = datetime.fromtimestamp(seen.not_after, dt_timezone.utc) if seen.not_after else None
    verdict = frontier.record_certificate(seen.host_id, seen.fingerprint, not_after,
                                          datetime.fromtimestamp(seen.seen_at, dt_timezone.utc))
    if verdict == "changed_early":
        log.warning("host %s showed another certificate (%s…) before its last one expired: recorded, "
                    "the crawl goes on (trust on first use)", seen.host_id, seen.fingerprint[:16])


def _parks(item) -> bool:
    """A session waits, sending nothing, until this item is answered."""
    return isinstance(item, MoreUrlsWanted) and item.above is None


def _pages(item) -> int:
    return item.results.weight if isinstance(item, UrlsDone) else 0
