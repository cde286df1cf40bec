"""The hostile web: a test server beside the sample web whose every path is a named way
for a server to misbehave. The robustness tests crawl it and check that each case ends in
a recorded, bounded outcome (docs/robustness.md lists case -> outcome -> test).

Why raw sockets on threads, not the sample web's asyncio server: these responses break
HTTP on purpose (bad status lines, endless headers, resets mid-body), which a real HTTP
server library refuses to produce.

Every misbehaviour is bounded on the server side too (at most MAX_SECONDS or MAX_BYTES
per response), so a crawler bug shows up as a failed test, never as a hung one.

Hosts: each persona listens on its own port of 127.0.0.1 (an origin per persona), because
robots.txt misbehaviour is per host.
"""
from __future__ import annotations

import contextlib
import functools
import gzip
import os
import socket
import socketserver
import struct
import threading
import time
import zlib

MAX_SECONDS = 60.0
MAX_BYTES = 512 << 20
BOMB_BYTES = 256 << 20  # decompressed size of each compression bomb
HUGE_ROBOTS_BYTES = 700 * 1024  # > the 500 KiB RFC 9309 asks crawlers to read
MANY_LINKS = 100_000
DEEP_NESTING = 20_000
TRAP_VARIANTS = 2_000

# persona -> what its robots.txt does (pages on every persona behave the same)
PERSONAS = ("main", "robots_huge", "robots_503", "robots_404", "robots_redirect", "robots_garbage",
            "robots_huge_delay", "robots_redirect_loop", "trap", "slow", "sitemaps")
ROBOTS_HOPS = 8  # redirects before robots_redirect_loop's robots.txt (RFC 9309 asks for at least five)
SLOW_SECONDS = 0.3  # every response of the "slow" persona takes this long

# path on the main persona -> what it does. The tests hold the expected outcomes.
PAGE_CASES = {
    "/ok": "a plain page (the worker keeps going after every hostile one)",
    "/big-length": "body larger than the cap, with Content-Length",
    "/big-no-length": "body larger than the cap, no Content-Length (ends at close)",
    "/endless-chunked": "chunked body that never ends",
    "/bomb-gzip": f"gzip bomb: {BOMB_BYTES >> 20} MiB of zeros compressed",
    "/bomb-deflate": "deflate bomb, same size",
    "/bomb-br": "brotli bomb, same size",
    "/slow-drip": "one byte every 0.2 s, never finishing",
    "/huge-header": "one 200 KB header line",
    "/endless-headers": "header lines forever",
    "/bad-status": "a malformed status line",
    "/reset-mid-body": "TCP reset half-way through the promised body",
    "/loop/a": "redirect loop a -> b -> a",
    "/chain/0": "redirect chain /chain/0 -> /chain/1 -> ... -> /chain/9",
    "/redirect-ftp": "redirect to ftp://",
    "/redirect-javascript": "redirect to javascript:",
    "/lying-charset": "says UTF-8, sends windows-1252",
    "/no-charset": "no charset in the header, <meta charset=iso-8859-1> in the page",
    "/invalid-utf8": "says UTF-8, sends invalid UTF-8 sequences",
    "/binary-as-html": "random bytes served as text/html",
    "/deep-nesting": f"{DEEP_NESTING} nested <div>s",
    "/many-links": f"{MANY_LINKS} links on one page",
    "/odd-links": "links to IDN hosts, credentials, an over-long URL, session ids, repeated segments",
    "/ssrf-links": "links to PostgreSQL and Redis on loopback, by address and by a name that resolves there",
    "/redirect-postgres": "redirect to PostgreSQL's port on loopback",
    "/x-robots-noindex": "X-Robots-Tag: noindex",
    "/x-robots-nofollow": "X-Robots-Tag: nofollow, on a page with a link found nowhere else",
    "/x-robots-otherbot": "X-Robots-Tag: otherbot: noindex (another crawler's directive)",
}

# The "sitemaps" persona: its robots.txt names these sitemaps; no page links to the pages
# they list. The index lists SITEMAP_CHILDREN; the nested index's entry must not be read.
SITEMAP_PAGES = 5  # pages per listing sitemap
SITEMAPS_IN_ROBOTS = ("/sitemap-index.xml", "/sitemap-text.txt", "/sitemap-laughs.xml", "/sitemap-xxe.xml",
                      "/sitemap-bomb.xml.gz", "/sitemap-not-xml.xml")
