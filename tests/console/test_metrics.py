"""GET /metrics (JSON and Prometheus), samples and rates, beat's periodic tasks; the crawling
processes' Prometheus counters and the machine exporter that adds them up."""

import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from dataclasses import fields
from datetime import timedelta
from pathlib import Path

import pytest
import redis
import requests
from celery import Celery
from django.utils import timezone
from django_celery_beat.models import PeriodicTask
from prometheus_client import REGISTRY
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families

from crawl import instruments
from console import metrics
from console.keys import create_key
from console.models import MetricSample
from console.schedules import ensure_periodic_tasks
from console.tasks import sample_metrics
from fetch import http
from crawl import runners
from crawl.observe import RequestRecord
from crawl.runners import run_embedded
from frontier import service
from frontier.models import DeadLetter, Host, ServerAddress, Url
from frontier.tasks import sweep_expired_leases
from indexer.models import Document

from ..crawl_helpers import BROKER
from ..loopback import QuietHandler, serving

pytestmark = pytest.mark.django_db


@pytest.fixture
def auth():
    return {"HTTP_AUTHORIZATION": f"Bearer {create_key('tests')[1]}"}


@pytest.fixture
def crawl_state():
    """A frontier with one URL in every interesting state, some fetched just now."""
    service.add_urls([service.Candidate(f"http://a.test/{n}", depth=n % 3) for n in range(10)]
                     + [service.Candidate("http://b.test/x"), service.Candidate("http://b.test/y")])
    now = timezone.now()
    urls = {u.url: u for u in Url.objects.all()}
    Url.objects.filter(url__in=[f"http://a.test/{n}" for n in range(4)]).update(
        state="fetched", last_status=200, last_fetched_at=now)
    Url.objects.filter(url="http://a.test/4").update(state="gone", last_status=404, outcome="http_404",
                                                     last_fetched_at=now - timedelta(minutes=10))
    Url.objects.filter(url="http://a.test/5").update(attempts=1, last_status=503, outcome="http_503",
                                                     last_fetched_at=now, next_fetch_at=now + timedelta(hours=1))
    Url.objects.filter(url="http://b.test/x").update(state="failed", outcome="timeout", last_fetched_at=now,
                                                     attempts=4)
    DeadLetter.objects.create(url=urls["http://b.test/x"], reason="timeout", attempts=4)
    Document.objects.create(url=urls["http://a.test/0"], page_url="http://a.test/0", content_hash="1" * 64,
                            indexed=True)
    Host.objects.filter(origin="http://b.test").update(leased_until=now + timedelta(minutes=1), lease_owner="w")
    return urls


def test_the_json_figures_count_what_is_in_the_frontier(client, auth, crawl_state):
    body = client.get("/metrics", **auth).json()
    urls = body["urls"]
    assert urls["total"] == 12
    assert urls["by_state"]["fetched"] == 4 and urls["by_state"]["queued"] == 6
    assert urls["by_state"]["gone"] == 1 and urls["by_state"]["failed"] == 1 and urls["by_state"]["excluded"] == 0
    assert urls["by_status"] == {"200": 4, "404": 1, "503": 1}
    assert urls["fetched"] == 7
    assert urls["fetched_recently"] == {"1m": 6, "5m": 6, "15m": 7}
    assert urls["pages_per_second"]["1m"] == 0.1
    # a.test/4..9 and b.test/y minus a.test/4 (gone): queued are a.test/5..9 and b.test/y
    # scores: one path segment (+10), depth 0, 1, 2 (0, -10, -20)
    assert urls["queued_by_score"] == {"10": 3, "0": 1, "-10": 2}
    assert list(urls["queued_by_score"]) == ["10", "0", "-10"]  # best first
    assert urls["queued_by_band"] == {"high": 0, "middle": 6, "low": 0}
    assert urls["queued_due_now"] == 5 and urls["retrying"] == 1
    assert urls["errors_by_kind"] == {"http_503": 1, "timeout": 1}  # a.test/4 is gone (404): no error
    assert body["hosts"]["total"] == 2 and body["hosts"]["leased"] == 1 and body["hosts"]["ready"] == 1
    assert body["robots"]["never"] == 2
    assert body["dead_letters"] == 1
    assert body["documents"]["indexed"] == 1
    assert body["top_hosts"]["by_pages"] == [{"host": "http://a.test", "count": 4}]
    assert {h["host"] for h in body["top_hosts"]["by_errors"]} == {"http://a.test", "http://b.test"}
    assert body["top_hosts"]["by_gone"] == [{"host": "http://a.test", "count": 1}]
    assert {e["url"] for e in body["recent_errors"]} == {"http://a.test/5", "http://b.test/x"}  # not the gone one
    assert body["age_seconds"] >= 0 and body["rates_per_second"] is None  # one sample: no rate yet


