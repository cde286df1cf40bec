"""What one fetch result does to a URL: the frontier's state machine, as a pure function.

    2xx -> fetched            304 -> fetched (unchanged)     3xx -> redirected
    404/410 -> gone           401/403 -> denied              other 4xx -> http_error
    429/503 -> retry after Retry-After; other 5xx, timeouts, connection errors -> retry
    with exponential back-off; after CRAWLER_MAX_ATTEMPTS -> failed + dead letter
    robots.txt disallow -> robots_blocked; refused address / too large -> failed, no retry
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from .models import UrlState

# Network-level errors worth another try later.
RETRYABLE_ERRORS = frozenset({"timeout", "connection", "dns", "deadline", "protocol", "robots_unavailable"})
RETRY_AFTER_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class FetchReport:
    """What the fetch step tells the frontier about one URL."""

    url_id: int
    status: int | None = None  # HTTP status, None when no response
    error: str = ""  # "", or a short kind: timeout, connection, blocked_address, ...
    detail: str = ""  # for 2xx: indexed, duplicate, noindex, not_html
    retry_after: float | None = None  # seconds, already capped
    content_hash: str = ""
    robots_blocked: bool = False
    redirect_outcome: str = ""  # for 3xx: "redirect" or why the target was refused


@dataclass(frozen=True)
class Transition:
    state: str
    outcome: str
    attempts: int
    next_fetch_at: datetime
    dead_letter: bool = False


def next_state(
    report: FetchReport, attempts: int, now: datetime, *, max_attempts: int, retry_base: float
) -> Transition:
    """The URL's next state given its attempts so far (before this fetch)."""
    status = report.status
    if report.robots_blocked:
        return Transition(UrlState.ROBOTS_BLOCKED, "robots.txt", attempts, now)
    if report.error:
        if report.error in RETRYABLE_ERRORS:
            return _retry(report.error, attempts, now, max_attempts, retry_base, None)
        return Transition(UrlState.FAILED, report.error, attempts + 1, now)
    if status is None:
        return _retry("no_response", attempts, now, max_attempts, retry_base, None)
    if 200 <= status < 300:
        return Transition(UrlState.FETCHED, report.detail or "ok", attempts + 1, now)
    if status == 304:
        return Transition(UrlState.FETCHED, "unchanged", attempts + 1, now)
    if 300 <= status < 400:
        return Transition(UrlState.REDIRECTED, report.redirect_outcome or "redirect", attempts + 1, now)
    if status in (404, 410):
        return Transition(UrlState.GONE, f"http_{status}", attempts + 1, now)
    if status in (401, 403):
        return Transition(UrlState.DENIED, f"http_{status}", attempts + 1, now)
    if status in RETRY_AFTER_STATUSES or status >= 500:
        return _retry(f"http_{status}", attempts, now, max_attempts, retry_base, report.retry_after)
    return Transition(UrlState.HTTP_ERROR, f"http_{status}", attempts + 1, now)


def _retry(reason, attempts, now, max_attempts, retry_base, retry_after) -> Transition:
    attempts += 1
    if attempts >= max_attempts:
        return Transition(UrlState.FAILED, reason, attempts, now, dead_letter=True)
    wait = retry_after if retry_after is not None else retry_base * 2 ** (attempts - 1)
    return Transition(UrlState.QUEUED, reason, attempts, now + timedelta(seconds=wait))
