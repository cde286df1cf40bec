"""Host sessions (crawl/session.py, crawl/engine.py) against the sample web over real HTTP.

What a session must do, judged from the server's own request log (which stamps each
request with the TCP connection it came on): send a host's URLs one by one on one
kept-alive connection, paced at the host's delay from the end of the previous response;
hold its lease as long as it runs and stop at once when the lease is gone; keep a
Retry-After inside the session; stop at the breaker and at an admin's exclusion without
charging the URLs it did not try; and hold many paced hosts at once with few threads.
"""

import http.server
import socket
import statistics
import struct
import threading
import time
from collections import defaultdict
from datetime import timedelta

import pytest
from django.utils import timezone

from webs.sampleweb.audit import read_log
from crawl.runners import run_embedded
from frontier import controls, leases
from frontier import service as frontier
from frontier.models import Host, Url

from ..crawl_helpers import audit, once_fetched, run_sessions, sample_web

pytestmark = [pytest.mark.crawl, pytest.mark.django_db(transaction=True)]

PAGES = 10  # /p/0.html .. /p/9.html on every host of the test web


def page_urls(web, host_index: int, count: int = PAGES) -> list[str]:
    return [f"http://{web.hosts[host_index]}/p/{k}.html" for k in range(count)]


def requests_to(web, host_index: int):
    """The log entries of one host (robots.txt included), in the order they started."""
    netloc = web.hosts[host_index]
    return sorted((e for e in read_log(web.request_log) if e.netloc == netloc), key=lambda e: e.start)


def gaps(entries) -> list[float]:
    return [b.start - a.end for a, b in zip(entries, entries[1:])]


def test_a_session_sends_its_urls_on_one_connection_paced_at_the_crawl_delay(tmp_path, settings):
    delay = 0.2
    with sample_web(tmp_path, crawl_delay_hosts=1, crawl_delay=delay, latency=0.005) as web:
        frontier.add_seeds(page_urls(web, 1))
        stats = run_embedded(threads=2, max_seconds=60)
    entries = requests_to(web, 1)
    assert [e.path for e in entries][0] == "/robots.txt"
    assert len(entries) == 1 + PAGES
    # one TCP connection for robots.txt and every page; the links the pages hold to
    # /private/ (disallowed) were settled by a second session without a request
    assert (stats.requests, stats.connections) == (1 + PAGES, 1)
    assert len({e.connection for e in entries}) == 1
    # paced from the end of each response, never sooner, and not much later
    assert min(gaps(entries)) >= delay - 0.005
    assert statistics.median(gaps(entries)) < 1.5 * delay
    assert Url.objects.filter(state="fetched").count() == PAGES


def test_the_delay_counts_from_the_end_of_the_response_not_of_its_analysis(tmp_path, settings, monkeypatch):
    """A page can wait for a parse process; the host sees only the gap between requests."""
    import crawl.pipeline

    delay, analysis = 0.3, 0.4
    settings.CRAWLER_PARSE_PROCESSES = 0  # analysed in the fetch thread: the slow analysis below

    def slow_analyse(result, queued, _analyse=crawl.pipeline.analyse):
        time.sleep(analysis)  # the slow parse under test, not a wait for something
        return _analyse(result, queued)

    monkeypatch.setattr(crawl.pipeline, "analyse", slow_analyse)
    with sample_web(tmp_path, crawl_delay_hosts=1, crawl_delay=delay, latency=0.005) as web:
        frontier.add_seeds(page_urls(web, 1))
        run_embedded(threads=2, max_seconds=60)
    between_pages = gaps([e for e in requests_to(web, 1) if e.path != "/robots.txt"])
    assert len(between_pages) == PAGES - 1
    assert min(between_pages) >= delay - 0.005
    # Counted from the analysis' end it would be analysis + delay (0.7 s) every time.
    assert statistics.median(between_pages) < analysis + delay - 0.15