def test_prometheus_gets_the_same_figures_in_its_format(client, auth, crawl_state):
    for extra in ({"HTTP_ACCEPT": "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"}, {"QUERY_STRING": "format=prometheus"}):
        response = client.get("/metrics", **auth, **extra)
        assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
        families = {f.name: f for f in text_string_to_metric_families(response.content.decode())}
        by_state = {s.labels["state"]: s.value for s in families["crawlerweb_urls"].samples}
        assert by_state["fetched"] == 4 and by_state["queued"] == 6
        statuses = {s.labels["status"]: s.value for s in families["crawlerweb_urls_by_status"].samples}
        assert statuses == {"200": 4.0, "404": 1.0, "503": 1.0}
        assert families["crawlerweb_dead_letters"].samples[0].value == 1
        hosts = {s.labels["state"]: s.value for s in families["crawlerweb_hosts"].samples}
        assert hosts["leased"] == 1


def test_openmetrics_is_negotiated_and_json_stays_the_default(client, auth, crawl_state):
    response = client.get("/metrics", **auth, HTTP_ACCEPT="application/openmetrics-text; version=1.0.0")
    assert response["Content-Type"].startswith("application/openmetrics-text")
    assert response.content.rstrip().endswith(b"# EOF")
    assert client.get("/metrics", **auth, HTTP_ACCEPT="*/*")["Content-Type"] == "application/json"
    assert client.get("/metrics?format=json", **auth, HTTP_ACCEPT="text/plain")["Content-Type"] == "application/json"
    response = client.get("/metrics?format=xml", **auth)
    assert response.status_code == 400 and "format must be" in response.json()["error"]


def test_a_fresh_sample_is_reused_and_a_stale_one_retaken(client, auth, crawl_state, settings):
    client.get("/metrics", **auth)
    client.get("/metrics", **auth)
    assert MetricSample.objects.count() == 1  # within CRAWLER_METRICS_MAX_AGE: no new scan
    settings.CRAWLER_METRICS_MAX_AGE = 0
    Url.objects.filter(url="http://a.test/6").update(state="fetched", last_status=200, last_fetched_at=timezone.now())
    body = client.get("/metrics", **auth).json()
    assert MetricSample.objects.count() == 2 and body["urls"]["by_state"]["fetched"] == 5


def test_rates_compare_with_an_earlier_sample(crawl_state, settings):
    settings.CRAWLER_METRICS_MAX_AGE = 0
    first = metrics.sample()
    MetricSample.objects.filter(pk=first.pk).update(taken_at=timezone.now() - timedelta(seconds=100))
    Url.objects.filter(url__in=["http://a.test/6", "http://a.test/7"]).update(
        state="fetched", last_status=200, last_fetched_at=timezone.now())
    service.add_urls([service.Candidate("http://a.test/new")])
    rates = metrics.snapshot()["rates_per_second"]
    assert 99 < rates["window_seconds"] < 102
    assert rates["fetched"] == pytest.approx(0.02, abs=0.001)
    assert rates["discovered"] == pytest.approx(0.01, abs=0.001)
    assert rates["dead_lettered"] == 0


