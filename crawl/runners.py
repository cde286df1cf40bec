"""The two ways to run a crawl, side by side, both on the session engine (crawl/engine.py).

                 embedded (`manage.py crawl`)           distributed
  who leases     this process's main thread             `manage.py dispatch` (one or more)
  hands over     engine.submit(lease)                   Celery task on the host's fetch queue,
                                                        then that worker process's engine.submit
  holds back     the engine's room                      the fetch queues' room (back-pressure)
                                                        and each engine's room
  when idle      IdlePolicy: wait, doubling, never past the next host's time

A lease is a host session (crawl/session.py). Whatever the runner, the session, its steps,
its pacing and the way its results are written are the same code.
"""

import logging
import os
import socket
import threading
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import close_old_connections

from . import instruments  # Prometheus counters (leases granted)
from .liveness import beat as heartbeat
from .models import ProcessKind
from frontier import service as frontier

from . import recovery
from .engine import SessionEngine
from .parsepool import default_processes
from .queues import dispatch_room, queue_for
from .tasknames import SESSION_TASK, session_task_name  # the host in the name Flower shows

log = logging.getLogger(__name__)


class IdlePolicy:
    """After a round with nothing to lease, wait CRAWLER_DISPATCH_IDLE_WAIT, doubling after
    each empty round up to `longest` (CRAWLER_DISPATCH_IDLE_WAIT_MAX unless given), but
    never past the moment the next host becomes ready: an idle frontier costs a few
    queries a second, not dozens, and a host due soon is not kept waiting."""

    def __init__(self, longest: float | None = None):
        self.longest = settings.CRAWLER_DISPATCH_IDLE_WAIT_MAX if longest is None else longest
        self.reset()

    def reset(self) -> None:
        self._wait = settings.CRAWLER_DISPATCH_IDLE_WAIT

    def next_wait(self, due_in: float | None = None) -> float:
        wait = self._wait
        self._wait = min(self._wait * 2, self.longest)
        if due_in is None:
            return wait
        # A host due "now" that could not be leased waits for its server address (held by
        # another host's session): never poll faster than the first wait.
        return min(wait, max(due_in, settings.CRAWLER_DISPATCH_IDLE_WAIT))


# --- embedded --------------------------------------------------------------------------------

@dataclass
class RunStats:
    leases: int = 0
    released: int = 0  # revisits moved back into the queue (continuous mode)
    sessions: int = 0
    requests: int = 0
    connections: int = 0
    elapsed: float = 0.0
    cpu_seconds: float = 0.0
    errors: int = 0
    ended: dict = field(default_factory=dict)


def run_embedded(threads: int | None = None, progress=None, max_seconds: float | None = None, *,
                 continuous: bool = False, stop: threading.Event | None = None) -> RunStats:
    """Crawl in this process.

    One-shot (default): until nothing is due within CRAWLER_CRAWL_DEFER_AFTER seconds and
    no session is open; what waits longer (a robots.txt answering 5xx, a long Retry-After,
    a back-off) is left for a later run (frontier.deferred_work lists it). Continuous:
    until `stop` is set (or max_seconds), doing beat's work in-process as well: due
    revisits are released every CRAWLER_RECRAWL_RELEASE_SECONDS and the recrawl plan is
    solved every CRAWLER_RECRAWL_PLAN_SECONDS."""
    owner = f"embedded-{socket.gethostname()}-{os.getpid()}"
    stats = RunStats()
    stop = stop or threading.Event()
    started, cpu_started = time.monotonic(), time.process_time()
    engine = SessionEngine(fetch_threads=threads, name="embedded", parse_processes=default_processes(embedded=True)).start()
    idle = IdlePolicy()
    # Continuous, with no session open and nothing to write, nothing in this process makes
    # work: the loop waits for the next due time, doubling up to the longest idle wait (a
    # seed another process adds waits that long at most), instead of leasing every 0.4 s.
    asleep = IdlePolicy(settings.CRAWLER_DISPATCH_IDLE_WAIT_LONGEST)
    beat = _InProcessBeat() if continuous else None
    frontier.sweep_idle_hosts_next_round()
    try:
        while not stop.is_set() and not (max_seconds and time.monotonic() - started > max_seconds):
            if beat is not None:
                stats.released += beat.tick()
            room = min(engine.room(), settings.CRAWLER_DISPATCH_BATCH)
            # Under load: fewer than a fifth of the engine's sessions free.
            loaded = engine.room() < 0.2 * engine.session_limit
            leases = frontier.lease_ready_hosts(owner, room, loaded) if room > 0 else []
            for lease in leases:
                engine.submit(lease)
            stats.leases += len(leases)
            if progress:
                progress()
            if leases:
                idle.reset()
                asleep.reset()
                continue
            engine_idle = engine.idle()
            if (beat is None and room > 0 and engine_idle
                    and not frontier.has_work_due_within(settings.CRAWLER_CRAWL_DEFER_AFTER)):
                break
            if beat is not None and engine_idle:  # no session to wake it: Ctrl-C (`stop`) does
                wait = asleep.next_wait(frontier.next_change_in(asleep.longest))
                stop.wait(min(wait, beat.due_in()))
                continue
            asleep.reset()
            wait = idle.next_wait(frontier.next_due_in(settings.CRAWLER_DISPATCH_IDLE_WAIT_MAX))
            if beat is not None:
                wait = min(wait, beat.due_in())
            engine.wait_for_change(wait)
    finally:
        engine.stop()
    stats.sessions, stats.requests = engine.stats.sessions, engine.stats.requests
    stats.connections, stats.ended = engine.stats.connections, dict(engine.stats.ended)
    stats.errors = engine.stats.errors + engine.writer.errors
    stats.elapsed = time.monotonic() - started
    stats.cpu_seconds = time.process_time() - cpu_started
    return stats


