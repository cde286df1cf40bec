"""run_server: start the sample web in a subprocess for tests and benchmarks
(webs/httpserver.py's `serving`)."""
from __future__ import annotations

import contextlib
from dataclasses import replace

from ..httpserver import serving
from .model import SampleWeb, WebConfig


@contextlib.contextmanager
def run_server(config: WebConfig | None = None, log_path=None, *,
               ready_timeout: float = 20.0):
    """Serve `config` (port 0 = pick a free port) until the block exits.

    Yields the SampleWeb (with the real port); web.log_path and
    web.server_pid are set.  On exit the server gets SIGTERM (flushes its
    log, exits 0) and is killed if it is still alive after 5 s.
    """
    config = config or WebConfig()
    argv = config.to_argv() + (["--log", str(log_path)] if log_path is not None else [])
    with serving("webs.sampleweb", argv, ready_timeout=ready_timeout) as (proc, ready):
        web = SampleWeb(replace(config, port=ready["port"]))
        web.log_path = log_path
        web.server_pid = proc.pid
        yield web
