"""CPU time per stage of a page's path, in every crawling process: what the bench's stage
table shows (bench/run.py) and what the `crawlerweb_stage_cpu_seconds` counter exports.

    with stagetime.stage("parse"):
        parse_html(...)

Stages are exclusive: a stage entered inside another pauses the outer one, so the stages
of a thread add up to the CPU it spent inside them, never twice. Each thread keeps its own
totals (no lock on the hot path); totals() adds up every thread's, including threads that
have ended. The clock is time.thread_time_ns() (CLOCK_THREAD_CPUTIME_ID: this thread's CPU,
not the wall), about 0.3 µs a call, two calls per stage: a few µs per page.

Work done in another process for this one (the parse pool, crawl/parsepool.py) is measured
there and added here with add().
"""

import os
import threading
import time

# The stages, in the order of a page's path (the bench prints them in this order).
STAGES = (
    "fetch",  # HTTP: connect, send, receive, decode (fetch/http.py)
    "robots",  # robots.txt parsing and matching
    "parse",  # HTML parsing, links, title, headings (indexer/parse.py)
    "text",  # the visible text out of the tree
    "language",  # the document's language identified (indexer/language.py)
    "analysis",  # the search analyzer and the backend's index rows (indexer/analyzer.py)
    "fingerprint",  # content hash, text hash, SimHash (indexer/fingerprint.py)
    "warc",  # WARC records built, digested, compressed, appended (archive/warc.py)
    "pool",  # handing pages to the parse pool and taking results back
    "crawl_log",  # the crawl log line and its file (crawl/crawllog.py)
    "session",  # a host session's steps, pacing, the engine
    "links",  # link admission: normalize, filter, seen test, insert (frontier/admission.py)
    "documents",  # documents and the full-text index written (indexer/service.py)
    "records",  # URL states written (frontier/records.py)
    "leases",  # leasing, opening and releasing host sessions (frontier/leases.py)
)

_local = threading.local()
_threads: list[dict] = []  # every thread's totals (ns), kept after the thread ends
_extra: dict[str, int] = {}  # measured in other processes, added with add()
_lock = threading.Lock()
_clock = time.thread_time_ns


class _ThreadState:
    __slots__ = ("stack", "mark", "totals")

    def __init__(self):
        self.stack: list[str] = []
        self.mark = 0
        self.totals: dict[str, int] = dict.fromkeys(STAGES, 0)
        with _lock:
            _threads.append(self.totals)


def _state() -> _ThreadState:
    state = getattr(_local, "state", None)
    if state is None:
        state = _local.state = _ThreadState()
    return state


class stage:
    """A context manager charging the CPU inside it to `name` (one of STAGES)."""

    __slots__ = ("name", "state")

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        state = self.state = _state()
        now = _clock()
        if state.stack:
            state.totals[state.stack[-1]] += now - state.mark
        state.stack.append(self.name)
        state.mark = now
        return self

    def __exit__(self, *exc):
        state = self.state
        now = _clock()
        state.totals[state.stack.pop()] += now - state.mark
        state.mark = now
        return False


def add(durations: dict[str, int]) -> None:
    """Add stage times measured elsewhere (ns by stage), e.g. by a pool process."""
    with _lock:
        for name, ns in durations.items():
            _extra[name] = _extra.get(name, 0) + ns


def totals() -> dict[str, float]:
    """Seconds of CPU by stage in this process so far (every stage, zeros included)."""
    with _lock:
        threads = list(_threads)
        summed = dict.fromkeys(STAGES, 0)
        for name, ns in _extra.items():
            summed[name] = summed.get(name, 0) + ns
    for totals_of_thread in threads:
        for name, ns in list(totals_of_thread.items()):
            summed[name] += ns
    return {name: ns / 1e9 for name, ns in summed.items()}


class Recorder:
    """Stage times of one piece of work done in a pool process, to send back with it."""

    def __init__(self):
        self.before = None

    def __enter__(self):
        self.before = dict(_state().totals)
        return self

    def __exit__(self, *exc):
        return False

    def delta(self) -> dict[str, int]:
        after = _state().totals
        return {name: ns - self.before.get(name, 0) for name, ns in after.items() if ns != self.before.get(name, 0)}


def reset_after_fork() -> None:
    """A forked child starts from zero (its parent's threads are not its own)."""
    global _local, _threads, _extra, _lock
    _local, _threads, _extra, _lock = threading.local(), [], {}, threading.Lock()


def timed(name: str):
    """Decorator: the whole function is stage `name`."""

    def wrap(function):
        def timed_function(*args, **kwargs):
            with stage(name):
                return function(*args, **kwargs)

        timed_function.__name__ = function.__name__
        timed_function.__qualname__ = function.__qualname__
        timed_function.__doc__ = function.__doc__
        timed_function.__wrapped__ = function
        return timed_function

    return wrap


os.register_at_fork(after_in_child=reset_after_fork)