def test_it_never_reports_a_negative_rate_when_counts_go_down():
    """Counts by state fall as URLs move on, and an admin may delete URLs or dead letters:
    what went down is no rate (the old code reported -0.02/s for the queue)."""
    now = timezone.now()
    MetricSample.objects.create(taken_at=now - timedelta(seconds=60), figures={
        "urls": {"total": 1000, "fetched": 400, "by_state": {"queued": 600, "fetched": 400}}, "dead_letters": 9})
    latest = MetricSample.objects.create(taken_at=now, figures={
        "urls": {"total": 940, "fetched": 460, "by_state": {"queued": 480, "fetched": 460}}, "dead_letters": 3})
    rates = metrics._rates(latest)
    assert rates == {"window_seconds": 60.0, "discovered": 0.0, "fetched": 1.0, "dead_lettered": 0.0}
    assert all(value >= 0 for value in rates.values())


def test_samples_past_retention_are_dropped_and_history_is_thinned(crawl_state, settings):
    old = MetricSample.objects.create(taken_at=timezone.now() - timedelta(hours=30), figures={})
    start = timezone.now() - timedelta(minutes=50)
    for n in range(300):
        figures = {"urls": {"fetched": n * 10, "by_state": {"queued": 3000 - n * 10}}}
        MetricSample.objects.create(taken_at=start + timedelta(seconds=10 * n), figures=figures)
    sample_metrics()  # what beat runs
    assert not MetricSample.objects.filter(pk=old.pk).exists()
    series = metrics.history(minutes=60, points=100)
    assert 100 <= len(series) <= 101
    assert series[-1]["fetched"] == 7  # the newest sample is always kept
    assert series[1]["pages_per_second"] == pytest.approx(1.0)  # 10 per 10 s, thinned 3:1 -> 30 per 30 s


def test_beat_has_its_periodic_tasks_and_the_admin_lists_them(admin_client):
    names = set(PeriodicTask.objects.values_list("task", flat=True))
    assert {"console.sample_metrics", "frontier.sweep_expired_leases", "frontier.release_due_urls",
            "frontier.plan_recrawl"} <= names  # made by post_migrate
    task = PeriodicTask.objects.get(task="console.sample_metrics")
    task.interval.every = 60
    task.interval.save()
    assert ensure_periodic_tasks() == []  # an admin's edit is kept, nothing duplicated
    assert PeriodicTask.objects.get(task="console.sample_metrics").interval.every == 60
    page = admin_client.get("/admin/django_celery_beat/periodictask/")
    assert b"crawlerweb: sample metrics" in page.content and b"crawlerweb: sweep expired leases" in page.content
    assert b"crawlerweb: release due revisits" in page.content and b"crawlerweb: plan recrawl budget" in page.content


def test_the_lease_sweep_clears_only_expired_leases():
    service.add_urls([service.Candidate("http://a.test/"), service.Candidate("http://b.test/")])
    now = timezone.now()
    Host.objects.filter(origin="http://a.test").update(lease_owner="dead", leased_until=now - timedelta(seconds=1))
    Host.objects.filter(origin="http://b.test").update(lease_owner="alive", leased_until=now + timedelta(minutes=1))
    ServerAddress.objects.create(address="192.0.2.1", lease_owner="dead", leased_until=now - timedelta(seconds=1))
    assert sweep_expired_leases() == 1
    assert dict(Host.objects.values_list("origin", "lease_owner")) == {"http://a.test": "", "http://b.test": "alive"}
    assert ServerAddress.objects.get().lease_owner == ""


def test_metrics_say_so_when_the_broker_is_unreachable(monkeypatch, settings):
    from crawlerweb.celery import app
    from crawl import queues

    monkeypatch.setattr(app.conf, "broker_url", "redis://127.0.0.1:1/0")
    assert queues.queue_depths(app, timeout=0.5) is None
    assert metrics.collect()["fetch_queues"] is None


# --- the exposition of the frontier's figures ------------------------------------------------

