"""The admin's screens as an operator meets them, in a real headless Chromium at 1366 px
(Debian's package, as tests/console/test_dashboard.py): lists that fit, states computed now and
said in words, units a person reads, one named time zone, the actions and links on each
object's page, the crawl's pause switch, long texts folded. Screenshots go to var/screens/
for people."""

from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from frontier.models import CrawlLimits, Host, Url, UrlState
from frontier.normalize import normalize
from indexer.models import Document

WIDTH = 1366
pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def page(browser, live_server):
    User.objects.create_superuser("op", "op@example.test", "pw")
    client = Client()
    client.login(username="op", password="pw")
    context = browser.new_context(viewport={"width": WIDTH, "height": 800})
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                          "domain": urlsplit(live_server.url).hostname, "path": "/"}])
    page = context.new_page()
    page.problems = []
    page.on("pageerror", lambda exc: page.problems.append(str(exc)))
    page.base = live_server.url
    yield page
    context.close()


def shoot(page, name: str) -> None:
    from django.conf import settings

    folder = settings.BASE_DIR / "var" / "screens"
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def make_url(host: Host, path: str = "/", **fields) -> Url:
    norm = normalize(host.origin + path)
    return Url.objects.create(url=norm.url, url_key=norm.url_key, host=host, **fields)


def make_hosts():
    now = timezone.now()
    past, soon = now - timedelta(minutes=40), now + timedelta(minutes=3)
    hosts = {
        "leased": Host.objects.create(origin="http://leased.test", leased_until=now + timedelta(seconds=50),
                                      lease_owner="box/worker-7", next_fetch_at=past),
        "paused": Host.objects.create(origin="http://paused.test", paused_at=past),
        "waiting": Host.objects.create(origin="http://waiting.test", next_fetch_at=soon, wait_reason="crawl_delay",
                                       crawl_delay=5, response_time=0.0016416325249830309),
        "breaker": Host.objects.create(origin="http://breaker.test", failures=9, wait_reason="breaker",
                                       next_fetch_at=now + timedelta(minutes=10)),
        # its last session ended 40 minutes ago with the default delay: that wait is long over
        "idle": Host.objects.create(origin="http://idle.test", next_fetch_at=past, wait_reason="default_delay"),
    }
    make_url(hosts["waiting"], "/queued", next_fetch_at=soon)
    return hosts


def press(page, selector: str) -> None:
    """Click what leads to another page (a link, a form's button) and wait for that page."""
    with page.expect_navigation():
        page.click(selector)


def visible_columns(page) -> list[str]:
    return page.evaluate("""() => [...document.querySelectorAll('#result_list thead th')]
        .filter(th => !th.classList.contains('action-checkbox-column')).map(th => th.textContent.trim())""")


def fits(page) -> bool:
    """Nothing of the page or of the result list is cut off at this width."""
    return page.evaluate(f"""() => document.documentElement.scrollWidth <= {WIDTH} &&
        [...document.querySelectorAll('.results')].every(r => r.scrollWidth <= r.clientWidth)""")


def test_the_host_list_fits_and_says_where_each_host_is_now(page):
    make_hosts()
    page.goto(page.base + "/admin/frontier/host/")
    assert fits(page) and len(visible_columns(page)) <= 8, visible_columns(page)
    now_column = visible_columns(page).index("Now") + 2  # nth-child counts the checkbox column, from 1
    states = dict(page.evaluate(f"""() => [...document.querySelectorAll('#result_list tbody tr')].map(tr =>
        [tr.querySelector('th').textContent.trim(), tr.querySelector('td:nth-child({now_column})').textContent.trim()])"""))
    assert states["http://idle.test"] == "idle"  # not "default_delay" forty minutes on
    assert states["http://waiting.test"] in ("waiting · in 3 min", "waiting · in 2.9 min")
    assert states["http://breaker.test"].startswith("backing off (circuit breaker) · in ")
    assert states["http://paused.test"] == "paused"
    assert states["http://leased.test"].startswith("leased · ") and states["http://leased.test"].endswith(" left")
    # The whole line is one hover away.
    assert page.get_attribute("tr:has-text('waiting.test') span[title^='waiting for robots.txt Crawl-delay until']",
                              "title").endswith("UTC (in 3 min)")
    assert "1.64 ms" in page.text_content("tr:has-text('waiting.test')")
    shoot(page, "hosts")
    # The filter "waiting now for" lists only hosts whose wait still lasts.
    page.goto(page.base + "/admin/frontier/host/?wait_reason=default_delay")
    assert "http://idle.test" not in page.text_content("#changelist")
    # The admin links the dashboard.
    page.goto(page.base + "/admin/frontier/host/")
    press(page, "#dashboard-link")
    assert urlsplit(page.url).path == "/dashboard/"
    assert page.problems == []


