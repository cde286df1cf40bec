"""The asyncio HTTP/1.1 server core shared by the loopback test webs (sampleweb, changeweb).

Why hand-written on asyncio.Protocol: a benchmark server must serve thousands of requests
per second on one core with nothing but the standard library, support keep-alive, and log
exact request timings for the politeness audit.  A web plugs in by subclassing HTTPServer:
answer() computes the response to a GET or HEAD, head() formats the head of the 400/405
answers given here; everything else is this module's.

What it guarantees:
- HTTP/1.1 keep-alive: a connection stays open until the client sends `Connection: close`
  (HTTP/1.0: unless it sends `Connection: keep-alive`), a request is malformed, or the
  client closes it.  Every response carries `Connection: keep-alive` or `Connection: close`.
- Requests on one connection are answered in order, one at a time: pipelined requests
  queue, and the next one is started only when the previous response has been written.
- Every response to a request waits its host's `delay` first (loop.call_later, nothing
  else blocks); a request whose client disconnected during the delay gets no answer and
  is logged with status 499.
- A bounded head: a request head (request line and header fields) larger than MAX_HEAD
  bytes, a malformed one, or one with Transfer-Encoding is answered 400 and the connection
  closed.  Methods other than GET and HEAD are answered 405 (Allow: GET, HEAD).  A request
  body announced by Content-Length is read and ignored.  A HEAD response is the GET head
  without the body.
- One listening socket per host address, all on one port (port 0: reserve_port() binds a
  free port on the first address, then every host uses it).
- Exact per-request log timing: start = when the request was fully read, end = when the
  response is handed to the transport (the write sends it at once: pages fit the socket
  buffer).  The log is buffered and flushed every 0.1 s and on exit.

Log line per request (time.time(), 6 decimals; connection: a serial number per accepted
TCP connection, so an audit can count connections per host):
    start \t end \t netloc \t method \t path \t status \t connection [\t field ...]
where the fields are the ones answer() returns (none, for the sample web).  A malformed
request is logged with method and path "-".
"""
from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import resource
import selectors
import signal
import socket
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections import deque
from functools import partial
from http import HTTPStatus
from pathlib import Path
from urllib.parse import urlsplit

MAX_HEAD = 64 * 1024
REASONS = {status.value: status.phrase for status in HTTPStatus}
KEEP = b"Connection: keep-alive\r\n\r\n"
CLOSE = b"Connection: close\r\n\r\n"
BAD_REQUEST_HEADERS = (("Content-Length", "0"),)
NOT_ALLOWED_HEADERS = (("Allow", "GET, HEAD"), ("Content-Length", "0"))


def response_head(status: int, headers, server_name: str) -> bytes:
    """Status line, `Server: server_name`, then the (name, value) pairs; latin-1, without
    the Connection field and the blank line (the core adds them)."""
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Unknown')}\r\nServer: {server_name}\r\n"]
    lines += [f"{name}: {value}\r\n" for name, value in headers]
    return "".join(lines).encode("latin-1")


class RequestLog:
    """Buffered request log (format: module docstring); flushed every 0.1 s by the server
    and on exit.  No path: nothing is logged."""

    def __init__(self, path):
        self._file = open(path, "w", encoding="utf-8") if path else None
        self._lines: list[str] = []

    def add(self, start, end, netloc, method, path, status, connection=0, fields=()):
        if self._file is not None:
            if "\t" in path or "\n" in path or "\r" in path:
                path = path.replace("\t", "%09").replace("\n", "%0A").replace("\r", "%0D")
            if fields:
                self._lines.append(f"{start:.6f}\t{end:.6f}\t{netloc}\t{method}\t{path}\t{status}\t{connection}"
                                   + "".join(f"\t{field}" for field in fields) + "\n")
            else:
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
    """One host address: its index, netloc ("address:port") and the delay before every
    response.  A web may subclass it to keep per-host state."""
    __slots__ = ("index", "netloc", "delay")

    def __init__(self, index: int, netloc: str, delay: float = 0.0):
        self.index = index
        self.netloc = netloc
        self.delay = delay


