"""Fetch one leased batch of a host's URLs: the step both runners (embedded threads and
Celery workers) call.

Politeness: the lease means one request in flight at a time to the host (and, by default,
to its server address: frontier.politeness). When the host's delay is 0 the batch is
fetched back to back on one kept-alive connection; otherwise a lease carries a single
request (robots.txt counts as one) and the next allowed time is written to the host and
address rows — no sleeping, no Celery countdown. The delay adapts to measured response
times; a network failure ends the batch, and failures in a row trip the host's circuit
breaker (its URLs wait untried). No request starts that could outlive the lease.

The database stays out of the fetch loop: pages are fetched and parsed first
(collect_batch), then the whole batch — documents, index entries, URL states, discovered
links — is written in a dozen statements (commit_batches), together with the batches
that finished at the same time (group commit). A worker that dies mid-batch records
nothing; the lease expires and the batch is fetched again, so no URL is lost.
"""

import email.utils
import os
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from frontier import politeness
from frontier import service as frontier
from frontier.outcomes import RETRY_AFTER_STATUSES, FetchReport
from indexer import service as indexer

from . import archive, http, robots
from .group_commit import GroupCommitter


@dataclass
class _Redirect:
    url_id: int
    attempts: int
    status: int
    target: frontier.Candidate | None  # None: no Location header


@dataclass
class BatchResult:
    """What one lease produced, waiting to be written."""

    reports: list[tuple[FetchReport, int]] = field(default_factory=list)  # (report, attempts)
    pages: list[tuple[indexer.PreparedPage, frontier.QueuedUrl]] = field(default_factory=list)
    redirects: list[_Redirect] = field(default_factory=list)


@dataclass
class CollectedBatch:
    """A lease's fetched-and-parsed results plus what it learned about the host."""

    host_id: int
    token: str
    requests_made: int
    leased_address: str
    update: frontier.HostUpdate
    result: BatchResult


@dataclass
class _Tally:
    """Requests made under one lease: how many, how long they took, where they went."""

    requests: int = 0
    elapsed: list[float] = field(default_factory=list)
    address: str = ""
    responses: int = 0
    network_failures: int = 0

    def saw(self, result: http.FetchResult) -> None:
        self.requests += 1
        self.address = result.address or self.address
        if result.status is not None:
            self.responses += 1
            self.elapsed.append(result.elapsed)
        elif result.error in NETWORK_FAILURES:
            self.network_failures += 1
            if result.error == "timeout":  # a server too slow to answer: let the delay grow
                self.elapsed.append(result.elapsed)


# No answer from the server: these count toward the host's circuit breaker, and end the
# lease's batch at once (its other URLs wait rather than fail the same way). A name that
# does not exist ("dns") is not among them: that is final enough for the URLs' own
# retries to run out and dead-letter them, where a tripped breaker would keep them forever.
NETWORK_FAILURES = frozenset({"timeout", "connection"})


def fetch_batch(host_id: int, token: str, url_ids: list[int]) -> int:
    """Fetch what the lease allows and record it; returns the number of HTTP requests made.

    The write is a group commit (fetch.group_commit) with the batches other threads of
    this process finish meanwhile; it has happened when this returns."""
    host = frontier.begin_lease(host_id, token)
    if host is None:
        return 0  # lease expired or taken over: another worker owns this host now
    collected = collect_batch(host, token, url_ids)
    _committer().commit(collected)
    return collected.requests_made


_committer_lock = threading.Lock()
_committer_of: tuple[int, GroupCommitter] | None = None  # (pid, this process's committer)


def _committer() -> GroupCommitter:
    # One per process: a forked pool child must not share its parent's lock and queue.
    global _committer_of
    with _committer_lock:
        if _committer_of is None or _committer_of[0] != os.getpid():
            _committer_of = (os.getpid(), GroupCommitter(commit_batches, settings.CRAWLER_COMMIT_GROUP_PAGES,
                                                         group_weight))
        return _committer_of[1]


