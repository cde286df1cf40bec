"""asyncio HTTP/1.1 server for the sample web: one socket per host address.

Why hand-written on asyncio.Protocol: a benchmark server must serve
thousands of pages per second on one core with nothing but the standard
library, support keep-alive, and log exact request timings for the
politeness audit.  Responses are built once from the model and cached
(LRU by bytes); per request we only look up, concatenate and write.

Behaviour per host role: every host answers after `latency` (a real server
takes time), the slow host after slow_delay more (loop.call_later, nothing
else blocks); the flaky host answers the first request for each path (except
/robots.txt) with 429/503 + Retry-After.  Requests on one connection are
answered in order.

Log line per request, written when the response is handed to the transport:
    start \t end \t netloc \t method \t path \t status \t connection
(time.time(), 6 decimals; connection: a serial number per accepted TCP
connection, so the audit can count connections per host).  start = request
fully read, end = when the (delayed) response is written.  A request whose client
disconnected during the delay is logged with status 499.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import os
import resource
import signal
import socket
import sys
import time
from collections import OrderedDict, deque
from dataclasses import replace
from email.utils import formatdate
from functools import partial
from http import HTTPStatus
from urllib.parse import urlsplit

from .model import SampleWeb, WebConfig, host_address

_MAX_HEAD = 64 * 1024
_REASONS = {status.value: status.phrase for status in HTTPStatus}
_KEEP = b"Connection: keep-alive\r\n\r\n"
_CLOSE = b"Connection: close\r\n\r\n"
_RETRY_BODY = {429: b"<!DOCTYPE html>\n<html><body>Too Many Requests</body></html>\n",
               503: b"<!DOCTYPE html>\n<html><body>Service Unavailable</body></html>\n"}


class RequestLog:
    """Buffered request log; flushed every 0.1 s by the server and on exit."""

    def __init__(self, path):
        self._file = open(path, "w", encoding="utf-8") if path else None
        self._lines: list[str] = []

    def add(self, start, end, netloc, method, path, status, connection=0):
        if self._file is not None:
            if "\t" in path or "\n" in path or "\r" in path:
                path = path.replace("\t", "%09").replace("\n", "%0A").replace("\r", "%0D")
            self._lines.append(f"{start:.6f}\t{end:.6f}\t{netloc}\t{method}\t{path}\t{status}\t{connection}\n")

    def flush(self):
        if self._file is not None and self._lines:
            self._file.write("".join(self._lines))
            self._lines.clear()
            self._file.flush()

    def close(self):
        self.flush()
        if self._file is not None:
            self._file.close()
            self._file = None


class Host:
    """Per-address state (flaky: the set of paths already answered once)."""
    __slots__ = ("index", "netloc", "delay", "flaky_seen")

    def __init__(self, web: SampleWeb, index: int):
        self.index = index
        self.netloc = web.hosts[index]
        self.delay = web.config.latency + (web.config.slow_delay if index == web.slow_index else 0.0)
        self.flaky_seen = set() if index == web.flaky_index else None


def _head(status: int, headers) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}\r\nServer: sampleweb\r\n"]
    lines += [f"{name}: {value}\r\n" for name, value in headers]
    return "".join(lines).encode("latin-1")


class SampleServer:
    """Shared state: the model, response cache, log and open connections."""

    def __init__(self, web: SampleWeb, log: RequestLog, cache_bytes: int = 256 << 20):
        self.web = web
        self.log = log
        self.hosts = [Host(web, i) for i in range(len(web.hosts))]
        self.connections: set = set()
        self.connection_serial = itertools.count(1)
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

    def response(self, host: Host, path: str):
        """(status, head bytes without Date/Connection, body) for a GET/HEAD."""
        flaky = False
        if host.flaky_seen is not None and path != "/robots.txt" and path not in host.flaky_seen:
            host.flaky_seen.add(path)
            flaky = True
        key = (host.index, path, flaky)
        entry = self._cache.get(key)
        if entry is not None:
            self._cache.move_to_end(key)
            return entry
        entry = self._build(host, path, flaky)
        self._cache[key] = entry
        self._cache_size += len(entry[2])
        while self._cache_size > self._cache_limit and len(self._cache) > 1:
            _, old = self._cache.popitem(last=False)
            self._cache_size -= len(old[2])
        return entry

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


def _parse_head(head: bytes):
    """-> (method, path, keep_alive, content_length) or None if malformed."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return None
    method, target, version = parts
    keep = version != "HTTP/1.0"
    length = 0
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            return None
        name = name.strip().lower()
        if name == "connection":
            tokens = {t.strip().lower() for t in value.split(",")}
            if "close" in tokens:
                keep = False
            elif "keep-alive" in tokens:
                keep = True
        elif name == "content-length":
            try:
                length = int(value)
            except ValueError:
                return None
        elif name == "transfer-encoding":
            return None                      # request bodies are not supported
    if target.startswith(("http://", "https://")):
        split = urlsplit(target)
        target = (split.path or "/") + (f"?{split.query}" if split.query else "")
    return method, target.split("#", 1)[0], keep, length


