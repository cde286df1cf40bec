"""robots.txt: fetched once per host, cached in the host row, read as RFC 9309 says
(fetch.robotstxt: our group selection, protego's path matching).

RFC 9309 rules we follow (what each answer means: frontier.robots_state):
- 2xx: obey the file (first CRAWLER_ROBOTS_MAX_BYTES bytes; the RFC asks for >= 500 KiB).
- 3xx after five redirects, and 4xx (including 404): "unavailable" = allow all.
- 5xx, 429 or unreachable: assume complete disallow for now, and try again after
  CRAWLER_ROBOTS_ERROR_SECONDS (section 2.3.1.4).
- up to five redirects are followed (section 2.3.1.2), each through the SSRF-guarded client.
- groups are matched against our product token (CRAWLER_ROBOTS_TOKEN, by default the
  User-Agent's first word), never the whole User-Agent string (section 2.2.1).
Cached for CRAWLER_ROBOTS_CACHE_SECONDS (24 h by default, the RFC's suggested maximum).
"""

import dataclasses
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from common import stagetime
from frontier import service as frontier
from frontier.robots_state import RobotsVerdict, classify, unreachable
from frontier.vocabulary import FetchError

from archive import warc
from fetch import http, robotstxt


@dataclass(frozen=True)
class RobotsPolicy:
    """The verdict for one host: allow_all / disallow_all shortcuts, else a parsed file."""

    file: robotstxt.RobotsFile | None
    allow_all: bool = False
    disallow_all: bool = False

    @stagetime.timed("robots")
    def allows(self, url: str) -> bool:
        if self.allow_all:
            return True
        if self.disallow_all:
            return False
        return self.file.allows(url)


@stagetime.timed("robots")
def read(body: str, origin: str = "") -> robotstxt.RobotsFile:
    """The robots.txt of `origin` as it applies to us (a gemini:// capsule's with the
    virtual user-agents we are: CRAWLER_GEMINI_ROBOTS_AGENTS)."""
    also = settings.CRAWLER_GEMINI_ROBOTS_AGENTS if origin.startswith("gemini://") else ()
    return robotstxt.parse(body, robotstxt.crawler_token(), tuple(also))


_parsed: dict[tuple[int, object], RobotsPolicy] = {}
_parsed_lock = threading.Lock()
_PARSED_CACHE_MAX = 4096


_ANSWERED = (FetchError.TOO_LARGE, FetchError.DEADLINE, FetchError.REDIRECT_LIMIT)


def needs_fetch(host: frontier.HostView) -> bool:
    return host.robots_expires_at is None or host.robots_expires_at <= timezone.now()


@dataclass(frozen=True)
class RobotsAnswer:
    """What one fetch of /robots.txt established, to be stored in the host row."""

    status: int | None
    body: str
    crawl_delay: float | None
    error: str  # non-empty exactly when unreachable (robots_state)
    fetched_at: datetime
    expires_at: datetime
    sitemaps: tuple[str, ...]


