"""The dashboard in a real headless Chromium (Debian's package; `make setup-browser`): its
charts, headline figures, the crawl's state and mode (embedded or distributed) with the
advice for it, processes and host health, gone pages apart from errors, times in the
server's zone, the time range, the empty and stale states, the layout at 1366 px, all
without a console error."""

import re
import time
from datetime import timedelta
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from console.models import MetricSample
from crawl.models import ProcessHeartbeat
from console.schedules import ensure_periodic_tasks
from frontier import service
from frontier.models import Host, Url

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_anonymous_visitors_are_sent_to_the_login_page(client):
    page = client.get("/dashboard/")
    assert page.status_code == 302 and "/admin/login/" in page["Location"]


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
    # A failure, two minutes ago (outside the last minute's rate): the errors' only host is h2.
    Url.objects.filter(url="http://h2.test/29").update(state="failed", outcome="timeout", attempts=4,
                                                       last_fetched_at=now - timedelta(minutes=2))
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


def open_dashboard(browser, live_server, staff_cookie, query="?refresh=1", **context_options):
    context = browser.new_context(**context_options)
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
    # A common laptop's width: everything fits without a horizontal scroll bar.
    context, page = open_dashboard(browser, live_server, staff_cookie, viewport={"width": 1366, "height": 800})

    charts = page.evaluate("""() => Object.entries(window.dashboard.charts).map(([id, c]) => ({
        id, type: c.config.type, points: c.data.datasets.reduce((n, d) => n + d.data.filter(v => v).length, 0),
        width: c.width, height: c.height}))""")
    assert {c["id"] for c in charts} == {"chart-rate", "chart-status", "chart-score", "chart-top-pages",
                                         "chart-top-errors", "chart-top-gone", "chart-errors"}
    assert all(c["points"] > 0 and c["width"] > 100 and c["height"] > 100 for c in charts), charts
    # Counts on the status chart, score bands in words, whole numbers on every count axis.
    status = page.evaluate("() => window.dashboard.charts['chart-status'].data.labels")
    assert status == ["200 OK · 12", "404 Not Found · 1"]
    bands = page.evaluate("() => window.dashboard.charts['chart-score'].data.labels")
    assert bands == ["middle"]  # score bands with URLs queued: every one here scores 0 or 10
    ticks = page.evaluate("""() => ({score: window.dashboard.charts['chart-score'].scales.y.ticks.map(t => t.value),
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
    assert page.text_content("#fetched") == "14"  # 12 fetched, 1 gone, 1 failed

    # A page gone (404) is an answer, not an error: counted and charted apart, in grey.
    labels = page.evaluate("""() => Object.fromEntries(['chart-top-errors', 'chart-top-gone', 'chart-errors'].map(
        id => [id, window.dashboard.charts[id].data.labels]))""")
    assert labels == {"chart-top-errors": ["http://h2.test"], "chart-top-gone": ["http://h0.test"],
                      "chart-errors": ["timeout"]}
    gone_colour = page.evaluate("() => window.dashboard.charts['chart-top-gone'].data.datasets[0].backgroundColor")
    assert gone_colour == "#a0a7b4"
    assert page.text_content("#gone") == "1"
    assert [r[1] for r in rows(page, "#recent-errors")] == ["http://h2.test/29"]

    # The crawl's state, who is alive, beat, and the hosts held back.
    assert page.get_attribute("#crawl-state", "data-state") == "crawling"
    assert page.text_content("#online") == "1 / 1"
    beat_card = page.get_attribute("#beat-card", "class").split()
    if connection.vendor == "sqlite":  # SQLite runs embedded only: there is no beat to watch
        assert page.text_content("#mode").startswith("embedded (SQLite")
        assert page.text_content("#beat") == "not used" and "off" in beat_card and "warn" not in beat_card
    else:
        assert page.text_content("#mode") == "distributed: 1 worker, 1 dispatcher, beat every 15 s"
        assert re.fullmatch(r"\d+ s ago", page.text_content("#beat"))  # 4 s before the page asked
        assert "off" not in beat_card and "warn" not in beat_card
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
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 1366
    page.screenshot(path=str(_screenshot_path()), full_page=True)  # var/screens/dashboard.png, for people

    # The time range: any of the 24 hours kept, kept in the address for a reload.
    page.select_option("#range", "360")
    page.wait_for_function("window.dashboard.state.range === 360", timeout=15_000)
    assert "minutes=360" in page.url

    # It refreshes by itself: new figures show up without a reload.
    Url.objects.filter(url__in=[f"http://h{n % 3}.test/{n}" for n in range(13, 20)]).update(
        state="fetched", last_status=200, last_fetched_at=timezone.now())
    MetricSample.objects.all().delete()  # force a fresh sample on the next poll
    page.wait_for_function("document.getElementById('fetched').textContent === '21'", timeout=15_000)
    updates = page.evaluate("() => window.dashboard.state")
    assert updates["updates"] >= 2 and updates["errors"] == 0, updates
    assert page.problems == []
    context.close()


def _screenshot_path():
    from django.conf import settings

    path = settings.BASE_DIR / "var" / "screens" / "dashboard.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_a_new_crawl_says_it_has_no_data_yet_and_a_stalled_one_says_so(live_server, browser, staff_cookie):
    context, page = open_dashboard(browser, live_server, staff_cookie)
    assert page.get_attribute("#crawl-state", "data-state") == "idle"
    empty = page.evaluate("""() => [...document.querySelectorAll('figure.empty')].map(f => f.querySelector('canvas').id)""")
    assert set(empty) == {"chart-rate", "chart-status", "chart-score", "chart-top-pages", "chart-top-errors",
                          "chart-top-gone", "chart-errors"}
    assert page.evaluate("""() => getComputedStyle(document.getElementById('chart-rate').closest('figure'),
        '::after').content""").startswith('"no data yet')
    assert page.text_content("#online") == "0 / 0"
    # No process has reported and no beat has run: on SQLite that is the embedded crawl (no
    # beat to have), on PostgreSQL it could be either, and neither outlines a beat never run.
    assert page.text_content("#beat") == ("not used" if connection.vendor == "sqlite" else "never")
    assert "warn" not in page.get_attribute("#beat-card", "class").split()
    assert "no process has reported yet" in page.text_content("#processes-note")

    # URLs due for minutes on free hosts, and nobody fetching: stalled, in red.
    service.add_urls([service.Candidate("http://due.test/a")])
    long_ago = timezone.now() - timedelta(minutes=5)
    Url.objects.update(next_fetch_at=long_ago)
    Host.objects.update(next_fetch_at=long_ago)
    page.wait_for_function("document.getElementById('crawl-state').dataset.state === 'stalled'", timeout=15_000)
    assert "nothing was fetched" in page.text_content("#crawl-state")
    commands = page.evaluate("() => [...document.querySelectorAll('#crawl-state-advice code')].map(c => c.textContent)")
    if connection.vendor == "sqlite":
        assert commands == ["python manage.py crawl", "python manage.py crawl --continuous"]
    else:  # nobody has reported: either way of running is offered
        assert commands == ["python manage.py crawl", "celery -A crawlerweb worker", "python manage.py dispatch"]
    assert page.problems == []
    context.close()


def stalled_frontier():
    """A URL due for five minutes on a free host, and nothing fetched since."""
    service.add_urls([service.Candidate("http://due.test/a")])
    long_ago = timezone.now() - timedelta(minutes=5)
    Url.objects.update(next_fetch_at=long_ago)
    Host.objects.update(next_fetch_at=long_ago)


def test_the_embedded_mode_has_no_beat_to_miss_and_a_stall_names_manage_py_crawl(live_server, browser,
                                                                                  staff_cookie):
    stalled_frontier()
    # `manage.py crawl` ran here ten minutes ago and stopped; periodic tasks exist (migrate
    # makes them) but nothing runs them in the embedded mode.
    ten_minutes_ago = timezone.now() - timedelta(minutes=10)
    ProcessHeartbeat.objects.create(kind="embedded", name="embedded", hostname="box", pid=7, requests=30,
                                    started_at=ten_minutes_ago, seen_at=ten_minutes_ago, stopped_at=ten_minutes_ago,
                                    last_request_at=ten_minutes_ago)
    ensure_periodic_tasks()
    context, page = open_dashboard(browser, live_server, staff_cookie)

    assert page.get_attribute("#mode", "data-mode") == "embedded"
    database = "SQLite" if connection.vendor == "sqlite" else "PostgreSQL"
    assert page.text_content("#mode") == f"embedded ({database}, no crawl running)"
    beat_card = page.get_attribute("#beat-card", "class").split()
    assert page.text_content("#beat") == "not used" and "off" in beat_card and "warn" not in beat_card
    assert page.evaluate("() => getComputedStyle(document.getElementById('beat-card')).boxShadow") == "none"

    assert page.get_attribute("#crawl-state", "data-state") == "stalled"
    banner = page.text_content("#crawl-state")
    commands = page.evaluate("() => [...document.querySelectorAll('#crawl-state-advice code')].map(c => c.textContent)")
    assert commands == ["python manage.py crawl", "python manage.py crawl --continuous"]
    assert "resumes the frontier" in banner
    assert "?." not in banner and ".." not in banner
    assert not re.search(r"worker|dispatcher|broker|beat", banner), banner  # not the distributed advice
    # (the date too when ten minutes ago was yesterday: the suite may run across midnight UTC)
    assert re.search(r"Last request 10 min ago \((\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d UTC\)\.$", banner.strip()), banner
    assert page.problems == []
    context.close()


def test_a_distributed_crawl_without_beat_says_so_and_names_what_is_missing(live_server, browser, staff_cookie):
    # A worker and a dispatcher online; beat never ran; a fetched page's revisit is due
    # (only beat releases it) and nothing is queued.
    now = timezone.now()
    service.add_urls([service.Candidate("http://revisit.test/a")])
    Url.objects.update(state="fetched", last_status=200, last_fetched_at=now - timedelta(days=2),
                       next_fetch_at=now - timedelta(hours=1))
    worker = ProcessHeartbeat.objects.create(kind="worker", name="box/worker-11", hostname="box", pid=11,
                                             last_request_at=now - timedelta(minutes=30))
    ProcessHeartbeat.objects.create(kind="dispatcher", name="dispatch-box-12", hostname="box", pid=12)
    ensure_periodic_tasks()
    PeriodicTask.objects.update(last_run_at=None)
    context, page = open_dashboard(browser, live_server, staff_cookie)

    advice = lambda: page.evaluate(  # noqa: E731
        "() => [...document.querySelectorAll('#crawl-state-advice code')].map(c => c.textContent)")
    beat_card = page.get_attribute("#beat-card", "class").split()
    if connection.vendor == "sqlite":
        # SQLite can only be embedded, whatever rows say: no beat, and revisits are
        # released by `crawl --continuous`.
        assert page.get_attribute("#mode", "data-mode") == "embedded"
        assert "warn" not in beat_card and "off" in beat_card
        assert page.get_attribute("#crawl-state", "data-state") == "idle"
        assert advice() == ["python manage.py crawl --continuous"]
        context.close()
        return

    assert page.text_content("#mode") == "distributed: 1 worker, 1 dispatcher, no beat"
    assert page.text_content("#beat") == "never" and "warn" in beat_card  # revisits wait for it
    assert page.get_attribute("#crawl-state", "data-state") == "idle"
    assert "Revisits are due and beat is not running" in page.text_content("#crawl-state")
    assert advice() == ["celery -A crawlerweb beat"]

    # The worker dies (its heartbeat ages) while URLs are overdue: the stall names the worker.
    stalled_frontier()
    worker.seen_at = timezone.now() - timedelta(minutes=5)
    worker.save()
    page.wait_for_function("document.getElementById('crawl-state').dataset.state === 'stalled'", timeout=15_000)
    assert page.text_content("#mode") == "distributed: no worker, 1 dispatcher, no beat"
    assert advice() == ["celery -A crawlerweb worker", "celery -A crawlerweb beat"]
    assert "No worker is online" in page.text_content("#crawl-state")
    assert "?." not in page.text_content("#crawl-state")
    assert page.problems == []
    context.close()


def test_times_are_shown_in_the_servers_zone_with_its_name(live_server, browser, staff_cookie, settings):
    # The server in Paris, the browser in New York with a 12-hour locale: the page shows Paris time.
    settings.TIME_ZONE = "Europe/Paris"
    service.add_urls([service.Candidate("http://slow.test/a")])
    fetched_at = timezone.now() - timedelta(seconds=30)
    Url.objects.update(state="failed", outcome="timeout", attempts=4, last_fetched_at=fetched_at)
    for n in range(3):
        MetricSample.objects.create(taken_at=timezone.now() - timedelta(seconds=60 - 10 * n), figures={
            "urls": {"fetched": n, "by_state": {"queued": 0}}})
    context, page = open_dashboard(browser, live_server, staff_cookie, timezone_id="America/New_York",
                                   locale="en-US")
    assert page.evaluate("() => Intl.DateTimeFormat().resolvedOptions().timeZone") == "America/New_York"

    paris = fetched_at.astimezone(ZoneInfo("Europe/Paris"))
    name = paris.tzname()  # CET or CEST
    (error,) = rows(page, "#recent-errors")
    # Today's times without their date; the date shown too when Paris passed midnight meanwhile.
    same_day = paris.date() == timezone.now().astimezone(ZoneInfo("Europe/Paris")).date()
    assert error[0] == (f"{paris:%H:%M:%S} {name}" if same_day else f"{paris:%Y-%m-%d %H:%M:%S} {name}")
    assert re.fullmatch(rf"updated \d\d:\d\d:\d\d {name} · figures \d+ s old", page.text_content("#status"))
    labels = page.evaluate("() => window.dashboard.charts['chart-rate'].data.labels")
    first = MetricSample.objects.order_by("taken_at").first().taken_at.astimezone(ZoneInfo("Europe/Paris"))
    assert labels[0] == f"{first:%H:%M:%S}"  # 24-hour, no AM/PM
    assert page.evaluate("() => window.dashboard.charts['chart-rate'].options.scales.x.title.text") == f"time ({name})"
    assert not re.search(r"\b(AM|PM)\b", page.text_content("body"))
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