def parse_head(head: bytes, want_headers: bool = False):
    """-> (method, path, keep_alive, content_length, headers) or None if malformed.
    `headers` (only with want_headers, else None) maps lower-case names to stripped values,
    repeated fields joined with ", ".  An absolute target is cut to path and query; a
    fragment is dropped."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return None
    method, target, version = parts
    keep = version != "HTTP/1.0"
    length = 0
    headers: dict[str, str] | None = {} if want_headers else None
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            return None
        name = name.strip().lower()
        if headers is not None:
            value = value.strip()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
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
    return method, target.split("#", 1)[0], keep, length, headers


class HTTPServer(ABC):
    """Shared state (hosts, log, open connections) and the plug-in points of a web.

    Subclasses define answer() and head(), and may set:
    want_headers: pass the parsed request headers to answer() (else it gets None);
    no_log_fields: the extra log fields of a line without an answer of the web's own
    (400, 405, 499)."""
    want_headers = False
    no_log_fields: tuple = ()

    def __init__(self, hosts: list[Host], log: RequestLog):
        self.hosts = hosts
        self.log = log
        self.connections: set = set()
        self.connection_serial = itertools.count(1)

    @abstractmethod
    def answer(self, host: Host, method: str, path: str, headers) -> tuple[int, bytes, bytes, tuple]:
        """(status, head, body, extra log fields) for a GET or HEAD of `path` (the body is
        dropped for a HEAD).  head: status line and header fields, without Connection and
        the blank line; it must carry Content-Length."""

    @abstractmethod
    def head(self, status: int, headers) -> bytes:
        """The head (as in answer()) of a response with this status and these (name, value)
        header pairs, for the 400 and 405 answers."""

    def refusal(self, method: str) -> tuple[int, bytes, bytes, tuple]:
        """The answer to a malformed request (method "-": 400) or another method (405)."""
        if method == "-":
            return 400, self.head(400, BAD_REQUEST_HEADERS), b"", self.no_log_fields
        return 405, self.head(405, NOT_ALLOWED_HEADERS), b"", self.no_log_fields

    async def listen(self, addresses, port: int, sock: socket.socket | None = None) -> list:
        """Start one listener per host: self.hosts[i] on (addresses[i], port); `sock`, when
        given, is host 0's socket, already bound (see reserve_port)."""
        loop = asyncio.get_running_loop()
        listeners = []
        for host, address in zip(self.hosts, addresses, strict=True):
            factory = partial(HTTPProtocol, self, host)
            if host is self.hosts[0] and sock is not None:
                listener = await loop.create_server(factory, sock=sock, backlog=1024)
            else:
                listener = await loop.create_server(factory, host=address, port=port,
                                                    reuse_address=True, backlog=1024)
            listeners.append(listener)
        return listeners

    async def serve_until_stopped(self, addresses, port: int, sock: socket.socket | None = None,
                                  exit_with_parent: bool = False, ready=None) -> int:
        """listen(), then call ready() (e.g. print READY) and serve until SIGTERM/SIGINT, or
        until the parent process is gone (checked every second) with exit_with_parent.
        On the way out: close the listeners, abort open connections, close the log."""
        loop = asyncio.get_running_loop()
        listeners = await self.listen(addresses, port, sock)
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        parent = os.getppid()

        async def housekeeping():
            ticks = 0
            while True:
                await asyncio.sleep(0.1)
                self.log.flush()
                ticks += 1
                if exit_with_parent and ticks % 10 == 0 and os.getppid() != parent:
                    stop.set()

        if ready is not None:
            ready()
        keeper = asyncio.ensure_future(housekeeping())
        try:
            await stop.wait()
        finally:
            keeper.cancel()
            for listener in listeners:
                listener.close()
            for connection in list(self.connections):
                if connection.transport is not None:
                    connection.transport.abort()
            self.log.close()
        return 0


