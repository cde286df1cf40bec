"""The parse pool: the database-free, CPU-heavy half of each page (crawl/pipeline.py's
analyse(): hashing, WARC records, HTML parsing, text, fingerprints, the search backend's
analysis) done in a few worker processes, so that one crawling process uses every core.

Why processes: the embedded crawler is one Python process, and one interpreter lock lets
one thread run Python at a time; its fetch threads wait on the network in parallel but
parse one after another. In a worker process the analysis runs beside the engine's
threads. (A Celery worker's prefork pool is already a process per core: its engines keep
the analysis inline, CRAWLER_PARSE_PROCESSES decides.)

How: each worker process is a child with a pipe. A fetch thread takes an idle child, sends
it the response (pickled), waits for the answer (waiting on a pipe holds no lock), and
gives the child back. One page per child at a time, so a page that kills its child (a
parser crash) or hangs it past CRAWLER_PARSE_TIMEOUT is known exactly: that child is
killed and replaced, and the page is settled as "parse_failed" (a PDF: "pdf:timeout" or
"pdf:crashed"; archived, not parsed) in bounded time; no other page is touched. A child's
data memory is capped (CRAWLER_PARSE_MEMORY_LIMIT): a page that needs more, such as a PDF
decompression bomb (PDFium aborts when an allocation fails), ends its child the same way. Children start in the background (a fresh
interpreter, never a fork of a process with threads) with the parent's settings;
until one is ready the fetch threads analyse pages themselves, so a crawl never waits for
the pool to start. Once children run, a fetch thread waits for an idle one: the parent's
own work (HTTP, the writer, the engine) keeps its core.
"""

import logging
import os
import pickle
import queue
import resource
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from pathlib import Path

from django.conf import settings

from common import stagetime
from frontier.vocabulary import PageDetail, PdfOutcome

log = logging.getLogger(__name__)

_ROOT = Path(__file__).resolve().parent.parent  # where `python -m crawl.parsepool` is found

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
    standard bench: 9.9 against 7.9 ms of worker CPU per page).

    One per core was tried (2026-12-07): many small sites read page by page went from 46
    to 63 pages/s on two cores (a child waits between two pages for a parent thread to
    wake, read its answer and send the next), but the standard web paid 1.7 ms more CPU a
    page (10.1 against 11.7) for the same 81 pages/s."""
    if settings.CRAWLER_PARSE_PROCESSES >= 0:
        return settings.CRAWLER_PARSE_PROCESSES
    return max(1, (os.cpu_count() or 1) - 1) if embedded else 1


class _Child:
    """A parse process: `python -m crawl.parsepool FD`, a fresh interpreter talking over a
    socket pair. A plain subprocess, not multiprocessing's: a Celery prefork child is a
    daemonic process, which multiprocessing forbids to have children."""

    def __init__(self, settings_snapshot: dict, analyse_path: str):
        ours, theirs = socket.socketpair()
        try:
            self.process = subprocess.Popen([sys.executable, "-m", "crawl.parsepool", str(theirs.fileno())],
                                            pass_fds=[theirs.fileno()], cwd=_ROOT, stdin=subprocess.DEVNULL)
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.conn.send_bytes(pickle.dumps((settings_snapshot, analyse_path)))
        self.ready = False

    def stop(self) -> None:
        try:
            self.conn.close()
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait(5)


class ParsePool:
    def __init__(self, processes: int, analyse_path: str = "crawl.pipeline.analyse"):
        self.size = processes
        self._analyse_path = analyse_path  # what the children run (tests give a hostile one)
        self._idle: queue.Queue[_Child] = queue.Queue()
        self._lock = threading.Lock()
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
            self._children.append(child)
        self._idle.put(child)

    def analyse(self, result, queued):
        """crawl.pipeline.analyse(result, queued), in a child when one is idle."""
        from indexer import service as indexer  # here: a child imports this module before Django is set up

        from .pipeline import Analysis, analyse

        # A PDF waits for a child, even one still starting or replacing a broken one: only
        # there is PDFium under the timeout and the memory limit (a hang or a bomb in a fetch
        # thread would stall or swell the crawler).
        pdf = self.size > 0 and indexer.is_pdf(result.content_type, result.body)
        try:
            # Children busy: wait for one (the fetch thread holds nothing meanwhile); none
            # started yet (or none would start): analyse here rather than wait.
            wait = settings.CRAWLER_PARSE_TIMEOUT if self._children else IDLE_CHILD_WAIT
            child = self._idle.get(timeout=CHILD_START_WAIT + settings.CRAWLER_PARSE_TIMEOUT if pdf else wait)
        except queue.Empty:
            self.inline += 1
            return analyse(result, queued)
        from archive import warc

        with stagetime.stage("pool"):
            # The child builds WARC records for this process's writer: they name its file.
            payload = pickle.dumps((result, queued, warc.warcinfo_id()), pickle.HIGHEST_PROTOCOL)
        try:
            child.conn.send_bytes(payload)
            if not child.conn.poll(settings.CRAWLER_PARSE_TIMEOUT):
                raise TimeoutError(f"no answer within {settings.CRAWLER_PARSE_TIMEOUT} s")
            answer = child.conn.recv_bytes()
        except (OSError, EOFError, TimeoutError) as exc:
            self._replace(child)
            self.failures += 1
            failed = PageDetail.PARSE_FAILED
            if pdf:  # a PDF that hangs PDFium, or a bomb that ran the child out of memory
                failed = PdfOutcome.TIMEOUT if isinstance(exc, TimeoutError) else PdfOutcome.CRASHED
            log.warning("analysing %s broke its parse process (%s): settled as %s", queued.url,
                        exc or type(exc).__name__, failed)
            return Analysis(records=warc.build(result), failed=failed)
        self._idle.put(child)
        with stagetime.stage("pool"):
            analysis, stages = pickle.loads(answer)
        stagetime.add(stages)
        return analysis

    def _replace(self, child: _Child) -> None:
        with self._lock:
            if child in self._children:
                self._children.remove(child)
            closed = self._closed
        child.stop()
        if not closed:
            threading.Thread(target=self._start_child, name="parse-pool-start", daemon=True).start()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            children, self._children = self._children, []
        for child in children:
            child.stop()


def _child_main(conn) -> None:
    """A parse process: set up Django with the parent's crawler settings, then answer
    analyse() requests until the socket closes. Touches no database and no file."""
    settings_snapshot, analyse_path = pickle.loads(conn.recv_bytes())
    limit = settings_snapshot.get("CRAWLER_PARSE_MEMORY_LIMIT", 0)
    if limit:  # a page that needs more ends this process (replaced by the pool), not the machine
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")
    import django

    django.setup()
    from django.test.utils import override_settings
    from django.utils.module_loading import import_string

    override_settings(**settings_snapshot).enable()
    analyse = import_string(analyse_path)
    from archive.warc import building_for

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
