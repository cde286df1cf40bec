"""All outbound HTTP of crawlerweb goes through this module. Nothing else imports an HTTP client.
(gemini:// URLs are handed to fetch/gemini.py, whose contract is the same where the
protocols meet.)

Safety contract — every request made here:
- goes only to http/https URLs;
- never through a proxy or with credentials from the environment (urllib3 reads none);
- connects only to addresses that are public, or inside CRAWLER_ALLOWED_NETWORKS (and the
  port range an entry names), and never to the crawler's own services (database, broker,
  web, Flower, CRAWLER_REFUSED_ENDPOINTS) even inside an allowed network. The check runs on
  the *resolved* address and port at socket-open time, for every connection including every
  redirect hop, and the socket connects to exactly the address that was checked (no DNS
  rebinding window);
- is bounded in time: CRAWLER_CONNECT_TIMEOUT to connect, CRAWLER_READ_TIMEOUT per read,
  and CRAWLER_TOTAL_DEADLINE for headers plus body, checked after every read (so the worst
  case is the deadline plus one read timeout);
- is bounded in size: at most `max_bytes` of *decompressed* body are read (urllib3 caps the
  decoder's output per read, so a compression bomb never inflates in memory);
- does not follow redirects unless asked (pages: never — targets go back through the
  frontier; robots.txt: up to ROBOTS_MAX_REDIRECTS hops as RFC 9309 asks);
- never raises for network trouble: it returns a FetchResult whose `error` names the kind.

Names are resolved through fetch.dns (a cache with a TTL), once per connection.

The client is urllib3 itself. A host session owns a HostConnection: one kept-alive
connection to its origin that carries the session's requests one after another, whichever
thread sends them (on the real web that is one TLS handshake per session, not per page).
Anything else (robots.txt redirect hops to another origin) goes through a PoolManager per
thread. requests on top of urllib3 cost about 0.35 ms of CPU per page more for nothing we
use (measured in docs/benchmarks.md).
"""

import http.client
import ipaddress
import socket
import threading
import time
from collections.abc import Callable
from urllib.parse import urljoin, urlsplit

import urllib3
from django.conf import settings
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.util import connection as urllib3_connection

from common import stagetime
from frontier.vocabulary import FetchError

from . import dns, gemini
from .transport import (  # noqa: F401  (the transports' shared names, as callers know them)
    ROBOTS_MAX_REDIRECTS, BlockedAddress, FetchResult, address_allowed, charset_of, read_capped,
)

READ_CHUNK = 64 * 1024
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


class _GuardedConnectionMixin:
    """Resolve, check every candidate address, connect to the first allowed one."""

    def _new_conn(self):
        try:
            infos = dns.resolve(self._dns_host, self.port)
        except socket.gaierror as exc:
            raise urllib3.exceptions.NameResolutionError(self.host, self, exc) from exc
        allowed = [i for i in infos if address_allowed(ipaddress.ip_address(i[4][0].split("%")[0]), self.port)]
        if not allowed:
            raise BlockedAddress(f"{self.host} resolves to {infos[0][4][0]}, a refused address")
        family, _, _, _, sockaddr = allowed[0]
        try:
            sock = urllib3_connection.create_connection(
                (sockaddr[0], self.port), self.timeout,
                source_address=self.source_address, socket_options=self.socket_options,
            )
        except socket.timeout as exc:
            raise urllib3.exceptions.ConnectTimeoutError(self, f"connect to {self.host} timed out") from exc
        except OSError as exc:
            raise urllib3.exceptions.NewConnectionError(self, f"connect to {self.host}: {exc}") from exc
        self.peer_address = sockaddr[0]  # per-IP politeness keys on the address really used
        return sock


class GuardedHTTPConnection(_GuardedConnectionMixin, HTTPConnection):
    pass


class GuardedHTTPSConnection(_GuardedConnectionMixin, HTTPSConnection):
    pass


class GuardedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = GuardedHTTPConnection


class GuardedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = GuardedHTTPSConnection


_local = threading.local()


