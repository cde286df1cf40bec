"""What the crawling processes count, as prometheus-client counters and histograms, and
the exporter that serves them.

Two scrape targets, so that nothing is counted twice:

- the web's `GET /metrics` (console/metrics.py): the frontier as the database sees it (URLs
  by state, hosts, queues): global figures, one web instance scraped;
- each machine's exporter on CRAWLER_METRICS_PORT: what this machine's workers, dispatchers
  and embedded crawls did (requests, bytes, retries, durations, sessions sent): counters,
  which Prometheus turns into rates with rate().

Per-process series: prometheus-client's multiprocess mode, not an endpoint per process.
A Celery prefork worker's fetching happens in pool children that the pool forks and
replaces on its own: they cannot each own a port Prometheus knows about, and a counter
kept in a child's memory would vanish with it. In multiprocess mode every process of a
machine writes its values to small mmap files in PROMETHEUS_MULTIPROC_DIR (one directory
per machine, set before prometheus_client is imported: settings.py does it), and one
exporter per machine adds them up: counters and histograms summed over processes alive or
dead (so they never go down while the machine runs), the `crawlerweb_processes` gauge
counting live processes only. Every long-running crawling process (the Celery worker's
main process, `manage.py dispatch`, `manage.py crawl`) tries to serve the exporter: the
first to bind the port serves the whole directory, the others retry every
EXPORTER_RETRY_SECONDS and take over if it goes away. Without PROMETHEUS_MULTIPROC_DIR
(a lone `crawl` or `dispatch`), the exporter serves its own process.
"""

import errno
import fcntl
import glob
import logging
import os
import threading

from django.conf import settings
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, start_http_server, values
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from common import stagetime
from frontier.vocabulary import FetchError, RequestOutcome

log = logging.getLogger(__name__)

EXPORTER_RETRY_SECONDS = 30.0

# Statuses common enough to keep by their code; the rest is counted by class (4xx, 5xx…),
# so one odd server cannot blow up the number of series.
COMMON_STATUSES = frozenset({200, 204, 206, 301, 302, 303, 304, 307, 308, 400, 401, 403, 404, 410, 429,
                             500, 502, 503, 504})
# crawl.observe.outcome_of's names: a status class, or the fetch error. Anything else is "other".
KNOWN_OUTCOMES = frozenset({*RequestOutcome, *FetchError})
# Web fetches: loopback answers in milliseconds, the real web in 0.1-2 s, and nothing
# outlives CRAWLER_TOTAL_DEADLINE (30 s) plus a read timeout.
DURATION_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

FETCHES = Counter("crawlerweb_fetches", "requests sent, by kind (page, robots), status and outcome",
                  ["kind", "status", "outcome"])
RESPONSE_BYTES = Counter("crawlerweb_response_bytes", "response body bytes received (decompressed)", ["kind"])
RETRIES = Counter("crawlerweb_retries", "page requests that retried a URL (its second or later attempt in a row)")
ROBOTS_FETCHES = Counter("crawlerweb_robots_fetches", "robots.txt requests, by outcome", ["outcome"])
NOT_MODIFIED = Counter("crawlerweb_not_modified", "304 answers to conditional GETs")
FETCH_DURATION = Histogram("crawlerweb_fetch_duration_seconds", "request start to end of body", ["kind"],
                           buckets=DURATION_BUCKETS)
LEASES_GRANTED = Counter("crawlerweb_dispatch_leases", "host sessions leased by dispatchers")
SESSIONS_SENT = Counter("crawlerweb_dispatch_sessions_sent", "host sessions sent to a Celery fetch queue")
PROCESSES = Gauge("crawlerweb_processes", "crawling processes alive, by role (worker, dispatcher, embedded)",
                  ["role"], multiprocess_mode="livesum")
STAGE_CPU = Counter("crawlerweb_stage_cpu_seconds", "CPU seconds spent in each stage of the crawl's work "
                    "(fetch, parse, analysis, warc, links, documents, ...: common/stagetime.py)", ["stage"])


def status_label(status: int | None) -> str:
    if status is None:
        return "none"
    return str(status) if status in COMMON_STATUSES else f"{status // 100}xx"


def record_request(record) -> None:
    """crawl.observe listener: count one request (a crawl.observe.RequestRecord). Runs on
    the fetch thread: a few in-memory (or mmap) increments, no I/O."""
    outcome = record.outcome if record.outcome in KNOWN_OUTCOMES else "other"
    FETCHES.labels(record.kind, status_label(record.status), outcome).inc()
    FETCH_DURATION.labels(record.kind).observe(max(0.0, record.duration))
    if record.bytes:
        RESPONSE_BYTES.labels(record.kind).inc(record.bytes)
    if record.kind == "robots":
        ROBOTS_FETCHES.labels(outcome).inc()
    elif record.attempt > 1:
        RETRIES.inc()
    if record.status == 304:
        NOT_MODIFIED.inc()


_stage_lock = threading.Lock()
_stage_exported: dict[str, float] = {}  # what this process has added to STAGE_CPU so far


def export_stage_times() -> None:
    """Add this process's stage CPU since the last call to STAGE_CPU (the engine's lease
    keeper calls it every few seconds, and once when it stops)."""
    with _stage_lock:
        for name, seconds in stagetime.totals().items():
            delta = seconds - _stage_exported.get(name, 0.0)
            if delta > 0:
                STAGE_CPU.labels(name).inc(delta)
                _stage_exported[name] = seconds


