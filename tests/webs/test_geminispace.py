"""webs/geminispace: the loopback Geminispace, spoken to by a small TLS client written here.

No database. Every socket has a timeout and every read loop a deadline; the capsules live
on 127.0.2.x.
"""
import hashlib
import re
import socket
import ssl
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import ada_url
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes

from webs.geminispace import (HOSTILE, SPECIALS, Entry, GeminiSpace, SpaceConfig, audit, count_violations,
                               geminispace, read_log, run_server)
from bench.procstat import TcpSocket, socket_inodes, tcp_sockets
from indexer.gemtext import parse_gemtext

from ..crawl_helpers import wait_until

pytestmark = pytest.mark.backend_free  # a server and a parser: no database in them

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 5.0
MARKERS = re.compile(r"q[a-z]*?q[a-z]")


@dataclass
class Answer:
    header: bytes
    body: bytes
    certificate: bytes
    closed: bool  # the server closed the connection (EOF) within the deadline


def _context(**versions) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    for name, value in versions.items():
        setattr(context, name, value)
    return context


def fetch(url: str, request: bytes | None = None, *, timeout: float = TIMEOUT, max_bytes: int = 1 << 20,
          server_hostname: str | None = None, context: ssl.SSLContext | None = None) -> Answer:
    """One Gemini request: connect, TLS, send, read until EOF, max_bytes or the deadline."""
    parts = urlsplit(url)
    deadline = time.monotonic() + timeout
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as raw:
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with (context or _context()).wrap_socket(raw, server_hostname=server_hostname) as tls:
            certificate = tls.getpeercert(binary_form=True)
            tls.sendall(request if request is not None else url.encode() + b"\r\n")
            data, closed = b"", False
            while len(data) < max_bytes:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                tls.settimeout(remaining)
                try:
                    chunk = tls.recv(65536)
                except (TimeoutError, socket.timeout):
                    break
                if not chunk:
                    closed = True
                    break
                data += chunk
    header, crlf, body = data.partition(b"\r\n")
    return Answer(header if crlf else data, body, certificate, closed)


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    log = tmp_path_factory.mktemp("geminispace") / "requests.log"
    with geminispace(capsules=4, pages=20, seed=1, log=log, slow_delay=0.3, hostile_seconds=3.0,
                     slow_down_times=0) as running:
        yield running


# ---------------------------------------------------------------- the model

def test_it_puts_capsules_on_their_own_loopback_addresses_on_one_port(space):
    assert space.addresses[:3] == ["127.0.2.1", "127.0.2.2", "127.0.2.3"]
    assert space.netlocs[0] == f"127.0.2.1:{space.port}"
    assert space.roots == [f"gemini://127.0.2.{i}:{space.port}/" for i in range(1, 6)]
    assert space.seeds == [space.roots[0]]
    assert space.url("/gemlog/3.gmi", capsule=2) == f"gemini://127.0.2.3:{space.port}/gemlog/3.gmi"
    assert [space.role(i) for i in range(7)] == ["home", "content", "content", "content", "slow", "hostile", "tarpit"]


def test_it_leaves_the_default_port_out_of_its_urls():
    model = GeminiSpace(SpaceConfig(port=1965))
    assert model.roots[0] == "gemini://127.0.2.1/"
    assert model.capsule_of("gemini://127.0.2.1:1965/x") == 0


def test_it_writes_every_link_so_that_it_resolves_to_its_target(space):
    forms = set()
    for capsule in range(space.config.capsules + 1):
        for k in range(space.page_count(capsule)):
            page = space.page_at(capsule, space.page_path(k))
            for link in page.links:
                if link.target is not None:
                    assert ada_url.join_url(space.url(page.path, capsule), link.href) == space.url(link.target[1],
                                                                                               link.target[0])
                    forms.add("absolute" if link.href.startswith("gemini:") else "root" if link.href[0] == "/"
                              else "dot" if link.href.startswith(".") else "relative")
    assert forms == {"absolute", "root", "dot", "relative"}


