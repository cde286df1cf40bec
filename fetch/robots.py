"""robots.txt: fetched once per host, cached in the host row, parsed with protego.

RFC 9309 rules we follow:
- 2xx: obey the file (first CRAWLER_ROBOTS_MAX_BYTES bytes; the RFC asks for >= 500 KiB).
- 4xx (including 404): no restrictions ("unavailable" = allow all). 429 is treated as 5xx.
- 5xx or unreachable: assume complete disallow for now, and try again after
  CRAWLER_ROBOTS_ERROR_SECONDS (section 2.3.1.4).
- up to five redirects are followed (section 2.3.1.2), each through the SSRF-guarded client.
Cached for CRAWLER_ROBOTS_CACHE_SECONDS (24 h by default, the RFC's suggested maximum).
"""

import dataclasses
import threading
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from protego import Protego

from frontier import service as frontier

from . import archive, http


@dataclass(frozen=True)
class RobotsPolicy:
    """The verdict for one host: allow_all / disallow_all shortcuts, else a parsed file."""

    parser: Protego | None
    allow_all: bool = False
    disallow_all: bool = False

    def allows(self, url: str) -> bool:
        if self.allow_all:
            return True
        if self.disallow_all:
            return False
        return self.parser.can_fetch(url, settings.CRAWLER_USER_AGENT)


_parsed: dict[tuple[int, object], RobotsPolicy] = {}
_parsed_lock = threading.Lock()
_PARSED_CACHE_MAX = 4096


def needs_fetch(host: frontier.HostView) -> bool:
    return host.robots_expires_at is None or host.robots_expires_at <= timezone.now()


def refresh(host: frontier.HostView) -> tuple[frontier.HostView, http.FetchResult]:
    """Fetch robots.txt for the host (the caller holds its lease) and store the result.
    Returns the updated view and the raw result (its timing and address count for
    politeness like any other request)."""
    result = http.fetch(
        host.origin + "/robots.txt", max_bytes=settings.CRAWLER_ROBOTS_MAX_BYTES, follow_redirects=True
    )
    archive.record(result)
    now = timezone.now()
    status = result.status if not result.error or result.error in ("too_large", "deadline") else None
    body = result.body.decode("utf-8", errors="replace") if status and 200 <= status < 300 else ""
    body = body.replace("\x00", "")  # garbage bytes: PostgreSQL text cannot hold NUL
    if result.error == "dns_unavailable":  # the resolver, not the host: ask again soon
        ttl = settings.CRAWLER_DNS_NEGATIVE_SECONDS
    elif status is None or status >= 500 or status == 429:
        ttl = settings.CRAWLER_ROBOTS_ERROR_SECONDS
    else:
        ttl = settings.CRAWLER_ROBOTS_CACHE_SECONDS
    delay = None
    if body:
        raw = Protego.parse(body).crawl_delay(settings.CRAWLER_USER_AGENT)
        delay = None if raw is None else min(float(raw), settings.CRAWLER_MAX_CRAWL_DELAY)
    expires = now + timedelta(seconds=ttl)
    error = "" if status is not None and status < 500 and status != 429 else (result.error or f"http_{status}")
    frontier.save_robots(host.id, status, body, delay, error, now, expires)
    return dataclasses.replace(
        host, crawl_delay=delay, robots_status=status, robots_body=body, robots_error=error,
        robots_fetched_at=now, robots_expires_at=expires,
    ), result


def policy_for(host: frontier.HostView) -> RobotsPolicy:
    status = host.robots_status
    if status is None or status >= 500 or status == 429:
        return RobotsPolicy(None, disallow_all=True)
    if 400 <= status < 500:
        return RobotsPolicy(None, allow_all=True)
    if not 200 <= status < 300:  # e.g. a redirect loop ended on a 3xx: treat as unavailable
        return RobotsPolicy(None, allow_all=True)
    key = (host.id, host.robots_fetched_at)
    with _parsed_lock:
        policy = _parsed.get(key)
    if policy is None:
        policy = RobotsPolicy(Protego.parse(host.robots_body))
        with _parsed_lock:
            if len(_parsed) >= _PARSED_CACHE_MAX:
                _parsed.clear()
            _parsed[key] = policy
    return policy
