"""What one fetch result does to a URL: the frontier's state machine, as a pure function.

    2xx -> fetched            304 -> fetched (unchanged)     3xx -> redirected
    404/410 -> gone           401/403 -> denied              other 4xx -> http_error
    429/503 -> retry after Retry-After; other 5xx, timeouts, connection errors -> retry
    with exponential back-off; after CRAWLER_MAX_ATTEMPTS tries in a row -> backoff, tried
    again after each step of CRAWLER_FAILURE_BACKOFF (1, 2, 4, 8 weeks), each step with its
    short retries again; after the last -> failed + dead letter
    robots.txt disallow -> robots_blocked; refused address / too large -> failed, no retry

When a settled URL is visited again is the recrawl schedule's business (frontier/recrawl.py):
the transition says "now" and records.py replaces it.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from .models import UrlState
from .vocabulary import FetchError, RedirectOutcome

# Network-level errors worth another try later.
RETRYABLE_ERRORS = frozenset({FetchError.TIMEOUT, FetchError.CONNECTION, FetchError.DNS, FetchError.DEADLINE,
                              FetchError.PROTOCOL, FetchError.ROBOTS_UNAVAILABLE})
RETRY_AFTER_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class FetchReport:
    """What the fetch step tells the frontier about one URL."""

    url_id: int
    status: int | None = None  # HTTP status, None when no response
    error: str = ""  # "", or a short kind: timeout, connection, blocked_address, ...
    detail: str = ""  # for 2xx: a PageDetail, or the Observation of a revisit that stored nothing
    retry_after: float | None = None  # seconds, already capped
    content_hash: str = ""  # a full 2xx response was archived with this hash
    robots_blocked: bool = False
    set_aside: str = ""  # not fetched, set aside (state excluded) for this reason: a stopped trap pattern
    redirect_outcome: str = ""  # for 3xx: "redirect" or why the target was refused
    # For the recrawl schedule (2xx and 304): what the visit saw, the validators the
    # response sent, and the fingerprint of text that was stored.
    observation: str = ""  # an Observation ("" = not a visit of the page: an error, a redirect)
    etag: str = ""
    last_modified: str = ""
    text_hash: str = ""
    simhash: int | None = None
    started_at: float | None = None  # when the archived response (content_hash) began, epoch seconds


@dataclass(frozen=True)
class Transition:
    state: str
    outcome: str
    attempts: int
    next_fetch_at: datetime
    dead_letter: bool = False
    backoff_level: int = 0  # steps of the back-off ladder taken (0 once a fetch settles)


def next_state(
    report: FetchReport, attempts: int, now: datetime, *, max_attempts: int, retry_base: float,
    backoff_level: int = 0, backoff: tuple[float, ...] = (),
) -> Transition:
    """The URL's next state given its attempts so far (before this fetch) and the steps of
    the back-off ladder `backoff` (seconds) it has taken."""
    status = report.status
    ladder = (backoff_level, tuple(backoff))
    if report.robots_blocked:
        return Transition(UrlState.ROBOTS_BLOCKED, "robots.txt", attempts, now)
    if report.set_aside:
        return Transition(UrlState.EXCLUDED, report.set_aside, attempts, now)
    if report.error:
        if report.error in RETRYABLE_ERRORS:
            return _retry(report.error, attempts, now, max_attempts, retry_base, None, ladder)
        return Transition(UrlState.FAILED, report.error, attempts + 1, now)
    if status is None:
        return _retry(FetchError.NO_RESPONSE, attempts, now, max_attempts, retry_base, None, ladder)
    if 200 <= status < 300:
        return Transition(UrlState.FETCHED, report.detail or "ok", attempts + 1, now)
    if status == 304:
        return Transition(UrlState.FETCHED, report.detail or "not_modified", attempts + 1, now)
    if 300 <= status < 400:
        return Transition(UrlState.REDIRECTED, report.redirect_outcome or RedirectOutcome.ADMITTED, attempts + 1, now)
    if status in (404, 410):
        return Transition(UrlState.GONE, f"http_{status}", attempts + 1, now)
    if status in (401, 403):
        return Transition(UrlState.DENIED, f"http_{status}", attempts + 1, now)
    if status in RETRY_AFTER_STATUSES or status >= 500:
        return _retry(f"http_{status}", attempts, now, max_attempts, retry_base, report.retry_after, ladder)
    return Transition(UrlState.HTTP_ERROR, f"http_{status}", attempts + 1, now)


def _retry(reason, attempts, now, max_attempts, retry_base, retry_after, ladder) -> Transition:
    attempts += 1
    level, backoff = ladder
    if attempts >= max_attempts:
        if level < len(backoff):  # the next step of the ladder, with fresh short retries
            return Transition(UrlState.BACKOFF, reason, 0, now + timedelta(seconds=backoff[level]),
                              backoff_level=level + 1)
        return Transition(UrlState.FAILED, reason, attempts, now, dead_letter=True, backoff_level=level)
    wait = retry_after if retry_after is not None else retry_base * 2 ** (attempts - 1)
    return Transition(UrlState.QUEUED, reason, attempts, now + timedelta(seconds=wait), backoff_level=level)