def families_in(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_it_counts_every_host_once_in_the_host_and_robots_gauges(client, auth, crawl_state, settings):
    """A sum() over crawlerweb_hosts used to add a `total` (and overlapping states) in."""
    now = timezone.now()
    service.add_urls([service.Candidate(f"http://{name}.test/") for name in ("paused", "waiting", "idle", "tripped")])
    Host.objects.filter(origin="http://paused.test").update(paused_at=now)
    Host.objects.filter(origin="http://waiting.test").update(next_fetch_at=now + timedelta(minutes=5))
    Url.objects.filter(host__origin="http://idle.test").update(state="fetched")
    Host.objects.filter(origin="http://tripped.test").update(
        failures=settings.CRAWLER_HOST_FAILURE_THRESHOLD, next_fetch_at=now + timedelta(minutes=1),
        robots_status=200, robots_fetched_at=now, robots_expires_at=now + timedelta(hours=1))
    families = families_in(client.get("/metrics?format=prometheus", **auth).content.decode())
    hosts = {s.labels["state"]: s.value for s in families["crawlerweb_hosts"].samples}
    assert hosts == {"leased": 1, "paused": 1, "backing_off": 2, "ready": 1, "idle": 1}
    assert sum(hosts.values()) == Host.objects.count() == 6
    assert families["crawlerweb_hosts_circuit_open"].samples[0].value == 1
    robots = {s.labels["state"]: s.value for s in families["crawlerweb_robots_hosts"].samples}
    assert sum(robots.values()) == 6 and "cached" not in robots
    assert families["crawlerweb_robots_cached_hosts"].samples[0].value == 1


def test_both_expositions_parse_and_no_family_mixes_a_total_into_its_labels(client, auth, crawl_state):
    text = client.get("/metrics?format=prometheus", **auth).content.decode()
    openmetrics = client.get("/metrics?format=openmetrics", **auth).content.decode()
    families = families_in(text)
    assert {f.name for f in parse_openmetrics(openmetrics)} == set(families)
    assert {"crawlerweb_urls", "crawlerweb_hosts", "crawlerweb_queued_due_urls", "crawlerweb_documents_indexed",
            "crawlerweb_fetch_queue_high_water_messages", "crawlerweb_metrics_age_seconds"} <= set(families)
    for family in families.values():
        assert family.type == "gauge", family.name  # counters come from the processes
        for sample in family.samples:
            assert "total" not in sample.labels.values() and sample.value >= 0, sample
    documents = families["crawlerweb_documents"].samples
    assert len(documents) == 1 and documents[0].value == 1 and not documents[0].labels


# --- the crawling processes' counters ---------------------------------------------------------

class Answers(QuietHandler):
    """One loopback host answering every way the counters tell apart: 200, 304 to a
    conditional GET, 429, 500 and (robots.txt) 404. Logs (path, status, body bytes)."""

    log: list = []
    PAGE = b"<html><head><title>ok</title></head><body>" + b"words " * 200 + b"</body></html>"

    def do_GET(self):
        headers = [("Content-Type", "text/html")]
        if self.path == "/robots.txt":
            status, body = 404, b""
        elif self.path == "/same" and self.headers.get("If-None-Match") == '"v1"':
            status, body = 304, b""
        elif self.path in ("/ok", "/same"):
            status, body = 200, self.PAGE
            headers.append(("ETag", '"v1"'))
        elif self.path == "/busy":
            status, body = 429, b"slow down"
            headers.append(("Retry-After", "0"))
        else:
            status, body = 500, b"broken"
        self.log.append((self.path, status, len(body)))
        self.send(status, body, headers)


def process_counters() -> Counter:
    """Every crawlerweb_ sample of this process's registry, by (name, labels)."""
    return Counter({(s.name, tuple(sorted(s.labels.items()))): s.value
                    for family in REGISTRY.collect() if family.name.startswith("crawlerweb_")
                    for s in family.samples})


def moved(before: Counter, after: Counter, name: str) -> dict:
    """How far each series of `name` moved, keyed by its label values (sorted by label name) joined with |."""
    deltas = {}
    for (sample, labels), now in after.items():
        if sample == name and now != before.get((sample, labels), 0):
            deltas["|".join(v for _, v in labels)] = now - before.get((sample, labels), 0)
    return deltas


@pytest.mark.crawl
@pytest.mark.django_db(transaction=True)
def test_the_counters_move_by_exactly_the_requests_of_a_crawl(settings):
    settings.CRAWLER_MAX_ATTEMPTS = 3
    settings.CRAWLER_FAILURE_BACKOFF = []  # dead-letter after the short retries: the run ends
    Answers.log = []
    before = process_counters()
    with serving(Answers) as origin:
        service.add_seeds([origin + path for path in ("/ok", "/same", "/busy", "/broken")])
        # /same was fetched before: its validators make this visit a conditional GET
        Url.objects.filter(url=origin + "/same").update(etag='"v1"', content_hash="0" * 64, last_status=200)
        run_embedded(threads=2, max_seconds=60)
    after, log = process_counters(), list(Answers.log)
    assert {status for _, status, _ in log} == {200, 304, 404, 429, 500}

    outcome = {200: "ok", 304: "not_modified", 404: "gone", 429: "throttled", 500: "server_error"}
    kind = {True: "robots", False: "page"}
    expected = Counter(f"{kind[path == '/robots.txt']}|{outcome[status]}|{status}" for path, status, _ in log)
    assert moved(before, after, "crawlerweb_fetches_total") == expected
    assert moved(before, after, "crawlerweb_fetch_duration_seconds_count") == {
        "page": len(log) - 1, "robots": 1}
    assert moved(before, after, "crawlerweb_response_bytes_total") == {
        "page": sum(size for path, _, size in log if path != "/robots.txt")}
    tries = Counter(path for path, _, _ in log if path != "/robots.txt")
    assert moved(before, after, "crawlerweb_retries_total") == {"": sum(n - 1 for n in tries.values())}
    assert moved(before, after, "crawlerweb_not_modified_total") == {"": 1}
    assert moved(before, after, "crawlerweb_robots_fetches_total") == {"gone": 1}


@pytest.mark.django_db(transaction=True)
def test_a_dispatch_round_counts_the_leases_it_granted_and_the_sessions_it_sent(settings):
    client = redis.Redis.from_url(BROKER)
    client.flushdb()
    app = Celery("metrics-test", broker=BROKER)
    service.add_seeds([f"http://127.0.0.{n + 2}:1000/" for n in range(3)])
    before = process_counters()
    try:
        assert runners.dispatch_once("d", app) == 3
    finally:
        client.flushdb()
        app.close()
    after = process_counters()
    assert moved(before, after, "crawlerweb_dispatch_leases_total") == {"": 3}
    assert moved(before, after, "crawlerweb_dispatch_sessions_sent_total") == {"": 3}


def test_status_labels_stay_few():
    assert [instruments.status_label(s) for s in (200, 304, 404, 418, 299, 599, None)] == [
        "200", "304", "404", "4xx", "2xx", "5xx", "none"]


# --- multiprocess mode: one exporter per machine adds up every process ----------------------

# Processes, files and a port: no database in them (run once, on the SQLite run).
machine_only = pytest.mark.backend_free

ROOT = Path(__file__).resolve().parents[2]
RECORDER = """
import sys, django
django.setup()
from crawl import instruments
from tests.console.test_metrics import a_request
for _ in range(int(sys.argv[1])):
    instruments.record_request(a_request())
instruments.process_started("worker")
print("ready", flush=True)
sys.stdin.read()
"""
EXPORTER = """
import sys, django
django.setup()
from crawl import instruments
instruments.EXPORTER_RETRY_SECONDS = 0.2
instruments.serve_machine_metrics(int(sys.argv[1]), "127.0.0.1")
print("ready", flush=True)
sys.stdin.read()
"""


def a_request() -> RequestRecord:
    values = dict(at=0.0, kind="page", url="http://x.test/", url_id=1, host_id=1, origin="http://x.test",
                  status=200, error="", outcome="ok", bytes=100, duration=0.2, attempt=1, retry_after=None,
                  address="192.0.2.1", content_type="text/html", worker="w", lease="l")
    return RequestRecord(**{f.name: values.get(f.name) for f in fields(RequestRecord)})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def processes(tmp_path):
    started = []

    def start(script: str, *args, env=None) -> subprocess.Popen:
        env = dict(os.environ, **(env or {}))
        proc = subprocess.Popen([sys.executable, "-c", script, *map(str, args)], cwd=ROOT, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        started.append(proc)
        assert proc.stdout.readline().strip() == "ready"
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def scrape(port: int, accept: str = "", seconds: float = 10.0) -> str:
    """The exporter's answer, once some process serves the port."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return requests.get(f"http://127.0.0.1:{port}/metrics", headers={"Accept": accept}, timeout=2).text
        except requests.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def value(families: dict, name: str, sample: str, **labels) -> float:
    return next(s.value for s in families[name].samples if s.name == sample and labels.items() <= s.labels.items())


@machine_only
def test_one_exporter_adds_up_the_processes_of_a_machine(processes, tmp_path):
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    first = processes(RECORDER, 3, env=env)
    processes(RECORDER, 5, env=env)
    port = free_port()
    exporter = processes(EXPORTER, port, env=env)

    families = families_in(scrape(port))
    fetches = value(families, "crawlerweb_fetches", "crawlerweb_fetches_total", status="200", outcome="ok")
    assert fetches == 8  # 3 + 5, two processes, one series
    assert value(families, "crawlerweb_fetch_duration_seconds", "crawlerweb_fetch_duration_seconds_count") == 8
    assert value(families, "crawlerweb_response_bytes", "crawlerweb_response_bytes_total") == 800
    assert value(families, "crawlerweb_processes", "crawlerweb_processes", role="worker") == 2

    first.send_signal(signal.SIGKILL)  # a pool child dying without a word
    first.wait()
    families = {f.name: f for f in parse_openmetrics(scrape(port, "application/openmetrics-text"))}
    assert value(families, "crawlerweb_fetches", "crawlerweb_fetches_total", outcome="ok") == 8  # counters stay
    assert value(families, "crawlerweb_processes", "crawlerweb_processes", role="worker") == 1

    # A second process of the machine waits for the port and takes over when the first goes.
    processes(EXPORTER, port, env=env)
    exporter.kill()
    exporter.wait()
    families = families_in(scrape(port))
    assert value(families, "crawlerweb_fetches", "crawlerweb_fetches_total", outcome="ok") == 8


@machine_only
def test_files_of_a_machine_whose_processes_all_stopped_are_cleared(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    alive = subprocess.Popen(["sleep", "30"])
    try:
        mine = tmp_path / f"counter_{os.getpid()}.db"
        for path in (mine, tmp_path / f"counter_{dead.pid}.db", tmp_path / f"gauge_livesum_{dead.pid}.db"):
            path.write_bytes(b"")
        (tmp_path / f"histogram_{alive.pid}.db").write_bytes(b"")
        assert instruments.clear_if_orphaned(str(tmp_path)) == 0  # someone still writes here
        (tmp_path / f"histogram_{alive.pid}.db").unlink()
        assert instruments.clear_if_orphaned(str(tmp_path)) == 2
        assert sorted(p.name for p in tmp_path.glob("*.db")) == [mine.name]  # its own files stay open
    finally:
        alive.kill()
        alive.wait()


@machine_only
def test_the_exporter_port_is_one_of_the_crawlers_own_services(settings, tmp_path):
    port = free_port()
    env = dict(os.environ, CRAWLER_METRICS_PORT=str(port), PROMETHEUS_MULTIPROC_DIR=str(tmp_path))
    own = subprocess.run([sys.executable, "-c", "import django; django.setup(); from django.conf import settings; "
                          "print(settings.CRAWLER_OWN_SERVICES)"], cwd=ROOT, env=env, capture_output=True,
                         text=True, check=True).stdout
    assert f"('127.0.0.1', {port})" in own
    instruments.serve_machine_metrics(port, "127.0.0.1")
    try:
        assert "crawlerweb_processes" in scrape(port)  # this process's own registry: no directory
        assert http.fetch(f"http://127.0.0.1:{port}/metrics").status == 200  # loopback is allowed in tests
        settings.CRAWLER_OWN_SERVICES = [("127.0.0.1", port)]
        assert http.fetch(f"http://127.0.0.1:{port}/metrics").error == "blocked_address"
    finally:
        instruments.stop_serving()
