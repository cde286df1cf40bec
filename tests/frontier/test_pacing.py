"""frontier.pacing.HostClock, table first: (what the host is like, what happened) -> when
the next request may start. Times are seconds on the clock's own scale (monotonic)."""

from datetime import datetime, timezone

import pytest

from frontier.pacing import HostClock, breaker_pause, delay_for, running_response_time


@pytest.fixture(autouse=True)
def pacing_settings(settings):
    settings.CRAWLER_DEFAULT_DELAY = 1.0
    settings.CRAWLER_ADAPTIVE_DELAY_FACTOR = 5.0
    settings.CRAWLER_MAX_ADAPTIVE_DELAY = 30.0
    settings.CRAWLER_HOST_FAILURE_THRESHOLD = 3
    settings.CRAWLER_HOST_PAUSE_SECONDS = 10.0
    settings.CRAWLER_HOST_PAUSE_MAX = 35.0
    settings.CRAWLER_DNS_NEGATIVE_SECONDS = 60.0


@pytest.mark.parametrize("crawl_delay, response_time, delay", [
    (None, None, 1.0),  # nothing measured yet: the floor
    (None, 0.01, 1.0),  # a fast server: the floor
    (None, 1.0, 5.0),  # factor x average
    (None, 60.0, 30.0),  # the ceiling
    (2.0, 60.0, 2.0),  # a Crawl-delay wins, whatever the response time
    (0.0, 0.5, 0.0),  # even Crawl-delay: 0
])
def test_the_delay_is_the_crawl_delay_or_adaptive_within_bounds(crawl_delay, response_time, delay):
    assert delay_for(crawl_delay, response_time) == delay
    assert HostClock(crawl_delay, response_time).delay == delay


def test_response_times_are_a_running_average():
    assert running_response_time(None, 0.4) == pytest.approx(0.4)
    assert running_response_time(1.0, 0.0) == pytest.approx(0.7)


@pytest.mark.parametrize("failures, pause", [(0, 0), (2, 0), (3, 10), (4, 20), (5, 35), (40, 35)])
def test_the_breakers_pause_doubles_up_to_its_maximum(failures, pause):
    assert breaker_pause(failures) == pause


# (clock, events, next request at, breaker open, pause reason)
# events: ("response", end, elapsed, status[, retry_after]) | ("failure", end, elapsed, kind)
#         | ("failed", end) | ("resolver", end) | ("pause", until, reason)
CASES = [
    # a fresh host may be asked at once
    (dict(), [], 0.0, False, ""),
    # the gap runs from the END of the response
    (dict(), [("response", 100.0, 0.05, 200)], 101.0, False, ""),
    (dict(crawl_delay=0.5), [("response", 100.0, 3.0, 200)], 100.5, False, ""),
    # a slow server gets a longer gap: 5 x running average
    (dict(response_time=0.4), [("response", 100.0, 0.4, 200)], 102.0, False, ""),
    # Retry-After on 429/503 pushes past the delay; without one, the default delay
    (dict(), [("response", 100.0, 0.01, 429, 7.0)], 107.0, False, "retry_after_429"),
    (dict(), [("response", 100.0, 0.01, 503, None)], 101.0, False, "retry_after_503"),
    (dict(crawl_delay=9.0), [("response", 100.0, 0.01, 503, 2.0)], 109.0, False, "retry_after_503"),
    # other statuses are answers: the delay only
    (dict(), [("response", 100.0, 0.01, 500)], 101.0, False, ""),
    (dict(), [("response", 100.0, 0.01, 404)], 101.0, False, ""),
    # network failures count toward the breaker; a response resets it
    (dict(), [("failure", 100.0, 0.0, "connection")], 101.0, False, ""),
    (dict(failures=2), [("failure", 100.0, 0.0, "connection")], 110.0, True, "breaker"),
    (dict(failures=3), [("failure", 100.0, 0.0, "connection")], 120.0, True, "breaker"),
    (dict(failures=2), [("response", 100.0, 0.01, 200)], 101.0, False, ""),
    # a timeout also makes the delay grow (the server is slow)
    (dict(response_time=0.2), [("failure", 100.0, 10.0, "timeout")], 100.0 + 5 * (0.7 * 0.2 + 0.3 * 10.0),
     False, ""),
    # a request that failed on our side (bad name, refused address) still paces the host
    (dict(), [("failed", 100.0)], 101.0, False, ""),
    # a resolver that failed: nobody's fault, ask again later
    (dict(), [("resolver", 100.0)], 160.0, False, "dns"),
    # robots.txt unavailable: paused until it is tried again
    (dict(), [("pause", 400.0, "robots_unavailable")], 400.0, False, "robots_unavailable"),
    # a later pause does not shorten an earlier, longer one
    (dict(), [("response", 100.0, 0.01, 429, 50.0), ("pause", 120.0, "dns")], 150.0, False, "retry_after_429"),
]


@pytest.mark.parametrize("clock, events, next_at, breaker_open, reason", CASES)
def test_the_clock_says_when_the_next_request_may_go(clock, events, next_at, breaker_open, reason):
    host = HostClock(**clock)
    for event in events:
        kind, *args = event
        if kind == "response":
            end, elapsed, status, *retry = args
            host.response(end, elapsed, status, retry[0] if retry else None)
        elif kind == "failure":
            host.network_failure(*args)
        elif kind == "failed":
            host.request_failed(*args)
        elif kind == "resolver":
            host.resolver_failed(*args)
        else:
            host.pause(*args)
    assert host.next_request_at() == pytest.approx(next_at)
    assert host.breaker_open == breaker_open
    assert host.pause_reason == reason


def test_the_next_time_becomes_a_date_for_the_host_row():
    clock = HostClock(crawl_delay=2.0)
    clock.response(100.0, 0.01, 200)
    wall = datetime(2026, 11, 23, 12, 0, 0, tzinfo=timezone.utc)
    assert (clock.release_at(now=100.5, wall=wall) - wall).total_seconds() == pytest.approx(1.5)
    assert clock.release_at(now=105.0, wall=wall) == wall  # already allowed: now


@pytest.mark.parametrize("clock, now, reason", [
    (HostClock(crawl_delay=2.0, last_end=100.0), 101.0, "crawl_delay"),
    (HostClock(response_time=5.0, last_end=100.0), 101.0, "adaptive"),
    (HostClock(last_end=100.0), 100.01, "default_delay"),
    (HostClock(last_end=100.0, paused_until=150.0, pause_reason="retry_after_429"), 101.0, "retry_after_429"),
])
def test_the_wait_reason_names_what_holds_the_next_request(clock, now, reason, settings):
    settings.CRAWLER_DEFAULT_DELAY = 1.0
    settings.CRAWLER_ADAPTIVE_DELAY_FACTOR = 1.0
    settings.CRAWLER_MAX_ADAPTIVE_DELAY = 60.0
    assert clock.wait_reason(now) == reason
    from frontier.pacing import WAIT_REASONS

    assert reason in WAIT_REASONS