def _pool_manager() -> urllib3.PoolManager:
    # Pooled connections were checked when opened; if the allowed networks change (tests,
    # a reload), connections opened under the old policy must not be reused.
    policy = (tuple(settings.CRAWLER_ALLOWED_NETWORKS), tuple(settings.CRAWLER_OWN_SERVICES))
    manager = getattr(_local, "manager", None)
    if manager is not None and _local.policy != policy:
        manager.clear()
        manager = None
    if manager is None:
        manager = urllib3.PoolManager(num_pools=64, maxsize=2, retries=False)
        manager.pool_classes_by_scheme = {"http": GuardedHTTPConnectionPool, "https": GuardedHTTPSConnectionPool}
        _local.manager, _local.policy = manager, policy
    return manager


class HostConnection:
    """One kept-alive connection to one origin, owned by a host session: its requests go
    one after another over it (a pool of exactly one connection, opened on first use,
    opened again only if the server closed it). Close it when the session ends."""

    def __init__(self, origin: str):
        parts = urlsplit(origin)
        self.origin = origin
        self.gemini_connections = 0  # Gemini: a connection per request, nothing kept (fetch/gemini.py)
        self._pool = None
        if parts.scheme != "gemini":
            pool_class = GuardedHTTPSConnectionPool if parts.scheme == "https" else GuardedHTTPConnectionPool
            self._pool = pool_class(parts.hostname, parts.port, maxsize=1, block=False, retries=False)

    def serves(self, url: str) -> bool:
        return (self._pool is not None and url.startswith(self.origin)
                and url[len(self.origin):len(self.origin) + 1] in ("/", "?", ""))

    def urlopen(self, method: str, url: str, **kwargs):
        target = url[len(self.origin):] or "/"
        return self._pool.urlopen(method, target, **kwargs)

    @property
    def connections_opened(self) -> int:
        return self._pool.num_connections if self._pool is not None else self.gemini_connections

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()


def request_headers() -> dict[str, str]:
    """The headers every request sends (urllib3 adds only Host)."""
    return {
        "User-Agent": settings.CRAWLER_USER_AGENT,
        "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5",
        "Accept-Encoding": _ACCEPT_ENCODING,
    }


_ACCEPT_ENCODING = urllib3.util.make_headers(accept_encoding=True)["accept-encoding"]


