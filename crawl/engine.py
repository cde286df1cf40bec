"""The session engine: one per process, holding many host sessions at once (crawl/session.py).

Threads:
- every session that waits (its host's delay, a Retry-After) is an entry in a heap ordered
  by the time it may go on, nothing more: it holds no thread, so a process holds
  CRAWLER_SESSIONS_PER_PROCESS sessions with a few dozen threads;
- CRAWLER_FETCH_THREADS fetch threads take due sessions from the heap and run one step of
  each (one request, its parse, its hand-over to the writer). One idle thread keeps time
  for the earliest session and runs it itself when it is due (leader/followers: no thread
  in between, one wake-up per request);
- when more sessions are due than threads are free (the process is the bottleneck, not
  politeness), which goes next is the importance of its next URL: the due sessions wait in
  three bands (frontier/importance.py, through frontier.service), a free thread draws a band with the dispatch shares
  (CRAWLER_DISPATCH_SHARES, or CRAWLER_DISPATCH_SHARES_LOADED when at least as many
  sessions are due as there are threads) and takes the band's best; the draw, not a strict
  order, so that no band starves. Without this the threads went round the due hosts in
  turn, and a host's tenth page went before another's best;
- the intake thread opens the sessions handed in (confirms each lease, reads its host, its
  URLs and, for a small host, the keys of all its URLs: crawl/ownlinks.py) and gives back
  the leases the engine will not run: whoever submits a lease (a Celery task, the
  embedded runner's loop) never touches the database for it. This matters in a Celery
  worker: Celery's Django fixup closes the task thread's connections, and with
  a connection pool the whole process's pool, around every task (celery/fixups/django.py),
  which must not happen under the engine's threads;
- the writer (crawl/writer.py) stores what every session produces in group commits;
- the lease keeper renews the leases of all sessions in one statement every
  CRAWLER_LEASE_SECONDS / 6, and marks a session whose lease was taken as lost.

The CPU-heavy half of a page (parse, text, fingerprints, the index row, WARC records) goes
to the engine's parse processes (crawl/parsepool.py); a fetch thread waits for the answer
holding no lock, so other sessions' requests proceed meanwhile, and a thread count far
above the cores keeps requests in flight while pages are analysed.

Both runners use it (crawl/runners.py): the embedded crawler submits the sessions it leases
itself; a Celery worker process submits the sessions its tasks carry.
"""

import heapq
import itertools
import logging
import random
import resource
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from django.conf import settings
from django.db import close_old_connections, connection

from . import instruments, liveness
from common.dbconn import reset_connection
from frontier import service as frontier
from frontier.limits import LIMITS_RECHECK_SECONDS

from . import recovery
from .capacity import ADJUST_SECONDS, SessionCap
from .parsepool import ParsePool
from .session import PARKED, WRITER, HostSession
from .writer import Writer

log = logging.getLogger(__name__)
_random = random.Random()


@dataclass
class EngineStats:
    sessions: int = 0  # sessions opened
    requests: int = 0
    connections: int = 0  # TCP connections the sessions opened
    errors: int = 0  # sessions ended by an unexpected error
    ended: dict = field(default_factory=dict)  # why sessions ended -> count


