"""Tests of the deterministic sample web (webs/sampleweb), no Django needed.

Servers run on loopback ports 8391-8394 (127.0.1.x addresses); every
network call has a timeout and every loop is bounded.
"""
import http.client
import json
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from webs.sampleweb import SampleWeb, WebConfig, audit_log, run_server  # noqa: E402

TIMEOUT = 5
CONFIG = WebConfig(port=8391)
WEB = SampleWeb(CONFIG)
UNIQUE_RE = re.compile(rb"qu[a-z]*?qz")


def _session():
    session = requests.Session()
    session.trust_env = False          # never route loopback through a proxy
    return session


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("sampleweb") / "requests.log"
    with run_server(CONFIG, log) as web:
        yield web


@pytest.fixture
def client():
    with _session() as session:
        yield session


def _url(web, index, path):
    return f"http://{web.hosts[index]}{path}"


# ------------------------------------------------------------------ server
def test_it_serves_robots_txt_with_crawl_delay_on_the_first_hosts(server, client):
    for index in range(1, CONFIG.crawl_delay_hosts + 1):
        answer = client.get(_url(server, index, "/robots.txt"), timeout=TIMEOUT)
        assert answer.status_code == 200
        assert answer.headers["Content-Type"].startswith("text/plain")
        assert answer.text == "User-agent: *\nDisallow: /private/\nCrawl-delay: 0.2\n"
        assert server.delay_for(server.hosts[index]) == 0.2
    for index in (0, server.no_robots_index + 1, server.trap_index):
        answer = client.get(_url(server, index, "/robots.txt"), timeout=TIMEOUT)
        assert answer.text == "User-agent: *\nDisallow: /private/\n"
        assert server.delay_for(server.hosts[index]) is None


def test_it_answers_404_for_robots_txt_on_the_no_robots_host(server, client):
    assert server.no_robots_index == CONFIG.crawl_delay_hosts + 1
    answer = client.get(_url(server, server.no_robots_index, "/robots.txt"), timeout=TIMEOUT)
    assert answer.status_code == 404
    assert not server.robots_disallowed(_url(server, server.no_robots_index, "/private/1.html"))
    assert server.robots_disallowed(_url(server, 0, "/private/1.html"))


def test_it_serves_pages_within_the_size_bounds_with_their_unique_word(server, client):
    low, high = CONFIG.page_kb
    for index in range(server.trap_index):
        if index == server.slow_index or index == server.flaky_index:
            continue
        for path in ("/", "/p/0.html", "/p/17.html", f"/p/{CONFIG.pages_per_host - 1}.html"):
            answer = client.get(_url(server, index, path), timeout=TIMEOUT)
            assert answer.status_code == 200
            assert answer.headers["Content-Type"] == "text/html; charset=utf-8"
            assert low * 1024 <= len(answer.content) <= high * 1024
            assert int(answer.headers["Content-Length"]) == len(answer.content)
            word = server.unique_word(answer.url)
            assert set(UNIQUE_RE.findall(answer.content)) == {word.encode()}
            assert "<title>" in answer.text and word in answer.text.split("</title>")[0]


def test_it_serves_the_same_bytes_across_server_starts(tmp_path):
    config = WebConfig(port=8392)
    urls = [f"http://{config.netloc(i)}{p}" for i in (0, 2, 4) for p in ("/", "/p/9.html")]
    urls.append(f"http://{config.netloc(config.hosts - 1)}/cal/2026/01/")
    bodies = []
    for run in range(2):
        with run_server(config, tmp_path / f"run{run}.log"), _session() as session:
            bodies.append([session.get(url, timeout=TIMEOUT).content for url in urls])
    assert bodies[0] == bodies[1]
    web = SampleWeb(config)
    assert bodies[0] == [web.body(web.page(url)) for url in urls]


