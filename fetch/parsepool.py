"""The parse pool: the database-free, CPU-heavy half of each page (fetch/service.py's
analyse(): hashing, WARC records, HTML parsing, text, fingerprints, the search backend's
analysis) done in a few worker processes, so that one crawling process uses every core.

Why processes: the embedded crawler is one Python process, and one interpreter lock lets
one thread run Python at a time; its fetch threads wait on the network in parallel but
parse one after another. In a worker process the analysis runs beside the engine's
threads. (A Celery worker's prefork pool is already a process per core: its engines keep
the analysis inline, CRAWLER_PARSE_PROCESSES decides.)

How: each worker process is a child with a socket. A fetch thread sends the response
(pickled) to the least busy child with a free place and waits for the answer (holding no
lock); a child holds up to PIPELINE_DEPTH pages, the next one already sent while it
analyses one, and a reader thread per child hands its answers back in order. A page that
kills its child (a parser crash) or hangs it past CRAWLER_PARSE_TIMEOUT is known exactly,
the one at the head of its child's line: that child is killed and replaced, and the page
is settled as "parse_failed" (archived, not parsed) in bounded time; a page queued behind
it is sent to another child, and no other page is touched. Children start in the background (a fresh
interpreter, never a fork of a process with threads) with the parent's settings;
until one is ready the fetch threads analyse pages themselves, so a crawl never waits for
the pool to start. Once children run, a fetch thread waits for a free place: the parent's
own work (HTTP, the writer, the engine) keeps its core.
"""

import logging
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from multiprocessing.connection import Connection
from pathlib import Path

from django.conf import settings

from crawlerweb import stagetime
from frontier.vocabulary import PageDetail

log = logging.getLogger(__name__)

_ROOT = Path(__file__).resolve().parent.parent  # where `python -m fetch.parsepool` is found

# How long a fetch thread waits for an idle child, while none has started, before analysing
# the page itself.
IDLE_CHILD_WAIT = 0.05
# How long a child may take to start: a fresh interpreter importing Django and lxml, which
# takes seconds on a loaded machine; unrelated to a page's CRAWLER_PARSE_TIMEOUT.
CHILD_START_WAIT = 60.0


def default_processes(embedded: bool) -> int:
    """CRAWLER_PARSE_PROCESSES, or by default: in the embedded crawler one per core but the
    one its own threads keep busy (HTTP, the engine, the writer: measured to be about as
    much CPU per page as the analysis, docs/benchmarks.md), at least one; in a Celery
    prefork child (a process per core already) one: the analysis costs a third less CPU in
    a process of its own than among the child's 32 fetch threads (measured on the
    standard bench: 9.9 against 7.9 ms of worker CPU per page)."""
    if settings.CRAWLER_PARSE_PROCESSES >= 0:
        return settings.CRAWLER_PARSE_PROCESSES
    return max(1, (os.cpu_count() or 1) - 1) if embedded else 1


# Pages a child holds at once: the one it analyses and the next, already sent, so that it
# never waits for the parent between two pages. (With one page at a time the child sat idle
# half the time on a two-core machine: the parent's thread must wake, read the answer and
# hand the child on before the next page is sent; measured on `bench.run --size smallsites`,
# one parse process 44 % busy while thirty fetch threads waited for it.)
PIPELINE_DEPTH = 2


class ChildLost(Exception):
    """The child died or hung: `culprit` when it was this page's analysis, else the page was
    only queued behind that one (and is analysed again elsewhere)."""

    def __init__(self, culprit: bool, detail: str):
        super().__init__(detail)
        self.culprit = culprit


class _Slot:
    """One page sent to a child, waiting for its answer (the child answers in order)."""

    __slots__ = ("done", "answer", "lost")

    def __init__(self):
        self.done = threading.Event()
        self.answer: bytes | None = None
        self.lost: ChildLost | None = None


class _Child:
    """A parse process: `python -m fetch.parsepool FD`, a fresh interpreter talking over a
    socket pair. A plain subprocess, not multiprocessing's: a Celery prefork child is a
    daemonic process, which multiprocessing forbids to have children.

    Up to PIPELINE_DEPTH pages are sent to it at once; a reader thread takes its answers in
    order and gives each to its page's fetch thread. The page at the head of the line is
    the one it analyses: if no answer comes within CRAWLER_PARSE_TIMEOUT of its start, or
    the process dies, that page is the culprit and the ones behind it are sent elsewhere."""

    def __init__(self, settings_snapshot: dict, analyse_path: str):
        ours, theirs = socket.socketpair()
        try:
            self.process = subprocess.Popen([sys.executable, "-m", "fetch.parsepool", str(theirs.fileno())],
                                            pass_fds=[theirs.fileno()], cwd=_ROOT, stdin=subprocess.DEVNULL)
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.conn.send_bytes(pickle.dumps((settings_snapshot, analyse_path)))
        self.ready = False
        self.lost = False
        self._line: deque[_Slot] = deque()
        self._sent = threading.Condition()
        self.on_lost = None  # called once when the process is lost (the pool replaces it)

    @property
    def load(self) -> int:
        return len(self._line)

    def start_reading(self, on_answer) -> None:
        """Begin taking answers; `on_answer` is called after each (a place is free)."""
        threading.Thread(target=self._read, args=(on_answer,), name="parse-pool-reader", daemon=True).start()

    def send(self, payload: bytes) -> _Slot:
        slot = _Slot()
        with self._sent:
            if self.lost:
                raise ChildLost(False, "the parse process was lost")
            self._line.append(slot)
            try:
                self.conn.send_bytes(payload)
            except OSError as exc:
                self._line.pop()
                raise ChildLost(False, f"could not send to the parse process: {exc}") from exc
            self._sent.notify()
        return slot

    def _read(self, on_answer) -> None:
        started = None  # when the head of the line began: its answer is due a timeout later
        while True:
            with self._sent:
                while not self._line and not self.lost:
                    self._sent.wait()
                if self.lost:
                    return
            started = started or time.monotonic()
            try:
                if not self.conn.poll(max(0.0, started + settings.CRAWLER_PARSE_TIMEOUT - time.monotonic())):
                    raise TimeoutError(f"no answer within {settings.CRAWLER_PARSE_TIMEOUT} s")
                answer = self.conn.recv_bytes()
            except (OSError, EOFError, TimeoutError) as exc:
                self._lose(str(exc) or type(exc).__name__)
                return
            with self._sent:
                slot = self._line.popleft()
            slot.answer = answer
            slot.done.set()
            started = time.monotonic() if self._line else None
            on_answer()

    def _lose(self, detail: str) -> None:
        with self._sent:
            self.lost = True
            line, self._line = list(self._line), deque()
            self._sent.notify_all()
        for position, slot in enumerate(line):
            slot.lost = ChildLost(position == 0, detail)
            slot.done.set()
        if self.on_lost is not None:
            self.on_lost(self)

    def stop(self) -> None:
        with self._sent:
            self.lost = True
            self._sent.notify_all()
        try:
            self.conn.close()
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait(5)