@stagetime.timed("fetch")
def fetch(url: str, *, max_bytes: int | None = None, follow_redirects: bool = False,
          body_types: tuple[str, ...] | None = None, via: HostConnection | None = None,
          conditional: dict[str, str] | None = None, sniff_types: tuple[str, ...] = (),
          sniff: Callable[[bytes], bool] | None = None, sniff_bytes: int = 1024) -> FetchResult:
    """GET `url` under the safety contract above.

    body_types: when given, the body is read only if the content type is one of them (the
    rest is not downloaded). sniff_types, sniff: a body of one of these types (the type is
    "" when the header is missing) is read only if sniff(its first sniff_bytes) says so, as
    a browser sniffs application/octet-stream for a PDF. via: the session's connection to
    the URL's origin. The
    connection is kept alive for the next request to the host when the body was read to
    its end. conditional: If-None-Match / If-Modified-Since for a revisit (a 304 answer
    has no body). A gemini:// URL goes to fetch/gemini.py (no connection to keep, no
    conditional GET, every body read).
    """
    if url.startswith("gemini://"):
        result = gemini.fetch(url, max_bytes=max_bytes, follow_redirects=follow_redirects)
        if via is not None and result.address:
            via.gemini_connections += 1 + len(result.redirects)
        return result
    max_bytes = max_bytes or settings.CRAWLER_MAX_BODY_BYTES
    started = time.monotonic()
    deadline = started + settings.CRAWLER_TOTAL_DEADLINE
    result = FetchResult(url=url, final_url=url, started_at=time.time(),
                         sent_headers={**request_headers(), **(conditional or {})})
    timeout = urllib3.Timeout(
        connect=settings.CRAWLER_CONNECT_TIMEOUT,
        read=min(settings.CRAWLER_READ_TIMEOUT, settings.CRAWLER_TOTAL_DEADLINE),
    )
    try:
        current = url
        for hop in range(ROBOTS_MAX_REDIRECTS + 1):
            opener = via if via is not None and via.serves(current) else _pool_manager()
            resp = opener.urlopen(
                "GET", current, headers=result.sent_headers, redirect=False, retries=False,
                preload_content=False, timeout=timeout,
            )
            try:
                result.status, result.reason, result.http_version = resp.status, resp.reason or "", resp.version
                result.response_headers = list(resp.headers.items())
                result.headers = {k.lower(): v for k, v in resp.headers.itermerged()}
                result.final_url = current
                result.address = getattr(resp.connection, "peer_address", "") or result.address
                location = result.headers.get("location", "").strip()
                if follow_redirects and resp.status in REDIRECT_STATUSES and location:
                    if hop == ROBOTS_MAX_REDIRECTS:
                        result.error, result.error_detail = FetchError.REDIRECT_LIMIT, f"more than {hop} redirects"
                        break
                    result.redirects.append(_hop(result))
                    current = urljoin(current, location)
                    result.started_at = time.time()
                    continue
                if body_types is None or result.content_type in body_types:
                    result.body_read = True
                    result.body = _read_body(resp, max_bytes, deadline, result)
                elif sniff is not None and result.content_type in sniff_types:
                    head = _read_head(resp, min(sniff_bytes, max_bytes), deadline)
                    if sniff(head):
                        result.body_read = True
                        result.body = read_capped(lambda: resp.read1(READ_CHUNK, decode_content=True), max_bytes,
                                                  deadline, result, first=head)
                break
            finally:
                _finish(resp)
    except BlockedAddress as exc:
        result.error, result.error_detail = FetchError.BLOCKED_ADDRESS, str(exc)
    except urllib3.exceptions.NameResolutionError as exc:
        temporary = dns.is_temporary(exc.__cause__)
        result.error, result.error_detail = FetchError.DNS_UNAVAILABLE if temporary else FetchError.DNS, str(exc)[:200]
    except urllib3.exceptions.NewConnectionError as exc:  # subclasses ConnectTimeoutError!
        result.error, result.error_detail = FetchError.CONNECTION, str(exc)[:200]
    except (urllib3.exceptions.TimeoutError, socket.timeout, TimeoutError) as exc:
        result.error, result.error_detail = FetchError.TIMEOUT, str(exc)[:200]
    except (urllib3.exceptions.ProtocolError, ConnectionError) as exc:
        # urllib3 wraps both a reset mid-way and a response http.client could not parse
        # (bad status line, header line too long, too many headers); tell them apart.
        broken_http = any(
            isinstance(arg, http.client.HTTPException) and not isinstance(arg, http.client.IncompleteRead)
            for arg in getattr(exc, "args", ())
        )
        result.error, result.error_detail = FetchError.PROTOCOL if broken_http else FetchError.CONNECTION, str(exc)[:200]
    except (urllib3.exceptions.HTTPError, http.client.HTTPException, ValueError) as exc:
        result.error, result.error_detail = FetchError.PROTOCOL, f"{type(exc).__name__}: {exc}"[:200]
    result.ended_at = time.monotonic()
    result.elapsed = result.ended_at - started
    return result


def _hop(result: FetchResult) -> FetchResult:
    """A redirect response that was followed (its body is not read)."""
    return FetchResult(
        url=result.final_url, status=result.status, headers=result.headers, final_url=result.final_url,
        address=result.address, started_at=result.started_at, http_version=result.http_version,
        reason=result.reason, response_headers=result.response_headers,
    )


def _finish(resp) -> None:
    """Give a connection back for reuse only if its response was read to the end."""
    if not resp.isclosed() and resp.length_remaining == 0 and not resp.chunked:
        resp.read()  # an empty body: reading it lets http.client finish the response
    if resp.isclosed():
        resp.release_conn()
    else:
        resp.close()  # unread body left: this connection cannot carry another request
        resp.release_conn()


def _read_body(resp, max_bytes: int, deadline: float, result: FetchResult) -> bytes:
    return read_capped(lambda: resp.read1(READ_CHUNK, decode_content=True), max_bytes, deadline, result)


def _read_head(resp, size: int, deadline: float) -> bytes:
    """At least the first `size` bytes of the body (fewer if it is shorter), for sniffing."""
    chunks, read = [], 0
    while read < size and time.monotonic() <= deadline:
        chunk = resp.read1(READ_CHUNK, decode_content=True)
        if not chunk:
            break
        chunks.append(chunk)
        read += len(chunk)
    return b"".join(chunks)