def reserve_port(address: str) -> socket.socket:
    """A socket bound to a free port on `address` (not listening yet): port 0 picks the
    port here, so the web can be built with the real one before serving."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((address, 0))
    return sock


def raise_fd_limit() -> None:
    """Raise the soft limit on open files to the hard one (a crawl opens many connections)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


class HTTPProtocol(asyncio.Protocol):
    """One client connection to one host address; requests are answered in order."""

    def __init__(self, server: HTTPServer, host: Host):
        self.server = server
        self.host = host
        self.answer = server.answer
        self.want_headers = server.want_headers
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
                if len(buffer) > MAX_HEAD:
                    self._queue_bad()
                    buffer = b""
                break
            request = parse_head(buffer[:end], self.want_headers) if end <= MAX_HEAD else None
            if request is None:
                self._queue_bad()
                buffer = b""
                break
            method, path, keep, length, headers = request
            rest = buffer[end + 4:]
            if len(rest) < length:
                break                        # wait for the request body
            buffer = rest[length:].lstrip(b"\r\n")
            self.pending.append((time.time(), method, path, keep, headers))
            if not keep:
                self.no_more = True
                buffer = b""
                break
        self.buffer = buffer
        self._pump()

    def _queue_bad(self):
        self.pending.append((time.time(), "-", "-", False, None))
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
            start, method, path, _, _ = request
            self.server.log.add(start, time.time(), self.host.netloc, method, path, 499, self.serial,
                                self.server.no_log_fields)
            return
        self._respond(request)
        self._pump()

    def _respond(self, request):
        start, method, path, keep, headers = request
        if method == "GET" or method == "HEAD":
            status, head, body, fields = self.answer(self.host, method, path, headers)
        else:
            status, head, body, fields = self.server.refusal(method)
        data = head + (KEEP if keep else CLOSE)
        if method != "HEAD":
            data += body
        # The end is stamped as the response is handed to the kernel (write() sends it at
        # once: pages fit the socket buffer). A stamp taken after write() lagged by up to a
        # scheduler time slice when the machine was saturated: 8 of 20,519 requests of a
        # distributed crawl looked 5-31 ms early although the crawler had waited out the
        # delay from the moment it had read the whole response.
        end = time.time()
        self.transport.write(data)
        self.server.log.add(start, end, self.host.netloc, method, path, status, self.serial, fields)
        if not keep:
            self.closed = True
            self.pending.clear()
            self.transport.close()


# --- running a web in a subprocess (tests and benchmarks) ---------------------------------
# A subprocess: the server must not share an event loop, a GIL or a process with the
# crawler under test, and it must be killable cleanly.

REPO_ROOT = Path(__file__).resolve().parent.parent


def _wait_ready(proc: subprocess.Popen, timeout: float, what: str) -> dict:
    """Read the server's stdout until its `READY {json}` line (bounded)."""
    deadline = time.monotonic() + timeout
    buffer = b""
    fd = proc.stdout.fileno()
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{what} not READY within {timeout} s")
            if not selector.select(remaining):
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                code = proc.wait(timeout=5)
                raise RuntimeError(f"{what} exited (rc={code}) before READY")
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if line.startswith(b"READY "):
                    return json.loads(line[6:])


def stop_process(proc: subprocess.Popen, timeout: float = 5.0) -> None:
    """SIGTERM (a web flushes its log and exits 0), then SIGKILL after `timeout` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)
    if proc.stdout:
        proc.stdout.close()


@contextlib.contextmanager
def serving(module: str, argv: list[str], *, ready_timeout: float = 20.0):
    """Run `python -m <module> serve ARGV --exit-with-parent` until the block exits; yields
    (process, the READY line's JSON). On exit the server is stopped with stop_process()."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen([sys.executable, "-m", module, "serve", *argv, "--exit-with-parent"], cwd=REPO_ROOT,
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    try:
        yield proc, _wait_ready(proc, ready_timeout, module)
    finally:
        stop_process(proc)