def test_it_reaches_every_page_robots_txt_allows_and_no_other():
    model = GeminiSpace(SpaceConfig(capsules=6, pages=300, port=1965))
    reachable = model.reachable()
    for capsule in range(6):
        for k in range(300):
            url = model.url(model.page_path(k), capsule)
            assert (url in reachable) == model.allowed(url), url
    assert model.disallowed() == {u for c in range(6) for k in range(300)
                                  if not model.allowed(u := model.url(model.page_path(k), c))}
    assert set(model.special.values()) - reachable == set()
    assert not set(model.hostile.values()) & reachable


def test_it_reads_robots_txt_with_the_virtual_agents():
    model = GeminiSpace(SpaceConfig(capsules=4, port=1965))
    url = model.url
    assert not model.allowed(url("/private/7.gmi", 0)) and model.allowed(url("/drafts/8.gmi", 0))
    # kind 1: indexer's group applies, so "*" does not (unless star="always"); researcher's is not ours
    assert not model.allowed(url("/drafts/8.gmi", 1))
    assert model.allowed(url("/private/7.gmi", 1))
    assert not model.allowed(url("/private/7.gmi", 1), star="always")
    assert model.allowed(url("/gemlog/1.gmi", 1))
    assert not model.allowed(url("/gemlog/1.gmi", 1), agents=("researcher",))
    assert model.crawl_delay(1) == 0.2 and model.crawl_delay(0) is None
    # kind 2: crawlerweb's group with a longer Allow; archiver's; "*" disallows everything else
    assert model.allowed(url("/private/7.gmi", 2)) and not model.allowed(url("/private/17.gmi", 2))
    assert not model.allowed(url("/drafts/8.gmi", 2))
    assert not model.allowed(url("/gemlog/1.gmi", 2), agents=("somebot",))
    assert model.robots_txt(3) is None and model.allowed(url("/private/7.gmi", 3))


def test_it_gives_every_text_page_a_unique_word_and_no_other_q(space):
    words = space.words()
    assert len(set(words.values())) == len(words) > 80
    for url, word in list(words.items())[:40]:
        page = space.page(url)
        charset = "iso-8859-1" if "iso-8859-1" in page.meta else "utf-8"
        found = set(MARKERS.findall(space.body(page).decode(charset)))
        assert found == {word, *page.art_markers} | ({page.code_word} if page.code_word else set())


def test_it_draws_banners_a_gemtext_parser_leaves_out_and_code_it_keeps(space):
    pages = [space.page_at(c, space.page_path(k)) for c in range(4) for k in range(20)]
    with_banner = [p for p in pages if any(m.endswith("qx") for m in p.art_markers)]
    with_code = [p for p in pages if p.code_word]
    assert len(with_banner) > len(pages) / 2 and with_code
    for page in pages:
        parsed = parse_gemtext(space.body(page), space.url(page.path, page.capsule))
        assert page.unique in parsed.text
        assert not any(marker in parsed.text for marker in page.art_markers)
        assert page.code_word is None or page.code_word in parsed.text
        assert parsed.title == page.title


# ---------------------------------------------------------------- the protocol

def test_it_serves_a_page_over_tls_with_a_gemtext_header(space):
    page = space.page_at(1, "/gemlog/1.gmi")
    answer = fetch(space.url("/gemlog/1.gmi", 1))
    assert answer.closed
    assert answer.header == b"20 text/gemini; charset=utf-8; lang=en"
    assert answer.body == space.body(page)
    assert page.unique.encode() in answer.body


def test_it_serves_robots_txt_as_plain_text_and_51_without_one(space):
    answer = fetch(space.url("/robots.txt", 2))
    assert answer.header == b"20 text/plain; charset=utf-8"
    assert answer.body.decode() == space.robots_txt(2)
    assert "User-agent: crawlerweb\nDisallow: /private/\nAllow: /private/7.gmi\n" in answer.body.decode()
    assert fetch(space.url("/robots.txt", 3)).header == b"51 Not found"


@pytest.mark.parametrize("name", [n for n in SPECIALS if n != "slow-down"])
def test_it_answers_each_special_page_with_its_header(space, name):
    _, status, meta, _ = SPECIALS[name]
    meta = meta.format(netloc=space.netlocs[0], slow_down_seconds=1)
    answer = fetch(space.special[name])
    assert answer.closed
    assert answer.header == f"{status} {meta}".encode()
    assert (answer.body != b"") == (status == 20)


