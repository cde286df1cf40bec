"""The changing web's HTTP server: the shared asyncio core (webs/httpserver.py, one socket
per host address, keep-alive, exact request timings) answering from the model.

What differs from the sample web: every answer is computed at the moment it is written
(the live version depends on the clock), conditional request headers are read, and noise
pages get a fresh token per response.

Log line per request (see webs/httpserver.py for when start and end are taken):
    start \t end \t netloc \t method \t path \t status \t connection \t version
(time.time(), 6 decimals; connection: a serial number per accepted TCP connection;
version: the page version served or confirmed by a 304, -1 for anything else).  A request
whose client disconnected during the latency delay is logged with status 499.

The info file (JSON: config, epoch, hosts, pid) is written atomically once every socket
is bound: a benchmark reads it to compute the truth (truth.Truth(config, epoch)).
"""
from __future__ import annotations

import asyncio
import json
import os
import secrets
import sys
import time
from dataclasses import asdict, replace
from email.utils import formatdate

from .. import httpserver
from ..httpserver import RequestLog, reserve_port, response_head
from .model import ChangeConfig, ChangeWeb, host_address


class ChangeServer(httpserver.HTTPServer):
    """The model and the epoch; the rest is the shared core's.  Every answer is computed
    when it is written, from the request headers (conditional requests) and the clock."""
    want_headers = True
    no_log_fields = (-1,)                    # version: none served

    def __init__(self, web: ChangeWeb, epoch: float, log: RequestLog):
        super().__init__([httpserver.Host(i, web.hosts[i], web.config.latency)
                          for i in range(web.config.hosts)], log)
        self.web = web
        self.epoch = epoch

    def head(self, status: int, headers) -> bytes:
        return response_head(status, (("Date", formatdate(usegmt=True)), *headers), "changeweb")

    def answer(self, host: httpserver.Host, method: str, path: str, headers):
        response = self.web.respond(host.index, path, headers, time.time(), self.epoch, secrets.token_hex(16))
        return response.status, self.head(response.status, response.headers), response.body, (response.version,)


def write_info(path, config: ChangeConfig, epoch: float, hosts: list[str]) -> None:
    """Write the info JSON atomically (rename), so a reader never sees half of it."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as file:
        json.dump({"config": asdict(config), "epoch": epoch, "hosts": hosts, "pid": os.getpid()}, file)
    os.replace(tmp, path)


def read_info(path) -> tuple[ChangeConfig, float]:
    """(config, epoch) of a running or finished server, from its info file."""
    with open(path, encoding="utf-8") as file:
        info = json.load(file)
    return ChangeConfig(**info["config"]), float(info["epoch"])


async def serve(config: ChangeConfig, log_path=None, info_path=None, epoch: float | None = None,
                exit_with_parent: bool = False) -> int:
    """Bind every host, write the info file, print `READY {json}`, serve until SIGTERM/SIGINT.
    port 0 picks a free port (bound on host 0 first, then used for every host)."""
    first_sock = None
    if config.port == 0:
        first_sock = reserve_port(host_address(0))
        config = replace(config, port=first_sock.getsockname()[1])
    web = ChangeWeb(config)
    server = ChangeServer(web, time.time() if epoch is None else epoch, RequestLog(log_path))

    def ready():
        if info_path:
            write_info(info_path, config, server.epoch, web.hosts)
        sys.stdout.write("READY " + json.dumps({"port": config.port, "epoch": server.epoch,
                                                "hosts": web.hosts}) + "\n")
        sys.stdout.flush()

    return await server.serve_until_stopped([host_address(i) for i in range(config.hosts)], config.port,
                                            first_sock, exit_with_parent, ready)


def run(config: ChangeConfig, log_path=None, info_path=None, epoch: float | None = None,
        exit_with_parent: bool = False) -> int:
    return asyncio.run(serve(config, log_path, info_path, epoch, exit_with_parent))
