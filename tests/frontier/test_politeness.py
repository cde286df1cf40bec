"""Politeness beyond the host: per server address, adaptive delay, the circuit breaker.

Every check reads the server's own request log (webs/sampleweb/hostile.py stamps each
request when it arrives and when its response is written), never the crawler's.
"""

import socket

import pytest
from django.utils import timezone

from webs.sampleweb.hostile import SLOW_SECONDS, hostile_web
from crawl.runners import run_embedded
from frontier import service
from frontier.models import Host, ServerAddress, Url

pytestmark = [pytest.mark.crawl, pytest.mark.django_db(transaction=True)]

SHARED = ("main", "robots_404", "robots_garbage", "trap")  # four host names, one address
PAGES = 5
DELAY = 0.15


def page_requests(web, personas):
    """(start, end) of every page request (not robots.txt) to these personas, by start."""
    return sorted((start, end) for persona, path, start, end in web.log
                  if persona in personas and path != "/robots.txt")


def gaps(requests):
    """Seconds between the end of one response and the start of the next request."""
    return [b[0] - a[1] for a, b in zip(requests, requests[1:])]


def crawl_shared_server(settings, scope):
    settings.CRAWLER_POLITENESS_SCOPE = scope
    settings.CRAWLER_DEFAULT_DELAY = DELAY
    settings.CRAWLER_ADAPTIVE_DELAY_FACTOR = 0
    with hostile_web() as web:
        service.add_seeds([web.url(f"/fine/{n}", persona) for persona in SHARED for n in range(PAGES)])
        stats = run_embedded(threads=4, max_seconds=60)
    assert stats.errors == 0
    assert Url.objects.filter(state="fetched").count() == len(SHARED) * PAGES
    return web


def test_many_names_on_one_address_share_one_request_slot_and_one_delay(settings):
    web = crawl_shared_server(settings, "both")
    requests = page_requests(web, SHARED)
    assert len(requests) == len(SHARED) * PAGES
    # one server: never two requests at once, never closer than the delay, whatever the name
    assert min(gaps(requests)) >= DELAY - 0.01
    address = ServerAddress.objects.get()
    assert address.address == "127.0.0.1" and not address.lease_owner
    assert set(Host.objects.values_list("address", flat=True)) == {"127.0.0.1"}


def test_per_host_scope_lets_names_on_one_address_go_in_parallel(settings):
    web = crawl_shared_server(settings, "host")
    requests = page_requests(web, SHARED)
    # the four hosts are crawled side by side: some requests come closer than the delay
    assert min(gaps(requests)) < DELAY / 2
    for persona in SHARED:  # but each host on its own keeps the delay
        assert min(gaps(page_requests(web, {persona}))) >= DELAY - 0.01


def test_a_slow_server_gets_a_longer_delay_and_a_fast_one_is_not_held_back(settings):
    settings.CRAWLER_POLITENESS_SCOPE = "host"
    settings.CRAWLER_DEFAULT_DELAY = 0.0
    settings.CRAWLER_ADAPTIVE_DELAY_FACTOR = 2.0
    settings.CRAWLER_MAX_ADAPTIVE_DELAY = 5.0
    with hostile_web() as web:
        service.add_seeds([web.url(f"/fine/{n}", persona) for persona in ("slow", "main") for n in range(PAGES)])
        run_embedded(threads=2, max_seconds=60)
    slow = Host.objects.get(origin=web.base["slow"])
    fast = Host.objects.get(origin=web.base["main"])
    assert slow.response_time == pytest.approx(SLOW_SECONDS, abs=0.1)
    assert fast.response_time < 0.05
    # the slow host waited about factor x response time between requests
    assert min(gaps(page_requests(web, {"slow"}))) >= 2.0 * SLOW_SECONDS * 0.8
    # the fast host was crawled back to back
    assert max(gaps(page_requests(web, {"main"}))) < 0.2


def test_a_failing_host_trips_the_breaker_its_urls_wait_and_others_continue(settings):
    settings.CRAWLER_HOST_FAILURE_THRESHOLD = 2
    settings.CRAWLER_HOST_PAUSE_SECONDS = 0.3
    settings.CRAWLER_HOST_PAUSE_MAX = 0.6
    settings.CRAWLER_ROBOTS_ERROR_SECONDS = 0.1
    settings.CRAWLER_RETRY_BASE_DELAY = 0.05
    settings.CRAWLER_MAX_ATTEMPTS = 4
    settings.CRAWLER_DEFAULT_DELAY = 0.0
    with socket.socket() as dead:  # bound, never listening: every connection is refused
        dead.bind(("127.0.0.1", 0))
        dead_origin = f"http://127.0.0.1:{dead.getsockname()[1]}"
        with hostile_web() as web:
            service.add_seeds([f"{dead_origin}/{n}" for n in range(6)] + [web.url(f"/fine/{n}") for n in range(6)])
            run_embedded(threads=2, max_seconds=6)
    host = Host.objects.get(origin=dead_origin)
    assert host.failures > settings.CRAWLER_HOST_FAILURE_THRESHOLD  # it was probed again, and failed
    dead_urls = Url.objects.filter(host=host)
    # charged only until the breaker tripped: nobody burned its attempts into dead letters
    assert set(dead_urls.values_list("state", flat=True)) == {"queued"}
    assert max(dead_urls.values_list("attempts", flat=True)) <= settings.CRAWLER_HOST_FAILURE_THRESHOLD
    # released paused by the breaker at the crawl's end (the end itself may take a moment under load)
    assert host.wait_reason == "breaker" and host.next_fetch_at > timezone.now() - timezone.timedelta(seconds=5)
    # the healthy host on the same machine was crawled completely meanwhile
    assert Url.objects.exclude(host=host).filter(state="fetched").count() == 6