class ParsePool:
    def __init__(self, processes: int, analyse_path: str = "fetch.service.analyse"):
        self.size = processes
        self._analyse_path = analyse_path  # what the children run (tests give a hostile one)
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)  # a child has a free place
        self._children: list[_Child] = []
        self._closed = False
        self.failures = 0  # pages whose analysis killed or hung a child
        self.inline = 0  # pages analysed by the fetch thread (no child ready)
        self._snapshot = {name: getattr(settings, name) for name in dir(settings) if name.startswith("CRAWLER_")}
        for _ in range(processes):
            threading.Thread(target=self._start_child, name="parse-pool-start", daemon=True).start()

    def _start_child(self) -> None:
        try:
            child = _Child(self._snapshot, self._analyse_path)
            if not child.conn.poll(CHILD_START_WAIT) or child.conn.recv_bytes() != b"ready":
                raise RuntimeError("the parse process did not start")
        except Exception:
            log.exception("could not start a parse process; pages are parsed in the fetch threads")
            return
        with self._lock:
            if self._closed:
                child.stop()
                return
            child.ready = True
            child.on_lost = self._replace
            self._children.append(child)
            self._room.notify_all()
        child.start_reading(self._freed)

    def _freed(self) -> None:
        with self._lock:
            self._room.notify()

    def _take(self) -> _Child | None:
        """The least loaded child with a free place, waiting for one while all are full;
        None while none has started (the fetch thread analyses the page itself)."""
        deadline = time.monotonic() + (settings.CRAWLER_PARSE_TIMEOUT if self._children else IDLE_CHILD_WAIT)
        with self._lock:
            while True:
                open_ = [child for child in self._children if not child.lost and child.load < PIPELINE_DEPTH]
                if open_:
                    return min(open_, key=lambda child: child.load)
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    return None
                self._room.wait(left)

    def analyse(self, result, queued):
        """fetch.service.analyse(result, queued), in a child when one has room."""
        from . import archive
        from .service import Analysis, analyse

        with stagetime.stage("pool"):
            # The child builds WARC records for this process's writer: they name its file.
            payload = pickle.dumps((result, queued, archive.warcinfo_id()), pickle.HIGHEST_PROTOCOL)
        for _ in range(PIPELINE_DEPTH + 1):  # queued behind a page that broke its child: again
            child = self._take()
            if child is None:  # children busy past a page's timeout, or none started: here
                self.inline += 1
                return analyse(result, queued)
            try:
                slot = child.send(payload)
                slot.done.wait()
                if slot.lost is not None:
                    raise slot.lost
            except ChildLost as lost:
                if not lost.culprit:
                    continue
                with self._lock:
                    self.failures += 1
                log.warning("analysing %s broke its parse process (%s): settled as parse_failed", queued.url, lost)
                return Analysis(records=archive.build(result), failed=PageDetail.PARSE_FAILED)
            with stagetime.stage("pool"):
                analysis, stages = pickle.loads(slot.answer)
            stagetime.add(stages)
            return analysis
        self.inline += 1
        return analyse(result, queued)

    def _replace(self, child: _Child) -> None:
        with self._lock:
            if child in self._children:
                self._children.remove(child)
            closed = self._closed
            self._room.notify_all()
        child.stop()
        if not closed:
            threading.Thread(target=self._start_child, name="parse-pool-start", daemon=True).start()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            children, self._children = self._children, []
            self._room.notify_all()
        for child in children:
            child.stop()


def _child_main(conn) -> None:
    """A parse process: set up Django with the parent's crawler settings, then answer
    analyse() requests until the socket closes. Touches no database and no file."""
    settings_snapshot, analyse_path = pickle.loads(conn.recv_bytes())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")
    import django

    django.setup()
    from django.test.utils import override_settings
    from django.utils.module_loading import import_string

    override_settings(**settings_snapshot).enable()
    analyse = import_string(analyse_path)
    from .archive import building_for

    conn.send_bytes(b"ready")
    while True:
        try:
            request = conn.recv_bytes()
        except (EOFError, OSError):
            return
        result, queued, warcinfo_id = pickle.loads(request)
        with stagetime.Recorder() as recorder, building_for(warcinfo_id):
            analysis = analyse(result, queued)
        conn.send_bytes(pickle.dumps((analysis, recorder.delta()), pickle.HIGHEST_PROTOCOL))
        del result, queued, analysis


if __name__ == "__main__":
    _child_main(Connection(int(sys.argv[1])))