class _InProcessBeat:
    """Beat's recrawl work for the embedded runner: release due URLs, solve the plan. Both
    run in the dispatch loop, so the release comes first (a plan is seconds of CPU on a busy
    machine: after it, the due URLs waited, and past CRAWLER_RECRAWL_CARRY_SECONDS their
    budget was lost), and a plan that takes long runs less often: at most PLAN_SHARE of the
    loop's time (issue 51: with a plan every 2 s taking 1.5 s of CPU, the optimal policy
    released 60 % of its budget in real time, uniform, whose plan is a count, all of it)."""

    PLAN_SHARE = 0.25

    def __init__(self):
        self.next_release = 0.0
        self.next_plan = 0.0

    def tick(self) -> int:
        now, released = time.monotonic(), 0
        if now >= self.next_release:
            self.next_release = now + settings.CRAWLER_RECRAWL_RELEASE_SECONDS
            released = frontier.release_due()
        if now >= self.next_plan:
            frontier.plan_recrawl()
            took = time.monotonic() - now
            self.next_plan = now + max(settings.CRAWLER_RECRAWL_PLAN_SECONDS, took / self.PLAN_SHARE)
        return released

    def due_in(self) -> float:
        return max(0.0, min(self.next_release, self.next_plan) - time.monotonic())


# --- distributed: the dispatcher ---------------------------------------------------------------

def dispatch_once(name: str, app) -> int:
    """One round: lease ready hosts and send each session to its host's fetch queue.
    Returns the number of sessions sent."""
    return _dispatch_round(name, app)[0]


def _dispatch_round(name: str, app) -> tuple[int, bool]:
    """dispatch_once, and whether the fetch queues were full (nothing was leased for it)."""
    room = dispatch_room(app)
    if room == 0:
        log.info("fetch queues at their high-water mark; not dispatching")
        return 0, True
    # Under load: the queues near their high-water mark leave a fifth of a round or less.
    loaded = room <= 0.2 * settings.CRAWLER_DISPATCH_BATCH
    sent = 0
    for lease in instruments.count_leases(frontier.lease_ready_hosts(name, room, loaded)):
        try:
            app.send_task(SESSION_TASK, args=[lease.host_id, lease.token, lease.url_ids, lease.address],
                          queue=queue_for(lease.origin), shadow=session_task_name(lease.origin))
            sent += 1
        except Exception:  # broker down: give the host back rather than wait for expiry
            log.exception("could not send the session for %s; releasing it", lease.origin)
            frontier.release_host(lease.host_id, lease.token, None, leased_address=lease.address)
    return sent, False


