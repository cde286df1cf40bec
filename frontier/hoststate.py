"""Where a host is, computed from its row at the moment asked: one word and one line.

One definition for the admin, the dashboard and /metrics (frontier/stats.py counts hosts
with the same predicates). The stored `wait_reason` says why the host's next request was
put off when a session released it; it is shown only while that wait lasts — a host whose
wait is over is ready or idle, whatever reason was written forty minutes ago.

States, first that applies: leased (a session holds it), paused (by an operator),
backing_off (its next allowed request is ahead: a politeness delay, a Retry-After, the
breaker …), ready (URLs due, free to lease now), idle (nothing due).
"""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from common.humanize import moment, relative

from .importance import IDLE_BAND
from .models import Host, Url, UrlState
from .vocabulary import WaitReason

LEASED, PAUSED, BACKING_OFF, READY, IDLE = "leased", "paused", "backing_off", "ready", "idle"
STATES = (LEASED, PAUSED, BACKING_OFF, READY, IDLE)

# Why a host's next request waits (Host.wait_reason, frontier/pacing.py), in an operator's
# words. The first three are politeness (the host is fine, we are being polite): "waiting";
# the rest are trouble: "backing off".
WAIT_REASON_TEXT = {
    WaitReason.CRAWL_DELAY: "robots.txt Crawl-delay",
    WaitReason.ADAPTIVE: "adaptive delay (slow responses)",
    WaitReason.DEFAULT_DELAY: "default delay",
    WaitReason.RETRY_AFTER_429: "Retry-After (429 Too Many Requests)",
    WaitReason.RETRY_AFTER_503: "Retry-After (503 Service Unavailable)",
    WaitReason.BREAKER: "circuit breaker (network failures in a row)",
    WaitReason.DNS: "DNS resolver failed",
    WaitReason.ROBOTS_UNAVAILABLE: "robots.txt unavailable",
    WaitReason.STORE_FAILED: "its results could not be stored (back-off)",
}
POLITENESS_REASONS = frozenset({WaitReason.CRAWL_DELAY, WaitReason.ADAPTIVE, WaitReason.DEFAULT_DELAY})


def predicates(now: datetime) -> dict[str, Q]:
    """The states as filters on the host table (ready and idle also need the URL table:
    see `due_urls`). Each excludes the states before it."""
    leased = Q(leased_until__gt=now)
    paused = ~leased & Q(paused_at__isnull=False)
    backing_off = ~leased & Q(paused_at__isnull=True) & Q(next_fetch_at__gt=now)
    free = ~leased & Q(paused_at__isnull=True) & Q(next_fetch_at__lte=now)
    return {LEASED: leased, PAUSED: paused, BACKING_OFF: backing_off, "free": free}


def due_urls(now: datetime):
    """Exists(...) over a host's queued URLs that are due: a free host with some is ready."""
    return Exists(Url.objects.filter(host=OuterRef("pk"), state=UrlState.QUEUED, next_fetch_at__lte=now))


@dataclass(frozen=True)
class HostState:
    state: str  # one of STATES
    text: str  # the line an operator reads
    until: datetime | None = None  # when it changes by itself (lease end, wait end)
    word: str = ""  # the state in a word or two: "waiting" for politeness, "backing off" for trouble

    def short(self, now: datetime | None = None) -> str:
        """For a list column: "waiting · in 3 s", "leased · 50 s left", "idle"."""
        word = self.word or self.state.replace("_", " ")
        if self.until is None:
            return word
        if self.state == LEASED:
            return f"{word} · {relative(self.until, now).removeprefix('in ')} left"
        return f"{word} · {relative(self.until, now)}"


def host_state(host: Host, *, has_due: bool | None = None, now: datetime | None = None) -> HostState:
    """The host's state now. `has_due` (queued URLs due) may come annotated with the row
    (`due_urls`); without it, one query asks."""
    now = now or timezone.now()
    if host.leased_until and host.leased_until > now:
        who = host.lease_owner or "a crawling process"
        return HostState(LEASED, f"leased by {who} until {moment(host.leased_until)} "
                                 f"({relative(host.leased_until, now)})", host.leased_until)
    if host.paused_at:
        return HostState(PAUSED, f"paused by an operator since {moment(host.paused_at)}")
    if host.next_fetch_at and host.next_fetch_at > now:
        reason = host.wait_reason
        words = WAIT_REASON_TEXT.get(reason, reason.replace("_", " ") if reason else "")
        polite = reason in POLITENESS_REASONS or not reason
        verb = "waiting for" if polite else "backing off:"
        detail = f"{verb} {words} " if words else "waiting "
        return HostState(BACKING_OFF, f"{detail}until {moment(host.next_fetch_at)} "
                                      f"({relative(host.next_fetch_at, now)})", host.next_fetch_at,
                         "waiting" if polite else f"backing off ({words.split(' (')[0]})")
    if has_due is None:
        has_due = Url.objects.filter(host=host, state=UrlState.QUEUED, next_fetch_at__lte=now).exists()
    if has_due and host.band == IDLE_BAND:  # a writer queued its URLs without waking it
        return HostState(READY, "ready: URLs are due, but it is set aside as finished until the next sweep "
                                "wakes it (frontier/idle.py)")
    if has_due:
        return HostState(READY, "ready: URLs are due and it is free to be leased")
    if host.band == IDLE_BAND:
        return HostState(IDLE, "idle: nothing waiting, set aside from dispatch until a URL is queued")
    return HostState(IDLE, "idle: nothing due")