def test_it_serves_a_png_a_plain_text_and_a_latin1_page(space):
    png = fetch(space.special["image"])
    assert png.body.startswith(b"\x89PNG\r\n\x1a\n") and png.body.endswith(b"IEND\xaeB`\x82")
    plain = fetch(space.special["plain-text"])
    assert space.page(space.special["plain-text"]).unique in plain.body.decode()
    latin1 = fetch(space.special["latin1"])
    assert b"Caf\xe9 cr\xe8me" in latin1.body
    assert "Café crème" in parse_gemtext(latin1.body, space.special["latin1"], "iso-8859-1").text


def test_it_answers_an_input_page_with_a_query(space):
    assert fetch(space.special["input"] + "?gemini").header == b"20 text/gemini"


def test_it_slows_a_client_down_with_44_then_serves_the_page():
    with geminispace(capsules=1, pages=10, slow_down_seconds=2, slow_down_times=2) as running:
        url = running.special["slow-down"]
        assert [fetch(url).header for _ in range(3)] == [b"44 2", b"44 2", b"20 text/gemini"]


@pytest.mark.parametrize("request_line, header", [
    (b"gemini://127.0.2.1:{port}/" + b"a" * 1100 + b"\r\n", b"59 Request longer than 1024 bytes"),
    (b"gemini://127.0.2.1:{port}/\n", b"59 Request must end with CRLF"),
    (b"/gemlog/1.gmi\r\n", b"59 Bad request: not an absolute URL"),
    (b"gemini://127.0.2.1:{port}/\xff\r\n", b"59 Request is not UTF-8"),
    (b"gemini://127.0.2.1:{port}/#top\r\n", b"59 Bad request: userinfo or fragment"),
    (b"gemini://someone@127.0.2.1:{port}/\r\n", b"59 Bad request: userinfo or fragment"),
    (b"https://127.0.2.1:{port}/\r\n", b"53 Proxy request refused"),
    (b"gemini://127.0.2.2:{port}/\r\n", b"53 Proxy request refused"),
    (b"gemini://127.0.2.1:{port}/no/such/page.gmi\r\n", b"51 Not found"),
])
def test_it_refuses_bad_requests(space, request_line, header):
    answer = fetch(space.roots[0], request_line.replace(b"{port}", str(space.port).encode()))
    assert answer.header == header and answer.closed


def test_it_accepts_a_url_of_exactly_1024_bytes(space):
    url = space.url("/") + "x" * (1024 - len(space.url("/")))
    assert len(url) == 1024
    assert fetch(url).header == b"51 Not found"


def test_it_speaks_tls_1_2_and_1_3_with_or_without_sni(space):
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        context = _context(minimum_version=version, maximum_version=version)
        assert fetch(space.roots[1], context=context).header.startswith(b"20 ")
    fetch(space.roots[1], server_hostname="capsule.example")
    sent = [e.sni for e in space.requests() if e.capsule == space.netlocs[1]]
    assert "capsule.example" in sent and "-" in sent


def test_it_makes_a_self_signed_certificate_per_capsule(space):
    der = fetch(space.roots[2]).certificate
    certificate = x509.load_der_x509_certificate(der)
    assert certificate.issuer == certificate.subject
    assert [str(ip) for ip in certificate.extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value.get_values_for_type(x509.IPAddress)] == ["127.0.2.3"]
    assert hashlib.sha256(der).hexdigest() == space.fingerprint(2) != space.fingerprint(1)
    assert certificate.not_valid_after_utc == space.not_after(2).replace(microsecond=0)


def _served_fingerprint(url: str) -> str:
    return hashlib.sha256(fetch(url).certificate).hexdigest()


def test_it_replaces_a_certificate_on_request():
    with geminispace(capsules=2, pages=10) as running:
        before, key_before = _served_fingerprint(running.roots[1]), running.key_fingerprint(1)
        new = running.replace_certificate(1)
        assert new != before
        assert _served_fingerprint(running.roots[1]) == new == running.fingerprint(1)
        pem = x509.load_pem_x509_certificate(running.certificate_pem(1))
        assert pem.fingerprint(hashes.SHA256()).hex() == new
        assert running.key_fingerprint(1) != key_before
        assert _served_fingerprint(running.roots[0]) == running.fingerprint(0)  # the others keep theirs
        # A renewal: a new certificate for the same key.
        key_now = running.key_fingerprint(1)
        renewed = running.replace_certificate(1, keep_key=True)
        assert renewed != new and running.key_fingerprint(1) == key_now
        assert _served_fingerprint(running.roots[1]) == renewed