def fetch(host: frontier.HostView, via: http.HostConnection | None = None
          ) -> tuple[frontier.HostView, RobotsAnswer, http.FetchResult]:
    """Fetch robots.txt for the host (the caller holds its lease), on the session's
    connection when given. Touches no database: the answer is stored with `save`.
    Returns the updated view, the answer and the raw result (its timing and address count
    for politeness like any other request)."""
    result = http.fetch(
        host.origin + "/robots.txt", max_bytes=settings.CRAWLER_ROBOTS_MAX_BYTES, follow_redirects=True, via=via,
    )
    warc.record(result)
    now = timezone.now()
    # An answer cut short is still an answer; so is the redirect past the fifth (RFC 9309
    # 2.3.1.2: the crawler may then treat robots.txt as unavailable, i.e. allow all).
    status = result.status if not result.error or result.error in _ANSWERED else None
    # RFC 9309 section 2.2: UTF-8 (a byte-order mark is dropped by robotstxt.parse).
    body = result.body.decode("utf-8", errors="replace") if status and 200 <= status < 300 else ""
    body = body.replace("\x00", "")  # garbage bytes: PostgreSQL text cannot hold NUL
    if result.error == FetchError.DNS_UNAVAILABLE:  # the resolver, not the host: ask again soon
        ttl = settings.CRAWLER_DNS_NEGATIVE_SECONDS
    elif unreachable(status):
        ttl = settings.CRAWLER_ROBOTS_ERROR_SECONDS
    else:
        ttl = settings.CRAWLER_ROBOTS_CACHE_SECONDS
    delay, sitemaps = None, ()
    if body:
        parsed = read(body, host.origin)
        delay = None if parsed.crawl_delay is None else min(parsed.crawl_delay, settings.CRAWLER_MAX_CRAWL_DELAY)
        sitemaps = tuple(url.replace("\x00", "")[:2048] for url in parsed.sitemaps)
    error = (result.error or f"http_{status}") if unreachable(status) else ""
    answer = RobotsAnswer(status, body, delay, error, now, now + timedelta(seconds=ttl), sitemaps)
    host = dataclasses.replace(
        host, crawl_delay=delay, robots_status=status, robots_body=body, robots_error=error,
        robots_fetched_at=now, robots_expires_at=answer.expires_at,
    )
    return host, answer, result


def save(host_id: int, answer: RobotsAnswer, origin: str = "", depth: int = 0, scopes: str = "") -> None:
    """Store the answer in the host row, and admit the host's sitemaps (CRAWLER_SITEMAPS):
    a sitemap is a URL like any other, fetched in a host session (politeness, robots.txt,
    the SSRF guard, the size caps) and read for its links (indexer/linksources.py)."""
    frontier.save_robots(host_id, answer.status, answer.body, answer.crawl_delay, answer.error,
                         answer.fetched_at, answer.expires_at, answer.sitemaps)
    candidates = sitemap_candidates(origin, answer, depth, scopes)
    if candidates:
        frontier.add_urls(candidates)


def sitemap_candidates(origin: str, answer: RobotsAnswer, depth: int, scopes: str) -> list[frontier.Candidate]:
    """The robots.txt's Sitemap: URLs (at most MAX_SITEMAPS), or /sitemap.xml when it names
    none and CRAWLER_SITEMAP_GUESS is on; none while robots.txt is unavailable (it is
    tried again first)."""
    if not origin or not settings.CRAWLER_SITEMAPS or answer.error or origin.startswith("gemini://"):
        return []  # (Geminispace has no sitemaps)
    urls = list(dict.fromkeys(answer.sitemaps))[:frontier.MAX_SITEMAPS]
    if not urls and settings.CRAWLER_SITEMAP_GUESS:
        urls = ["/sitemap.xml"]
    # A sitemap names the site's pages, its best with their <priority>: it goes before them,
    # scoring as a page a sitemap lists at <priority> 1.0.
    hint = frontier.sitemap_hint(1.0)
    return [frontier.Candidate(url, depth, 0, None, base=origin + "/robots.txt", scopes=scopes,
                               kind=frontier.UrlKind.SITEMAP, hint=hint) for url in urls]


def policy_for(host: frontier.HostView) -> RobotsPolicy:
    verdict = classify(host.robots_status, host.robots_error, host.robots_fetched_at is not None)
    if verdict in (RobotsVerdict.DISALLOW_ALL, RobotsVerdict.NOT_FETCHED):
        return RobotsPolicy(None, disallow_all=True)
    if verdict == RobotsVerdict.ALLOW_ALL:
        return RobotsPolicy(None, allow_all=True)
    key = (host.id, host.robots_fetched_at)
    with _parsed_lock:
        policy = _parsed.get(key)
    if policy is None:
        policy = RobotsPolicy(read(host.robots_body, host.origin))
        with _parsed_lock:
            if len(_parsed) >= _PARSED_CACHE_MAX:
                _parsed.clear()
            _parsed[key] = policy
    return policy
