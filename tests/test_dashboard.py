"""The dashboard in a real headless Chromium (Debian's package; `make setup-browser`)."""

import shutil
import time
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.test import Client
from django.utils import timezone

from console.models import MetricSample
from frontier import service
from frontier.models import Url

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
            "urls": {"fetched": n * 20, "by_state": {"queued": 400 - n * 20}}})


def test_the_dashboard_renders_its_charts_and_refreshes_itself(live_server, browser, staff_cookie):
    make_history()
    context = browser.new_context()
    context.add_cookies([{"name": "sessionid", "value": staff_cookie, "domain": urlsplit(live_server.url).hostname,
                          "path": "/"}])
    page = context.new_page()
    problems = []
    page.on("console", lambda msg: problems.append(msg.text) if msg.type in ("error", "warning") else None)
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.goto(f"{live_server.url}/dashboard/?refresh=1", wait_until="load")
    page.wait_for_function("window.dashboard && window.dashboard.state.updates >= 1", timeout=15_000)

    charts = page.evaluate("""() => Object.entries(window.dashboard.charts).map(([id, c]) => ({
        id, type: c.config.type, points: c.data.datasets.reduce((n, d) => n + d.data.filter(v => v).length, 0),
        width: c.width, height: c.height}))""")
    assert {c["id"] for c in charts} == {"chart-rate", "chart-status", "chart-priority", "chart-top-pages",
                                         "chart-top-errors", "chart-errors"}
    assert all(c["points"] > 0 and c["width"] > 100 and c["height"] > 100 for c in charts), charts
    status = page.evaluate("() => window.dashboard.charts['chart-status'].data.labels")
    assert status == ["200", "404"]
    # Something was really drawn: the status doughnut's canvas is not blank.
    assert page.evaluate("""() => { const c = document.getElementById('chart-status');
        const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        for (let i = 3; i < px.length; i += 4) if (px[i] > 0) return true; return false; }""")
    assert page.text_content("#fetched") == "13"  # 12 fetched, 1 gone
    assert "http://h0.test/12" in page.text_content("#recent-errors")
    page.screenshot(path=str(_screenshot_path()), full_page=True)  # var/dashboard.png, for people

    # It refreshes by itself: new figures show up without a reload.
    Url.objects.filter(url__in=[f"http://h{n % 3}.test/{n}" for n in range(13, 20)]).update(
        state="fetched", last_status=200, last_fetched_at=timezone.now())
    MetricSample.objects.all().delete()  # force a fresh sample on the next poll
    page.wait_for_function("document.getElementById('fetched').textContent === '20'", timeout=15_000)
    updates = page.evaluate("() => window.dashboard.state")
    assert updates["updates"] >= 2 and updates["errors"] == 0, updates
    assert problems == []
    context.close()


def _screenshot_path():
    from django.conf import settings

    path = settings.BASE_DIR / "var" / "dashboard.png"
    path.parent.mkdir(exist_ok=True)
    return path


def test_the_dashboard_says_when_it_cannot_update(live_server, browser, staff_cookie):
    context = browser.new_context()
    context.add_cookies([{"name": "sessionid", "value": staff_cookie, "domain": urlsplit(live_server.url).hostname,
                          "path": "/"}])
    page = context.new_page()
    page.goto(f"{live_server.url}/dashboard/?refresh=1", wait_until="load")
    page.wait_for_function("window.dashboard.state.updates >= 1", timeout=15_000)
    context.clear_cookies()  # the session is gone: the data endpoint now answers 401
    deadline = time.monotonic() + 15
    while page.evaluate("window.dashboard.state.errors") == 0 and time.monotonic() < deadline:
        page.wait_for_timeout(200)
    assert "not updating: HTTP 401" in page.text_content("#status")
    context.close()
