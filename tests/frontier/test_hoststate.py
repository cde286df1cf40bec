"""Where a host is, in words (frontier/hoststate.py), and figures in a person's units
(common/humanize.py): one definition that the admin, the dashboard and /metrics share."""

from datetime import datetime, timedelta, timezone as tz

import pytest
from django.utils import timezone

from common import humanize
from frontier import service
from frontier.models import Host, Url, UrlState
from frontier.normalize import normalize


@pytest.mark.parametrize("seconds, shown", [
    (0.0016416325249830309, "1.64 ms"), (0.0005, "0.5 ms"), (0, "0 s"), (2, "2 s"), (90, "90 s"),
    (150, "2.5 min"), (10800.0, "3 h"), (86400, "24 h"), (400000, "4.63 days"), (None, "–"), (-30, "-30 s"),
])
def test_durations_read_in_the_unit_that_fits(seconds, shown):
    assert humanize.duration(seconds) == shown


def test_moments_are_in_the_configured_zone_and_name_it(settings):
    moment = datetime(2026, 11, 26, 18, 8, 2, tzinfo=tz.utc)
    assert humanize.moment(moment) == "2026-11-26 18:08:02 UTC"
    settings.TIME_ZONE = "Europe/Paris"
    assert humanize.moment(moment) == "2026-11-26 19:08:02 CET"


def test_relative_times_and_rates():
    now = timezone.now()
    assert humanize.relative(now + timedelta(minutes=3), now) == "in 3 min"
    assert humanize.relative(now - timedelta(seconds=40), now) == "40 s ago"
    assert humanize.per_day(0.5) == "0.5 a day (one every 2 days)"
    assert humanize.per_day(24) == "24 a day (one every 60 min)"
    assert humanize.per_day(None) == "–"


def _host(origin, **fields) -> Host:
    return Host.objects.create(origin=origin, **fields)


def _url(host, path="/", **fields) -> Url:
    norm = normalize(host.origin + path)
    return Url.objects.create(url=norm.url, url_key=norm.url_key, host=host, **fields)


@pytest.mark.django_db
def test_each_host_has_one_state_and_the_figures_count_the_same_states():
    now = timezone.now()
    past, future = now - timedelta(minutes=40), now + timedelta(minutes=3)
    leased = _host("http://leased.test", leased_until=future, lease_owner="worker-7", next_fetch_at=past)
    paused = _host("http://paused.test", paused_at=past, next_fetch_at=future, wait_reason="breaker")
    polite = _host("http://polite.test", next_fetch_at=future, wait_reason="crawl_delay")
    broken = _host("http://broken.test", next_fetch_at=future, wait_reason="breaker", failures=9)
    ready = _host("http://ready.test", next_fetch_at=past, wait_reason="default_delay")
    # idle for 40 minutes: the reason written when its last session ended is no longer true
    idle = _host("http://idle.test", next_fetch_at=past, wait_reason="default_delay")
    _url(ready, next_fetch_at=past)
    _url(idle, state=UrlState.FETCHED)
    _url(idle, "/later", next_fetch_at=future)

    states = {host.origin: service.host_state(host, now=now) for host in Host.objects.all()}
    assert {origin: s.state for origin, s in states.items()} == {
        leased.origin: "leased", paused.origin: "paused", polite.origin: "backing_off",
        broken.origin: "backing_off", ready.origin: "ready", idle.origin: "idle"}
    assert states[leased.origin].text.startswith("leased by worker-7 until ")
    assert states[leased.origin].text.endswith("UTC (in 3 min)")
    assert states[paused.origin].text.startswith("paused by an operator since ")
    assert states[polite.origin].text.startswith("waiting for robots.txt Crawl-delay until ")
    assert states[broken.origin].text.startswith("backing off: circuit breaker (network failures in a row) until ")
    assert states[ready.origin].text.startswith("ready")
    assert states[idle.origin].text == "idle: nothing due" and "delay" not in states[idle.origin].text
    assert states[polite.origin].until == future

    figures = service.host_figures()["hosts"]
    counted = {state: figures[state] for state in ("leased", "paused", "backing_off", "ready", "idle")}
    assert counted == {"leased": 1, "paused": 1, "backing_off": 2, "ready": 1, "idle": 1}


@pytest.mark.django_db
def test_a_host_set_aside_from_dispatch_says_so():
    from frontier.importance import IDLE_BAND

    past = timezone.now() - timedelta(minutes=5)
    finished = _host("http://finished.test", next_fetch_at=past, band=IDLE_BAND)
    missed = _host("http://missed.test", next_fetch_at=past, band=IDLE_BAND)
    _url(finished, state=UrlState.FETCHED)
    _url(missed, next_fetch_at=past)  # queued by a writer that did not wake it
    assert service.host_state(finished).text == "idle: nothing waiting, set aside from dispatch until a URL is queued"
    state = service.host_state(missed)
    assert state.state == "ready" and "until the next sweep" in state.text