def test_it_answers_the_slow_capsule_after_its_delay(space):
    started = time.monotonic()
    assert fetch(space.roots[space.slow_index]).header.startswith(b"20 ")
    assert time.monotonic() - started >= 0.3


# ---------------------------------------------------------------- the hostile capsule

def test_it_sends_an_endless_body_until_the_client_leaves(space):
    answer = fetch(space.hostile["endless-body"], max_bytes=300_000)
    assert answer.header == b"20 text/gemini" and not answer.closed and len(answer.body) >= 200_000
    entry = _wait_for_entry(space, "/endless")
    assert "bytes in" in entry.meta and entry.end_mono - entry.start_mono < 2.0  # not hostile_seconds (3)


def test_it_sends_a_header_over_1024_bytes(space):
    answer = fetch(space.hostile["long-header"])
    assert len(answer.header) > 2000 and answer.header.startswith(b"20 text/gemini;") and answer.closed


def test_it_sends_a_header_that_never_ends(space):
    answer = fetch(space.hostile["endless-header"], max_bytes=50_000)
    assert b"\r\n" not in answer.header and len(answer.header) >= 50_000 and not answer.closed


def test_it_sends_a_header_without_crlf_then_hangs(space):
    answer = fetch(space.hostile["no-crlf"], timeout=0.5)
    assert answer.header == b"20 text/gemini" and not answer.closed


@pytest.mark.parametrize("name, header", [("bad-status-one-digit", b"2 text/gemini"),
                                          ("bad-status-letters", b"xx text/gemini"), ("empty-answer", b"")])
def test_it_sends_malformed_answers(space, name, header):
    answer = fetch(space.hostile[name])
    assert answer.header == header and answer.closed


def test_it_drips_a_body(space):
    answer = fetch(space.hostile["drip"], timeout=1.2)
    assert answer.header == b"20 text/gemini" and answer.body.startswith(b"Drop 0.\nDrop 1.\n") and not answer.closed


def test_it_never_answers_the_tls_handshake_of_the_tarpit(space):
    with pytest.raises((TimeoutError, socket.timeout)):
        fetch(space.hostile["handshake-hang"], timeout=0.5)
    assert set(HOSTILE) == set(space.hostile)


# ---------------------------------------------------------------- the log and the audit

