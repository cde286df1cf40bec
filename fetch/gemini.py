"""All outbound Gemini of crawlerweb goes through this module, as all HTTP goes through
fetch/http.py (whose fetch() hands gemini:// URLs here, so callers need not know).

The protocol (gemini://geminiprotocol.net/docs/protocol-specification.gmi): a TLS
connection to port 1965, the request is the absolute URL and CRLF (at most 1024 bytes),
the answer a header `<two-digit status> <meta>` and CRLF, then, for a 2x, the body until the
server closes. One request per connection: there is no kept-alive connection to reuse.

Safety contract — every request made here, as in fetch/http.py:
- goes only to gemini:// URLs;
- connects only to an address http.address_allowed() accepts (public, or inside
  CRAWLER_ALLOWED_NETWORKS and its ports; never the crawler's own services), checked on the
  *resolved* address, and the socket connects to exactly that address;
- is bounded in time: CRAWLER_CONNECT_TIMEOUT for the connection and for the TLS
  handshake, CRAWLER_READ_TIMEOUT per read, CRAWLER_TOTAL_DEADLINE for all of it;
- is bounded in size: a header line of at most 1024 bytes of meta (a longer one, or one
  that never ends, is a protocol error), at most `max_bytes` of body;
- closes its socket in every case as soon as the answer is read or abandoned, so no
  socket waits in CLOSE_WAIT for the crawler (the server, which closes first, keeps the
  TIME_WAIT);
- never presents a client certificate (a 6x answer is an outcome, never answered);
- follows redirects only when asked (robots.txt: up to http.ROBOTS_MAX_REDIRECTS hops, to
  gemini:// URLs only); pages' redirects go back through the frontier;
- never raises for network trouble: the FetchResult's `error` names the kind.

Certificates: TLS 1.2 or newer, with SNI; not verified against certificate authorities,
since self-signed certificates are the norm in Geminispace. Trust on first use instead: the
result carries the certificate's SHA-256 fingerprint and expiry, and the frontier records
each host's and notes a change that came before the old certificate expired
(frontier.service.record_certificate). A changed certificate is recorded, not refused.

What the rest of the crawler sees: a FetchResult like an HTTP one, its `status` the HTTP
status that means the same to the frontier (HTTP_EQUIVALENT: 20 is 200, 31 is 308 with
the meta as Location, 44 SLOW DOWN is 429 with the meta as Retry-After, 51 is 404, 52 is
410, 1x input is 428, 6x is 401 …), `reason` the meta, and `gemini_header` the header line
as received, which the WARC record keeps as the protocol's status line.
"""

import hashlib
import ipaddress
import re
import socket
import ssl
import threading
import time
from urllib.parse import urlsplit

import ada_url
from django.conf import settings

from frontier.vocabulary import FetchError

from . import dns
from .transport import ROBOTS_MAX_REDIRECTS, FetchResult, address_allowed, read_capped

DEFAULT_PORT = 1965
MAX_META_BYTES = 1024
MAX_REQUEST_BYTES = 1024  # the URL, without the CRLF
READ_CHUNK = 64 * 1024
DEFAULT_TYPE = "text/gemini; charset=utf-8"
CLOSE_WAIT_SECONDS = 1.0  # how long a header-only answer's close is waited for
_HEADER = re.compile(rb"^([1-6][0-9])(?:[ \t](.*))?$", re.S)

# What each Gemini status means to the frontier, as an HTTP status; a code not listed means
# what its first digit's x0 means.
HTTP_EQUIVALENT = {
    10: 428, 11: 428,  # input wanted: a form, not a page; not followed
    20: 200,
    30: 307, 31: 308,  # temporary, permanent redirect
    40: 503, 41: 503, 42: 500, 43: 502, 44: 429,  # temporary failures: tried again later
    50: 400, 51: 404, 52: 410, 53: 403, 59: 400,  # permanent failures
    60: 401, 61: 403, 62: 403,  # client certificates: never sent
}