def run_dispatcher(name: str, app, stop: threading.Event) -> None:
    """Dispatch until `stop` is set. Several dispatchers may run on several machines:
    leasing uses SKIP LOCKED, so they never hand out the same host twice. A dispatcher
    never waits out a politeness delay: hosts that are not ready are not leased.

    Idle, it waits as it always did, doubling from CRAWLER_DISPATCH_IDLE_WAIT to
    CRAWLER_DISPATCH_IDLE_WAIT_MAX after each empty round; on PostgreSQL the doubling goes
    on up to CRAWLER_DISPATCH_IDLE_WAIT_LONGEST, and a wait past the old maximum ends
    early at a notification (frontier/wakeups.py: hosts given back, URLs added or
    released, steering) or when the next host or URL becomes ready. With the fetch queues
    full it polls the old way: a queue drains unannounced."""
    listener = frontier.WorkListener()
    idle = IdlePolicy(settings.CRAWLER_DISPATCH_IDLE_WAIT_LONGEST if listener.postgres else None)
    busy = IdlePolicy()
    frontier.sweep_idle_hosts_next_round()
    tuned = None  # the connection whose idle transactions the database ends (crawl/recovery.py)
    try:
        while not stop.is_set():
            close_old_connections()
            try:
                # Frozen inside a lease transaction, it would hold the leased hosts' rows.
                tuned = recovery.end_idle_transactions_of_this_thread(tuned)
                recovery.sweep()  # a dead worker's hosts come back in seconds (throttled)
                sent, full = _dispatch_round(name, app)
            except Exception:  # database hiccup: keep the dispatcher alive, try again shortly
                log.exception("dispatch round failed")
                sent, full = 0, True
            heartbeat(ProcessKind.DISPATCHER, name, leased=sent)  # throttled, never raises (crawl/liveness.py)
            instruments.export_stage_times()
            if sent:
                idle.reset()
                busy.reset()
            elif full:
                stop.wait(busy.next_wait())
            else:
                busy.reset()
                _idle_wait(idle.next_wait(), listener, stop)
    finally:
        listener.close()
    heartbeat(ProcessKind.DISPATCHER, name, stopped=True)


def _idle_wait(wait: float, listener, stop: threading.Event) -> None:
    """Wait as the old poll did, up to CRAWLER_DISPATCH_IDLE_WAIT_MAX, whatever is announced
    (during a crawl every writer group announces something: waking for each cost the
    dispatcher four times its CPU on the smallsites bench); the rest of a longer wait ends
    early when work is announced or something becomes ready."""
    polled = min(wait, settings.CRAWLER_DISPATCH_IDLE_WAIT_MAX)
    if stop.wait(polled) or wait <= polled or not listener.available():
        return
    try:
        rest = frontier.next_change_in(wait - polled)
    except Exception:  # the database is away: the round after the wait says so
        log.exception("could not read when the next host is ready")
        rest = wait - polled
    listener.wait(rest, stop)


# --- distributed: the worker -----------------------------------------------------------------

_engine_lock = threading.Lock()
_engine_of: tuple[int, SessionEngine] | None = None  # (pid, this process's engine)

# How long a task may wait for room in its process's engine before giving the session back.
SUBMIT_WAIT_SECONDS = 30.0


def worker_engine() -> SessionEngine:
    """This process's engine, started on first use (one per process: a forked pool child
    must not share its parent's threads)."""
    global _engine_of
    with _engine_lock:
        if _engine_of is None or _engine_of[0] != os.getpid():
            _engine_of = (os.getpid(), SessionEngine(name=f"worker-{os.getpid()}",
                                                     parse_processes=default_processes(embedded=False)).start())
        return _engine_of[1]


def stop_worker_engine() -> None:
    """End every session of this process (hosts released at their clocks' times, results
    written): called when the worker shuts down."""
    global _engine_of
    with _engine_lock:
        held, _engine_of = _engine_of, None
    if held is not None and held[0] == os.getpid():
        held[1].stop()


def run_worker_session(host_id: int, token: str, url_ids: list[int], address: str = "") -> bool:
    """A Celery task's work: hand the session to this process's engine. Waits while the
    engine is full (the worker then takes no new message: back-pressure reaches the queue);
    after SUBMIT_WAIT_SECONDS it gives the host back instead."""
    engine = worker_engine()
    lease = frontier.Lease(host_id, token, "", url_ids, address)
    # No database here (the engine's intake thread does it): see crawl/engine.py.
    if not engine.wait_for_room(SUBMIT_WAIT_SECONDS):
        engine.give_back(lease)
        return False
    return engine.submit(lease)