def test_a_host_kept_waiting_by_its_pages_analysis_counts_as_late_for_the_session_cap(tmp_path, settings,
                                                                                       monkeypatch):
    """The engine holds only the sessions it can pace (crawl/capacity.py), judged by how late
    each step starts. A step is due when the host's clock allows it: an analysis that ends
    after that (a parse pool behind) makes the host late, and the cap must see it."""
    import crawl.pipeline
    from crawl.capacity import SessionCap

    delay, analysis = 0.1, 0.4
    settings.CRAWLER_PARSE_PROCESSES = 0

    def slow_analyse(result, queued, _analyse=crawl.pipeline.analyse):
        time.sleep(analysis)  # the slow parse under test, not a wait for something
        return _analyse(result, queued)

    lateness = []
    real_stepped = SessionCap.stepped

    def stepped(self, late, host_delay):
        if host_delay == delay:
            lateness.append(late)
        return real_stepped(self, late, host_delay)

    monkeypatch.setattr(crawl.pipeline, "analyse", slow_analyse)
    monkeypatch.setattr(SessionCap, "stepped", stepped)
    with sample_web(tmp_path, crawl_delay_hosts=1, crawl_delay=delay, latency=0.005) as web:
        frontier.add_seeds(page_urls(web, 1, 5))
        run_embedded(threads=2, max_seconds=60)
    # the steps after a page: due `delay` after the response, started after its analysis
    assert len(lateness) >= 4
    assert sorted(lateness)[len(lateness) // 2] >= analysis - delay - 0.05


def test_a_session_longer_than_its_lease_keeps_renewing_it(tmp_path, settings):
    settings.CRAWLER_LEASE_SECONDS = 1.2  # renewed every 0.2 s; the session takes ~3 s
    delay = 0.3
    with sample_web(tmp_path, crawl_delay_hosts=1, crawl_delay=delay) as web:
        frontier.add_seeds(page_urls(web, 1, 10))
        stats = run_embedded(threads=2, max_seconds=60)
    entries = requests_to(web, 1)
    assert entries[-1].end - entries[0].start > 2 * settings.CRAWLER_LEASE_SECONDS
    assert (stats.requests, stats.connections) == (11, 1)
    assert "lease_running_out" not in stats.ended and "lease_lost" not in stats.ended
    assert Url.objects.filter(state="fetched").count() == 10
    assert Host.objects.get(origin=f"http://{web.hosts[1]}").lease_owner == ""  # released at the end


def test_a_session_whose_lease_is_taken_stops_and_the_host_comes_back_after_expiry(tmp_path, settings):
    settings.CRAWLER_LEASE_SECONDS = 1.2
    settings.CRAWLER_DISPATCH_IDLE_WAIT_MAX = 0.05
    delay = 0.2
    stolen = {}

    def steal():
        # Another worker holds the host now, as after a lease that expired under a stalled
        # process; it "dies" and its lease runs out after `hold` seconds.
        hold = 2.0
        stolen["at"] = time.time()
        stolen["until"] = stolen["at"] + hold
        Host.objects.filter(origin=f"http://{web.hosts[1]}").update(
            lease_owner="thief:1", leased_until=timezone.now() + timedelta(seconds=hold))

    with sample_web(tmp_path, crawl_delay_hosts=1, crawl_delay=delay) as web:
        frontier.add_seeds(page_urls(web, 1))
        hook = once_fetched(3, steal)
        stats = run_embedded(threads=2, max_seconds=60, progress=hook)
    assert hook.done
    assert stats.ended.get("lease_lost") == 1
    assert stats.sessions >= 2  # the host came back once the thief's lease expired
    entries = [e for e in requests_to(web, 1) if e.path != "/robots.txt"]
    # While the thief held the host, at most the request already on its way was made.
    during = [e for e in entries if stolen["at"] < e.start < stolen["until"]]
    assert len(during) <= 1
    # Nothing lost, nothing fetched twice.
    assert sorted(e.path for e in entries) == sorted(f"/p/{k}.html" for k in range(PAGES))
    assert Url.objects.filter(state="fetched").count() == PAGES


def test_a_retry_after_inside_a_session_pauses_it_and_the_session_goes_on(tmp_path, settings):
    settings.CRAWLER_RETRY_BASE_DELAY = 0.1
    with sample_web(tmp_path, retry_after=1) as web:
        flaky = web.flaky_index  # answers 429 or 503 with Retry-After: 1 to each path's first request
        frontier.add_seeds(page_urls(web, flaky, 4))
        stats = run_embedded(threads=2, max_seconds=60)
    entries = [e for e in requests_to(web, flaky) if e.path != "/robots.txt"]
    first_session = [e for e in entries if e.connection == entries[0].connection]
    # The first session met a Retry-After on its first request and did not end there: it
    # waited, then went on with its other URLs on the same connection.
    assert [e.status in (429, 503) for e in first_session] == [True] * 4
    assert min(gaps(first_session)) >= 1.0 - 0.005
    report = audit(web)
    assert report["retry_after_violations"] == []
    assert Url.objects.filter(state="fetched").count() == PAGES  # the seeds and the pages they link
    assert stats.sessions >= 2 and stats.errors == 0


class FailingAfter(http.server.BaseHTTPRequestHandler):
    """Answers the first `server.good` page requests, then resets every connection."""

    protocol_version = "HTTP/1.1"

    def do_GET(self):
        with self.server.lock:
            self.server.log.append((self.path, time.time()))
            served = sum(1 for p, _ in self.server.log if p != "/robots.txt")
        if self.path != "/robots.txt" and served > self.server.good:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        body = b"not here" if self.path == "/robots.txt" else b"<html><title>ok</title><p>fine</p></html>"
        self.send_response(404 if self.path == "/robots.txt" else 200)
        self.send_header("Content-Type", "text/html; charset=utf-8" if self.path != "/robots.txt" else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_host_failing_mid_session_trips_the_breaker_and_its_untried_urls_wait_uncharged(settings):
    settings.CRAWLER_HOST_FAILURE_THRESHOLD = 2
    settings.CRAWLER_HOST_PAUSE_SECONDS = 30.0  # no probe within the test
    settings.CRAWLER_DEFAULT_DELAY = 0.02
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FailingAfter)
    server.good, server.log, server.lock = 3, [], threading.Lock()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        frontier.add_seeds([f"{origin}/page/{k}" for k in range(10)])
        engine = run_sessions(frontier.lease_ready_hosts("test", 10))
    finally:
        server.shutdown()
        server.server_close()
    assert engine.stats.ended == {"breaker": 1}
    pages = [p for p, _ in server.log if p != "/robots.txt"]
    assert len(pages) == 3 + settings.CRAWLER_HOST_FAILURE_THRESHOLD  # no request after the breaker opened
    urls = Url.objects.filter(host__origin=origin)
    assert urls.filter(state="fetched").count() == 3
    tried_and_failed = urls.filter(state="queued", attempts=1).count()
    assert tried_and_failed == settings.CRAWLER_HOST_FAILURE_THRESHOLD
    assert urls.filter(state="queued", attempts=0).count() == 10 - 3 - tried_and_failed
    host = Host.objects.get(origin=origin)
    assert host.failures == settings.CRAWLER_HOST_FAILURE_THRESHOLD
    assert host.next_fetch_at > timezone.now() + timedelta(seconds=20)  # paused, not hammered
    assert host.lease_owner == ""


def test_an_admin_exclusion_ends_a_running_session(tmp_path, settings):
    settings.CRAWLER_DISPATCH_IDLE_WAIT_MAX = 0.05
    delay = 0.3
    excluded = {}

    def exclude():
        excluded["at"] = time.time()
        domain = web.hosts[1].split(":")[0]
        controls.update_limits(exclude_domains=[controls.canonical_domain(domain)])

    with sample_web(tmp_path, crawl_delay_hosts=1, crawl_delay=delay) as web:
        frontier.add_seeds(page_urls(web, 1, 30))
        hook = once_fetched(2, exclude)
        stats = run_embedded(threads=2, max_seconds=60, progress=hook)
    assert hook.done
    assert stats.ended == {"excluded": 1}
    pages = [e for e in requests_to(web, 1) if e.path != "/robots.txt"]
    # Workers see limits within seconds (frontier/limits.py): a few more requests at most.
    after = [e for e in pages if e.start > excluded["at"]]
    assert len(after) <= 4 / delay
    assert len(pages) < 30
    assert not Url.objects.filter(state="queued").exists()
    assert Url.objects.filter(state="excluded").count() >= 30 - len(pages)


def test_many_paced_sessions_run_at_once_on_two_threads(tmp_path, settings):
    hosts, delay = 20, 0.25
    with sample_web(tmp_path, hosts=hosts + 5, crawl_delay_hosts=hosts, crawl_delay=delay) as web:
        frontier.add_seeds([u for i in range(1, hosts + 1) for u in page_urls(web, i)])
        stats = run_embedded(threads=2, max_seconds=120)
    assert stats.errors == 0
    spans = {}
    per_host = defaultdict(list)
    for e in read_log(web.request_log):
        per_host[e.netloc].append(e)
    for netloc, entries in per_host.items():
        spans[netloc] = (min(e.start for e in entries), max(e.end for e in entries))
        assert len({e.connection for e in entries}) == 1  # one session each: all its URLs were known
    events = sorted([(a, 1) for a, _ in spans.values()] + [(b, -1) for _, b in spans.values()])
    at_once = peak = 0
    for _, step in events:
        at_once += step
        peak = max(peak, at_once)
    # Waiting out a delay holds no thread: far more hosts were in session at once than threads.
    assert peak >= hosts // 2
    report = audit(web)
    assert report["gap_violations"] == [] and report["in_flight_violations"] == 0
    assert report["pacing"]["max_parallel_connections_per_host"] == 1
    assert Url.objects.filter(state="fetched").count() == hosts * PAGES


def test_the_dispatcher_sizes_a_session_by_the_window_and_the_hosts_pace(settings):
    settings.CRAWLER_SESSION_SECONDS = 10
    settings.CRAWLER_SESSION_MAX_URLS = 50
    assert leases._session_size(1.0, 0.0) == 10  # 10 s at one request a second
    assert leases._session_size(0.5, 0.5) == 10  # the response time counts too
    assert leases._session_size(0.0, 0.001) == 50  # a fast host: capped
    assert leases._session_size(30.0, 0.1) == 1  # a long Crawl-delay: one URL, never zero