class SessionEngine:
    def __init__(self, fetch_threads: int | None = None, max_sessions: int | None = None, name: str = "engine",
                 parse_processes: int = 0):
        self.fetch_threads = fetch_threads or settings.CRAWLER_FETCH_THREADS
        self.parse_processes = parse_processes
        self.max_sessions = max_sessions or settings.CRAWLER_SESSIONS_PER_PROCESS
        # As many sessions as the process can pace at their hosts' delays (crawl/capacity.py).
        self._cap = SessionCap(floor=max(4, self.fetch_threads // 4) if settings.CRAWLER_SESSIONS_PACED
                               else self.max_sessions, ceiling=self.max_sessions)
        self.name = name
        self.worker = f"{socket.gethostname()}/{name}"  # names the requests' sender (crawl log, metrics)
        # Its heartbeat names it in the leases it runs (crawl/recovery.py).
        self.kind = liveness.engine_kind(name)
        self.holder = liveness.holder(self.kind, self.worker)
        self.stats = EngineStats()
        # One lock, three conditions, so that nobody is woken for nothing: idle fetch threads,
        # the one keeping time for the earliest session, and runners waiting for a session's end.
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)
        self._timer = threading.Condition(self._lock)
        self._timer_deadline: float | None = None  # when the timer thread wakes, if there is one
        self._changed = threading.Condition(self._lock)
        self._arrived = threading.Condition(self._lock)
        self._intake: deque[tuple[str, frontier.Lease]] = deque()  # ("open" | "give_back", lease)
        self._opening = 0  # leases submitted whose session is not open yet
        self._heap: list[tuple[float, int, HostSession]] = []  # sessions by when they may go on
        # Due sessions by band, each a heap by (-score of the next URL, when due, serial).
        self._due: tuple[list, list, list] = ([], [], [])
        self._sessions: dict[int, HostSession] = {}  # host id -> session, until its host is released
        self._behind_writer: list[HostSession] = []  # sessions waiting for the writer to catch up
        self._running = 0  # steps on fetch threads now
        self._serial = itertools.count()
        self._stopping = False
        # Set once stop() has ended every session and written everything (the keeper runs
        # until then), and whether all of it was written: only then does the last heartbeat
        # say "stopped cleanly", which takes this process out of the others' recovery sweep.
        self._stopped = False
        self._clean_stop = False
        self._threads: list[threading.Thread] = []
        self._intake_thread: threading.Thread | None = None
        self.writer: Writer | None = None
        self.pool: ParsePool | None = None

    # --- life ---------------------------------------------------------------------------

    def start(self) -> "SessionEngine":
        _raise_open_files_limit(self.max_sessions + self.fetch_threads + 64)
        if self.parse_processes:
            self.pool = ParsePool(self.parse_processes)
        self.writer = Writer(on_release=self._released, on_more_urls=self._more_urls, on_raised=self._raised,
                             on_written=self._writer_progressed)
        for i in range(self.fetch_threads):
            self._spawn(f"fetch-{i}", self._fetch_loop)
        self._intake_thread = self._spawn("intake", self._intake_loop)
        self._spawn("lease-keeper", self._keeper_loop)
        return self

    def stop(self, timeout: float = 60.0) -> None:
        """Stop sending: requests under way finish, every session ends (its host is released
        at its clock's time, its unfetched URLs stay queued), everything is written."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._stopping = True
            for condition in (self._work, self._timer, self._changed, self._arrived):
                condition.notify_all()
            while self._running and time.monotonic() < deadline:
                self._changed.wait(0.1)
        if self._intake_thread is not None:  # gives back what it has not opened, then ends
            self._intake_thread.join(timeout=max(0.1, deadline - time.monotonic()))
        with self._lock:
            sessions = list(self._sessions.values())
        for session in sessions:
            session.finish("stopped")
        if self.writer is not None:
            self.writer.close(max(1.0, deadline - time.monotonic()))
        if self.pool is not None:
            self.pool.close()
        instruments.export_stage_times()  # the last writes' share, before a worker process exits
        with self._lock:
            # Its hosts are released only when the writer wrote every session's end: until
            # then the heartbeat keeps naming this process as their holder, so that if it
            # dies now the others still release them in seconds (crawl/recovery.py).
            self._clean_stop = (self.writer is None or self.writer.idle) and not self._sessions
            self._stopped = True
            self._changed.notify_all()
        # Up to the deadline, not a fixed second: the keeper's last beat (a clean stop, its
        # hosts given back) must be written before a worker process exits, even when the
        # database is slow to take it; else the others read the stop as a death.
        for thread in self._threads:
            thread.join(timeout=max(1.0, deadline - time.monotonic()))

    def _spawn(self, name: str, target) -> threading.Thread:
        thread = threading.Thread(target=target, name=f"{self.name}-{name}", daemon=True)
        thread.start()
        self._threads.append(thread)
        return thread

    # --- sessions in ----------------------------------------------------------------------

    @property
    def active(self) -> int:
        """Sessions open or being opened."""
        with self._lock:
            return len(self._sessions) + self._opening

    @property
    def session_limit(self) -> int:
        """Sessions it may hold now: what it can pace (crawl/capacity.py)."""
        with self._lock:
            return self._session_limit()

    def _session_limit(self) -> int:  # holding the lock
        return self._cap.adjust(time.monotonic(), len(self._sessions) + self._opening)

    def room(self) -> int:
        with self._lock:
            return 0 if self._stopping else max(0, self._session_limit() - len(self._sessions) - self._opening)

    def wait_for_room(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self._sessions) + self._opening >= self._session_limit() and not self._stopping:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(min(left, ADJUST_SECONDS))  # the cap may grow meanwhile
            return not self._stopping

    def submit(self, lease: frontier.Lease) -> bool:
        """Hand a lease in; the intake thread opens its session. Touches no database.
        False when the engine is stopping (the lease is then given back)."""
        with self._lock:
            if self._stopping:
                self._intake.append(("give_back", lease))
                self._arrived.notify()
                return False
            self._intake.append(("open", lease))
            self._opening += 1
            self._arrived.notify()
        return True

    def give_back(self, lease: frontier.Lease) -> None:
        """Release a lease this engine will not run (its host is free again at once)."""
        with self._lock:
            self._intake.append(("give_back", lease))
            self._arrived.notify()

    def _intake_loop(self) -> None:
        try:
            while True:
                with self._lock:
                    while not self._intake and not self._stopping:
                        self._arrived.wait()
                    if not self._intake:
                        return
                    items, self._intake = list(self._intake), deque()
                    if self._stopping:
                        self._opening -= sum(1 for kind, _ in items if kind == "open")
                        items = [("give_back", lease) for _, lease in items]
                close_old_connections()
                opening = [lease for kind, lease in items if kind == "open"]
                if opening:
                    self._open(opening)
                for kind, lease in items:
                    if kind == "give_back":
                        _guarded(frontier.release_host, lease.host_id, lease.token, None,
                                 leased_address=lease.address)
        finally:
            connection.close()

    def _open(self, leases: list[frontier.Lease]) -> None:
        """Open the sessions of the leases handed in meanwhile: every lease confirmed and
        every URL read in three statements, however many there are."""
        sessions = []
        try:
            hosts = frontier.begin_leases([(lease.host_id, lease.token) for lease in leases], holder=self.holder)
            # A lease not confirmed expired or was taken over: another worker owns the host now.
            urls = {queued.id: queued for queued in frontier.queued_urls(
                [url_id for lease in leases if lease.host_id in hosts for url_id in lease.url_ids])}
            own_keys = frontier.host_keys(list(hosts))  # small hosts: their sessions take their pages' links
            for lease in leases:
                if lease.host_id in hosts:
                    sessions.append(HostSession(lease, hosts[lease.host_id],
                                                [urls[i] for i in lease.url_ids if i in urls], self.writer.put,
                                                worker=self.worker, pool=self.pool,
                                                heartbeat_age=self.heartbeat_age, own_keys=own_keys.get(lease.host_id),
                                                written=self._written))
        except Exception:  # the database is away: the leases expire by themselves
            log.exception("could not open the sessions of %d leases", len(leases))
            reset_connection()
            sessions = []
        with self._lock:
            self._opening -= len(leases)
            now = time.monotonic()
            for session in sessions:
                self._sessions[session.host_id] = session
                self.stats.sessions += 1
                self._push(now, session)
            self._changed.notify_all()

    def wait_for_change(self, timeout: float) -> None:
        """Sleep until a session's host is released (it may have more work) or `timeout` passes."""
        with self._lock:
            self._changed.wait(timeout)

    def idle(self) -> bool:
        """No session open and nothing left to write."""
        return self.active == 0 and (self.writer is None or self.writer.idle)

    # --- sessions wait in a heap, not in threads -----------------------------------------
    # Leader/followers: no scheduler thread hands sessions over. One idle fetch thread (the
    # timer) sleeps until the earliest session is due and then runs it itself; the others
    # sleep until there is a due session or the timer role is free. A push that comes
    # before the timer's deadline wakes the timer; a due session wakes one idle thread.

    def _push(self, when: float, session: HostSession) -> None:  # holding the lock
        heapq.heappush(self._heap, (when, next(self._serial), session))
        if self._timer_deadline is None:
            self._work.notify()  # someone idle takes it, or becomes the timer
        elif when < self._timer_deadline:
            self._timer.notify()

    def _next_due(self) -> HostSession | None:  # holding the lock; None: stopping
        while not self._stopping:
            now = time.monotonic()
            self._promote(now)
            if any(self._due):
                session = self._draw()
                if any(self._due) or (self._heap and self._timer_deadline is None):
                    self._work.notify()  # another is due, or nobody is keeping time
                return session
            if self._heap and self._timer_deadline is None:
                self._timer_deadline = self._heap[0][0]
                self._timer.wait(self._timer_deadline - now)
                self._timer_deadline = None
            else:
                self._work.wait()
        return None

    def _promote(self, now: float) -> None:  # holding the lock
        """Sessions whose time has come move from the time heap to their band."""
        while self._heap and self._heap[0][0] <= now:
            when, serial, session = heapq.heappop(self._heap)
            score = session.next_score()
            heapq.heappush(self._due[frontier.score_band(score)], (-score, when, serial, session))

    def _draw(self) -> HostSession:  # holding the lock; some band holds a session
        waiting = sum(len(band) for band in self._due)
        shares = frontier.band_shares(loaded=waiting >= self.fetch_threads)
        bands = [b for b in range(3) if self._due[b]]
        chosen = bands[0] if len(bands) == 1 else _random.choices(bands, [shares[b] for b in bands])[0]
        _, when, _, session = heapq.heappop(self._due[chosen])
        self._cap.stepped(time.monotonic() - when, session.clock.delay)
        return session

    def _fetch_loop(self) -> None:
        try:
            while True:
                with self._lock:
                    session = self._next_due()
                    if session is None:
                        return
                    self._running += 1
                when = self._step(session)
                with self._lock:
                    self._running -= 1
                    if when is WRITER and not self._stopping:
                        self._await_writer(session)
                    elif when is not None and when is not PARKED and not self._stopping:
                        self._push(when, session)
                    if self._stopping:
                        self._changed.notify_all()
        finally:
            connection.close()

    def _step(self, session: HostSession) -> float | None:
        try:
            return session.step()
        except Exception:
            # A bug or a broken disk: what this session fetched so far is with the writer;
            # the host is released at its normal time, the rest of its URLs stay queued.
            log.exception("session for %s failed", session.host.origin)
            with self._lock:
                self.stats.errors += 1
            session.finish("error")
            return None

    def _more_urls(self, wanted, urls: list) -> None:
        """The writer found (or did not find) more URLs for a parked session: it goes on
        (and ends at its next step if there were none)."""
        with self._lock:
            session = self._sessions.get(wanted.host_id)
            if session is None or session.lease.token != wanted.token or session.ended or self._stopping:
                return
            if wanted.above is not None:  # a refresh on its way: the session takes them at its next step
                session.better.append(urls)
                return
            self._push(session.more_urls(urls), session)

    def _await_writer(self, session: HostSession) -> None:  # holding the lock
        """A session ran as far ahead of the writer as it may (session.writer_keeps_up): it
        goes on when the writer has caught up (the writer may have, since it looked)."""
        if session.ahead_of(self.writer.written):
            self._behind_writer.append(session)
        else:
            self._push(time.monotonic(), session)

    def _writer_progressed(self, written: int) -> None:
        """The writer wrote a group: the sessions waiting for it that it caught up go on."""
        with self._lock:
            if not self._behind_writer:
                return
            waiting, self._behind_writer = self._behind_writer, []
            now = time.monotonic()
            for session in waiting:
                if session.ended or self._sessions.get(session.host_id) is not session:
                    continue
                if session.ahead_of(written):
                    self._behind_writer.append(session)
                else:
                    self._push(now, session)

    def _raised(self, raised: dict[int, int]) -> None:
        """The writer stored URLs (new, or with a higher score) for these hosts: a session of
        one of them carrying worse asks for them at its next step."""
        with self._lock:
            for host_id, score in raised.items():
                session = self._sessions.get(host_id)
                if session is not None:
                    session.offered(score)

    def _released(self, ended) -> None:
        """The writer released a session's host (after storing its URLs)."""
        with self._lock:
            current = self._sessions.get(ended.host_id)
            # Once released, the host may already be in a new session here: keep that one.
            if current is not None and current.lease.token == ended.token:
                del self._sessions[ended.host_id]
            self.stats.requests += ended.requests
            self.stats.connections += ended.connections
            self.stats.ended[ended.reason] = self.stats.ended.get(ended.reason, 0) + 1
            self._changed.notify_all()

    # --- the lease keeper -------------------------------------------------------------------

    def _written(self) -> int:
        """How many of the items sessions handed the writer it has written."""
        return self.writer.written

    def heartbeat_age(self) -> float:
        """Seconds since this engine's last written heartbeat (0 before the first: nobody
        can take it for dead before that)."""
        age = liveness.written_ago(self.kind, self.worker)
        return 0.0 if age == float("inf") else age

    def _keeper_loop(self) -> None:
        """Renew every session's lease every CRAWLER_LEASE_SECONDS / 6; between renewals,
        keep the crawl limits fresh (an admin's exclusion stops sessions within seconds),
        report this engine alive (crawl/liveness.py: throttled, never raises) and release
        the leases of crawling processes that stopped beating (crawl/recovery.py)."""
        renew_every = max(0.05, settings.CRAWLER_LEASE_SECONDS / 6)
        # Beat at least twice a heartbeat period: a heartbeat is then never older than 1.5
        # periods while the engine lives, well inside CRAWLER_LEASE_STALE_SECONDS.
        tick = min(renew_every, LIMITS_RECHECK_SECONDS, settings.CRAWLER_HEARTBEAT_SECONDS / 2)
        # With no session open nothing needs the limits: only the heartbeat and the sweep
        # (an opened session wakes it: _open notifies _changed).
        idle_tick = settings.CRAWLER_HEARTBEAT_SECONDS / 2
        next_renewal = time.monotonic() + renew_every
        kind = self.kind
        liveness.beat(kind, self.worker)
        try:
            while True:
                with self._lock:
                    self._changed.wait(tick if self._sessions else idle_tick)
                    # Requests of released sessions plus those of sessions still open.
                    load = dict(sessions=len(self._sessions),
                                requests=self.stats.requests + sum(s.requests for s in self._sessions.values()))
                    if self._stopped:
                        break
                    sessions = [s for s in self._sessions.values() if not s.ended]
                close_old_connections()
                # Woken from a freeze (or the database took no heartbeat for a while): the
                # others may have released our leases. Find out before the next heartbeat,
                # after which our sessions would send again (crawl/session.py, lease_held).
                late = self.heartbeat_age() > settings.CRAWLER_LEASE_STALE_SECONDS - settings.CRAWLER_HEARTBEAT_SECONDS
                if sessions and (late or time.monotonic() >= next_renewal):
                    next_renewal = time.monotonic() + renew_every
                    self._renew(sessions)
                if sessions:
                    _guarded(frontier.current_limits)
                liveness.beat(kind, self.worker, **load)
                recovery.sweep()  # never raises
                instruments.export_stage_times()
            if self._clean_stop:  # every host given back: a clean stop, not a death
                liveness.beat(kind, self.worker, stopped=True, **load)
        finally:
            connection.close()

    def _renew(self, sessions: list[HostSession]) -> None:
        asked = time.monotonic()
        try:
            renewed = frontier.renew_leases([(s.host_id, s.lease.token, s.leased_address) for s in sessions])
        except Exception:  # the database is away: sessions stop before their leases run out
            log.exception("could not renew %d leases", len(sessions))
            reset_connection()
            return
        for session in sessions:
            if session.host_id in renewed:
                session.lease_until = asked + settings.CRAWLER_LEASE_SECONDS
            else:
                session.lost = True


def _guarded(action, *args, **kwargs) -> None:
    """Run one bookkeeping call whose failure must not end the thread that made it."""
    try:
        action(*args, **kwargs)
    except Exception:
        log.exception("%s failed", action.__name__)
        reset_connection()


def _raise_open_files_limit(wanted: int) -> None:
    """Each session keeps a connection open: make room for them (up to the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