def _forget_exported_stages() -> None:
    global _stage_lock, _stage_exported
    _stage_lock, _stage_exported = threading.Lock(), {}


os.register_at_fork(after_in_child=_forget_exported_stages)  # a forked child counts from zero


def count_leases(leases: list) -> list:
    """A dispatch round's leases, counted on the way through."""
    LEASES_GRANTED.inc(len(leases))
    return leases


def session_published(sender=None, **_) -> None:
    """Celery's after_task_publish: a host session reached the broker."""
    if sender == "fetch.host_session":  # crawl.runners.SESSION_TASK (which imports this module)
        SESSIONS_SENT.inc()


# --- processes ---------------------------------------------------------------------------

def multiprocess_dir() -> str:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")


def process_started(role: str) -> None:
    """This process crawls (or dispatches): count it among the live processes. In a forked
    pool child, also let go of the parent's exporter socket (fork copied it, not the thread
    that serves it)."""
    _exporter.forget_in_child()
    PROCESSES.labels(role).set(1)


def process_stopped() -> None:
    """A process leaving: its live gauges go (its counters stay in the sums)."""
    if multiprocess_dir():
        mark_process_dead(os.getpid())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _pid_of(path: str) -> int | None:
    try:
        return int(os.path.basename(path)[:-len(".db")].rsplit("_", 1)[1])
    except (IndexError, ValueError):
        return None


def clear_if_orphaned(path: str) -> int:
    """Remove the files of a directory no other live process writes to (the machine's
    crawlerweb processes all stopped): the counters of a new run start at zero, as
    Prometheus expects after a restart, and files of dead processes do not pile up.
    Returns the files removed. Under a lock: two processes starting together wipe once."""
    with open(os.path.join(path, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        files = glob.glob(os.path.join(path, "*.db"))
        me = os.getpid()
        pids = {_pid_of(f) for f in files} - {me, None}
        if any(_alive(pid) for pid in pids):
            return 0
        stale = [f for f in files if _pid_of(f) != me]
        for f in stale:
            os.remove(f)
        return len(stale)


class _MachineCollector(MultiProcessCollector):
    """The directory's sums; live gauges of processes that died without saying so (a
    SIGKILLed pool child) are dropped first."""

    def collect(self):
        for f in glob.glob(os.path.join(self._path, "gauge_live*_*.db")):
            pid = _pid_of(f)
            if pid is not None and not _alive(pid):
                try:
                    mark_process_dead(pid, self._path)
                except FileNotFoundError:  # a concurrent scrape removed it first
                    pass
        return super().collect()


def machine_registry() -> CollectorRegistry:
    """What the exporter serves: every process of the machine, or this process alone."""
    path = multiprocess_dir()
    if not path:
        return REGISTRY
    registry = CollectorRegistry()
    _MachineCollector(registry, path)
    return registry


class _Exporter:
    """The machine's HTTP exporter, if this process gets the port."""

    def __init__(self):
        self.server = None
        self.pid = None
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def start(self, port: int, address: str) -> None:
        with self.lock:
            if self.pid == os.getpid():
                return
            self.pid, self.server = os.getpid(), None
            self.stop.clear()
        if multiprocess_dir():
            removed = clear_if_orphaned(multiprocess_dir())
            if removed:
                log.info("removed %d metric files of stopped processes", removed)
        threading.Thread(target=self._serve, args=(port, address), name="metrics-exporter", daemon=True).start()

    def _serve(self, port: int, address: str) -> None:
        registry = machine_registry()
        while not self.stop.is_set():
            try:
                self.server, _ = start_http_server(port, addr=address, registry=registry)
                log.info("serving Prometheus metrics on %s:%s", address, port)
                return
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    log.error("cannot serve Prometheus metrics on %s:%s: %s", address, port, exc)
                    return
                # Another process of this machine serves the directory; take over if it stops.
                log.info("metrics port %s:%s is taken; trying again in %s s", address, port,
                         EXPORTER_RETRY_SECONDS)
            self.stop.wait(EXPORTER_RETRY_SECONDS)

    def forget_in_child(self) -> None:
        if self.pid is not None and self.pid != os.getpid():
            if self.server is not None:
                self.server.socket.close()  # the child's copy: the parent keeps serving
            self.server, self.pid = None, None

    def shutdown(self) -> None:
        self.stop.set()
        if self.server is not None and self.pid == os.getpid():
            self.server.shutdown()
            self.server.server_close()
        self.server, self.pid = None, None


_exporter = _Exporter()


def serve_machine_metrics(port: int | None = None, address: str | None = None) -> bool:
    """Serve this machine's process metrics on CRAWLER_METRICS_PORT (0: off). Returns
    whether an exporter was started (it may still be waiting for the port)."""
    port = settings.CRAWLER_METRICS_PORT if port is None else port
    if not port:
        return False
    if multiprocess_dir() and values.ValueClass is values.MutexValue:
        # prometheus_client was imported before the directory was set: this process's
        # values live in its memory, and the exporter would serve only the files of others.
        log.warning("PROMETHEUS_MULTIPROC_DIR was set after prometheus_client was imported")
    _exporter.start(port, address or settings.CRAWLER_METRICS_ADDRESS)
    return True


def stop_serving() -> None:
    _exporter.shutdown()


def crawling_process(role: str) -> None:
    """A dispatcher or an embedded crawl starts: count it live and serve the machine's
    exporter if CRAWLER_METRICS_PORT asks for one."""
    process_started(role)
    serve_machine_metrics()