class HTTPProtocol(asyncio.Protocol):
    """One client connection to one host address."""

    def __init__(self, server: SampleServer, host: Host):
        self.server = server
        self.host = host
        self.serial = next(server.connection_serial)
        self.transport = None
        self.buffer = b""
        self.pending: deque = deque()
        self.busy = self.paused = self.closed = self.no_more = False

    def connection_made(self, transport):
        self.transport = transport
        self.server.connections.add(self)

    def connection_lost(self, exc):
        self.closed = True
        self.server.connections.discard(self)

    def pause_writing(self):
        self.paused = True

    def resume_writing(self):
        self.paused = False
        self._pump()

    def data_received(self, data):
        if self.no_more:
            return
        buffer = (self.buffer + data).lstrip(b"\r\n") if self.buffer else data.lstrip(b"\r\n")
        while buffer:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(buffer) > _MAX_HEAD:
                    self._queue_bad()
                    buffer = b""
                break
            request = _parse_head(buffer[:end])
            if request is None:
                self._queue_bad()
                buffer = b""
                break
            method, path, keep, length = request
            rest = buffer[end + 4:]
            if len(rest) < length:
                break                        # wait for the request body
            buffer = rest[length:].lstrip(b"\r\n")
            self.pending.append((time.time(), method, path, keep))
            if not keep:
                self.no_more = True
                buffer = b""
                break
        self.buffer = buffer
        self._pump()

    def _queue_bad(self):
        self.pending.append((time.time(), "-", "-", False))
        self.no_more = True

    def _pump(self):
        while self.pending and not (self.busy or self.paused or self.closed):
            request = self.pending.popleft()
            if self.host.delay > 0:
                self.busy = True
                asyncio.get_running_loop().call_later(self.host.delay, self._delayed, request)
                return
            self._respond(request)

    def _delayed(self, request):
        self.busy = False
        if self.closed:
            start, method, path, _ = request
            self.server.log.add(start, time.time(), self.host.netloc, method, path, 499, self.serial)
            return
        self._respond(request)
        self._pump()

    def _respond(self, request):
        start, method, path, keep = request
        server = self.server
        if method == "-":
            status, head, body = 400, _head(400, [("Content-Length", "0")]), b""
        elif method not in ("GET", "HEAD"):
            status, body = 405, b""
            head = _head(405, [("Allow", "GET, HEAD"), ("Content-Length", "0")])
        else:
            status, head, body = server.response(self.host, path)
        data = head + server.date() + (_KEEP if keep else _CLOSE)
        if method != "HEAD":
            data += body
        # The end is stamped as the response is handed to the kernel (write() sends it at
        # once: pages fit the socket buffer). A stamp taken after write() lagged by up to a
        # scheduler time slice when the machine was saturated: 8 of 20,519 requests of a
        # distributed crawl looked 5-31 ms early although the crawler had waited out the
        # delay from the moment it had read the whole response.
        end = time.time()
        self.transport.write(data)
        server.log.add(start, end, self.host.netloc, method, path, status, self.serial)
        if not keep:
            self.closed = True
            self.pending.clear()
            self.transport.close()


def _raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


async def serve(config: WebConfig, log_path=None, exit_with_parent: bool = False,
                out=None) -> int:
    """Bind every host, print `READY {json}`, serve until SIGTERM/SIGINT."""
    loop = asyncio.get_running_loop()
    _raise_fd_limit()
    first_sock = None
    if config.port == 0:                      # pick a free port on host 0
        first_sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        first_sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        first_sock.bind((host_address(0), 0))
        config = replace(config, port=first_sock.getsockname()[1])
    web = SampleWeb(config)
    log = RequestLog(log_path)
    server = SampleServer(web, log)
    listeners = []
    for host in server.hosts:
        factory = partial(HTTPProtocol, server, host)
        if host.index == 0 and first_sock is not None:
            listener = await loop.create_server(factory, sock=first_sock, backlog=1024)
        else:
            listener = await loop.create_server(factory, host=host_address(host.index),
                                                port=config.port, reuse_address=True,
                                                backlog=1024)
        listeners.append(listener)

    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    parent = os.getppid()

    async def housekeeping():
        ticks = 0
        while True:
            await asyncio.sleep(0.1)
            log.flush()
            ticks += 1
            if exit_with_parent and ticks % 10 == 0 and os.getppid() != parent:
                stop.set()

    out = out or sys.stdout
    out.write("READY " + json.dumps({"port": config.port, "hosts": web.hosts,
                                     "seeds": web.seeds}) + "\n")
    out.flush()
    keeper = asyncio.ensure_future(housekeeping())
    try:
        await stop.wait()
    finally:
        keeper.cancel()
        for listener in listeners:
            listener.close()
        for connection in list(server.connections):
            if connection.transport is not None:
                connection.transport.abort()
        log.close()
    return 0


def run(config: WebConfig, log_path=None, exit_with_parent: bool = False) -> int:
    return asyncio.run(serve(config, log_path, exit_with_parent))
