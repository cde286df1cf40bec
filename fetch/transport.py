"""What both transports share (fetch/http.py, fetch/gemini.py): a request's result, the
address guard of their safety contract (fetch/http.py states it), and the capped body read.
The transports import this module, never each other's internals."""

import ipaddress
import socket
import time
from dataclasses import dataclass, field

from django.conf import settings

from common.netpolicy import network_allows
from frontier.vocabulary import FetchError

ROBOTS_MAX_REDIRECTS = 5


class BlockedAddress(Exception):
    """The host resolved to an address the crawler must not connect to."""


def address_allowed(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int | None = None) -> bool:
    """May the crawler connect to ip:port? Never to its own services; to allowed networks
    (and their ports); otherwise only to public unicast addresses."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    if own_service(ip, port):
        return False
    return network_allows(ip, port, settings.CRAWLER_ALLOWED_NETWORKS)


_own_services: dict = {}  # the settings' endpoints -> (refused (ip, port) pairs, bind-all ports)


def own_service(ip, port: int | None) -> bool:
    """Is ip:port one of the crawler's own services (CRAWLER_OWN_SERVICES)? Their names are
    resolved once per process; a service bound to every address (0.0.0.0) is refused on
    every loopback address."""
    if port is None:
        return False
    key = tuple(settings.CRAWLER_OWN_SERVICES)
    if key not in _own_services:
        pairs, bind_all = set(), set()
        for host, service_port in key:
            for address in _addresses(host):
                (bind_all.add(service_port) if address.is_unspecified else pairs.add((address, service_port)))
        _own_services.clear()
        _own_services[key] = (pairs, bind_all)
    pairs, bind_all = _own_services[key]
    return (ip, port) in pairs or (port in bind_all and (ip.is_loopback or ip.is_unspecified))


def _addresses(host: str) -> set:
    try:
        return {ipaddress.ip_address(host.strip("[]"))}
    except ValueError:
        pass
    try:
        return {ipaddress.ip_address(info[4][0].split("%")[0]) for info in socket.getaddrinfo(host, None)}
    except (OSError, ValueError):
        return set()  # a name that does not resolve here is nothing this process can reach


@dataclass
class FetchResult:
    url: str
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names
    body: bytes = b""
    # "", timeout, deadline, connection, dns, dns_unavailable, blocked_address, too_large, protocol,
    # redirect_limit
    error: str = ""
    error_detail: str = ""
    elapsed: float = 0.0
    # When the response (or the failure) ended, on time.monotonic()'s clock: the host's
    # delay counts from here, not from when the page was analysed and handed on.
    ended_at: float = 0.0
    final_url: str = ""
    address: str = ""  # the server address the last connection went to
    # For the WARC archive: the response as received (header order and repeats kept).
    started_at: float = 0.0  # wall clock, seconds since the epoch
    http_version: int = 11
    reason: str = ""
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    body_read: bool = False  # False: the body was not downloaded (not a type asked for)
    redirects: list["FetchResult"] = field(default_factory=list)  # hops followed before this response
    sent_headers: dict[str, str] = field(default_factory=dict)  # the request's headers (urllib3 adds Host)
    # Gemini (fetch/gemini.py): the header line as received, the server certificate.
    gemini_header: str = ""
    tls_fingerprint: str = ""  # SHA-256 of the certificate, hex
    tls_not_after: float | None = None  # its expiry, seconds since the epoch

    @property
    def gemini(self) -> bool:
        return self.url.startswith("gemini://")

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    @property
    def charset(self) -> str | None:
        return charset_of(self.headers.get("content-type", ""))


def charset_of(content_type: str) -> str | None:
    """The charset parameter of a Content-Type value, if any."""
    for part in content_type.split(";")[1:]:
        name, _, value = part.partition("=")
        if name.strip().lower() == "charset" and value.strip():
            return value.strip().strip("\"'")
    return None


def read_capped(read, max_bytes: int, deadline: float, result: FetchResult, first: bytes = b"") -> bytes:
    """A body, `first` and then `read()`'s chunks (b"" at its end), until its end, `max_bytes`
    (kept, the rest left unread: error too_large) or the deadline (error deadline). The cap
    and the deadline of every protocol (fetch/gemini.py reads its bodies here too)."""
    chunks, size, chunk = [], 0, first
    while True:
        if chunk:
            size += len(chunk)
            if size > max_bytes:
                result.error = FetchError.TOO_LARGE
                chunks.append(chunk[: len(chunk) - (size - max_bytes)])
                break
            chunks.append(chunk)
        if time.monotonic() > deadline:
            result.error = FetchError.DEADLINE
            break
        chunk = read()
        if not chunk:
            break
    return b"".join(chunks)
