"""When may the next request go to a host: the one answer, inside a session and between
sessions (DESIGN.md section 4).

A HostClock is made from the host row when a session starts, told about every response
and failure, and asked when the next request may start. At the end of the session its
answer becomes the host row's next_fetch_at, so the next session (on any machine) starts
where this one stopped. Times inside are time.monotonic() seconds; only `release_at`
turns one into a date for the database.

The rules, each in one place:
- delay: a robots.txt Crawl-delay wins; without one, CRAWLER_ADAPTIVE_DELAY_FACTOR times
  the host's running response time, clamped between CRAWLER_DEFAULT_DELAY and
  CRAWLER_MAX_ADAPTIVE_DELAY (a struggling server is given room, a fast one is not held
  back beyond the floor);
- measured from the END of the previous response (a slow response is not a head start);
- a pause pushes it further: Retry-After on 429/503 (or the default delay without one), a
  resolver that failed, robots.txt unavailable, and the circuit breaker: after
  CRAWLER_HOST_FAILURE_THRESHOLD network failures in a row the host is left alone for
  CRAWLER_HOST_PAUSE_SECONDS, doubling with each further failure up to CRAWLER_HOST_PAUSE_MAX.
"""

import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from .vocabulary import WaitReason

# Weight of the newest response in the running response-time average.
SMOOTHING = 0.3

# Why a host's next request waits (HostClock.wait_reason, kept in Host.wait_reason).
WAIT_REASONS = tuple(WaitReason)
STORE_FAILED = WaitReason.STORE_FAILED  # its results could not be stored: paused on the breaker's ladder


def store_failure_pause(failures: int) -> float:
    """Seconds to leave a host alone after its results failed to store `failures` times in
    a row: the breaker's ladder from its first step (CRAWLER_HOST_PAUSE_SECONDS, doubling)."""
    return breaker_pause(settings.CRAWLER_HOST_FAILURE_THRESHOLD + max(failures, 1) - 1)


def delay_for(crawl_delay: float | None, response_time: float | None) -> float:
    """Seconds between the end of one response and the next request."""
    if crawl_delay is not None:
        return crawl_delay
    floor = settings.CRAWLER_DEFAULT_DELAY
    adaptive = settings.CRAWLER_ADAPTIVE_DELAY_FACTOR * (response_time or 0.0)
    return max(floor, min(adaptive, settings.CRAWLER_MAX_ADAPTIVE_DELAY))


def running_response_time(previous: float | None, elapsed: float) -> float:
    """Exponentially weighted average of response times (seconds)."""
    return elapsed if previous is None else (1 - SMOOTHING) * previous + SMOOTHING * elapsed


def breaker_pause(failures: int) -> float:
    """Seconds to leave a host alone after `failures` network failures in a row (0: closed)."""
    over = failures - settings.CRAWLER_HOST_FAILURE_THRESHOLD
    if over < 0:
        return 0.0
    return min(settings.CRAWLER_HOST_PAUSE_SECONDS * 2 ** min(over, 30), settings.CRAWLER_HOST_PAUSE_MAX)


@dataclass
class HostClock:
    crawl_delay: float | None = None
    response_time: float | None = None  # running average, seconds
    failures: int = 0  # network failures in a row
    last_end: float | None = None  # when the last response (or failure) ended
    paused_until: float = 0.0  # nothing before this, whatever the delay
    pause_reason: str = ""

    @property
    def delay(self) -> float:
        return delay_for(self.crawl_delay, self.response_time)

    @property
    def breaker_open(self) -> bool:
        return self.failures >= settings.CRAWLER_HOST_FAILURE_THRESHOLD

    def next_request_at(self) -> float:
        after_last = self.last_end + self.delay if self.last_end is not None else 0.0
        return max(after_last, self.paused_until)

    def wait_reason(self, now: float | None = None) -> str:
        """Why the next request waits as long as it does (shown to operators): the pause's
        reason when a pause is what holds it, else where the delay comes from."""
        now = time.monotonic() if now is None else now
        after_last = self.last_end + self.delay if self.last_end is not None else 0.0
        if self.paused_until > max(after_last, now):
            return self.pause_reason
        if self.crawl_delay is not None:
            return WaitReason.CRAWL_DELAY
        return WaitReason.ADAPTIVE if self.delay > settings.CRAWLER_DEFAULT_DELAY else WaitReason.DEFAULT_DELAY

    def pause(self, until: float, reason: str) -> None:
        if until > self.paused_until:
            self.paused_until, self.pause_reason = until, reason

    # --- what happened -------------------------------------------------------------------

    def response(self, end: float, elapsed: float, status: int, retry_after: float | None = None) -> None:
        """A response arrived (any status): the server is alive."""
        self.last_end = end
        self.response_time = running_response_time(self.response_time, elapsed)
        self.failures = 0
        if status in (429, 503):
            wait = retry_after if retry_after is not None else settings.CRAWLER_DEFAULT_DELAY
            self.pause(end + wait, WaitReason(f"retry_after_{status}"))

    def network_failure(self, end: float, elapsed: float, kind: str) -> None:
        """No answer: a timeout (the server is too slow: let the delay grow) or a refused or
        reset connection. Enough of them in a row open the breaker."""
        self.last_end = end
        if kind == "timeout":
            self.response_time = running_response_time(self.response_time, elapsed)
        self.failures += 1
        if self.breaker_open:
            self.pause(end + breaker_pause(self.failures), WaitReason.BREAKER)

    def request_failed(self, end: float) -> None:
        """A request that failed on our side or the URL's (bad DNS name, refused address,
        broken HTTP): it still counts as a request for the gap."""
        self.last_end = end

    def resolver_failed(self, end: float) -> None:
        """The resolver itself failed (not the name): nobody's fault, wait and ask again."""
        self.pause(end + settings.CRAWLER_DNS_NEGATIVE_SECONDS, WaitReason.DNS)

    # --- between sessions ---------------------------------------------------------------

    def release_at(self, now: float | None = None, wall: datetime | None = None) -> datetime:
        """next_request_at as a date for the host row."""
        now = time.monotonic() if now is None else now
        wall = timezone.now() if wall is None else wall
        return wall + timedelta(seconds=max(0.0, self.next_request_at() - now))
