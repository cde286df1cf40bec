"""GET /metrics (JSON and Prometheus), samples and rates, beat's periodic tasks."""

from datetime import timedelta

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask
from prometheus_client.parser import text_string_to_metric_families

from console import metrics
from console.keys import create_key
from console.models import MetricSample
from console.schedules import ensure_periodic_tasks
from console.tasks import sample_metrics
from frontier import service
from frontier.models import DeadLetter, Host, ServerAddress, Url
from frontier.tasks import sweep_expired_leases
from indexer.models import Document

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
    Document.objects.create(url=urls["http://a.test/0"], address="http://a.test/0", content_hash="1" * 64,
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
    assert urls["queued_by_priority"] == {"0": 3, "-1": 1, "-2": 2}
    assert list(urls["queued_by_priority"]) == ["0", "-1", "-2"]  # best first
    assert urls["queued_due_now"] == 5 and urls["retrying"] == 1
    assert urls["errors_by_kind"] == {"http_404": 1, "http_503": 1, "timeout": 1}
    assert body["hosts"]["total"] == 2 and body["hosts"]["leased"] == 1 and body["hosts"]["ready"] == 1
    assert body["robots"]["never"] == 2
    assert body["dead_letters"] == 1
    assert body["documents"]["indexed"] == 1
    assert body["top_hosts"]["by_pages"] == [{"host": "http://a.test", "count": 4}]
    assert {h["host"] for h in body["top_hosts"]["by_errors"]} == {"http://a.test", "http://b.test"}
    assert [e["url"] for e in body["recent_errors"]][-1] == "http://a.test/4"  # the oldest last
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
    rates = metrics.snapshot()["rates_per_second"]
    assert 99 < rates["window_seconds"] < 102
    assert rates["by_state"]["fetched"] == pytest.approx(0.02, abs=0.001)
    assert rates["by_state"]["queued"] == pytest.approx(-0.02, abs=0.001)
    assert rates["fetched"] == pytest.approx(0.02, abs=0.001)


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
    from fetch import queues

    monkeypatch.setattr(app.conf, "broker_url", "redis://127.0.0.1:1/0")
    assert queues.queue_depths(app, timeout=0.5) is None
    assert metrics.collect()["fetch_queues"] is None
