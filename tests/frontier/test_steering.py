"""An operator steers a running crawl: pause and resume (the crawl, one host), fetch now,
reset the breaker, refetch robots.txt, recrawl a URL — from the API and the admin, with the
same validation, authentication and audit. Pauses are judged from the servers' own request
logs: requests stop, nothing is lost, resuming finishes the crawl with no URL fetched twice."""

import json
import threading
import time
import uuid
from collections import Counter
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from console.keys import create_key
from crawl.runners import run_embedded
from frontier import service
from frontier.models import CrawlLimits, DeadLetter, Host, SteeringAction, Url, UrlState
from frontier.steering import host_ids_for, url_ids_for

from ..loopback import QuietHandler, start

PAGES = 7  # depth 0 to 6: tests/conftest.py sets the depth limit to 6


class Site:
    """A loopback site of PAGES pages (each links to the next) that logs every request."""

    def __init__(self):
        self.log: list[tuple[float, str]] = []
        # Its own words: two sites of the same numbered pages would be one text twice (digits
        # do not count: indexer/fingerprint.py), and the second a mirror (frontier/traps.py).
        self.word = uuid.uuid4().hex
        site = self

        class Handler(QuietHandler):
            def do_GET(self):
                site.log.append((time.monotonic(), self.path))
                if self.path == "/robots.txt":
                    return self.send(404)
                n = int(self.path.strip("/") or 0)
                link = f'<a href="/{n + 1}">next</a>' if n + 1 < PAGES else ""
                self.send(200, f"<html><title>page {n} of {site.word}</title><body>{link}</body></html>".encode(),
                          [("Content-Type", "text/html")])

        self.server, self.origin = start(Handler)

    def pages(self, since: float = 0.0) -> list[str]:
        return [path for at, path in self.log if at >= since and path != "/robots.txt"]

    def close(self):
        self.server.shutdown()


@pytest.fixture
def sites():
    made = []

    def make():
        made.append(Site())
        return made[-1]

    yield make
    for site in made:
        site.close()


