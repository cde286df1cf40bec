"""The loopback Geminispace's server: one TLS listener per capsule on asyncio, answering
from the model (model.py), with a request log for the politeness audit (audit.py).

The protocol (gemini://geminiprotocol.net/docs/protocol-specification.gmi): the client
opens TLS (1.2 or later; SNI accepted, never required: every capsule has its own address
and certificate), sends `<absolute URL>\\r\\n` (at most 1024 bytes), and the server answers
`<two-digit status> <meta>\\r\\n`, then the body (2x only), then closes the connection.
Requests the server refuses: over 1024 bytes, a line ending in LF without CR, bytes that
are not UTF-8, a URL that is not absolute or carries userinfo or a fragment: 59; another
scheme, host or port: 53 (no proxying). A path the capsule does not have: 51.

Certificates: a self-signed ECDSA P-256 certificate per capsule made at start with
`cryptography` (subject and IP SAN = the capsule's address, valid from an hour ago for
certificate_days), written to a temporary folder removed at stop. No session tickets: every
connection makes a full handshake and sees the capsule's current certificate, so
replace_certificate() (run in the loop's thread) is seen by the next connection.

Bounds: a request must arrive within REQUEST_SECONDS of the accept, a TLS handshake within
HANDSHAKE_SECONDS; every write waits at most WRITE_SECONDS for the client to read; the
hostile answers last at most hostile_seconds; the TLS close waits SHUTDOWN_SECONDS for the
peer's close_notify. stop() aborts every open connection and cancels every handler: it
returns in a few milliseconds.

Log line per connection (tab-separated, times with 6 decimals; see audit.py):
    start_wall end_wall start_mono end_mono capsule client sni status meta request
start: when the TCP connection was accepted (before the handshake); end: when the answer
was handed to the kernel, just before the close (or when the client left). status: the
header's first field as sent ("20", "44", or a hostile one: "2", "xx"), "-" for no header
(no request, an empty answer, the tarpit). meta: the header's rest (a note for hostile
answers); request: the line as received ("-" if none); sni: the server name the client
sent ("-" if none). Tabs, CR and LF in fields are written %09, %0D, %0A.
"""
from __future__ import annotations

import asyncio
import datetime
import hashlib
import ipaddress
import os
import shutil
import socket
import ssl
import tempfile
import time
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from .model import DEFAULT_PORT, GeminiSpace, SpaceConfig, capsule_address

MAX_REQUEST = 1024
REQUEST_SECONDS = 10.0
HANDSHAKE_SECONDS = 10.0
WRITE_SECONDS = 10.0
SHUTDOWN_SECONDS = 2.0
CHUNK = 16 * 1024


def _clean(value: str, limit: int) -> str:
    value = value[:limit]
    if "\t" in value or "\n" in value or "\r" in value:
        value = value.replace("\t", "%09").replace("\r", "%0D").replace("\n", "%0A")
    return value or "-"


class RequestLog:
    """Buffered log lines (module docstring), flushed every 0.1 s and at stop."""

    def __init__(self, path):
        self.path = path
        self._file = open(path, "w", encoding="utf-8")
        self._lines: list[str] = []

    def add(self, start, end, capsule, client, sni, status, meta, request):
        self._lines.append(f"{start[0]:.6f}\t{end[0]:.6f}\t{start[1]:.6f}\t{end[1]:.6f}\t{capsule}\t{client}\t"
                           f"{_clean(sni or '', 255)}\t{_clean(status, 16)}\t{_clean(meta, 200)}\t"
                           f"{_clean(request, 1100)}\n")

    def flush(self):
        if self._lines and self._file is not None:
            self._file.write("".join(self._lines))
            self._lines.clear()
            self._file.flush()

    def close(self):
        self.flush()
        if self._file is not None:
            self._file.close()
            self._file = None


def _now() -> tuple[float, float]:
    return time.time(), time.monotonic()


