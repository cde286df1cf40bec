"""Turning responses into results, and storing results: the two halves of the fetch path
that the session engine (fetch/session.py, fetch/engine.py) runs around the network.

fetch_one() is pure work, no database: request, archive, parse, into a Results. The
writer (fetch/writer.py) merges the Results of many URLs of many sessions and stores them
with store() in a dozen statements, whatever the number of sessions they came from.
"""

import email.utils
from dataclasses import dataclass, field
from datetime import datetime
from datetime import timezone as dt_timezone

from django.conf import settings
from django.db import transaction

from frontier import service as frontier
from frontier.outcomes import RETRY_AFTER_STATUSES, FetchReport
from indexer import service as indexer

from . import archive, http

# No answer from the server: these count toward the host's circuit breaker. A name that
# does not exist ("dns") is not among them: that is final enough for the URLs' own
# retries to run out and dead-letter them, where a tripped breaker would keep them forever.
NETWORK_FAILURES = frozenset({"timeout", "connection"})


@dataclass
class Redirect:
    url_id: int
    attempts: int
    status: int
    target: frontier.Candidate | None  # None: no Location header


@dataclass
class Results:
    """What some fetches produced, waiting to be stored (one URL's, or a merged group's)."""

    reports: list[tuple[FetchReport, int]] = field(default_factory=list)  # (report, attempts)
    pages: list[tuple[indexer.PreparedPage, frontier.QueuedUrl]] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)

    @property
    def weight(self) -> int:
        """Its share of a group commit: pages (what a write holds in memory), at least 1."""
        return max(1, len(self.pages))

    def extend(self, other: "Results") -> None:
        self.reports.extend(other.reports)
        self.pages.extend(other.pages)
        self.redirects.extend(other.redirects)


def robots_failure(robots_error: str) -> str:
    """The outcome of a URL that could not be tried because robots.txt gave no verdict.
    A refused address is final (the page would be refused too); a network failure keeps
    its name (the admin sees "dns", not a vague "robots"); anything else is "robots.txt
    unavailable". All but the first are retried later, as RFC 9309 asks."""
    if robots_error in ("blocked_address", "dns", "connection", "timeout"):
        return robots_error
    return "robots_unavailable"


def fetch_one(results: Results, queued: frontier.QueuedUrl,
              via: http.HostConnection | None = None) -> tuple[http.FetchResult, float | None]:
    """Fetch and parse one URL into `results` (no database access). Returns the raw result
    and the Retry-After it asked for (429/503), if any. A failed resolver records
    nothing: the URL waits."""
    url_id, url, attempts = queued.id, queued.url, queued.attempts
    result = http.fetch(url, body_types=indexer.HTML_TYPES, via=via)
    if result.error == "dns_unavailable":
        return result, None
    archived = archive.record(result)  # an OSError (disk full) ends the session: its URLs wait
    if result.error or result.status is None:
        results.reports.append((FetchReport(url_id, status=result.status, error=result.error or "no_response"),
                                attempts))
        return result, None
    status = result.status
    if 200 <= status < 300:
        page = indexer.prepare_page(url_id, url, status, result.content_type, result.charset, result.body,
                                    archived=archived)
        results.pages.append((page, queued))
        return result, None
    if 300 <= status < 400 and status != 304:
        location = result.headers.get("location", "").strip()
        target = frontier.Candidate(location, queued.depth, queued.hops + 1, url_id, base=result.url,
                                    scopes=queued.scopes) if location else None
        results.redirects.append(Redirect(url_id, attempts, status, target))
        return result, None
    retry_after = None
    if status in RETRY_AFTER_STATUSES:
        retry_after = parse_retry_after(result.headers.get("retry-after"))
    results.reports.append((FetchReport(url_id, status=status, retry_after=retry_after), attempts))
    return result, retry_after


def store(results: Results) -> None:
    """Write what fetches produced.

    Frontier admissions first, the record of the fetches last: redirect targets and
    discovered links enter the frontier (frontier.add_urls takes its rows in one global
    order and holds no lock across statements, so concurrent workers never deadlock), then
    the pages and URL states are stored in one transaction. A crash anywhere before that
    commit leaves the URLs queued: they are fetched again and their links, if already
    admitted, are simply known. (Recording first would lose the links of pages already
    marked fetched.)
    """
    reports = list(results.reports)
    for redirect in results.redirects:
        outcome = _follow_redirect(redirect.target)
        reports.append((FetchReport(redirect.url_id, status=redirect.status, redirect_outcome=outcome),
                        redirect.attempts))
    links = [frontier.Candidate(link, queued.depth + 1, 0, page.url_id, base=page.base, scopes=queued.scopes)
             for page, queued in results.pages for link in page.links]
    if links:
        frontier.add_urls(links)
    with transaction.atomic():
        details = indexer.store_pages([page for page, _ in results.pages])
        for page, queued in results.pages:
            reports.append((FetchReport(page.url_id, status=page.status, detail=details[page.url_id],
                                        content_hash=page.content_hash), queued.attempts))
        frontier.record_fetches(reports)


def _follow_redirect(target: frontier.Candidate | None) -> str:
    """Send the target back through the frontier (never followed inline)."""
    if target is None:
        return "redirect_without_location"
    admitted = frontier.add_urls([target])
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