@pytest.fixture
def api():
    key = create_key("operator")[1]
    client = Client()

    def post(path, payload=None):
        body = "" if payload is None else json.dumps(payload)
        return client.post(path, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")

    return post


def crawl_in_background(max_seconds=60):
    done = threading.Event()
    stats = {}

    def run():
        try:
            stats["run"] = run_embedded(threads=4, max_seconds=max_seconds)
        finally:
            from django.db import connection

            connection.close()
            done.set()

    threading.Thread(target=run, daemon=True).start()
    return done, stats


def hosts_leased(origin: str | None = None) -> bool:
    """Whether a session holds a host (that one, or any) now."""
    leased = Host.objects.filter(leased_until__gt=timezone.now())
    return (leased.filter(origin=origin) if origin else leased).exists()


def wait_for(condition, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


# --- pause and resume, for real ---------------------------------------------------------------

@pytest.mark.crawl
@pytest.mark.django_db(transaction=True)
def test_pausing_the_crawl_stops_every_request_and_resuming_finishes_it_with_nothing_lost(sites, api, settings):
    settings.CRAWLER_DEFAULT_DELAY = 0.15
    a, b = sites(), sites()
    service.add_seeds([f"{a.origin}/0", f"{b.origin}/0"])
    done, _ = crawl_in_background()
    wait_for(lambda: len(a.pages()) + len(b.pages()) >= 4)

    answer = api("/crawl/pause")
    assert answer.status_code == 200 and answer.json()["paused"] is True and answer.json()["changed"] == 1
    # A request already under way may finish; then every session ends and gives its host back …
    wait_for(lambda: not hosts_leased(), timeout=15)
    settled = len(a.pages()) + len(b.pages())
    # … and nothing is sent for as long as the pause lasts (an absence takes a while to see:
    # longer than the runners' 2 s re-read of the pause plus a host's delay).
    time.sleep(2.0)
    assert len(a.pages()) + len(b.pages()) == settled, "requests went on after the pause"
    assert settled < 2 * PAGES
    assert not hosts_leased(), "a paused crawl holds no host"
    # Nothing is lost: every URL found is fetched or still queued, none failed or charged.
    assert set(Url.objects.values_list("state", flat=True)) <= {UrlState.FETCHED, UrlState.QUEUED}
    assert not Url.objects.filter(state=UrlState.QUEUED, attempts__gt=0).exists()

    assert api("/crawl/resume").json() == {"action": "resume_crawl", "changed": 1, "paused": False}
    assert done.wait(60), "the crawl did not finish after resuming"
    for site in (a, b):
        assert sorted(Counter(site.pages()).values()) == [1] * PAGES, "each page exactly once"
    assert Url.objects.filter(state=UrlState.FETCHED).count() == 2 * PAGES
    assert list(SteeringAction.objects.order_by("id").values_list("actor", "action")) == [
        ("key:operator", "pause_crawl"), ("key:operator", "resume_crawl")]


@pytest.mark.crawl
@pytest.mark.django_db(transaction=True)
def test_pausing_one_host_stops_only_that_host(sites, api, settings):
    settings.CRAWLER_DEFAULT_DELAY = 0.1
    a, b = sites(), sites()
    service.add_seeds([f"{a.origin}/0", f"{b.origin}/0"])
    done, _ = crawl_in_background()
    wait_for(lambda: len(a.pages()) >= 2)
    answer = api("/hosts/pause", {"hosts": [a.origin]})
    assert answer.status_code == 200 and answer.json()["changed"] == 1
    wait_for(lambda: not hosts_leased(a.origin), timeout=15)  # its session ended
    settled = len(a.pages())
    wait_for(lambda: len(b.pages()) == PAGES)  # the other host goes on to the end
    assert len(a.pages()) == settled < PAGES
    assert Host.objects.get(origin=a.origin).paused_at is not None

    assert api("/hosts/resume", {"hosts": [f"{a.origin}/any/page"]}).json()["changed"] == 1
    assert done.wait(60)
    assert sorted(Counter(a.pages()).values()) == [1] * PAGES


# --- the host and URL actions ------------------------------------------------------------------

def make_host(origin="http://h.test", **fields) -> Host:
    return Host.objects.create(origin=origin, **fields)


def make_url(host, path="/", **fields) -> Url:
    from frontier.normalize import normalize

    norm = normalize(host.origin + path)
    return Url.objects.create(url=norm.url, url_key=norm.url_key, host=host, **fields)


@pytest.mark.django_db
def test_fetch_now_makes_a_waiting_host_and_its_urls_due_but_leaves_a_paused_host_alone(api):
    later = timezone.now() + timedelta(hours=2)
    waiting = make_host(next_fetch_at=later, wait_reason="retry_after_429")
    paused = make_host("http://p.test", next_fetch_at=later, paused_at=timezone.now())
    retrying = make_url(waiting, "/r", next_fetch_at=later, attempts=2, outcome="http_503")
    fetched = make_url(waiting, "/f", state=UrlState.FETCHED, next_fetch_at=later)
    make_url(paused, "/x", next_fetch_at=later)
    answer = api("/hosts/fetch-now", {"hosts": [waiting.id, paused.id]}).json()
    assert answer["changed"] == 1 and answer["urlsMadeDue"] == 1 and answer["pausedHostsSkipped"] == 1
    waiting.refresh_from_db(), retrying.refresh_from_db(), fetched.refresh_from_db()
    assert waiting.next_fetch_at <= timezone.now() and waiting.wait_reason == ""
    assert retrying.next_fetch_at <= timezone.now() and retrying.attempts == 2  # its retries are its own
    assert fetched.next_fetch_at == later  # settled URLs wait for their revisit
    assert Host.objects.get(id=paused.id).next_fetch_at == later
    assert [lease.host_id for lease in service.lease_ready_hosts("t", 5)] == [waiting.id]


@pytest.mark.django_db
def test_reset_breaker_forgets_the_failures_and_releases_a_host_the_breaker_holds(api):
    later = timezone.now() + timedelta(hours=1)
    held = make_host(failures=9, next_fetch_at=later, wait_reason="breaker")
    slow = make_host("http://slow.test", failures=1, next_fetch_at=later, wait_reason="crawl_delay")
    answer = api("/hosts/reset-breaker", {"hosts": [held.origin, slow.origin]}).json()
    assert answer["changed"] == 2 and answer["released"] == 1
    held.refresh_from_db(), slow.refresh_from_db()
    assert (held.failures, held.wait_reason) == (0, "") and held.next_fetch_at <= timezone.now()
    assert slow.failures == 0 and slow.next_fetch_at == later  # its Crawl-delay still holds


@pytest.mark.crawl
@pytest.mark.django_db(transaction=True)
def test_refetch_robots_makes_the_next_session_fetch_robots_txt_again(sites, api):
    site = sites()
    service.add_seeds([f"{site.origin}/{PAGES - 1}"])
    run_embedded(threads=2, max_seconds=30)
    assert [path for _, path in site.log] == ["/robots.txt", f"/{PAGES - 1}"]
    answer = api("/hosts/refetch-robots", {"hosts": [site.origin]}).json()
    assert answer["changed"] == 1
    assert api("/urls/recrawl", {"urls": [f"{site.origin}/{PAGES - 1}"]}).json()["changed"] == 1
    run_embedded(threads=2, max_seconds=30)
    assert [path for _, path in site.log][2:] == ["/robots.txt", f"/{PAGES - 1}"]


@pytest.mark.django_db
def test_recrawl_now_requeues_settled_and_dead_urls_but_not_excluded_ones(api):
    host = make_host()
    later = timezone.now() + timedelta(days=30)
    fetched = make_url(host, "/a", state=UrlState.FETCHED, next_fetch_at=later, attempts=1)
    dead = make_url(host, "/b", state=UrlState.FAILED, attempts=4, backoff_level=4, outcome="timeout")
    DeadLetter.objects.create(url=dead, reason="timeout", attempts=4)
    excluded = make_url(host, "/c", state=UrlState.EXCLUDED, outcome="excluded_domain")
    answer = api("/urls/recrawl", {"urls": [fetched.url, dead.id, excluded.id, "http://h.test/unknown"]})
    body = answer.json()
    assert answer.status_code == 200 and body["changed"] == 2
    assert body["excludedUrlIds"] == [excluded.id] and body["unknownUrls"] == ["http://h.test/unknown"]
    for url in (fetched, dead):
        url.refresh_from_db()
        assert (url.state, url.attempts, url.backoff_level, url.outcome) == (UrlState.QUEUED, 0, 0, "recrawl_now")
        assert url.next_fetch_at <= timezone.now()
    assert not DeadLetter.objects.exists()
    assert Url.objects.get(id=excluded.id).state == UrlState.EXCLUDED
    entry = SteeringAction.objects.get()
    assert entry.action == "recrawl_now" and entry.target.startswith("http://h.test/a")


@pytest.mark.django_db
def test_hosts_and_urls_are_named_by_id_origin_or_any_url_on_them():
    host = make_host("http://n.test:8080")
    url = make_url(host, "/page?b=2&a=1")
    assert host_ids_for([host.id, "http://N.test:8080/else", "http://other.test/", "::", 999]) == (
        [host.id, host.id], ["http://other.test/", "::", 999])
    assert url_ids_for(["http://n.test:8080/page?b=2&a=1", url.id])[0] == [url.id, url.id]


# --- validation, authentication, audit ----------------------------------------------------------

@pytest.mark.django_db
@pytest.mark.parametrize("path, payload, status, message", [
    ("/hosts/pause", {}, 400, "missing field: hosts"),
    ("/hosts/pause", {"hosts": []}, 400, "hosts is empty"),
    ("/hosts/pause", {"hosts": "http://h.test"}, 400, "hosts must be an array"),
    ("/hosts/pause", {"hosts": [True]}, 400, "hosts[0] must be an integer id or a URL string, got a boolean"),
    ("/hosts/pause", {"hosts": [1.5]}, 400, "got a number"),
    ("/hosts/pause", {"hosts": [-1]}, 400, "hosts[0] is not a valid id"),
    ("/hosts/pause", {"hosts": [1], "all": True}, 400, "unknown field(s): all"),
    ("/hosts/pause", {"hosts": ["http://nobody.test/"]}, 404, "no known host"),
    ("/hosts/explode", {"hosts": [1]}, 404, "unknown host action 'explode'"),
    ("/urls/recrawl", {"urls": list(range(1, 1002))}, 400, "1001 urls; at most 1000"),
    ("/urls/recrawl", {"urls": [""]}, 400, "urls[0] must be a URL of 1 to"),
    ("/urls/recrawl", {"urls": [12345]}, 404, "no known URL"),
    ("/crawl/pause", {"now": True}, 400, "unknown field(s): now"),
])
def test_bad_steering_requests_get_a_clear_refusal_and_change_nothing(api, path, payload, status, message):
    make_host()
    answer = api(path, payload)
    assert answer.status_code == status and message in answer.json()["error"]
    assert not SteeringAction.objects.exists() and not Host.objects.filter(paused_at__isnull=False).exists()
    assert CrawlLimits.objects.filter(paused_at__isnull=False).count() == 0


@pytest.mark.django_db
def test_an_object_pages_buttons_need_the_steering_permission_and_a_post():
    host = make_host()
    staff = User.objects.create_user("viewer", password="pw", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_host"))
    client = Client()
    client.force_login(staff)
    page = client.get(f"/admin/frontier/host/{host.id}/change/").content.decode()
    assert "Fetch now</button>" not in page and "its 0 URLs" in page  # links, no buttons
    assert client.post(f"/admin/frontier/host/{host.id}/act/pause/").status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="change_host"))
    client.force_login(User.objects.get(id=staff.id))
    assert "Fetch now</button>" in client.get(f"/admin/frontier/host/{host.id}/change/").content.decode()
    assert client.get(f"/admin/frontier/host/{host.id}/act/pause/").status_code == 405  # a GET changes nothing
    assert client.post(f"/admin/frontier/host/{host.id}/act/resume/").status_code == 403  # not paused: no Resume
    assert client.post(f"/admin/frontier/host/{host.id}/act/pause/").status_code == 302
    host.refresh_from_db()
    assert host.paused_at is not None
    assert list(SteeringAction.objects.values_list("actor", "action")) == [("admin:viewer", "pause")]
    assert client.post("/admin/frontier/host/999999/act/pause/").status_code == 404


@pytest.mark.django_db
def test_steering_needs_a_key_or_a_staff_session_allowed_to_change_hosts():
    host = make_host()
    anonymous = Client().post("/hosts/pause", json.dumps({"hosts": [host.id]}), content_type="application/json")
    assert anonymous.status_code == 401
    staff = User.objects.create_user("viewer", password="pw", is_staff=True)
    client = Client()
    client.force_login(staff)
    refused = client.post("/crawl/pause", "", content_type="application/json")
    assert refused.status_code == 403 and "frontier.change_host" in refused.json()["error"]
    staff.user_permissions.add(Permission.objects.get(codename="change_host"))
    client.force_login(User.objects.get(id=staff.id))
    assert client.post("/crawl/pause", "", content_type="application/json").status_code == 200
    assert SteeringAction.objects.get().actor == "api:viewer"
    assert client.get("/crawl").json() == {"paused": True, "pausedHosts": 0}
    assert client.get("/crawl/pause").status_code == 405


@pytest.mark.django_db
def test_a_paused_crawl_leases_nothing_and_a_paused_host_is_skipped(api):
    a, b = make_host("http://a.test"), make_host("http://b.test")
    make_url(a), make_url(b)
    api("/crawl/pause")
    assert service.lease_ready_hosts("t", 5) == []
    api("/crawl/resume")
    api("/hosts/pause", {"hosts": [a.id]})
    assert [lease.origin for lease in service.lease_ready_hosts("t", 5)] == ["http://b.test"]
    assert service.paused_for(a.id) and not service.paused_for(b.id)


# --- the admin: derived data is read-only, steering is actions ------------------------------------

@pytest.mark.django_db
def test_derived_data_cannot_be_edited_in_the_admin(admin_client):
    host = make_host()
    url = make_url(host)
    for name, obj in (("frontier_host", host), ("frontier_url", url)):
        page = admin_client.get(f"/admin/frontier/{name.split('_')[1]}/{obj.id}/change/")
        assert page.status_code == 200 and b'name="_save"' not in page.content
        posted = admin_client.post(f"/admin/frontier/{name.split('_')[1]}/{obj.id}/change/", {"state": "failed"})
        assert posted.status_code == 403
    assert admin_client.get("/admin/frontier/url/add/").status_code == 403
    assert Url.objects.get(id=url.id).state == UrlState.QUEUED


@pytest.mark.django_db
def test_admin_actions_steer_and_are_audited_like_the_api(admin_client):
    host = make_host(failures=7, wait_reason="breaker", next_fetch_at=timezone.now() + timedelta(hours=1))
    url = make_url(host, state=UrlState.FETCHED)
    changelist = "/admin/frontier/host/"
    for action in ("pause", "reset_breaker", "refetch_robots"):
        response = admin_client.post(changelist, {"action": action, "_selected_action": [host.id]}, follow=True)
        assert response.status_code == 200
    host.refresh_from_db()
    assert host.paused_at is not None and host.failures == 0 and host.robots_expires_at <= timezone.now()
    admin_client.post("/admin/frontier/url/", {"action": "recrawl_now", "_selected_action": [url.id]})
    assert Url.objects.get(id=url.id).state == UrlState.QUEUED
    admin_client.post("/admin/frontier/crawllimits/", {"action": "pause_crawl",
                                                       "_selected_action": [CrawlLimits.objects.get_or_create(pk=1)[0].pk]})
    assert CrawlLimits.objects.get(pk=1).paused_at is not None
    assert list(SteeringAction.objects.order_by("id").values_list("actor", "action")) == [
        ("admin:admin", "pause"), ("admin:admin", "reset_breaker"), ("admin:admin", "refetch_robots"),
        ("admin:admin", "recrawl_now"), ("admin:admin", "pause_crawl")]
    assert b"recrawl_now" in admin_client.get("/admin/frontier/steeringaction/").content
    # each host links to its requests in the crawl log
    assert f"/admin/crawl/crawllogentry/?host_id={host.id}" in admin_client.get("/admin/frontier/host/").content.decode()


@pytest.mark.django_db
def test_the_crawl_limits_page_shows_the_values_in_force_defaults_included(admin_client, settings):
    settings.CRAWLER_MAX_URLS_PER_HOST = 777
    CrawlLimits.objects.update_or_create(pk=1, defaults={"depth_limit": 5})
    response = admin_client.get("/admin/frontier/crawllimits/", follow=True)
    assert response.redirect_chain == [("/admin/frontier/crawllimits/1/change/", 302)]  # one row: open it
    page = response.content.decode()
    assert "in force: 777 (the default). Empty = the default, CRAWLER_MAX_URLS_PER_HOST = 777." in page
    assert 'placeholder="default: 777"' in page
    assert f"in force: 5 (set here). Empty = the default, CRAWLER_DEPTH_LIMIT = {settings.CRAWLER_DEPTH_LIMIT}." in page
    assert "running" in page and "paused since" not in page and "0 crawl limits" not in page
    # The switch is a button saying what it does, and only the one that applies.
    assert "Pause the whole crawl</button>" in page and "Resume the crawl</button>" not in page
    response = admin_client.post("/admin/frontier/crawllimits/1/act/pause/", follow=True)
    page = response.content.decode()
    assert CrawlLimits.objects.get(pk=1).paused_at is not None
    assert "Resume the crawl</button>" in page and "Pause the whole crawl</button>" not in page
    assert "paused since " in page and " UTC: no host is leased" in page


@pytest.mark.django_db
def test_the_dead_letter_filter_leaves_out_urls_refused_for_their_address(admin_client):
    host = make_host()
    dead = make_url(host, "/dead", state=UrlState.FAILED, outcome="timeout")
    DeadLetter.objects.create(url=dead, reason="timeout")
    make_url(host, "/refused", state=UrlState.FAILED, outcome="blocked_address")
    page = admin_client.get("/admin/frontier/url/?state=failed_dead_letter").content.decode()
    assert "/dead" in page and "/refused" not in page
    page = admin_client.get("/admin/frontier/url/?state=failed_final").content.decode()
    assert "/refused" in page and "/dead<" not in page
    assert "Server addresses" in admin_client.get("/admin/").content.decode()


@pytest.mark.crawl
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_pause_reaches_celery_workers_and_dispatchers_in_other_processes(sites, api):
    from bench.cluster import wait_until_done

    from ..crawl_helpers import distributed_cluster

    a, b = sites(), sites()
    with distributed_cluster(workers=1, dispatchers=1, CRAWLER_DEFAULT_DELAY="0.3") as running:
        service.add_seeds([f"{a.origin}/0", f"{b.origin}/0"])
        wait_for(lambda: len(a.pages()) + len(b.pages()) >= 3, timeout=60)
        assert api("/crawl/pause").json()["changed"] == 1
        # The runners re-read the pause every 2 s; a request under way may finish, then every
        # session ends and its host is released.
        wait_for(lambda: not hosts_leased(), timeout=30)
        settled = len(a.pages()) + len(b.pages())
        time.sleep(3.0)  # an absence of requests takes a while to see
        assert len(a.pages()) + len(b.pages()) == settled < 2 * PAGES, "requests went on after the pause"
        api("/crawl/resume")
        wait_until_done(service.has_pending_work, running, 120)
    for site in (a, b):
        assert sorted(Counter(site.pages()).values()) == [1] * PAGES


@pytest.mark.django_db
def test_the_documented_steering_examples_work(api, settings):
    import yaml

    spec = yaml.safe_load((settings.BASE_DIR / "docs" / "openapi.yaml").read_text())
    make_url(make_host("http://127.0.0.1:8300"))
    for path, action in (("/hosts/{action}", "pause"), ("/urls/recrawl", None)):
        example = spec["paths"][path]["post"]["requestBody"]["content"]["application/json"]["example"]
        answer = api(path.replace("{action}", action or ""), example)
        assert answer.status_code == 200 and answer.json()["changed"] == 1
    documented = spec["paths"]["/hosts/{action}"]["post"]["parameters"][0]["schema"]["enum"]
    for action in documented:
        assert api(f"/hosts/{action}", {"hosts": [1]}).status_code in (200, 404)  # a known action
        assert "unknown host action" not in api(f"/hosts/{action}", {"hosts": [1]}).content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/admin/frontier/url/", "/admin/frontier/host/", "/admin/crawl/crawllogentry/",
                                  "/admin/indexer/document/"])
def test_big_admin_lists_never_scan_for_filter_choices(admin_client, path):
    """Million-row tables: filter choices are fixed, never a SELECT DISTINCT over the table."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    make_url(make_host())
    with CaptureQueriesContext(connection) as queries:
        assert admin_client.get(path).status_code == 200
    assert not [q["sql"] for q in queries.captured_queries if "DISTINCT" in q["sql"].upper()]