def test_it_answers_flaky_pages_first_with_429_or_503_then_200(tmp_path):
    config = WebConfig(port=8393)
    with run_server(config, tmp_path / "flaky.log") as web, _session() as session:
        for path, first in (("/p/1.html", 429), ("/p/2.html", 503), ("/", 503)):
            url = _url(web, web.flaky_index, path)
            answer = session.get(url, timeout=TIMEOUT)
            assert answer.status_code == first
            assert answer.headers["Retry-After"] == str(config.retry_after)
            assert int(answer.headers["Content-Length"]) == len(answer.content)
            again = session.get(url, timeout=TIMEOUT)
            assert again.status_code == 200 and "Retry-After" not in again.headers
            assert again.content == web.body(web.page(url))
        robots = session.get(_url(web, web.flaky_index, "/robots.txt"), timeout=TIMEOUT)
        assert robots.status_code == 200


def test_it_delays_the_slow_host_without_blocking_the_others(server, client):
    slow_host, slow_port = server.hosts[server.slow_index].split(":")
    # Send the slow request first (the call returns once it is written), so it is surely
    # pending while the fast one is served; no thread, no guessed head start.
    slow = http.client.HTTPConnection(slow_host, int(slow_port), timeout=TIMEOUT)
    began_slow = time.monotonic()
    slow.request("GET", "/p/4.html")
    began = time.monotonic()
    fast = client.get(_url(server, 1, "/p/4.html"), timeout=TIMEOUT)
    fast_elapsed = time.monotonic() - began
    slow_response = slow.getresponse()
    slow_response.read()
    slow_elapsed = time.monotonic() - began_slow
    slow.close()
    assert slow_response.status == 200 and fast.status_code == 200
    assert slow_elapsed >= CONFIG.slow_delay
    assert fast_elapsed < CONFIG.slow_delay


def test_it_answers_redirects_with_the_expected_statuses_and_locations(server, client):
    expected = [("/redirect/a", 301, "/redirect/b"), ("/redirect/b", 302, "/redirect/c"),
                ("/redirect/c", 307, f"http://{server.hosts[2]}/p/5.html"),
                ("/loop/a", 301, "/loop/b"), ("/loop/b", 301, "/loop/a"),
                ("/long/6", 302, "/p/1.html")]
    expected += [(f"/long/{i}", 302, f"/long/{i + 1}") for i in range(1, 6)]
    for path, status, location in expected:
        answer = client.get(_url(server, 0, path), allow_redirects=False, timeout=TIMEOUT)
        assert (answer.status_code, answer.headers["Location"]) == (status, location)
    for path, status in (("/missing/1.html", 404), ("/missing/2.html", 404),
                         ("/gone/1.html", 410), ("/nowhere", 404)):
        assert client.get(_url(server, 0, path), timeout=TIMEOUT).status_code == status


def test_it_serves_byte_identical_duplicates(server, client):
    original = client.get(_url(server, 0, "/p/3.html"), timeout=TIMEOUT).content
    assert client.get(_url(server, 0, "/dup/3.html"), timeout=TIMEOUT).content == original
    assert client.get(_url(server, 0, "/copy/3.html"), timeout=TIMEOUT).content == original


def test_it_serves_the_special_pages(server, client):
    pdf = client.get(_url(server, 0, "/report.pdf"), timeout=TIMEOUT)
    assert pdf.headers["Content-Type"] == "application/pdf" and pdf.content.startswith(b"%PDF")
    latin = client.get(_url(server, 0, "/charset/latin1.html"), timeout=TIMEOUT)
    assert latin.headers["Content-Type"] == "text/html; charset=iso-8859-1"
    assert "Caf\u00e9" in latin.content.decode("iso-8859-1") and b"\xfcber" in latin.content
    assert b'<meta name="robots" content="noindex">' in client.get(
        _url(server, 0, "/meta/noindex.html"), timeout=TIMEOUT).content
    assert b'<base href="/p/">' in client.get(_url(server, 0, "/base/index.html"),
                                             timeout=TIMEOUT).content
    for path in ("/only-from-nofollow/1.html", "/nofollow/3.html", "/private/3.html"):
        assert client.get(_url(server, 0, path), timeout=TIMEOUT).status_code == 200
    head = client.head(_url(server, 0, "/p/2.html"), timeout=TIMEOUT)
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["Content-Length"]) == len(server.body(server.page(head.url)))