def collect_batch(host: frontier.HostView, token: str, url_ids: list[int]) -> CollectedBatch:
    """Fetch and parse the lease's URLs, writing nothing but a refreshed robots.txt.

    The embedded runner calls this from its fetch threads and commit_batches from its one
    writer thread (SQLite has a single writer); a Celery worker calls both in turn
    (fetch_batch), its write grouped with those of its other threads.
    """
    started = time.monotonic()
    leased_address = host.address if politeness.per_address() else ""  # only then was it claimed
    tally = _Tally()
    host_pause = 0.0  # extra wait: Retry-After, a failed resolver, the circuit breaker
    batch = BatchResult()
    # Tripped breaker: this lease is a probe. If the host still fails, its URLs are not
    # charged (they wait for the host to come back, however long the pauses grow).
    probing = host.failures >= settings.CRAWLER_HOST_FAILURE_THRESHOLD
    try:
        refreshed = robots.needs_fetch(host)
        if refreshed:
            host, robots_result = robots.refresh(host)
            tally.saw(robots_result)
        if host.robots_error:
            # RFC 9309: no verdict means disallow everything for now. The host comes back
            # when robots.txt is tried again, and a URL is charged an attempt only when it
            # really was tried, so a cached failure cannot burn its retries (nor can a
            # resolver that is down: that is nobody's fault).
            if host.robots_error != "blocked_address":  # a refused host costs no request: no wait
                host_pause = max(0.0, (host.robots_expires_at - timezone.now()).total_seconds())
            unreachable = host.robots_error == "dns_unavailable" or (
                probing and host.robots_error in NETWORK_FAILURES)
            if (refreshed and not unreachable) or host.robots_error == "blocked_address":
                failure = _robots_failure(host.robots_error)
                for queued in frontier.queued_urls(url_ids):
                    batch.reports.append((FetchReport(queued.id, error=failure), queued.attempts))
        else:
            policy = robots.policy_for(host)
            for queued in frontier.queued_urls(url_ids):
                if not policy.allows(queued.url):
                    batch.reports.append((FetchReport(queued.id, robots_blocked=True), queued.attempts))
                    continue
                # The delay as measured so far: a server found slow mid-batch is left alone.
                delay = politeness.delay_for(
                    host.crawl_delay, politeness.running_response_time(host.response_time, tally.elapsed))
                if tally.requests and (delay > 0 or _lease_running_out(started)):
                    break  # the rest waits for the host's next turn
                if frontier.origin_excluded(host.origin):
                    break  # an admin excluded it meanwhile; its queued URLs are already stopped
                result, pause = fetch_one(batch, queued)
                tally.saw(result)
                if probing and result.error in NETWORK_FAILURES:
                    batch.reports.pop()  # still down: the URL waits, uncharged
                if result.error == "dns_unavailable":
                    host_pause = max(host_pause, settings.CRAWLER_DNS_NEGATIVE_SECONDS)
                    break
                if pause or result.error in NETWORK_FAILURES:
                    host_pause = max(host_pause, pause)
                    break
    except BaseException:
        # A database error or a bug: nothing is recorded, the URLs stay queued; give the
        # host back at its normal time rather than holding it until the lease expires.
        frontier.release_host(host.id, token, _after(frontier.host_delay(host), host_pause),
                              leased_address=leased_address)
        raise
    update = _host_update(host, tally, host_pause)
    return CollectedBatch(host.id, token, tally.requests, leased_address, update, batch)


def _lease_running_out(started: float) -> bool:
    # Never start a request that could outlive the lease: another worker would then be
    # allowed to talk to this host at the same time.
    worst_case = settings.CRAWLER_CONNECT_TIMEOUT + settings.CRAWLER_TOTAL_DEADLINE + settings.CRAWLER_READ_TIMEOUT
    return time.monotonic() - started + worst_case > settings.CRAWLER_LEASE_SECONDS * 0.8


def _host_update(host: frontier.HostView, tally: _Tally, pause: float) -> frontier.HostUpdate:
    response_time = politeness.running_response_time(host.response_time, tally.elapsed)
    failures = 0 if tally.responses else host.failures + tally.network_failures
    pause = max(pause, politeness.breaker_pause(failures))
    delay = politeness.delay_for(host.crawl_delay, response_time)
    address_next_at = None
    if tally.requests and tally.address and politeness.per_address():
        address_next_at = _after(delay, 0.0)
    host_delay = delay if politeness.per_host() else 0.0
    return frontier.HostUpdate(_after(host_delay, pause), tally.address, address_next_at, response_time, failures)


def _after(delay: float, pause: float) -> datetime:
    return timezone.now() + timedelta(seconds=max(delay, pause))


def group_weight(collected: CollectedBatch) -> int:
    """A batch's weight in a group commit: its pages (what the write holds in memory)."""
    return max(1, len(collected.result.pages))