SITEMAP_CHILDREN = ("/sitemap-a.xml", "/sitemap-b.xml.gz", "/sitemap-nested-index.xml")
FEED_PAGE_LINKS = ("/from-rss/", "/from-atom/")  # the feeds' item links, SITEMAP_PAGES each


def _urlset(base: str, prefix: str) -> bytes:
    entries = "".join(f"<url><loc>{base}{prefix}{n}</loc><lastmod>2026-01-0{n + 1}</lastmod></url>"
                      for n in range(SITEMAP_PAGES))
    return ('<?xml version="1.0" encoding="UTF-8"?>'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>').encode()


def _sitemap_index(base: str, paths) -> bytes:
    entries = "".join(f"<sitemap><loc>{base}{path}</loc></sitemap>" for path in paths)
    return ('<?xml version="1.0" encoding="UTF-8"?>'
            f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</sitemapindex>').encode()


def _laughs() -> bytes:
    entities = '<!ENTITY lol "lol">' + "".join(
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10 if i > 1 else "&lol;" * 10}">' for i in range(1, 10))
    return (f'<?xml version="1.0"?><!DOCTYPE urlset [{entities}]>'
            '<urlset><url><loc>http://example.com/&lol9;</loc></url></urlset>').encode()


def _xxe(base: str) -> bytes:
    return ('<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY file SYSTEM "file:///etc/passwd">'
            f'<!ENTITY net SYSTEM "{base}/xxe-fetched">]>'
            f'<urlset><url><loc>{base}/xxe/&file;</loc></url><url><loc>&net;</loc></url></urlset>').encode()


@functools.lru_cache(maxsize=None)
def _sitemap_bomb() -> bytes:
    """gzip: an endless-looking urlset inflating to BOMB_BYTES."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = compressor.compress(b"<urlset>")
    spaces = b" " * (1 << 20)
    return head + b"".join([compressor.compress(spaces) for _ in range(BOMB_BYTES >> 20)] + [compressor.flush()])


SSRF_TARGETS = ("http://127.0.0.1:5432/", "http://127.0.0.1:6379/", "http://db.internal.example:6379/")


def _html(title: str, body: str = "") -> bytes:
    return (f"<!DOCTYPE html><html><head><title>{title}</title></head>"
            f"<body><h1>{title}</h1>{body}</body></html>").encode()


@functools.lru_cache(maxsize=None)
def _bomb(encoding: str) -> bytes:
    zeros = b"\0" * (1 << 20)
    if encoding == "br":
        import brotli
        compressor = brotli.Compressor(quality=5)
        return b"".join([compressor.process(zeros) for _ in range(BOMB_BYTES >> 20)] + [compressor.finish()])
    # gzip: wbits 31 adds the gzip header; deflate (HTTP's name for zlib format): wbits 15
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31 if encoding == "gzip" else 15)
    return b"".join([compressor.compress(zeros) for _ in range(BOMB_BYTES >> 20)] + [compressor.flush()])


def odd_links(base: str, trap_base: str) -> dict[str, str]:
    """The links on /odd-links, named; the tests look each one up."""
    port = base.rsplit(":", 1)[1]
    return {
        "idn": "http://bücher.example/",
        "credentials": f"http://user:secret@127.0.0.1:{port}/creds",
        "too_long": f"{base}/long/{'x' * 5000}",
        "session_query": f"{base}/ok?PHPSESSID=0123456789abcdef&page=2",
        "session_path": f"{base}/ok;jsessionid=ABCDEF0123456789?page=2",
        "repeated_segments": f"{base}/a/b/a/b/a/b/a/b/",
        "calendar": f"{trap_base}/calendar?day=1",
    }


class _Handler(socketserver.BaseRequestHandler):
    server: "_Server"

    def handle(self):
        self.request.settimeout(10)
        started = time.monotonic()
        buffer = b""
        while time.monotonic() - started < MAX_SECONDS:  # keep-alive: one request after another
            request_started = time.time()  # a request already in the buffer arrived by now
            while b"\r\n\r\n" not in buffer:
                try:
                    data = self.request.recv(65536)
                except OSError:
                    return
                request_started = time.time()
                if not data or len(buffer) > 65536:
                    return
                buffer += data
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            parts = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
            path = parts[1] if len(parts) == 3 else "/"
            self.sent_at = None
            try:
                if self.server.persona == "slow":
                    time.sleep(SLOW_SECONDS)
                keep = self.respond(path)
            except OSError:
                return
            finally:
                self.server.log.append((self.server.persona, path, request_started, self.sent_at or time.time()))
            if not keep:
                return

    # --- helpers -------------------------------------------------------------------------
    def send(self, status: int, body: bytes = b"", headers=(), reason: str = "OK") -> bool:
        head = [f"HTTP/1.1 {status} {reason}", f"Content-Length: {len(body)}"]
        head += [f"{name}: {value}" for name, value in headers]
        data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        # The response's end is stamped as it is handed over, the earliest the client can
        # have it: a stamp after sendall returns waits for this thread's next turn, which
        # under load came 5-18 ms late and made a kept gap look short.
        self.sent_at = time.time()
        self.request.sendall(data)
        return True

    def page(self, body: bytes, content_type: str = "text/html; charset=utf-8", headers=()) -> bool:
        return self.send(200, body, [("Content-Type", content_type), *headers])

    def redirect(self, location: str) -> bool:
        return self.send(301, b"", [("Location", location)], reason="Moved Permanently")

    def drip(self, data_iter) -> None:
        """Write chunks until the client leaves or the server-side bound is reached."""
        started, sent = time.monotonic(), 0
        for chunk in data_iter:
            if time.monotonic() - started > MAX_SECONDS or sent > MAX_BYTES:
                break
            try:
                self.request.sendall(chunk)
            except OSError:
                break
            sent += len(chunk)

    # --- the cases -----------------------------------------------------------------------
    def respond(self, path: str) -> bool:
        persona, base = self.server.persona, self.server.base
        if path == "/robots.txt" or (persona == "robots_redirect_loop" and path.startswith("/robots-hop/")):
            return self.robots(persona, path)
        if path == "/other-robots.txt":
            return self.page(b"User-agent: *\nDisallow: /blocked-by-other/\n", "text/plain")
        if persona == "trap" and path.startswith("/calendar"):
            day = int(path.rsplit("=", 1)[1]) if "=" in path else 1
            links = "".join(f'<a href="/calendar?day={day + n}">day {day + n}</a>' for n in range(1, TRAP_VARIANTS))
            return self.page(_html(f"Day {day}", links))
        if persona == "sitemaps":
            return self.sitemaps(path, base)
        if path.startswith(("/ok", "/late/", "/early/", "/blocked-by-other/", "/fine/")):
            return self.page(_html(f"fine page {path} of {persona}"))
        if path == "/big-length":
            return self.page(b"<html><body>" + b"a" * (self.server.big_bytes - 26) + b"</body></html>")
        if path == "/big-no-length":
            self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n")
            self.drip(b"b" * 65536 for _ in range(self.server.big_bytes // 65536 + 1))
            return False
        if path == "/endless-chunked":
            self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n")
            chunk = b"%x\r\n%s\r\n" % (65536, b"c" * 65536)
            self.drip(iter(lambda: chunk, None))
            return False
        if path.startswith("/bomb-"):
            encoding = path.removeprefix("/bomb-")
            return self.page(_bomb(encoding), "text/html", [("Content-Encoding", encoding)])
        if path == "/slow-drip":
            self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n")
            self.drip(_slowly(b"d", 0.2))
            return False
        if path == "/huge-header":
            return self.send(200, _html("huge header"), [("Content-Type", "text/html"), ("X-Huge", "h" * 200_000)])
        if path == "/endless-headers":
            self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n")
            self.drip(b"X-Header-%d: value\r\n" % n for n in range(1_000_000))
            return False
        if path == "/bad-status":
            self.request.sendall(b"HTTP/1.1 two-hundred Fine\r\nContent-Length: 0\r\n\r\n")
            return False
        if path == "/reset-mid-body":
            self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n"
                                 + b"<html><body>" + b"r" * 20_000)
            # SO_LINGER with a zero timeout makes close() send RST instead of FIN
            self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return False
        if path == "/loop/a":
            return self.redirect(f"{base}/loop/b")
        if path == "/loop/b":
            return self.redirect(f"{base}/loop/a")
        if path.startswith("/chain/"):
            n = int(path.rsplit("/", 1)[1])
            return self.redirect(f"{base}/chain/{n + 1}") if n < 9 else self.page(_html("end of chain"))
        if path == "/redirect-ftp":
            return self.redirect("ftp://127.0.0.1/file.txt")
        if path == "/redirect-javascript":
            return self.redirect("javascript:alert(1)")
        if path == "/lying-charset":
            body = _html("Caf\u00e9 lying", "<p>na\u00efve caf\u00e9</p>").decode().encode("cp1252")
            return self.page(body)  # the header says UTF-8
        if path == "/no-charset":
            body = ('<html><head><meta charset="iso-8859-1"><title>Gr\u00fc\u00dfe</title></head>'
                    "<body><p>Stra\u00dfe</p></body></html>").encode("iso-8859-1")
            return self.page(body, "text/html")
        if path == "/invalid-utf8":
            return self.page(b"<html><head><title>bad \xff\xfe bytes</title></head>"
                             b"<body>ok \xc3\x28 text</body></html>")
        if path == "/binary-as-html":
            return self.page(os.urandom(8192) + b"\x00" * 64, "text/html")
        if path == "/deep-nesting":
            return self.page(b"<html><body>" + b"<div>" * DEEP_NESTING + b"deep words" + b"</div>" * DEEP_NESTING
                             + b"</body></html>")
        if path == "/many-links":
            links = "".join(f'<a href="/fine/{n}">{n}</a>' for n in range(MANY_LINKS))
            return self.page(_html("many links", links))
        if path == "/ssrf-links":
            return self.page(_html("ssrf", "".join(f'<a href="{href}">x</a>' for href in SSRF_TARGETS)))
        if path.startswith("/x-robots-"):
            header = {"/x-robots-noindex": "noindex", "/x-robots-nofollow": "nofollow",
                      "/x-robots-otherbot": "otherbot: noindex"}.get(path)
            if header:
                return self.page(_html(path, f'<a href="/fine/behind{path}">x</a>'), headers=[("X-Robots-Tag", header)])
        if path == "/redirect-postgres":
            return self.redirect("http://127.0.0.1:5432/from-redirect")
        if path == "/odd-links":
            links = "".join(f'<a href="{href}">{name}</a>'
                            for name, href in odd_links(base, self.server.peers["trap"]).items())
            return self.page(_html("odd links", links))
        return self.send(404, _html("not found"), [("Content-Type", "text/html")], reason="Not Found")

    def sitemaps(self, path: str, base: str) -> bool:
        """The sitemaps persona: sitemaps of every kind, hostile ones, and a page with feeds."""
        xml = "application/xml"
        if path == "/":
            return self.page(_html("sitemaps home", '<a href="/feed-page">feeds</a>'))
        if path == "/feed-page":
            head = ('<link rel="alternate" type="application/rss+xml" href="/feed.rss">'
                    '<link rel="alternate" type="application/atom+xml" href="atom.xml">')
            return self.page(f"<html><head><title>feeds</title>{head}</head><body>a page with feeds</body></html>"
                             .encode())
        if path == "/feed.rss":
            items = "".join(f"<item><title>{n}</title><link>{base}/from-rss/{n}</link></item>"
                            for n in range(SITEMAP_PAGES))
            return self.page(f'<rss version="2.0"><channel><link>{base}/</link>{items}</channel></rss>'.encode(),
                             "application/rss+xml")
        if path == "/atom.xml":
            entries = "".join(f'<entry><link rel="alternate" href="/from-atom/{n}"/></entry>'
                              for n in range(SITEMAP_PAGES))
            return self.page(f'<feed xmlns="http://www.w3.org/2005/Atom">{entries}</feed>'.encode(),
                             "application/atom+xml")
        if path == "/sitemap-index.xml":
            return self.page(_sitemap_index(base, SITEMAP_CHILDREN), xml)
        if path == "/sitemap-a.xml":
            return self.page(_urlset(base, "/only-in-sitemap-a/"), "text/xml")
        if path == "/sitemap-b.xml.gz":
            return self.page(gzip.compress(_urlset(base, "/only-in-sitemap-b/")), "application/x-gzip")
        if path == "/sitemap-nested-index.xml":
            return self.page(_sitemap_index(base, ["/sitemap-too-deep.xml"]), xml)
        if path == "/sitemap-too-deep.xml":
            return self.page(_urlset(base, "/too-deep/"), xml)
        if path == "/sitemap-text.txt":
            return self.page("".join(f"{base}/only-in-text/{n}\n" for n in range(SITEMAP_PAGES)).encode(),
                             "text/plain")
        if path == "/sitemap-laughs.xml":
            return self.page(_laughs(), xml)
        if path == "/sitemap-xxe.xml":
            return self.page(_xxe(base), xml)
        if path == "/sitemap-bomb.xml.gz":
            return self.page(_sitemap_bomb(), "application/gzip")
        if path == "/sitemap-not-xml.xml":
            return self.page(_html("not a sitemap"), "text/html")
        if path.startswith(("/only-in-", "/from-", "/too-deep/", "/xxe")):
            return self.page(_html(f"listed page {path}"))
        return self.send(404, _html("not found"), [("Content-Type", "text/html")], reason="Not Found")

    def robots(self, persona: str, path: str = "/robots.txt") -> bool:
        if persona == "robots_huge":
            filler = b"# padding\n" * (HUGE_ROBOTS_BYTES // 10)
            body = b"User-agent: *\nDisallow: /early/\n" + filler + b"Disallow: /late/\n"
            return self.page(body, "text/plain")
        if persona == "robots_503":
            return self.send(503, b"down", [("Content-Type", "text/plain")], reason="Service Unavailable")
        if persona == "robots_404":
            return self.send(404, b"none", [("Content-Type", "text/plain")], reason="Not Found")
        if persona == "robots_redirect":  # to another host (the main persona), RFC 9309 2.3.1.2
            return self.redirect(f"{self.server.peers['main']}/other-robots.txt")
        if persona == "robots_garbage":
            return self.page(os.urandom(4096), "text/plain")
        if persona == "robots_redirect_loop":  # more hops than RFC 9309's five, then a file that disallows all
            hop = int(path.rsplit("/", 1)[1]) if path.startswith("/robots-hop/") else 0
            if hop < ROBOTS_HOPS:
                return self.redirect(f"/robots-hop/{hop + 1}")
            return self.page(b"User-agent: *\nDisallow: /\n", "text/plain")
        if persona == "robots_huge_delay":
            return self.page(b"User-agent: *\nCrawl-delay: 99999999\nDisallow:\n", "text/plain")
        if persona == "sitemaps":
            lines = "".join(f"Sitemap: {path if n == 0 else self.server.base + path}\n"  # the first one relative
                            for n, path in enumerate(SITEMAPS_IN_ROBOTS))
            return self.page(f"User-agent: *\nDisallow: /private/\n{lines}".encode(), "text/plain")
        return self.page(b"User-agent: *\nDisallow: /private/\n", "text/plain")


def _slowly(byte: bytes, interval: float):
    while True:
        yield byte
        time.sleep(interval)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # clients hang up on purpose here


class HostileWeb:
    """The running personas: .base[persona] is its origin, .log the requests as
    (persona, path, started, ended) with time.time() stamps: started when the request's
    last bytes were read, ended when the response was handed to the socket (or, for a
    response written in pieces, after its last piece)."""

    def __init__(self, big_bytes: int, address: str):
        self.base: dict[str, str] = {}
        self.log: list[tuple[str, str]] = []
        self._servers = []
        for persona in PERSONAS:
            server = _Server((address, 0), _Handler)
            server.persona, server.log, server.big_bytes = persona, self.log, big_bytes
            server.peers = self.base
            server.base = f"http://{address}:{server.server_address[1]}"
            self.base[persona] = server.base
            self._servers.append(server)

    def url(self, path: str, persona: str = "main") -> str:
        return self.base[persona] + path

    def requests_for(self, path: str, persona: str = "main") -> int:
        return sum(1 for p, q, _, _ in self.log if p == persona and q == path)

    def start(self):
        for server in self._servers:
            threading.Thread(target=server.serve_forever, daemon=True, kwargs={"poll_interval": 0.1}).start()

    def stop(self):
        for server in self._servers:
            server.shutdown()
            server.server_close()


@contextlib.contextmanager
def hostile_web(big_bytes: int = 2 << 20, address: str = "127.0.0.1"):
    """Start every persona on a loopback address; big_bytes should exceed the crawler's body cap."""
    for encoding in ("gzip", "deflate", "br"):
        # Compressed once, before serving: made on first request, a bomb took the server
        # 2.5 s, longer than the tests' deadline, and the case became a timeout.
        _bomb(encoding)
    _sitemap_bomb()
    web = HostileWeb(big_bytes, address)
    web.start()
    try:
        yield web
    finally:
        web.stop()
