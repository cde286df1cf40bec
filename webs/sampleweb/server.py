"""The sample web's HTTP server: the shared asyncio core (webs/httpserver.py, one socket
per host address, keep-alive, exact request timings) answering from the model.

Responses are built once from the model and cached (LRU by bytes); per request we only
look up, add the Date line and write.

Behaviour per host role: every host answers after `latency` (a real server takes time),
the slow host after slow_delay more; the flaky host answers the first request for each
path (except /robots.txt) with 429/503 + Retry-After.

Log line per request (see webs/httpserver.py for when start and end are taken):
    start \t end \t netloc \t method \t path \t status \t connection
(time.time(), 6 decimals; connection: a serial number per accepted TCP connection, so the
audit can count connections per host).  A request whose client disconnected during the
delay is logged with status 499.
"""
from __future__ import annotations

import asyncio
import json
import sys
import time
from collections import OrderedDict
from dataclasses import replace
from email.utils import formatdate

from .. import httpserver
from ..httpserver import RequestLog, raise_fd_limit, reserve_port, response_head
from .model import SampleWeb, WebConfig, host_address

_RETRY_BODY = {429: b"<!DOCTYPE html>\n<html><body>Too Many Requests</body></html>\n",
               503: b"<!DOCTYPE html>\n<html><body>Service Unavailable</body></html>\n"}


class Host(httpserver.Host):
    """Per-address state (flaky: the set of paths already answered once)."""
    __slots__ = ("flaky_seen",)

    def __init__(self, web: SampleWeb, index: int):
        super().__init__(index, web.hosts[index],
                         web.config.latency + (web.config.slow_delay if index == web.slow_index else 0.0))
        self.flaky_seen = set() if index == web.flaky_index else None


def _head(status: int, headers) -> bytes:
    return response_head(status, headers, "sampleweb")


class SampleServer(httpserver.HTTPServer):
    """The model, the response cache and the Date line; the rest is the shared core's."""

    def __init__(self, web: SampleWeb, log: RequestLog, cache_bytes: int = 256 << 20):
        super().__init__([Host(web, i) for i in range(len(web.hosts))], log)
        self.web = web
        self._cache: OrderedDict = OrderedDict()
        self._cache_size = 0
        self._cache_limit = cache_bytes
        self._date_second = -1
        self._date = b""

    def date(self) -> bytes:
        now = int(time.time())
        if now != self._date_second:
            self._date_second = now
            self._date = f"Date: {formatdate(now, usegmt=True)}\r\n".encode("ascii")
        return self._date

    def head(self, status: int, headers) -> bytes:
        return _head(status, headers) + self.date()

    def answer(self, host: Host, method, path: str, headers):
        """(status, head without Connection, body, no log fields) for a GET/HEAD."""
        flaky = False
        if host.flaky_seen is not None and path != "/robots.txt" and path not in host.flaky_seen:
            host.flaky_seen.add(path)
            flaky = True
        key = (host.index, path, flaky)
        entry = self._cache.get(key)
        if entry is not None:
            self._cache.move_to_end(key)
        else:
            entry = self._build(host, path, flaky)
            self._cache[key] = entry
            self._cache_size += len(entry[2])
            while self._cache_size > self._cache_limit and len(self._cache) > 1:
                _, old = self._cache.popitem(last=False)
                self._cache_size -= len(old[2])
        return entry[0], entry[1] + self.date(), entry[2], ()

    def _build(self, host: Host, path: str, flaky: bool):
        if flaky:
            status = self.web.flaky_status(path)
            body = _RETRY_BODY[status]
            headers = [("Content-Type", "text/html; charset=utf-8"),
                       ("Retry-After", str(self.web.config.retry_after))]
        else:
            page = self.web.page_at(host.netloc, path)
            status, body = page.status, self.web.body(page)
            headers = [("Content-Type", page.content_type)]
            if page.location:
                headers.append(("Location", page.location))
        headers.append(("Content-Length", str(len(body))))
        return status, _head(status, headers), body


async def serve(config: WebConfig, log_path=None, exit_with_parent: bool = False,
                out=None) -> int:
    """Bind every host, print `READY {json}`, serve until SIGTERM/SIGINT."""
    raise_fd_limit()
    first_sock = None
    if config.port == 0:                      # pick a free port on host 0
        first_sock = reserve_port(host_address(0))
        config = replace(config, port=first_sock.getsockname()[1])
    web = SampleWeb(config)
    server = SampleServer(web, RequestLog(log_path))
    out = out or sys.stdout

    def ready():
        out.write("READY " + json.dumps({"port": config.port, "hosts": web.hosts,
                                         "seeds": web.seeds}) + "\n")
        out.flush()

    return await server.serve_until_stopped([host_address(i) for i in range(len(web.hosts))], config.port,
                                            first_sock, exit_with_parent, ready)


def run(config: WebConfig, log_path=None, exit_with_parent: bool = False) -> int:
    return asyncio.run(serve(config, log_path, exit_with_parent))