def test_a_host_page_carries_its_actions_and_links(page):
    hosts = make_hosts()
    waiting = hosts["waiting"]
    page.goto(page.base + f"/admin/frontier/host/{waiting.id}/change/")
    assert page.text_content(".field-state_in_words .readonly").startswith("waiting for robots.txt Crawl-delay until 20")
    assert "5 s" in page.text_content(".field-crawl_delay_human") and "UTC" in page.text_content(".field-next_fetch_at")
    buttons = page.eval_on_selector_all(".object-tools button", "bs => bs.map(b => b.textContent)")
    assert buttons == ["Pause", "Fetch now", "Refetch robots.txt"]  # not paused: no Resume; no failures: no reset
    shoot(page, "host")
    press(page, "button:text('Fetch now')")
    assert "Fetch now: 1 changed" in page.text_content(".messagelist")
    assert page.text_content(".field-state_in_words .readonly").startswith("ready")
    press(page, "button:text('Pause')")
    assert page.text_content(".field-state_in_words .readonly").startswith("paused by an operator since 20")
    assert page.eval_on_selector_all(".object-tools button", "bs => bs.map(b => b.textContent)")[0] == "Resume"
    # Its URLs, and its requests in the crawl log.
    press(page, "a:text('its 0 URLs')")
    assert "http://waiting.test/queued" in page.text_content("#result_list")
    page.go_back()
    assert page.get_attribute("a:text('its crawl log')", "href").endswith(f"?host_id={waiting.id}")
    breaker = hosts["breaker"]
    page.goto(page.base + f"/admin/frontier/host/{breaker.id}/change/")
    assert "Reset breaker" in page.eval_on_selector_all(".object-tools button", "bs => bs.map(b => b.textContent)")
    assert page.problems == []


def test_a_url_page_says_what_is_known_and_recrawls_on_a_click(page):
    host = Host.objects.create(origin="http://site.test")
    new = make_url(host, "/new", state=UrlState.FETCHED, last_status=200, last_fetched_at=timezone.now())
    known = make_url(host, "/known", state=UrlState.FETCHED, last_status=200, last_fetched_at=timezone.now(),
                     observations=6, change_rate=0.5, recrawl_interval=10800.0,
                     change_stats='{"v":2,"n":6,"x":3,"u":259200,"k":0,"s":0,"t":518400,"a":518400,"h":[[42,3,259200]]}')
    body = "First words of the page. " + "More text. " * 2000 + "THE VERY END"
    Document.objects.create(url=known, page_url=known.url, title="Known page", body=body, content_hash="ab" * 32)

    page.goto(page.base + f"/admin/frontier/url/{new.id}/change/")
    assert page.text_content(".field-change_rate_human .readonly").strip() == "unknown (nothing seen yet: its first look is due)"
    assert page.text_content(".field-recrawl_interval_human .readonly").strip() == "not planned yet"
    links = page.eval_on_selector_all(".object-links a", "as => as.map(a => a.textContent)")
    assert links == ["host http://site.test", "its crawl log lines"]  # no document: no link to one
    press(page, "button:text('Recrawl now')")
    assert "Recrawl now: 1 changed" in page.text_content(".messagelist")
    assert Url.objects.get(id=new.id).state == UrlState.QUEUED

    page.goto(page.base + f"/admin/frontier/url/{known.id}/change/")
    assert page.text_content(".field-change_rate_human .readonly").strip() == "0.5 a day (one every 2 days)"
    assert page.text_content(".field-recrawl_interval_human .readonly").strip() == "every 3 h"
    assert page.get_attribute(".field-recrawl_interval_human span", "title") == "10800.0 s"
    shoot(page, "url")
    press(page, ".object-links a:text('its document')")
    # The document's text is folded: its start shows, the rest is one click away.
    assert page.is_visible("text=First words of the page.") and not page.is_visible("text=THE VERY END")
    assert page.evaluate("() => document.documentElement.scrollHeight") < 2500
    shoot(page, "document")
    page.click("details summary")  # opens in place
    assert page.is_visible("text=THE VERY END")
    assert page.problems == []


