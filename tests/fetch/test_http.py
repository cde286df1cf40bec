"""fetch/http.py against a real loopback server whose handlers are named for what they do."""

import gzip
import socket
import time

import pytest

from common.netpolicy import endpoint, parse_allowed
from fetch import http

from ..loopback import QuietHandler, start


class Handler(QuietHandler):
    def do_GET(self):
        path = self.path
        if path == "/ok":
            self.send(200, b"<html><title>ok</title></html>", [("Content-Type", "text/html; charset=utf-8")])
        elif path == "/big":
            self.send(200, b"x" * 300_000, [("Content-Type", "text/html")])
        elif path == "/big-chunked":  # no Content-Length, bigger than the cap
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for _ in range(40):
                self.wfile.write(b"2000\r\n" + b"y" * 0x2000 + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        elif path == "/gzip-bomb":
            self.send(200, gzip.compress(b"\0" * 20_000_000), [("Content-Type", "text/html"), ("Content-Encoding", "gzip")])
        elif path == "/slow-drip":  # a byte every 0.3 s: never trips the read timeout
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            try:
                for _ in range(1000):
                    self.wfile.write(b"a")
                    self.wfile.flush()
                    time.sleep(0.3)
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif path == "/redirect":
            self.send(302, b"", [("Location", "/ok")])
        elif path == "/redirect-to-postgres":
            self.send(302, b"", [("Location", "http://127.0.0.1:5432/")])
        elif path == "/pdf":
            self.send(200, b"%PDF-1.4 " + b"z" * 100_000, [("Content-Type", "application/pdf")])
        else:
            self.send(404, b"no")


@pytest.fixture(scope="module")
def server():
    srv, origin = start(Handler)
    srv.handle_error = lambda request, address: None  # clients hang up on purpose here
    yield origin
    srv.shutdown()


def test_it_fetches_a_page(server):
    result = http.fetch(server + "/ok")
    assert (result.status, result.error, result.content_type, result.charset) == (200, "", "text/html", "utf-8")
    assert b"<title>ok</title>" in result.body


@pytest.fixture
def tripwire(monkeypatch):
    """Fail loudly instead of ever opening a socket to a non-loopback address."""
    real = http.urllib3_connection.create_connection
    attempts = []

    def guarded(address, *args, **kwargs):
        attempts.append(address[0])
        if not address[0].startswith("127."):
            raise AssertionError(f"tried to connect to {address[0]}")
        return real(address, *args, **kwargs)

    monkeypatch.setattr(http.urllib3_connection, "create_connection", guarded)
    return attempts


def test_it_refuses_loopback_private_and_reserved_addresses_by_default(settings, server, tripwire):
    settings.CRAWLER_ALLOWED_NETWORKS = []
    for url in (server + "/ok", "http://127.0.0.1:5432/", "http://127.0.0.1:6379/", "http://localhost:5432/",
                "http://10.1.2.3/", "http://169.254.169.254/latest/meta-data/", "http://[::1]:5432/",
                "http://0.0.0.0:6379/", "http://224.0.0.1/"):
        result = http.fetch(url)
        assert (result.status, result.error) == (None, "blocked_address"), url
    assert tripwire == []  # refused before any socket was opened


def test_it_checks_the_resolved_address_not_the_name(settings, monkeypatch, tripwire):
    settings.CRAWLER_ALLOWED_NETWORKS = []
    # DNS is the internet's part: simulate a public name that resolves to PostgreSQL's address.
    fake = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 5432))]
    monkeypatch.setattr(http.socket, "getaddrinfo", lambda *a, **k: fake)
    assert http.fetch("http://innocent.example.com:5432/").error == "blocked_address"
    assert tripwire == []


def test_it_allows_only_the_configured_networks(settings, server):
    port = server.rsplit(":", 1)[1]
    settings.CRAWLER_ALLOWED_NETWORKS = [__import__("ipaddress").ip_network("127.0.0.2/32")]
    assert http.fetch(server + "/ok").error == "blocked_address"
    assert http.fetch(f"http://127.0.0.2:{port}/ok").error in ("connection", "")  # allowed; nothing listens


def test_it_checks_every_redirect_hop_when_following(settings, server):
    settings.CRAWLER_ALLOWED_NETWORKS = [__import__("ipaddress").ip_network("127.0.0.1/32")]
    followed = http.fetch(server + "/redirect", follow_redirects=True)
    assert (followed.status, followed.final_url) == (200, server + "/ok")
    # 127.0.0.1:5432 is inside the allowed /32 here, so pin the refusal with an address outside it
    settings.CRAWLER_ALLOWED_NETWORKS = []
    assert http.fetch(server + "/redirect-to-postgres", follow_redirects=True).error == "blocked_address"


def test_it_does_not_follow_redirects_for_pages(server):
    result = http.fetch(server + "/redirect")
    assert (result.status, result.headers["location"]) == (302, "/ok")


@pytest.mark.parametrize("path", ["/big", "/big-chunked", "/gzip-bomb"])
def test_it_caps_the_decompressed_body(server, path):
    result = http.fetch(server + path, max_bytes=100_000)
    assert result.error == "too_large" and len(result.body) == 100_000


def test_it_enforces_a_total_deadline_on_a_slow_drip(settings, server):
    settings.CRAWLER_TOTAL_DEADLINE = 1.0
    started = time.monotonic()
    result = http.fetch(server + "/slow-drip")
    assert result.error == "deadline" and 0 < len(result.body) < 1000
    assert time.monotonic() - started < 1.0 + settings.CRAWLER_READ_TIMEOUT


