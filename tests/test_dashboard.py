"""The dashboard in a real headless Chromium (Debian's package; `make setup-browser`): its
charts, headline figures, the crawl's state, processes and host health, the time range,
the empty and stale states, all without a console error."""

import re
import shutil
import time
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.test import Client
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from console.models import MetricSample, ProcessHeartbeat
from console.schedules import ensure_periodic_tasks
from frontier import service
from frontier.models import Host, Url

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = [pytest.mark.django_db(transaction=True)]


def test_anonymous_visitors_are_sent_to_the_login_page(client):
    page = client.get("/dashboard/")
    assert page.status_code == 302 and "/admin/login/" in page["Location"]


@pytest.fixture
def browser(monkeypatch):
    # Playwright's sync API keeps an event loop running in this thread, which makes Django
    # refuse ORM calls as "async"; they are not (the documented pytest-django workaround).
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} not found: run `make setup-browser` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()
        # Playwright runs the test inside a greenlet with its own context variables, so the
        # test's ORM calls opened a connection of their own: close it, or the test database
        # cannot be dropped at the end of the session.
        connections.close_all()


@pytest.fixture(autouse=True)
def no_heartbeats():
    # An engine's thread commits outside a test's transaction: start from no process at all.
    ProcessHeartbeat.objects.all().delete()


@pytest.fixture
def staff_cookie():
    User.objects.create_user("op", password="pw", is_staff=True)
    client = Client()
    client.login(username="op", password="pw")
    return client.cookies["sessionid"].value


def make_history():
    service.add_urls([service.Candidate(f"http://h{n % 3}.test/{n}", depth=n % 2) for n in range(30)])
    now = timezone.now()
    Url.objects.filter(url__in=[f"http://h{n % 3}.test/{n}" for n in range(12)]).update(
        state="fetched", last_status=200, last_fetched_at=now)
    Url.objects.filter(url="http://h0.test/12").update(state="gone", last_status=404, outcome="http_404",
                                                       last_fetched_at=now)
    for n in range(20):  # older than CRAWLER_METRICS_MAX_AGE: history only, never served as current
        MetricSample.objects.create(taken_at=now - timedelta(seconds=30 + 10 * (20 - n)), figures={
            "urls": {"fetched": n * 20, "by_state": {"queued": 400 - n * 20},
                     "pages_per_second": {"1m": round(n / 10, 1)}}})


def make_live_state():
    """Hosts held back in every way the health panel lists, and processes that report."""
    now = timezone.now()
    Host.objects.create(origin="http://paused.test", paused_at=now)
    Host.objects.create(origin="http://breaker.test", failures=9, next_fetch_at=now + timedelta(minutes=10),
                        wait_reason="breaker")
    Host.objects.create(origin="http://retry.test", next_fetch_at=now + timedelta(minutes=3),
                        wait_reason="retry_after_429")
    Host.objects.create(origin="http://robots.test", robots_fetched_at=now, robots_status=503, robots_error="http_503",
                        robots_expires_at=now + timedelta(minutes=5), next_fetch_at=now + timedelta(minutes=5),
                        wait_reason="robots_unavailable")
    ProcessHeartbeat.objects.create(kind="worker", name="box/worker-11", hostname="box", pid=11, sessions=3,
                                    requests=120, last_request_at=now)
    ProcessHeartbeat.objects.create(kind="dispatcher", name="dispatch-box-12", hostname="box", pid=12, leases=40,
                                    last_lease_at=now - timedelta(seconds=2))
    ProcessHeartbeat.objects.create(kind="worker", name="box/worker-10", hostname="box", pid=10,
                                    seen_at=now - timedelta(minutes=5))  # killed five minutes ago
    ensure_periodic_tasks()
    PeriodicTask.objects.filter(task="console.sample_metrics").update(last_run_at=now - timedelta(seconds=4))


def open_dashboard(browser, live_server, staff_cookie, query="?refresh=1"):
    context = browser.new_context()
    context.add_cookies([{"name": "sessionid", "value": staff_cookie, "domain": urlsplit(live_server.url).hostname,
                          "path": "/"}])
    page = context.new_page()
    page.problems = []
    page.on("console", lambda msg: page.problems.append(msg.text) if msg.type in ("error", "warning") else None)
    page.on("pageerror", lambda exc: page.problems.append(str(exc)))
    page.goto(f"{live_server.url}/dashboard/{query}", wait_until="load")
    page.wait_for_function("window.dashboard && window.dashboard.state.updates >= 1", timeout=15_000)
    return context, page


def rows(page, table: str) -> list[list[str]]:
    return page.evaluate(f"""() => [...document.querySelectorAll('{table} tbody tr')].map(
        tr => [...tr.children].map(td => td.textContent))""")