def test_the_crawl_limits_page_is_the_crawl_switch_with_the_limits_in_force(page, settings):
    page.goto(page.base + "/admin/frontier/crawllimits/")
    assert urlsplit(page.url).path == "/admin/frontier/crawllimits/1/change/"
    assert page.text_content(".field-crawl_state .readonly").strip() == "running"
    assert page.get_attribute("#id_depth_limit", "placeholder") == f"default: {settings.CRAWLER_DEPTH_LIMIT}"
    assert fits(page)
    shoot(page, "limits")
    press(page, "button:text('Pause the whole crawl')")
    assert page.text_content(".field-crawl_state .readonly").startswith("paused since 20")
    assert CrawlLimits.objects.get(pk=1).paused_at is not None
    page.fill("#id_depth_limit", "7")
    press(page, "input[name=_continue]")
    assert CrawlLimits.objects.get(pk=1).depth_limit == 7
    assert "in force: 7 (set here)" in page.text_content(".field-depth_limit")
    press(page, "button:text('Resume the crawl')")
    assert page.text_content(".field-crawl_state .readonly").strip() == "running"
    assert page.problems == []


def test_every_list_of_the_crawl_fits_1366_px_with_long_urls(page):
    """Every changelist of our apps, each with a row whose URL is long, scans at 1366 px
    beside the sidebar and the filters: about eight columns, nothing cut off."""
    from django.contrib import admin
    from django.urls import reverse

    from crawl.models import CrawlLogEntry
    from frontier.models import DeadLetter, SteeringAction, UrlPattern

    host = Host.objects.create(origin="http://a-rather-long-host-name.example-of-a-site.test", address="10.1.2.3")
    long_path = "/" + "/".join(f"section-{n}/chapter-{n}" for n in range(8)) + "/page.html?view=full&lang=en"
    url = make_url(host, long_path, state=UrlState.FAILED, last_status=500, outcome="http_500", attempts=4,
                   last_fetched_at=timezone.now(), observations=3, change_rate=1.5)
    DeadLetter.objects.create(url=url, reason="http_500", last_status=500, attempts=4)
    Document.objects.create(url=url, page_url=url.url, title="A title that goes on for a while " * 3,
                            body="text", content_hash="cd" * 32)
    CrawlLogEntry.objects.create(at=timezone.now(), kind="page", url=url.url, url_id=url.id, host_id=host.id,
                                 origin=host.origin, status=500, outcome="server_error", bytes=12345, ms=87,
                                 worker="a-machine-name/worker-12345", lease="0123456789abcdef0123456789abcdef")
    UrlPattern.objects.create(key=1, pattern=host.origin + "/section-#/chapter-#/…", pages=40, new_pages=2)
    SteeringAction.objects.create(actor="admin:op", action="recrawl_now", target=url.url, result="1 changed")
    ours = [model for model in admin.site._registry if model._meta.app_label in ("frontier", "fetch", "archive",
                                                                                  "indexer", "crawl", "console")]
    assert len(ours) >= 15
    wide = {}
    for model in ours:
        page.goto(page.base + reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist"))
        columns = visible_columns(page)
        if not fits(page) or len(columns) > 8:
            wide[model._meta.model_name] = columns
    assert wide == {}
    assert page.problems == []