def test_it_skips_bodies_of_unwanted_types(server):
    result = http.fetch(server + "/pdf", body_types=("text/html",))
    assert (result.status, result.content_type, result.body) == (200, "application/pdf", b"")


def test_it_reports_connection_errors_and_timeouts_without_raising(settings, monkeypatch):
    with socket.socket() as sock:  # a port that accepts nothing: bound, not listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        assert http.fetch(f"http://127.0.0.1:{port}/").error == "connection"
    with socket.socket() as silent:  # accepts, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        settings.CRAWLER_READ_TIMEOUT = 0.3
        assert http.fetch(f"http://127.0.0.1:{silent.getsockname()[1]}/").error == "timeout"
    def no_such_host(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(http.socket, "getaddrinfo", no_such_host)  # no real DNS query leaves
    assert http.fetch("http://no-such-host.example/").error == "dns"


def test_it_is_the_only_module_that_imports_an_http_client():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    offenders = [
        str(p.relative_to(root)) for d in ("common", "crawlerweb", "frontier", "fetch", "archive", "indexer", "crawl", "console")
        for p in (root / d).rglob("*.py")
        if p.name != "http.py" and any(
            line.strip().startswith(("import requests", "from requests", "import urllib3", "from urllib3",
                                     "import httpx", "from urllib.request"))
            for line in p.read_text().splitlines())
    ]
    assert offenders == []


# -- the allowlist names ports; the crawler's own services are refused (issue 17) ------------

@pytest.mark.parametrize("entry, network, ports", [
    ("127.0.0.0/8", "127.0.0.0/8", None),
    ("127.0.1.7", "127.0.1.7/32", None),
    ("127.0.1.0/24:8300", "127.0.1.0/24", (8300, 8300)),
    ("10.0.0.0/8:8000-8999", "10.0.0.0/8", (8000, 8999)),
    ("[::1/128]:8300", "::1/128", (8300, 8300)),
    ("[fd00::/8]", "fd00::/8", None),
    ("::1/128", "::1/128", None),
])
def test_allowlist_entries_parse_with_optional_ports(entry, network, ports):
    parsed = parse_allowed(entry)
    assert (str(parsed.network), parsed.ports) == (network, ports)
    assert parse_allowed(str(parsed)) == parsed


@pytest.mark.parametrize("entry", ["127.0.0.0/8:", "127.0.0.0/8:http", "127.0.0.0/8:9-1", "127.0.0.0/8:70000",
                                   "[::1/128]8300", "not-a-network", "127.0.0.0/33"])
def test_allowlist_entries_refuse_nonsense(entry):
    with pytest.raises(ValueError):
        parse_allowed(entry)


def test_an_allowed_network_with_a_port_opens_only_that_port(settings, server, tripwire):
    port = int(server.rsplit(":", 1)[1])
    settings.CRAWLER_ALLOWED_NETWORKS = [parse_allowed(f"127.0.0.0/8:{port}")]
    assert http.fetch(server + "/ok").status == 200
    opened = len(tripwire)
    settings.CRAWLER_ALLOWED_NETWORKS = [parse_allowed(f"127.0.0.0/8:{port + 1}-{port + 9}")]
    assert http.fetch(server + "/ok").error == "blocked_address"
    assert http.fetch("http://127.0.0.1:5432/").error == "blocked_address"
    assert len(tripwire) == opened  # refused before a socket was opened


@pytest.mark.parametrize("service_host", ["127.0.0.1", "localhost", "0.0.0.0"])
def test_the_crawlers_own_services_are_refused_inside_an_allowed_network(settings, server, service_host):
    port = int(server.rsplit(":", 1)[1])
    settings.CRAWLER_ALLOWED_NETWORKS = [parse_allowed("127.0.0.0/8")]
    assert http.fetch(server + "/ok").status == 200
    settings.CRAWLER_OWN_SERVICES = [(service_host, port)]
    assert http.fetch(server + "/ok").error == "blocked_address"
    assert http.fetch(f"http://127.1:{port}/ok").error == "blocked_address"  # the same address, written short
    settings.CRAWLER_OWN_SERVICES = [(service_host, port + 1)]
    assert http.fetch(server + "/ok").status == 200  # another port of the same address is not a service


def test_own_services_come_from_the_configuration(settings):
    own = settings.CRAWLER_OWN_SERVICES
    assert endpoint(settings.CELERY_BROKER_URL, 6379) in own and ("127.0.0.1", 8000) in own and ("127.0.0.1", 5555) in own
    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        assert endpoint(settings.DATABASE_URL, 5432) in own
    assert endpoint("sqlite:////tmp/x.sqlite3") is None and endpoint("0.0.0.0:8000") == ("0.0.0.0", 8000)
    assert endpoint("postgres://u@db.internal/crawl", 5432) == ("db.internal", 5432)


def test_with_loopback_allowed_the_stack_is_still_refused(settings):
    """The issue's case: CRAWLER_ALLOWED_NETWORKS=127.0.0.0/8 let a seed reach PostgreSQL,
    Redis, Flower and the crawler's own web UI."""
    settings.CRAWLER_ALLOWED_NETWORKS = [parse_allowed("127.0.0.0/8")]
    for url in ("http://127.1:8000/", "http://127.0.0.1:6379/", "http://localhost:5555/"):
        assert http.fetch(url).error == "blocked_address", url