def commit_batches(group: list[CollectedBatch]) -> int:
    """Record several leases' batches as one (group commit), then release their hosts.

    A write costs mostly per statement, not per row, and a lease often carries only a few
    pages: writing the batches that finished together in one go pays those statements once.
    Their URLs belong to different leased hosts, so merging them changes no outcome.
    The releases are statements of their own, after the commit: a host row is then never
    locked together with the other hosts whose URL counts the batch's links update.
    If a group of several fails, its hosts stay leased and the caller writes each batch
    again alone (fetch.group_commit and the embedded runner both do): released now, a
    host could be leased and its URLs fetched again before that second write. A lone
    batch releases its host whatever happens. Returns the HTTP requests the batches made.
    """
    merged = BatchResult()
    for collected in group:
        merged.reports.extend(collected.result.reports)
        merged.pages.extend(collected.result.pages)
        merged.redirects.extend(collected.result.redirects)
    try:
        store_batch(merged)
    except BaseException:
        if len(group) == 1:
            _release(group)
        raise
    _release(group)
    return sum(collected.requests_made for collected in group)


def _release(group: list[CollectedBatch]) -> None:
    for collected in group:
        frontier.release_host(collected.host_id, collected.token, None, leased_address=collected.leased_address,
                              update=collected.update)


def _robots_failure(robots_error: str) -> str:
    # A refused address is final (the page would be refused too); a network failure keeps
    # its name (the admin sees "dns", not a vague "robots"); anything else is "robots.txt
    # unavailable". All but the first are retried later, as RFC 9309 asks.
    if robots_error in ("blocked_address", "dns", "connection", "timeout"):
        return robots_error
    return "robots_unavailable"


def fetch_one(batch: BatchResult, queued: frontier.QueuedUrl) -> tuple[http.FetchResult, float]:
    """Fetch and parse one URL into `batch` (no database access). Returns the raw result
    and a host pause (Retry-After) or 0. A failed resolver records nothing: the URL waits."""
    url_id, url, attempts = queued.id, queued.url, queued.attempts
    result = http.fetch(url, body_types=indexer.HTML_TYPES)
    if result.error == "dns_unavailable":
        return result, 0.0
    archived = archive.record(result)  # an OSError (disk full) fails the batch: its URLs wait
    if result.error or result.status is None:
        batch.reports.append((FetchReport(url_id, status=result.status, error=result.error or "no_response"), attempts))
        return result, 0.0
    status = result.status
    if 200 <= status < 300:
        page = indexer.prepare_page(url_id, url, status, result.content_type, result.charset, result.body,
                                    archived=archived)
        batch.pages.append((page, queued))
        return result, 0.0
    if 300 <= status < 400 and status != 304:
        location = result.headers.get("location", "").strip()
        target = frontier.Candidate(location, queued.depth, queued.hops + 1, url_id, base=result.url,
                                    scopes=queued.scopes) if location else None
        batch.redirects.append(_Redirect(url_id, attempts, status, target))
        return result, 0.0
    pause = 0.0
    retry_after = None
    if status in RETRY_AFTER_STATUSES:
        retry_after = parse_retry_after(result.headers.get("retry-after"))
        pause = retry_after if retry_after is not None else settings.CRAWLER_DEFAULT_DELAY
    batch.reports.append((FetchReport(url_id, status=status, retry_after=retry_after), attempts))
    return result, pause


def store_batch(batch: BatchResult) -> None:
    """Write everything a lease produced.

    Frontier admissions first, the record of the fetches last: redirect targets and
    discovered links enter the frontier (frontier.add_urls takes its rows in one global
    order and holds no lock across statements, so concurrent workers never deadlock), then
    the pages and URL states of this (leased) host are stored in one transaction. A crash
    anywhere before that commit leaves the URLs queued: they are fetched again and their
    links, if already admitted, are simply known. (Recording first would lose the links of
    pages already marked fetched.)
    """
    reports = list(batch.reports)
    for redirect in batch.redirects:
        outcome = _follow_redirect(redirect.target)
        reports.append((FetchReport(redirect.url_id, status=redirect.status, redirect_outcome=outcome),
                        redirect.attempts))
    links = [frontier.Candidate(link, queued.depth + 1, 0, page.url_id, base=page.base, scopes=queued.scopes)
             for page, queued in batch.pages for link in page.links]
    if links:
        frontier.add_urls(links)
    with transaction.atomic():
        details = indexer.store_pages([page for page, _ in batch.pages])
        for page, queued in batch.pages:
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