def test_it_keeps_connections_alive_and_honours_connection_close(server):
    conn = http.client.HTTPConnection(server.hosts[0].split(":")[0], server.port,
                                      timeout=TIMEOUT)
    try:
        conn.request("GET", "/p/1.html")
        first = conn.getresponse()
        first.read()
        sock = conn.sock
        conn.request("HEAD", "/p/2.html")
        second = conn.getresponse()
        second.read()
        assert (first.status, second.status) == (200, 200)
        assert conn.sock is sock and first.getheader("Connection") == "keep-alive"
    finally:
        conn.close()
    with socket.create_connection((server.hosts[1].split(":")[0], server.port),
                                  timeout=TIMEOUT) as raw:
        raw.sendall(b"GET /robots.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            chunk = raw.recv(65536)
            if not chunk:
                break                    # the server closed the connection
            data += chunk
        assert data.startswith(b"HTTP/1.1 200 OK") and b"Connection: close" in data
        assert data.endswith(b"Crawl-delay: 0.2\n")


def test_it_logs_one_line_per_request_and_the_audit_sees_real_overlap(tmp_path):
    config = WebConfig(port=8394)
    log = tmp_path / "requests.log"
    with run_server(config, log) as web, _session() as session:
        requests_made = [("GET", 0, "/", 200), ("HEAD", 1, "/p/2.html", 200),
                         ("GET", 0, "/missing/1.html", 404), ("GET", 3, "/robots.txt", 404),
                         ("GET", web.slow_index, "/p/1.html", 200)]
        for method, index, path, _ in requests_made:
            session.request(method, _url(web, index, path), allow_redirects=False,
                            timeout=TIMEOUT)
        slow = _url(web, web.slow_index, "/p/2.html")

        def fetch():
            with _session() as own:
                own.get(slow, timeout=TIMEOUT)

        threads = [threading.Thread(target=fetch) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT)
    lines = log.read_text().splitlines()
    assert len(lines) == len(requests_made) + 2
    for line, (method, index, path, status) in zip(lines, requests_made):
        fields = line.split("\t")
        assert fields[2:6] == [web.hosts[index], method, path, str(status)]
        assert re.fullmatch(r"\d+\.\d{6}", fields[0]) and re.fullmatch(r"\d+\.\d{6}", fields[1])
        assert float(fields[0]) <= float(fields[1]) <= time.time()
    connection = [line.split("\t")[6] for line in lines]
    assert connection[0] == connection[2] != connection[1]  # kept alive per host, one per host
    slow_line = lines[len(requests_made) - 1].split("\t")
    assert float(slow_line[1]) - float(slow_line[0]) >= config.slow_delay - 0.001
    report = audit_log(log, web, default_delay=0.0)
    assert report["requests"] == len(lines)
    assert report["max_in_flight"][web.hosts[web.slow_index]] == 2
    assert report["in_flight_violations"] == 1
    # the two parallel fetches of the slow page came on two more connections at once
    assert report["pacing"]["max_parallel_connections_per_host"] == 2
    assert report["pacing"]["max_connections_per_host"] == 3


# ------------------------------------------------------------ ground truth
TRUTH = WEB.ground_truth()


def _home(path):
    return f"http://{WEB.hosts[0]}{path}"


def test_it_cuts_the_long_redirect_chain_and_keeps_the_short_one():
    assert {_home(f"/long/{i}") for i in range(1, 5)} <= TRUTH
    assert not {_home(f"/long/{i}") for i in (5, 6)} & TRUTH
    assert {_home("/redirect/a"), _home("/redirect/b"), _home("/redirect/c"),
            f"http://{WEB.hosts[2]}/p/5.html"} <= TRUTH
    shorter = WEB.ground_truth(max_redirects=1)
    assert _home("/long/2") in shorter and _home("/long/3") not in shorter


def test_it_admits_both_loop_urls_once():
    assert _home("/loop/a") in TRUTH and _home("/loop/b") in TRUTH
    assert len(TRUTH) == len(set(TRUTH))


def test_it_leaves_nofollow_private_and_non_html_targets_out_of_the_truth():
    assert _home("/only-from-nofollow/1.html") not in TRUTH
    assert _home("/only-from-pdf/1.html") not in TRUTH
    assert not [url for url in TRUTH if "/nofollow/" in url]
    assert not [url for url in TRUTH if WEB.robots_disallowed(url)]
    private = [url for url in TRUTH if "/private/" in url]
    assert private and {url.split("/")[2] for url in private} == {
        WEB.hosts[WEB.no_robots_index]}
    assert not [url for url in TRUTH if not url.startswith("http://") or "#" in url]
    assert {_home("/meta/noindex.html"), _home("/p/7.html"), _home("/p/8.html"),
            _home("/p/9.html"), _home("/report.pdf"), _home("/dup/3.html"),
            _home("/copy/3.html"), _home("/missing/1.html"), _home("/gone/1.html")} <= TRUTH


def test_it_bounds_the_calendar_trap_by_the_depth_limit():
    trap = WEB.hosts[WEB.trap_index]
    for depth_limit in (20, 6, 3):
        calendar = [u for u in WEB.ground_truth(depth_limit=depth_limit) if trap + "/cal/" in u]
        # "/" is at depth 1, /cal/2026/01/ at depth 2, one month further per level
        assert len(calendar) == 2 * (depth_limit - 2) + 1
    assert f"http://{trap}/cal/2026/01/" in TRUTH and f"http://{trap}/cal/2025/12/" in TRUTH


def test_it_reaches_every_page_of_every_content_host():
    for index in WEB.content_hosts:
        for page in range(CONFIG.pages_per_host):
            assert f"http://{WEB.hosts[index]}/p/{page}.html" in TRUTH


def test_it_puts_a_unique_word_on_every_page_of_the_truth():
    seen = {}
    for url in sorted(TRUTH):
        page = WEB.page(url)
        found = set(UNIQUE_RE.findall(WEB.body(page)))
        if page.status != 200:
            assert page.unique is None and not found
            continue
        assert found == {page.unique.encode()}, url
        if page.kind == "html":                 # bodies are cut to the drawn size
            assert len(WEB.body(page)) == page.size, url
        if "/dup/" not in url and "/copy/" not in url:
            assert page.unique not in seen, (url, seen.get(page.unique))
            seen[page.unique] = url


def test_it_serves_every_url_of_the_truth(server, client):
    assert server.ground_truth() == TRUTH
    for url in sorted(TRUTH):
        expected = server.page(url)
        for _ in range(2):                      # one retry for the flaky host
            answer = client.get(url, allow_redirects=False, timeout=TIMEOUT)
            if answer.status_code not in (429, 503):
                break
        assert answer.status_code == expected.status, url
        if expected.status == 200:
            assert answer.content == server.body(expected), url


def test_it_prints_the_truth_from_the_cli():
    out = subprocess.run([sys.executable, "-m", "webs.sampleweb", "truth",
                          *CONFIG.to_argv(), "--depth-limit", "6"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.splitlines() == sorted(WEB.ground_truth(depth_limit=6))


# ------------------------------------------------------------------- audit
def _write_log(path, rows):
    path.write_text("".join(f"{s:.6f}\t{e:.6f}\t{n}\tGET\t{p}\t{st}\n"
                            for s, e, n, p, st in rows))
    return path


def _polite_rows(web, default_delay):
    """A sequential crawl of the truth that respects every rule."""
    rows, clock, last_end = [], 1000.0, {}
    urls = [f"http://{netloc}/robots.txt" for netloc in web.hosts] + sorted(TRUTH)
    for url in urls:
        netloc, path = url.split("/", 3)[2], "/" + url.split("/", 3)[3]
        gap = web.delay_for(netloc) or default_delay
        start = max(clock, last_end.get(netloc, -1e9) + gap)
        status = web.page(url).status
        attempts = [web.flaky_status(path), status] if (
            web.role(netloc) == "flaky" and path != "/robots.txt") else [status]
        for answer in attempts:
            rows.append((start, start + 0.01, netloc, path, answer))
            last_end[netloc] = start + 0.01
            start += 0.01 + max(gap, web.config.retry_after if answer in (429, 503) else 0)
        clock += 0.001
    return rows


def test_it_reports_no_violation_for_a_polite_crawl(tmp_path):
    log = _write_log(tmp_path / "polite.log", _polite_rows(WEB, 0.5))
    report = audit_log(log, WEB, default_delay=0.5)
    assert report["violations"] == 0, report
    assert report["missing"] == [] and report["unexpected"] == []
    assert report["duplicate_fetches"] == {}
    assert report["robots_fetches"] == {netloc: 1 for netloc in WEB.hosts}
    assert report["requests"] == len(WEB.hosts) + len(TRUTH) + sum(
        1 for url in TRUTH if WEB.role(url.split("/")[2]) == "flaky")
    assert json.loads(json.dumps(report)) == report


@pytest.mark.parametrize("kind", ["overlap", "gap", "retry_after", "private", "duplicate"])
def test_it_catches_a_planted_violation(tmp_path, kind):
    rows = _polite_rows(WEB, 0.5)
    host = WEB.hosts[4]                         # a host without Crawl-delay
    later = max(row[1] for row in rows) + 100
    if kind == "overlap":
        rows += [(later, later + 1, host, "/p/1.html", 200),
                 (later + 2.5, later + 3.5, host, "/p/2.html", 200),
                 (later + 3.0, later + 3.2, host, "/p/3.html", 200)]
    elif kind == "gap":
        rows += [(later, later + 0.1, host, "/p/1.html", 200),
                 (later + 0.3, later + 0.4, host, "/p/2.html", 200)]
    elif kind == "retry_after":
        flaky = WEB.hosts[WEB.flaky_index]
        rows += [(later, later + 0.1, flaky, "/p/1.html", 429),
                 (later + 0.7, later + 0.8, flaky, "/p/1.html", 200)]
    elif kind == "private":
        rows += [(later, later + 0.1, WEB.hosts[0], "/private/1.html", 200)]
    else:
        rows += [(later, later + 0.1, host, "/p/1.html", 200)]
    report = audit_log(_write_log(tmp_path / "planted.log", rows), WEB, default_delay=0.5)
    if kind == "overlap":
        assert report["in_flight_violations"] == 1 and report["max_in_flight"][host] == 2
        assert report["violations"] == 2                    # overlap + negative gap
    elif kind == "gap":
        assert [v["netloc"] for v in report["gap_violations"]] == [host]
        assert report["gap_violations"][0]["required"] == 0.5
        assert report["violations"] == 1
    elif kind == "retry_after":
        assert len(report["retry_after_violations"]) == 1 and report["violations"] == 1
    elif kind == "private":
        assert report["robots_disallowed_fetched"] == [_home("/private/1.html")]
        assert report["unexpected"] == [_home("/private/1.html")]
        assert report["violations"] == 1
    else:
        assert report["duplicate_fetches"] == {f"http://{host}/p/1.html": 2}
        assert report["violations"] == 0


# ------------------------------------------------------------------ small sites, page by page
def test_a_chain_shaped_web_reveals_a_site_one_page_at_a_time():
    """The many-small-sites profile (bench.run --size smallsites): a site's next URL is
    found only on the page just fetched, so a crawler cannot know it any sooner."""
    web = SampleWeb(WebConfig(hosts=12, pages_per_host=10, port=8399, site_shape="chain"))
    host = web.hosts[3]

    def own_links(path):
        return [link.href for link in web.page_at(host, path).links
                if not link.href.startswith(("http", "#"))]

    assert own_links("/") == ["/p/0.html"]
    assert own_links("/p/4.html") == ["/p/5.html"]
    assert own_links("/p/9.html") == []
    others = [link.href for link in web.page_at(host, "/p/4.html").links if link.href.startswith("http")]
    assert len(others) == 2 and all(href.endswith("/") and host not in href for href in others)
    home = [link.href for link in web.page_at(web.hosts[0], "/").links]
    assert all(f"http://{web.hosts[i]}/" in home for i in range(1, 12))
    assert not any(href.startswith("http") and href.endswith("/p/0.html") for href in home)
    truth = web.ground_truth()
    for page in range(10):  # every page of every content host, found page by page
        assert f"http://{host}/p/{page}.html" in truth
    assert "--site-shape" in web.config.to_argv()
    with pytest.raises(ValueError, match="site_shape"):
        WebConfig(site_shape="star")