def http_status(code: int) -> int:
    return HTTP_EQUIVALENT.get(code) or HTTP_EQUIVALENT[code // 10 * 10]


class _Failure(Exception):
    def __init__(self, error: str, detail: str):
        super().__init__(detail)
        self.error, self.detail = error, detail


_context_lock = threading.Lock()
_context: ssl.SSLContext | None = None


def _tls_context() -> ssl.SSLContext:
    global _context
    with _context_lock:
        if _context is None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False  # trust on first use, see the module doc
            context.verify_mode = ssl.CERT_NONE
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            _context = context
        return _context


def fetch(url: str, *, max_bytes: int | None = None, follow_redirects: bool = False) -> FetchResult:
    """Ask a Gemini server for `url` under the safety contract above. The body of a 2x
    answer is read whatever its type (the server closes after it anyway)."""
    max_bytes = max_bytes or settings.CRAWLER_MAX_BODY_BYTES
    started = time.monotonic()
    deadline = started + settings.CRAWLER_TOTAL_DEADLINE
    result = FetchResult(url=url, final_url=url, started_at=time.time())
    current = url
    try:
        for hop in range(ROBOTS_MAX_REDIRECTS + 1):
            _ask(current, result, max_bytes, deadline)
            location = result.headers.get("location", "")
            if not (follow_redirects and 300 <= (result.status or 0) < 400 and location):
                break
            if hop == ROBOTS_MAX_REDIRECTS:
                result.error, result.error_detail = FetchError.REDIRECT_LIMIT, f"more than {hop} redirects"
                break
            try:
                target = ada_url.join_url(current, location)  # urllib's urljoin knows no gemini:
            except ValueError:
                target = location
            if not target.startswith("gemini://"):
                result.error, result.error_detail = FetchError.PROTOCOL, f"a redirect to another protocol: {target[:200]}"
                break
            result.redirects.append(_hop(result))
            current = target
            result.started_at = time.time()
    except _Failure as failure:
        result.error, result.error_detail = failure.error, failure.detail[:200]
    result.ended_at = time.monotonic()
    result.elapsed = result.ended_at - started
    return result


def _hop(result: FetchResult) -> FetchResult:
    return FetchResult(url=result.final_url, status=result.status, headers=dict(result.headers),
                       final_url=result.final_url, address=result.address, started_at=result.started_at,
                       reason=result.reason, response_headers=list(result.response_headers),
                       gemini_header=result.gemini_header, tls_fingerprint=result.tls_fingerprint,
                       tls_not_after=result.tls_not_after)


def _ask(url: str, result: FetchResult, max_bytes: int, deadline: float) -> None:
    """One request and its answer, into `result` (whose earlier answer it replaces)."""
    request = url.encode("utf-8")
    if len(request) > MAX_REQUEST_BYTES:
        raise _Failure(FetchError.PROTOCOL, f"the URL is {len(request)} bytes, more than Gemini's {MAX_REQUEST_BYTES}")
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or DEFAULT_PORT
    result.final_url, result.status, result.headers, result.body = url, None, {}, b""
    result.body_read, result.gemini_header, result.response_headers = False, "", []
    sock = _connect(host, port, result, deadline)
    try:
        tls = _handshake(sock, host, deadline)
        sock = tls
        _send(tls, request + b"\r\n", deadline)
        header, rest = _read_header(tls, deadline)
        _read_answer(tls, header, rest, result, max_bytes, deadline)
    except socket.timeout as exc:
        raise _Failure(FetchError.TIMEOUT, f"{host}: {exc or 'timed out'}") from None
    except ssl.SSLError as exc:
        raise _Failure(FetchError.PROTOCOL, f"TLS: {exc.reason or exc}") from None
    except OSError as exc:
        raise _Failure(FetchError.CONNECTION, f"{host}: {exc}") from None
    finally:
        sock.close()


def _connect(host: str, port: int, result: FetchResult, deadline: float) -> socket.socket:
    try:
        infos = dns.resolve(host, port)
    except socket.gaierror as exc:
        kind = FetchError.DNS_UNAVAILABLE if dns.is_temporary(exc) else FetchError.DNS
        raise _Failure(kind, f"{host}: {exc}") from None
    allowed = [i for i in infos if address_allowed(ipaddress.ip_address(i[4][0].split("%")[0]), port)]
    if not allowed:
        raise _Failure(FetchError.BLOCKED_ADDRESS, f"{host} resolves to {infos[0][4][0]}, a refused address")
    family, _, _, _, sockaddr = allowed[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    # The request is one small write that waits for its answer: without this, Nagle's
    # algorithm and delayed ACKs cost ~40 ms a request (measured on loopback).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.settimeout(_left(deadline, settings.CRAWLER_CONNECT_TIMEOUT))
        sock.connect((sockaddr[0], port, *sockaddr[2:]))
    except socket.timeout:
        sock.close()
        raise _Failure(FetchError.TIMEOUT, f"connect to {host} timed out") from None
    except OSError as exc:
        sock.close()
        raise _Failure(FetchError.CONNECTION, f"connect to {host}: {exc}") from None
    result.address = sockaddr[0]  # per-IP politeness keys on the address really used
    return sock


def _handshake(sock: socket.socket, host: str, deadline: float) -> ssl.SSLSocket:
    # An IP literal is no server name (RFC 6066 section 3): no SNI then.
    name = None if _is_ip(host) else host
    tls = _tls_context().wrap_socket(sock, server_hostname=name, do_handshake_on_connect=False)
    # CPython bounds the whole handshake by the socket's timeout, not each read of it.
    tls.settimeout(_left(deadline, settings.CRAWLER_CONNECT_TIMEOUT))
    tls.do_handshake()
    return tls


def _send(tls: ssl.SSLSocket, data: bytes, deadline: float) -> None:
    tls.settimeout(_left(deadline, settings.CRAWLER_READ_TIMEOUT))
    tls.sendall(data)


def _read_header(tls: ssl.SSLSocket, deadline: float) -> tuple[bytes, bytes]:
    """The header line without its CRLF, and what came after it in the same reads."""
    received = b""
    limit = 2 + 1 + MAX_META_BYTES + 2
    while b"\r\n" not in received:
        if len(received) >= limit:
            raise _Failure(FetchError.PROTOCOL, f"no header line within {limit} bytes")
        chunk = _recv(tls, deadline, limit)
        if not chunk:
            raise _Failure(FetchError.PROTOCOL, "the answer ended before its header line did"
                           if received else "an empty answer")
        received += chunk
    header, _, rest = received.partition(b"\r\n")
    if len(header) > limit - 2:
        raise _Failure(FetchError.PROTOCOL, f"a header line of {len(header)} bytes")
    return header, rest


def _read_answer(tls, header: bytes, rest: bytes, result: FetchResult, max_bytes: int, deadline: float) -> None:
    match = _HEADER.match(header)
    if match is None:
        raise _Failure(FetchError.PROTOCOL, f"not a Gemini header: {header[:60]!r}")
    code = int(match.group(1))
    meta = (match.group(2) or b"").decode("utf-8", errors="replace").strip()
    result.gemini_header = header.decode("utf-8", errors="replace")
    result.status, result.reason = http_status(code), meta
    result.tls_fingerprint, result.tls_not_after = _certificate(tls)
    if 20 <= code < 30:
        content_type = meta or DEFAULT_TYPE
        result.headers = {"content-type": content_type}
        result.response_headers = [("Content-Type", content_type)]
        result.body_read = True
        result.body = _read_body(tls, rest, max_bytes, deadline, result)
        return
    if 30 <= code < 40 and meta:
        result.headers = {"location": meta}
        result.response_headers = [("Location", meta)]
    elif code == 44 and meta:
        result.headers = {"retry-after": meta}
        result.response_headers = [("Retry-After", meta)]
    _until_closed(tls, deadline)


def _until_closed(tls, deadline: float) -> None:
    """After a header-only answer, wait for the server to close (a few bytes and a second at
    most): the response ends there, and the host's delay is measured from its end."""
    deadline = min(deadline, time.monotonic() + CLOSE_WAIT_SECONDS)
    received = 0
    try:
        while received <= READ_CHUNK:
            chunk = _recv(tls, deadline, READ_CHUNK)
            if not chunk:
                return
            received += len(chunk)
    except (OSError, ssl.SSLError):
        return  # the answer is whole already; how the connection ends changes nothing


def _read_body(tls, received: bytes, max_bytes: int, deadline: float, result: FetchResult) -> bytes:
    def read() -> bytes:
        try:
            return _recv(tls, deadline, READ_CHUNK)
        except ssl.SSLEOFError:
            return b""  # closed without TLS close_notify: the body ended (common in Geminispace)

    return read_capped(read, max_bytes, deadline, result, first=received)


def _recv(tls, deadline: float, size: int) -> bytes:
    left = deadline - time.monotonic()
    if left <= 0:
        raise socket.timeout("the total deadline passed")
    tls.settimeout(min(settings.CRAWLER_READ_TIMEOUT, left))
    try:
        return tls.recv(size)
    except ssl.SSLZeroReturnError:
        return b""


def _certificate(tls: ssl.SSLSocket) -> tuple[str, float | None]:
    """The server certificate's SHA-256 fingerprint and its expiry (seconds since the epoch)."""
    der = tls.getpeercert(binary_form=True)
    if not der:
        return "", None
    fingerprint = hashlib.sha256(der).hexdigest()
    try:
        from cryptography import x509

        not_after = x509.load_der_x509_certificate(der).not_valid_after_utc.timestamp()
    except (ValueError, ImportError):
        not_after = None
    return fingerprint, not_after


def _left(deadline: float, cap: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise socket.timeout("the total deadline passed")
    return min(cap, left)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        return False