class Certificate:
    """One capsule's key and self-signed certificate, and their files."""

    def __init__(self, address: str, days: int, folder: str, name: str, key=None):
        self.key = key or ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, address)])
        now = datetime.datetime.now(datetime.timezone.utc)
        self.not_after = now + datetime.timedelta(days=days)
        cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(self.not_after)
                .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(address))]),
                               critical=False)
                .sign(self.key, hashes.SHA256()))
        self.der = cert.public_bytes(serialization.Encoding.DER)
        self.pem = cert.public_bytes(serialization.Encoding.PEM)
        spki = self.key.public_key().public_bytes(serialization.Encoding.DER,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo)
        self.fingerprint = hashlib.sha256(self.der).hexdigest()
        self.key_fingerprint = hashlib.sha256(spki).hexdigest()
        self.certfile = os.path.join(folder, f"{name}.crt")
        self.keyfile = os.path.join(folder, f"{name}.key")
        with open(self.keyfile, "wb") as handle:
            handle.write(self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                serialization.NoEncryption()))
        with open(self.certfile, "wb") as handle:
            handle.write(self.pem)


def _sni(ssl_object, server_name, context):
    ssl_object.gemini_sni = server_name  # read back by the handler (an SSLObject takes attributes)


def _context(certificate: Certificate) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.options |= ssl.OP_NO_TICKET
    context.num_tickets = 0
    context.load_cert_chain(certificate.certfile, certificate.keyfile)
    context.sni_callback = _sni
    return context


def bind_sockets(count: int, port: int, attempts: int = 20) -> list[socket.socket]:
    """One bound (not yet listening) socket per capsule address, all on one port. Port 0:
    the first address picks a free port, and the whole set is tried again on another one
    when a later address has it taken (another loopback web may be using it)."""
    for _ in range(attempts):
        sockets: list[socket.socket] = []
        chosen = port
        try:
            for index in range(count):
                # IPPROTO_TCP named: asyncio sets TCP_NODELAY on accepted sockets only then
                # (with proto 0 every handshake flight waited out a 40 ms delayed ACK).
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
                sockets.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((capsule_address(index), chosen))
                chosen = sock.getsockname()[1]
            return sockets
        except OSError:
            for sock in sockets:
                sock.close()
            if port:
                raise
    raise OSError("no port is free on every capsule address")


