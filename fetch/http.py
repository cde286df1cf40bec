"""All outbound HTTP of crawlerweb goes through this module. Nothing else imports requests.

Safety contract — every request made here:
- goes only to http/https URLs, never through a proxy or with credentials from the
  environment (`trust_env` is off);
- connects only to addresses that are public, or inside CRAWLER_ALLOWED_NETWORKS. The check
  runs on the *resolved* address at socket-open time, for every connection including every
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
"""

import ipaddress
import socket
import threading
import time
from dataclasses import dataclass, field

import requests
import urllib3
from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.util import connection as urllib3_connection

READ_CHUNK = 64 * 1024
ROBOTS_MAX_REDIRECTS = 5


class BlockedAddress(Exception):
    """The host resolved to an address the crawler must not connect to."""


def address_allowed(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if any(ip in net for net in settings.CRAWLER_ALLOWED_NETWORKS):
        return True
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


class _GuardedConnectionMixin:
    """Resolve, check every candidate address, connect to the first allowed one."""

    def _new_conn(self):
        try:
            infos = socket.getaddrinfo(self._dns_host, self.port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise urllib3.exceptions.NameResolutionError(self.host, self, exc) from exc
        allowed = [i for i in infos if address_allowed(ipaddress.ip_address(i[4][0].split("%")[0]))]
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
        return sock


class GuardedHTTPConnection(_GuardedConnectionMixin, HTTPConnection):
    pass


class GuardedHTTPSConnection(_GuardedConnectionMixin, HTTPSConnection):
    pass


class GuardedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = GuardedHTTPConnection


class GuardedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = GuardedHTTPSConnection


class GuardedAdapter(HTTPAdapter):
    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": GuardedHTTPConnectionPool,
            "https": GuardedHTTPSConnectionPool,
        }


@dataclass
class FetchResult:
    url: str
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names
    body: bytes = b""
    error: str = ""  # "", timeout, deadline, connection, dns, blocked_address, too_large, protocol
    error_detail: str = ""
    elapsed: float = 0.0
    final_url: str = ""

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    @property
    def charset(self) -> str | None:
        for part in self.headers.get("content-type", "").split(";")[1:]:
            name, _, value = part.partition("=")
            if name.strip().lower() == "charset" and value.strip():
                return value.strip().strip("\"'")
        return None


_local = threading.local()


def _session() -> requests.Session:
    # Pooled connections were checked when opened; if the allowed networks change (tests,
    # a reload), connections opened under the old policy must not be reused.
    policy = tuple(settings.CRAWLER_ALLOWED_NETWORKS)
    session = getattr(_local, "session", None)
    if session is not None and _local.policy != policy:
        session.close()
        session = None
    if session is None:
        session = requests.Session()
        session.trust_env = False
        session.max_redirects = ROBOTS_MAX_REDIRECTS
        adapter = GuardedAdapter(pool_connections=64, pool_maxsize=4, max_retries=0)
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        session.headers.update(
            {"User-Agent": settings.CRAWLER_USER_AGENT, "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5"}
        )
        _local.session, _local.policy = session, policy
    return session


def fetch(url: str, *, max_bytes: int | None = None, follow_redirects: bool = False,
          body_types: tuple[str, ...] | None = None) -> FetchResult:
    """GET `url` under the safety contract above.

    body_types: when given, the body is read only if the content type is one of them (the
    rest is not downloaded). The connection is kept alive for the next request to the host.
    """
    max_bytes = max_bytes or settings.CRAWLER_MAX_BODY_BYTES
    started = time.monotonic()
    deadline = started + settings.CRAWLER_TOTAL_DEADLINE
    result = FetchResult(url=url, final_url=url)
    timeout = (settings.CRAWLER_CONNECT_TIMEOUT, min(settings.CRAWLER_READ_TIMEOUT, settings.CRAWLER_TOTAL_DEADLINE))
    try:
        with _session().get(url, stream=True, timeout=timeout, allow_redirects=follow_redirects) as resp:
            result.status = resp.status_code
            result.headers = {k.lower(): v for k, v in resp.headers.items()}
            result.final_url = resp.url
            if body_types is None or result.content_type in body_types:
                result.body = _read_body(resp, max_bytes, deadline, result)
    except BlockedAddress as exc:
        result.error, result.error_detail = "blocked_address", str(exc)
    except requests.exceptions.TooManyRedirects as exc:
        result.error, result.error_detail = "redirect_limit", str(exc)
    except (requests.exceptions.Timeout, urllib3.exceptions.ReadTimeoutError, socket.timeout) as exc:
        result.error, result.error_detail = "timeout", str(exc)[:200]
    except requests.exceptions.ConnectionError as exc:
        result.error, result.error_detail = _connection_error_kind(exc), str(exc)[:200]
    except (urllib3.exceptions.ProtocolError, ConnectionError) as exc:  # reset mid-body
        result.error, result.error_detail = "connection", str(exc)[:200]
    except (requests.exceptions.RequestException, urllib3.exceptions.HTTPError, ValueError) as exc:
        result.error, result.error_detail = "protocol", f"{type(exc).__name__}: {exc}"[:200]
    result.elapsed = time.monotonic() - started
    return result


def _read_body(resp, max_bytes: int, deadline: float, result: FetchResult) -> bytes:
    chunks, size = [], 0
    while True:
        if time.monotonic() > deadline:
            result.error = "deadline"
            break
        chunk = resp.raw.read1(READ_CHUNK, decode_content=True)
        if not chunk:
            break
        size += len(chunk)
        if size > max_bytes:
            result.error = "too_large"
            chunks.append(chunk[: len(chunk) - (size - max_bytes)])
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _connection_error_kind(exc: Exception) -> str:
    cause = exc
    while cause is not None:
        if isinstance(cause, BlockedAddress):
            return "blocked_address"
        if isinstance(cause, urllib3.exceptions.NameResolutionError):
            return "dns"
        if isinstance(cause, urllib3.exceptions.NewConnectionError):  # subclasses ConnectTimeoutError!
            return "connection"
        if isinstance(cause, (urllib3.exceptions.ReadTimeoutError, urllib3.exceptions.ConnectTimeoutError)):
            return "timeout"
        cause = cause.args[0] if cause.args and isinstance(cause.args[0], Exception) else cause.__cause__
    return "connection"