def test_the_dashboard_renders_its_charts_and_refreshes_itself(live_server, browser, staff_cookie):
    make_history()
    make_live_state()
    context, page = open_dashboard(browser, live_server, staff_cookie)

    charts = page.evaluate("""() => Object.entries(window.dashboard.charts).map(([id, c]) => ({
        id, type: c.config.type, points: c.data.datasets.reduce((n, d) => n + d.data.filter(v => v).length, 0),
        width: c.width, height: c.height}))""")
    assert {c["id"] for c in charts} == {"chart-rate", "chart-status", "chart-priority", "chart-top-pages",
                                         "chart-top-errors", "chart-errors"}
    assert all(c["points"] > 0 and c["width"] > 100 and c["height"] > 100 for c in charts), charts
    # Counts on the status chart, priorities in words, whole numbers on every count axis.
    status = page.evaluate("() => window.dashboard.charts['chart-status'].data.labels")
    assert status == ["200 OK · 12", "404 Not Found · 1"]
    priorities = page.evaluate("() => window.dashboard.charts['chart-priority'].data.labels")
    assert priorities == ["middle"]  # score bands with URLs queued: every one here scores 0 or 10
    ticks = page.evaluate("""() => ({priority: window.dashboard.charts['chart-priority'].scales.y.ticks.map(t => t.value),
        errors: window.dashboard.charts['chart-top-errors'].scales.x.ticks.map(t => t.value),
        queue: window.dashboard.charts['chart-rate'].scales.queue.ticks.map(t => t.value)})""")
    assert all(len(values) > 1 and all(float(v).is_integer() for v in values) for values in ticks.values()), ticks
    # The pages/s chart is each sample's own 1-minute figure, and its newest point is the
    # card's: 13 URLs fetched in the last minute, 13 / 60 per second.
    assert page.evaluate("() => window.dashboard.charts['chart-rate'].data.datasets[0].data.slice(-3)") == [
        1.8, 1.9, 0.217]
    assert page.text_content("#rate-1m") == "0.2"
    assert not page.evaluate("() => document.getElementById('chart-rate').closest('figure').classList.contains('empty')")
    # Something was really drawn: the status doughnut's canvas is not blank.
    assert page.evaluate("""() => { const c = document.getElementById('chart-status');
        const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        for (let i = 3; i < px.length; i += 4) if (px[i] > 0) return true; return false; }""")
    assert page.text_content("#fetched") == "13"  # 12 fetched, 1 gone
    assert "http://h0.test/12" in page.text_content("#recent-errors")

    # The crawl's state, who is alive, beat, and the hosts held back.
    assert page.get_attribute("#crawl-state", "data-state") == "crawling"
    assert page.text_content("#online") == "1 / 1"
    assert re.fullmatch(r"\d+ s ago", page.text_content("#beat"))  # 4 s before the page asked
    processes = {row[1]: row for row in rows(page, "#processes")}
    assert processes["box/worker-11"][3] == "online" and processes["box/worker-11"][6] == "120"
    assert processes["dispatch-box-12"][3] == "online" and processes["dispatch-box-12"][6] == "40 leases"
    assert processes["box/worker-10"][3] == "stale"
    assert [r[0] for r in rows(page, "#health-paused")] == ["http://paused.test"]
    assert [r[:2] for r in rows(page, "#health-breaker")] == [["http://breaker.test", "9"]]
    (backoff,) = rows(page, "#health-backoff")
    assert backoff[0] == "http://retry.test" and backoff[2] == "Retry-After (429 Too Many Requests)"
    assert backoff[1] == "in 3 min"
    assert [r[:2] for r in rows(page, "#health-robots")] == [["http://robots.test", "http_503"]]
    assert page.text_content("#count-breaker") == "1"
    page.screenshot(path=str(_screenshot_path()), full_page=True)  # var/dashboard.png, for people

    # The time range: any of the 24 hours kept, kept in the address for a reload.
    page.select_option("#range", "360")
    page.wait_for_function("window.dashboard.state.range === 360", timeout=15_000)
    assert "minutes=360" in page.url

    # It refreshes by itself: new figures show up without a reload.
    Url.objects.filter(url__in=[f"http://h{n % 3}.test/{n}" for n in range(13, 20)]).update(
        state="fetched", last_status=200, last_fetched_at=timezone.now())
    MetricSample.objects.all().delete()  # force a fresh sample on the next poll
    page.wait_for_function("document.getElementById('fetched').textContent === '20'", timeout=15_000)
    updates = page.evaluate("() => window.dashboard.state")
    assert updates["updates"] >= 2 and updates["errors"] == 0, updates
    assert page.problems == []
    context.close()


def _screenshot_path():
    from django.conf import settings

    path = settings.BASE_DIR / "var" / "dashboard.png"
    path.parent.mkdir(exist_ok=True)
    return path


def test_a_new_crawl_says_it_has_no_data_yet_and_a_stalled_one_says_so(live_server, browser, staff_cookie):
    context, page = open_dashboard(browser, live_server, staff_cookie)
    assert page.get_attribute("#crawl-state", "data-state") == "idle"
    empty = page.evaluate("""() => [...document.querySelectorAll('figure.empty')].map(f => f.querySelector('canvas').id)""")
    assert set(empty) == {"chart-rate", "chart-status", "chart-priority", "chart-top-pages", "chart-top-errors",
                          "chart-errors"}
    assert page.evaluate("""() => getComputedStyle(document.getElementById('chart-rate').closest('figure'),
        '::after').content""").startswith('"no data yet')
    assert page.text_content("#online") == "0 / 0" and page.text_content("#beat") == "never"
    assert "no process has reported yet" in page.text_content("#processes-note")

    # URLs due for minutes on free hosts, and nobody fetching: stalled, in red.
    service.add_urls([service.Candidate("http://due.test/a")])
    long_ago = timezone.now() - timedelta(minutes=5)
    Url.objects.update(next_fetch_at=long_ago)
    Host.objects.update(next_fetch_at=long_ago)
    page.wait_for_function("document.getElementById('crawl-state').dataset.state === 'stalled'", timeout=15_000)
    assert "nothing was fetched" in page.text_content("#crawl-state")
    assert page.problems == []
    context.close()


def test_the_dashboard_says_when_it_cannot_update(live_server, browser, staff_cookie):
    context, page = open_dashboard(browser, live_server, staff_cookie)
    context.clear_cookies()  # the session is gone: the data endpoint now answers 401
    deadline = time.monotonic() + 15
    while page.evaluate("window.dashboard.state.errors") == 0 and time.monotonic() < deadline:
        page.wait_for_timeout(200)
    assert "not updating: HTTP 401" in page.text_content("#status")
    assert page.evaluate("() => document.body.classList.contains('stale')")  # the old figures look old
    context.close()
