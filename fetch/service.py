"""Fetch one leased batch of a host's URLs: the step both runners (embedded threads and
Celery workers) call.

Politeness, per host: the lease means one request in flight at a time. When the host's
delay is 0 the batch is fetched back to back on one kept-alive connection; otherwise a
lease carries a single request (robots.txt counts as one) and the next allowed time is
written to the host row — no sleeping, no Celery countdown.
"""

import email.utils
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from urllib.parse import urljoin

from django.conf import settings
from django.utils import timezone

from frontier import service as frontier
from frontier.outcomes import RETRY_AFTER_STATUSES, FetchReport
from indexer import service as indexer

from . import http, robots


def fetch_batch(host_id: int, token: str, url_ids: list[int]) -> int:
    """Fetch what the lease allows; returns the number of HTTP requests made."""
    host = frontier.begin_lease(host_id, token)
    if host is None:
        return 0  # lease expired or taken over: another worker owns this host now
    requests_made = 0
    host_pause = 0.0  # extra wait imposed by the server (Retry-After)
    try:
        refreshed = robots.needs_fetch(host)
        if refreshed:
            host = robots.refresh(host)
            requests_made += 1
        if host.robots_error:
            # RFC 9309: no verdict means disallow everything for now. The host comes back
            # when robots.txt is tried again, and a URL is charged an attempt only when it
            # really was tried, so a cached failure cannot burn its retries.
            host_pause = max(0.0, (host.robots_expires_at - timezone.now()).total_seconds())
            if refreshed or host.robots_error == "blocked_address":
                failure = _robots_failure(host.robots_error)
                for url_id, _, _, _, attempts in frontier.queued_urls(url_ids):
                    frontier.record_fetch(FetchReport(url_id, error=failure), attempts)
            return requests_made
        policy = robots.policy_for(host)
        delay = frontier.host_delay(host)
        for url_id, url, depth, hops, attempts in frontier.queued_urls(url_ids):
            if not policy.allows(url):
                frontier.record_fetch(FetchReport(url_id, robots_blocked=True), attempts)
                continue
            if requests_made and delay > 0:
                break  # the rest waits for the host's next turn
            report, pause = fetch_one(url_id, url, depth, hops)
            requests_made += 1
            frontier.record_fetch(report, attempts)
            if pause:
                host_pause = max(host_pause, pause)
                break
    finally:
        next_at = timezone.now() + timedelta(seconds=max(frontier.host_delay(host), host_pause))
        frontier.release_host(host_id, token, next_at)
    return requests_made


def _robots_failure(robots_error: str) -> str:
    # A refused address is final (the page would be refused too); anything else is
    # "robots.txt unavailable": retried later, as RFC 9309 asks.
    return "blocked_address" if robots_error == "blocked_address" else "robots_unavailable"


def fetch_one(url_id: int, url: str, depth: int, hops: int) -> tuple[FetchReport, float]:
    """Fetch and process one URL. Returns the report and a host pause (Retry-After) or 0."""
    result = http.fetch(url, body_types=indexer.HTML_TYPES)
    if result.error or result.status is None:
        return FetchReport(url_id, status=result.status, error=result.error or "no_response"), 0.0
    status = result.status
    if 200 <= status < 300:
        outcome = indexer.process_page(url_id, url, status, result.content_type, result.charset, result.body)
        if outcome.links:
            frontier.add_urls(frontier.Candidate(link, depth + 1, 0, url_id) for link in outcome.links)
        return FetchReport(url_id, status=status, detail=outcome.detail, content_hash=outcome.content_hash), 0.0
    if 300 <= status < 400 and status != 304:
        return FetchReport(url_id, status=status, redirect_outcome=_follow_redirect(result, url_id, depth, hops)), 0.0
    pause = 0.0
    retry_after = None
    if status in RETRY_AFTER_STATUSES:
        retry_after = parse_retry_after(result.headers.get("retry-after"))
        pause = retry_after if retry_after is not None else settings.CRAWLER_DEFAULT_DELAY
    return FetchReport(url_id, status=status, retry_after=retry_after), pause


def _follow_redirect(result: http.FetchResult, url_id: int, depth: int, hops: int) -> str:
    """Send the target back through the frontier (never followed inline)."""
    location = result.headers.get("location", "").strip()
    if not location:
        return "redirect_without_location"
    admitted = frontier.add_urls([frontier.Candidate(urljoin(result.url, location), depth, hops + 1, url_id)])
    if admitted.rejected:
        return "redirect_refused:" + next(iter(admitted.rejected))
    return "redirect" if admitted.admitted else "redirect_known"


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After is delay-seconds or an HTTP-date (RFC 9110 section 10.2.3); capped."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt_timezone.utc)
        seconds = (when - datetime.now(dt_timezone.utc)).total_seconds()
    return min(max(seconds, 0.0), settings.CRAWLER_MAX_RETRY_AFTER)
