"""run_server: start the sample web in a subprocess for tests and benchmarks.

Why a subprocess: the server must not share an event loop, a GIL or a
process with the crawler under test, and it must be killable cleanly.
"""
from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from .model import SampleWeb, WebConfig

REPO_ROOT = Path(__file__).resolve().parents[2]   # parent of the bench folder


def _wait_ready(proc: subprocess.Popen, timeout: float) -> dict:
    """Read the server's stdout until the `READY {json}` line (bounded)."""
    deadline = time.monotonic() + timeout
    buffer = b""
    fd = proc.stdout.fileno()
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"sample web not READY within {timeout} s")
            if not selector.select(remaining):
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                code = proc.wait(timeout=5)
                raise RuntimeError(f"sample web exited (rc={code}) before READY")
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if line.startswith(b"READY "):
                    return json.loads(line[6:])


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    if proc.stdout:
        proc.stdout.close()


@contextlib.contextmanager
def run_server(config: WebConfig | None = None, log_path=None, *,
               ready_timeout: float = 20.0):
    """Serve `config` (port 0 = pick a free port) until the block exits.

    Yields the SampleWeb (with the real port); web.log_path and
    web.server_pid are set.  On exit the server gets SIGTERM (flushes its
    log, exits 0) and is killed if it is still alive after 5 s.
    """
    config = config or WebConfig()
    cmd = [sys.executable, "-m", "bench.sampleweb", "serve", *config.to_argv(),
           "--exit-with-parent"]
    if log_path is not None:
        cmd += ["--log", os.fspath(log_path)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE)
    try:
        info = _wait_ready(proc, ready_timeout)
        web = SampleWeb(replace(config, port=info["port"]))
        web.log_path = log_path
        web.server_pid = proc.pid
        yield web
    finally:
        _stop(proc)
