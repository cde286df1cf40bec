"""Start and stop a local distributed crawler: N Celery worker processes and M dispatcher
processes, all reading one environment (DATABASE_URL, CELERY_BROKER_URL, CRAWLER_*).

Used by the distributed tests and by `make demo-distributed`; CPU time per process is read
from /proc just before each process is stopped.
"""

import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .procstat import tree_cpu_seconds, tree_peak_rss_mb

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Cluster:
    env: dict = field(default_factory=dict)
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    commands: dict[str, list[str]] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)  # filled in when stopped
    peak_rss: dict[str, float] = field(default_factory=dict)  # MB, filled in when stopped
    stderr: dict = field(default_factory=dict)  # name -> file holding what it wrote to stderr

    def start(self, name: str, argv: list[str] | None = None) -> subprocess.Popen:
        """Start (or, after it died, start again) the named process."""
        argv = self.commands.setdefault(name, argv)
        # stderr goes to a file, not a pipe: nobody reads a pipe while the crawl runs, and a
        # full one would block a process that logs a lot (a traceback per failing host).
        self.stderr[name] = tempfile.TemporaryFile()
        self.procs[name] = subprocess.Popen(argv, cwd=ROOT, env=self.env, stdout=subprocess.DEVNULL,
                                            stderr=self.stderr[name])
        return self.procs[name]

    def stderr_tail(self, name: str, size: int = 8000) -> str:
        handle = self.stderr[name]
        handle.seek(0, 2)
        handle.seek(max(0, handle.tell() - size))
        return handle.read().decode(errors="replace")

    def kill(self, name: str) -> None:
        """SIGKILL, the way a machine dies: no cleanup, no goodbye."""
        self.procs[name].send_signal(signal.SIGKILL)
        self.procs[name].wait(timeout=10)

    def check_alive(self, allow_killed: bool = True) -> None:
        for name, proc in self.procs.items():
            code = proc.poll()
            if code is not None and not (allow_killed and code == -signal.SIGKILL):
                raise RuntimeError(f"{name} exited with {code}: {self.stderr_tail(name)}")


def worker_name(i: int) -> str:
    return f"w{i}"


@contextmanager
def run_cluster(env: dict, workers: int = 2, dispatchers: int = 2, concurrency: int | None = 1):
    """N worker processes of `concurrency` prefork children each (a session engine per
    child; None: the worker's default, one per core) and M dispatchers."""
    cluster = Cluster(env=env)
    pool = ["--concurrency", str(concurrency)] if concurrency else []
    for i in range(workers):
        cluster.start(f"worker{i}", [
            sys.executable, "-m", "celery", "-A", "crawlerweb", "worker", "-n", f"{worker_name(i)}@%h",
            *pool, "--loglevel", "WARNING", "--without-gossip", "--without-mingle"])
    for i in range(dispatchers):
        cluster.start(f"dispatcher{i}", [sys.executable, "manage.py", "dispatch", "--name", f"d{i}"])
    try:
        yield cluster
    finally:
        for name, proc in cluster.procs.items():
            cluster.cpu[name] = tree_cpu_seconds(proc.pid)  # a worker with its pool children
            cluster.peak_rss[name] = tree_peak_rss_mb(proc.pid)
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in cluster.procs.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_for_workers(app, names: list[str], timeout: float = 30.0) -> None:
    """Block until every named Celery worker answers a broadcast ping (it is consuming)."""
    deadline = time.monotonic() + timeout
    wanted = set(names)
    while time.monotonic() < deadline:
        replies = app.control.ping(timeout=0.5) or []
        answered = {name.split("@")[0] for reply in replies for name in reply}
        if wanted <= answered:
            return
    raise TimeoutError(f"workers {sorted(wanted)} did not answer a ping within {timeout} s")


def wait_until_done(has_pending_work, cluster: Cluster, timeout: float, on_progress=None,
                    settle: float = 1.0, poll: float = 0.1, allow_killed: bool = True) -> float:
    """Poll until no URL waits and no lease is open for `settle` seconds; returns the time
    the crawl went quiet (monotonic). Raises on timeout or on a crashed process (or, with
    allow_killed=False, on any process that died). The state lives in the database, so
    polling it every `poll` seconds is the wait."""
    deadline = time.monotonic() + timeout
    quiet_since = None
    while time.monotonic() < deadline:
        cluster.check_alive(allow_killed)
        if on_progress:
            on_progress()
        if has_pending_work():
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > settle:
            return quiet_since
        time.sleep(poll)
    raise TimeoutError(f"crawl did not finish within {timeout} s")
