"""Where the crawler may connect: the parts of the policy that settings parse.

CRAWLER_ALLOWED_NETWORKS entries are a CIDR network, optionally with a port or a port range
(`127.0.0.0/8`, `127.0.1.0/24:8300`, `127.0.1.0/24:8300-8399`, `[::1/128]:8300`): allowing
a network no longer opens every port on it. The crawler's own services (database, broker,
web, Flower, and CRAWLER_REFUSED_ENDPOINTS) are refused even inside an allowed network;
fetch.http applies both to the resolved address of every connection; seeding tells, from the
URL alone, when a seed's literal address will be refused (refusal_without_dns).
"""

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class AllowedNetwork:
    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    ports: tuple[int, int] | None = None  # inclusive range; None: every port

    def allows(self, ip, port: int | None) -> bool:
        if ip not in self.network:
            return False
        return self.ports is None or (port is not None and self.ports[0] <= port <= self.ports[1])

    def __str__(self):
        if self.ports is None:
            return str(self.network)
        ports = str(self.ports[0]) if self.ports[0] == self.ports[1] else f"{self.ports[0]}-{self.ports[1]}"
        return (f"[{self.network}]" if self.network.version == 6 else str(self.network)) + ":" + ports


def parse_allowed(item: str) -> AllowedNetwork:
    """One CRAWLER_ALLOWED_NETWORKS entry; ValueError says what is wrong with it."""
    item = item.strip()
    ports = None
    if item.startswith("["):
        network_text, _, rest = item[1:].partition("]")
        if rest and not rest.startswith(":"):
            raise ValueError("write an IPv6 network with a port as [network]:port")
        port_text = rest[1:] or None
    elif item.count(":") == 1:
        network_text, port_text = item.split(":")
    else:
        network_text, port_text = item, None
    network = ipaddress.ip_network(network_text, strict=False)
    if port_text is not None:
        low, _, high = port_text.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise ValueError(f"{port_text!r} is not a port or a port range")
        ports = (int(low), int(high or low))
        if not 0 < ports[0] <= ports[1] <= 65535:
            raise ValueError(f"{port_text!r} is not a port range within 1-65535")
    return AllowedNetwork(network, ports)


def endpoint(value: str, default_port: int | None = None) -> tuple[str, int] | None:
    """host:port of a service URL (postgres://…, redis://…) or a bind address (host:port)."""
    if not value:
        return None
    parts = urlsplit(value if "://" in value else "//" + value)
    try:
        port = parts.port or default_port
    except ValueError:
        return None
    if parts.scheme.startswith("sqlite") or port is None:
        return None
    return (parts.hostname or "127.0.0.1", port)


def network_allows(ip, port: int | None, networks) -> bool:
    """Do the allowed networks (or, outside them, the address being public) let the crawler
    connect to ip:port? The crawler's own services are refused apart (fetch.http)."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    for net in networks:
        if net.allows(ip, port) if isinstance(net, AllowedNetwork) else ip in net:
            return True
    return ip.is_global and not ip.is_multicast


_LOOPBACK = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))


def literal_addresses(host: str) -> tuple:
    """The addresses a URL's host stands for without asking DNS: an IP literal, or a
    `localhost` name (RFC 6761 section 6.3: always loopback). Empty for any other name."""
    if host == "localhost" or host.endswith(".localhost"):
        return _LOOPBACK
    try:
        return (ipaddress.ip_address(host.strip("[]")),)
    except ValueError:
        return ()


def _kind(ip) -> str:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    for kind in ("loopback", "link_local", "private", "multicast", "unspecified", "reserved"):
        if getattr(ip, f"is_{kind}"):
            return kind.replace("_", "-")
    return "non-public"


def refusal_without_dns(host: str, port: int, networks, own_services) -> str | None:
    """Why the crawler will refuse to connect to host:port, when the host is an address or a
    localhost name (None when it will not, or when only DNS could tell: seeding resolves
    nothing). `own_services` are (host, port) of CRAWLER_OWN_SERVICES; only those written as
    an address or localhost are compared, for the same reason."""
    reasons = []
    for ip in literal_addresses(host):
        if any(port == service_port and (ip in literal_addresses(service_host)
                                         or service_host in ("0.0.0.0", "::") and ip.is_loopback)
               for service_host, service_port in own_services):
            reasons.append(f"{host}:{port} is one of the crawler's own services (database, broker, web server, "
                           "Flower, metrics or CRAWLER_REFUSED_ENDPOINTS), refused even inside an allowed network")
        elif not network_allows(ip, port, networks):
            reasons.append(f"{ip} is a {_kind(ip)} address and CRAWLER_ALLOWED_NETWORKS does not allow it "
                           f"(port {port})")
        else:
            return None  # the crawler connects to the first address it may
    return reasons[0] if reasons else None