def _wait_for_entry(space, path, seconds=5.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = [e for e in space.requests() if e.path == path]
        if found:
            return found[-1]
        time.sleep(0.05)
    raise AssertionError(f"no log entry for {path}")


def test_it_logs_each_request_with_its_times(space):
    url = space.url("/gemlog/2.gmi", 3)
    fetch(url)
    entry = [e for e in space.requests() if e.request == url][-1]
    assert entry.capsule == space.netlocs[3] and entry.client.startswith("127.0.0.1:")
    assert (entry.status, entry.meta, entry.path) == ("20", "text/gemini; charset=utf-8; lang=en", "/gemlog/2.gmi")
    assert entry.start <= entry.end and entry.start_mono <= entry.end_mono
    assert read_log(space.log_path)[-1] == space.requests()[-1]


def _entries(*spans, capsule="127.0.2.1:1965", status="20", meta="text/gemini"):
    return [Entry(a, b, a, b, capsule, "127.0.0.1:1", "-", status, meta, f"gemini://{capsule}/{i}")
            for i, (a, b) in enumerate(spans)]


def test_it_counts_overlaps_short_gaps_and_early_requests_after_44():
    assert audit(_entries((0, 1), (1.2, 2), (2.2, 3)), delay=0.2)["violations"] == 0
    report = audit(_entries((0, 1), (0.5, 1.5), (1.6, 2)), delay=0.2)
    assert len(report["overlaps"]) == 1 and len(report["gap_violations"]) == 1
    slowed = _entries((0, 1), status="44", meta="2") + _entries((1.5, 2), (3.1, 3.5))
    report = audit(sorted(slowed), delay=0.2)
    assert len(report["slow_down_violations"]) == 1 and report["violations"] == 1
    other = _entries((0.5, 1.5), capsule="127.0.2.2:1965")
    assert audit(_entries((0, 1)) + other, delay=0.2)["violations"] == 0


def test_it_finds_the_violations_of_an_impolite_client_in_its_log(tmp_path):
    log = tmp_path / "requests.log"
    with geminispace(capsules=2, pages=10, log=log, slow_delay=0.4) as running:
        slow = running.roots[running.slow_index]
        threads = [threading.Thread(target=fetch, args=(slow,)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT)
        fetch(running.url("/gemlog/1.gmi", 0))  # capsule 0 asks for no Crawl-delay: the default delay holds
        time.sleep(0.3)
        fetch(running.url("/gemlog/2.gmi", 0))
        report = running.audit(delay=0.2)
        assert len(report["overlaps"]) == 1 and report["gap_violations"] == []
        assert running.violations(delay=0.5) == 2
        fetch(running.url("/gemlog/1.gmi", 1))  # capsule 1's Crawl-delay (0.2 s) replaces the default delay
        time.sleep(0.3)
        fetch(running.url("/gemlog/2.gmi", 1))
        assert running.violations(delay=0.5) == 2
    assert count_violations(log, 0.2) == 1


def test_it_compares_a_crawl_with_the_truth(space):
    for url in (space.url("/robots.txt", 2), space.url("/gemlog/1.gmi", 1), space.roots[0]):
        fetch(url)
    report = space.audit(delay=0.0)
    assert space.url("/gemlog/1.gmi", 1) in report["fetched"]
    assert space.url("/robots.txt", 2) not in report["fetched"] and report["robots_fetches"]
    assert space.roots[0] in report["fetched"] and report["missing"]


# ---------------------------------------------------------------- life cycle

def _sockets_on(port: int) -> list[TcpSocket]:
    """This process's TCP sockets with `port` at either end (other threads of the suite may
    open files and sockets of their own meanwhile, which are not counted)."""
    ours = socket_inodes()
    return [sock for sock in tcp_sockets() if sock.inode in ours and port in (sock.local_port, sock.remote_port)]


def _fetch_quietly(url):
    try:
        fetch(url, timeout=2.0)
    except OSError:  # the server went away mid-handshake: what this test does
        pass


def test_it_stops_at_once_with_connections_open_and_leaves_nothing_behind():
    with geminispace(capsules=2, pages=10, hostile_seconds=30.0) as running:
        waiting = [threading.Thread(target=_fetch_quietly, args=(running.hostile[name],))
                   for name in ("no-crlf", "handshake-hang", "drip")]
        for thread in waiting:
            thread.start()
        fetch(running.roots[0])
        wait_until(lambda: len(running._server.writers) >= 2, TIMEOUT,
                   "the server to hold the hostile connections open")
        assert f"geminispace-{running.port}" in [t.name for t in threading.enumerate()]
        assert len(_sockets_on(running.port)) >= 3  # listening, and the connections held open
        root = running.roots[0]
        started = time.monotonic()
    # At once: not after the hostile connections' 30 s (a loaded machine takes tenths of a second).
    assert time.monotonic() - started < 5.0
    for thread in waiting:
        thread.join(TIMEOUT)
    assert f"geminispace-{running.port}" not in [t.name for t in threading.enumerate()]
    with pytest.raises(OSError):
        socket.create_connection((urlsplit(root).hostname, urlsplit(root).port), timeout=1).close()
    assert _sockets_on(running.port) == []


def test_it_serves_from_the_command_line(tmp_path):
    config = SpaceConfig(capsules=2, pages=10, seed=3)
    log = tmp_path / "requests.log"
    with run_server(config, log) as served:
        assert served.ready["roots"] == served.roots
        answer = fetch(served.roots[1])
        assert answer.header.startswith(b"20 ") and served.page(served.roots[1]).unique.encode() in answer.body
        assert hashlib.sha256(answer.certificate).hexdigest() == served.ready["fingerprints"][served.netlocs[1]]
    assert [e.request for e in read_log(log)] == [served.roots[1]]
    truth = subprocess.run([sys.executable, "-m", "webs.geminispace", "truth", *config.to_argv(),
                            "--port", str(served.port)], cwd=ROOT, capture_output=True, text=True, timeout=60,
                           check=True)
    assert set(truth.stdout.split()) == served.reachable()