class GeminiServer:
    """The listeners, the handlers and the log of one running space (all in one loop)."""

    def __init__(self, space: GeminiSpace, sockets: list[socket.socket], log_path, folder: str):
        self.space = space
        self.sockets = sockets
        self.log = RequestLog(log_path)
        self.folder = folder
        days = space.config.certificate_days
        self.certificates = {i: Certificate(space.addresses[i], days, folder, f"capsule{i}")
                             for i in range(space.tarpit_index)}
        self.contexts = {i: _context(cert) for i, cert in self.certificates.items()}
        self.slow_down_seen = 0
        self.listeners: list[asyncio.AbstractServer] = []
        self.writers: set[asyncio.StreamWriter] = set()
        self.tasks: set[asyncio.Task] = set()
        self._keeper = None

    # ------------------------------------------------------------ life cycle
    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        for index, sock in enumerate(self.sockets):
            context = self.contexts.get(index)  # the tarpit has none
            listener = await loop.create_server(
                self._factory(index), sock=sock, backlog=512, ssl=context,
                ssl_handshake_timeout=HANDSHAKE_SECONDS if context else None,
                ssl_shutdown_timeout=SHUTDOWN_SECONDS if context else None)
            self.listeners.append(listener)
        self._keeper = asyncio.ensure_future(self._flush_every_tenth())

    async def stop(self) -> None:
        for listener in self.listeners:
            listener.close()
        for writer in list(self.writers):
            writer.transport.abort()
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=1.0)
        if self._keeper is not None:
            self._keeper.cancel()
        for listener in self.listeners:
            await listener.wait_closed()
        self.log.close()

    async def _flush_every_tenth(self):
        while True:
            await asyncio.sleep(0.1)
            self.log.flush()

    def replace_certificate(self, capsule: int, keep_key: bool = False) -> Certificate:
        old = self.certificates[capsule]
        serial = len(os.listdir(self.folder))
        new = Certificate(self.space.addresses[capsule], self.space.config.certificate_days, self.folder,
                          f"capsule{capsule}-{serial}", key=old.key if keep_key else None)
        self.contexts[capsule].load_cert_chain(new.certfile, new.keyfile)
        self.certificates[capsule] = new
        return new

    def _factory(self, capsule: int):
        loop = asyncio.get_running_loop()

        def protocol():
            # Called at the accept, before the TLS handshake: the connection's start.
            accepted = _now()
            reader = asyncio.StreamReader(limit=64 * 1024, loop=loop)
            return asyncio.StreamReaderProtocol(
                reader, lambda r, w: self._handle(capsule, accepted, r, w), loop=loop)
        return protocol

    # ------------------------------------------------------------ one connection
    async def _handle(self, capsule: int, accepted, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        task = asyncio.current_task()
        self.tasks.add(task)
        self.writers.add(writer)
        peer = writer.get_extra_info("peername") or ("-", 0)
        ssl_object = writer.get_extra_info("ssl_object")
        sni = getattr(ssl_object, "gemini_sni", None)
        fields = {"status": "-", "meta": "", "request": "-"}
        try:
            if capsule == self.space.tarpit_index:
                fields["meta"] = "handshake never answered"
                await self._wait_for_client(reader)
            else:
                await self._serve(capsule, reader, writer, fields)
        except (ConnectionError, asyncio.TimeoutError, ssl.SSLError, OSError):
            fields["meta"] = (fields["meta"] + " (client left)").strip()
        except asyncio.CancelledError:
            fields["meta"] = (fields["meta"] + " (server stopped)").strip()
        finally:
            end = _now()
            self.log.add(accepted, fields.get("end", end), self.space.netlocs[capsule],
                         f"{peer[0]}:{peer[1]}", sni, fields["status"], fields["meta"], fields["request"])
            writer.close()
        try:  # TLS: close_notify, then the peer's (at most SHUTDOWN_SECONDS: ssl_shutdown_timeout)
            await asyncio.wait_for(writer.wait_closed(), SHUTDOWN_SECONDS + 1.0)
        except (ConnectionError, asyncio.TimeoutError, ssl.SSLError, OSError, asyncio.CancelledError):
            writer.transport.abort()
        finally:
            self.writers.discard(writer)
            self.tasks.discard(task)

    async def _wait_for_client(self, reader) -> None:
        """Hold the connection until the client closes it or hostile_seconds pass."""
        try:
            async with asyncio.timeout(self.space.config.hostile_seconds):
                while await reader.read(4096):
                    pass
        except TimeoutError:
            pass

    async def _read_request(self, reader) -> tuple[str | None, str | None]:
        """(request, None) or (None, why it is refused); (None, None) when none came."""
        data = b""
        async with asyncio.timeout(REQUEST_SECONDS):
            while b"\n" not in data:
                if len(data) > MAX_REQUEST + 2:
                    return data[:80].decode("utf-8", "replace"), "Request longer than 1024 bytes"
                chunk = await reader.read(MAX_REQUEST + 3 - len(data))
                if not chunk:
                    return (data.decode("utf-8", "replace") or None), (None if not data else "No CRLF")
                data += chunk
        line = data[:data.index(b"\n")]
        if not line.endswith(b"\r"):
            return line.decode("utf-8", "replace"), "Request must end with CRLF"
        line = line[:-1]
        if len(line) > MAX_REQUEST:
            return line[:80].decode("utf-8", "replace"), "Request longer than 1024 bytes"
        try:
            return line.decode("utf-8"), None
        except UnicodeDecodeError:
            return line.decode("utf-8", "replace"), "Request is not UTF-8"

    def _route(self, capsule: int, request: str) -> tuple[int, str, str | None]:
        """(status, meta, path) for a request line; path None when refused."""
        try:
            parts = urlsplit(request)
            port = parts.port
        except ValueError:
            return 59, "Bad request: not a URL", None
        if not parts.scheme or not parts.netloc or "\ufeff" in request or " " in request:
            return 59, "Bad request: not an absolute URL", None
        if parts.username is not None or parts.password is not None or "#" in request:
            return 59, "Bad request: userinfo or fragment", None
        if parts.scheme.lower() != "gemini":
            return 53, "Proxy request refused", None
        if parts.hostname != self.space.addresses[capsule] or (port or DEFAULT_PORT) != self.space.port:
            return 53, "Proxy request refused", None
        return 20, "", parts.path or "/"

    async def _serve(self, capsule, reader, writer, fields) -> None:
        request, refused = await self._read_request(reader)
        fields["request"] = request or "-"
        if request is None and refused is None:
            fields["meta"] = "no request"
            return
        delay = self.space.delay(capsule)
        if refused:
            await self._answer(writer, fields, "59", refused, b"")
            return
        status, meta, path = self._route(capsule, request)
        if path is None:
            await self._answer(writer, fields, str(status), meta, b"")
            return
        if delay:
            await asyncio.sleep(delay)
        page = self.space.page_at(capsule, path)
        if page.kind == "hostile":
            await self._hostile(page.meta, reader, writer, fields)
            return
        status, meta = page.status, page.meta
        if page.capsule == 0 and path == "/special/slow-down.gmi":
            self.slow_down_seen += 1
            if self.slow_down_seen <= self.space.config.slow_down_times:
                status, meta = 44, str(self.space.config.slow_down_seconds)
        if page.kind == "status" and path == "/special/input" and urlsplit(request).query:
            status, meta = 20, "text/gemini"  # an answered input: a page of results
            body = f"# Results\n\nNothing found for {urlsplit(request).query}.\n".encode()
        else:
            body = self.space.body(page) if status == 20 else b""
        await self._answer(writer, fields, f"{status:02d}", meta, body)

    async def _answer(self, writer, fields, status: str, meta: str, body: bytes, crlf: bool = True) -> None:
        fields["status"], fields["meta"] = status, meta
        writer.write(f"{status} {meta}".encode("utf-8") + (b"\r\n" if crlf else b"") + body)
        await asyncio.wait_for(writer.drain(), WRITE_SECONDS)
        fields["end"] = _now()

    async def _hostile(self, name: str, reader, writer, fields) -> None:
        limit = self.space.config.hostile_seconds
        if name == "long-header":
            await self._answer(writer, fields, "20", "text/gemini; charset=utf-8; padding=" + "x" * 2000,
                               b"# Past a long header\n")
        elif name == "bad-status-one-digit":
            await self._answer(writer, fields, "2", "text/gemini", b"# One digit\n")
        elif name == "bad-status-letters":
            await self._answer(writer, fields, "xx", "text/gemini", b"# Letters\n")
        elif name == "empty-answer":
            fields["meta"], fields["end"] = "closed without a byte", _now()
        elif name == "no-crlf":
            await self._answer(writer, fields, "20", "text/gemini", b"", crlf=False)
            await self._wait_for_client(reader)
            fields["end"] = _now()
        elif name == "endless-header":
            await self._stream(writer, fields, "20", "text/gemini; x=", b"", lambda n: b"x" * CHUNK, 0.0, limit)
        elif name == "endless-body":
            await self._stream(writer, fields, "20", "text/gemini", b"\r\n",
                               lambda n: b"".join(b"Line %d of a page that never ends.\n" % (n * 512 + i)
                                                  for i in range(512)), 0.0, limit)
        elif name == "drip":
            await self._stream(writer, fields, "20", "text/gemini", b"\r\n",
                               lambda n: b"Drop %d.\n" % n, 0.5, limit)

    async def _stream(self, writer, fields, status, meta, head_end: bytes, chunk, pause: float, limit: float):
        """Write the header, then chunk(n) for n = 0, 1, ... until the client leaves or
        `limit` seconds pass; the meta logged says how many bytes went out."""
        fields["status"], fields["meta"] = status, meta
        writer.write(f"{status} {meta}".encode() + head_end)
        sent, n = 0, 0
        deadline = time.monotonic() + limit
        try:
            while time.monotonic() < deadline and not writer.is_closing():
                data = chunk(n)
                writer.write(data)
                await asyncio.wait_for(writer.drain(), max(0.01, min(WRITE_SECONDS, deadline - time.monotonic())))
                sent += len(data)
                n += 1
                if pause:
                    await asyncio.sleep(pause)
        finally:
            fields["meta"] = f"{meta} (then {sent} bytes in {n} pieces)"
            fields["end"] = _now()


def make_space(config: SpaceConfig, log_path, folder: str) -> tuple[GeminiSpace, GeminiServer]:
    """Bind every capsule's address, build the model with the real port and its server."""
    sockets = bind_sockets(config.capsules + 3, config.port)
    port = sockets[0].getsockname()[1]
    space = GeminiSpace(config, port=port)
    try:
        return space, GeminiServer(space, sockets, log_path, folder)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise


def temporary_folder() -> str:
    return tempfile.mkdtemp(prefix="geminispace-")


def remove_folder(folder: str) -> None:
    shutil.rmtree(folder, ignore_errors=True)
