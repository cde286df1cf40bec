"""A host session: one worker holds one host for a while and paces it itself.

Lifecycle (DESIGN.md section 4; crawl/engine.py runs it, crawl/runners.py starts it):
1. A dispatcher (or the embedded runner) leases a ready host with some of its due URLs:
   as many as CRAWLER_SESSION_SECONDS allows at the host's delay, at most
   CRAWLER_SESSION_MAX_URLS. The host's server address is leased with it.
2. The engine opens the session: the host row, its URLs, a HostClock (frontier/pacing.py),
   and one kept-alive connection to the origin (http.HostConnection).
3. robots.txt first, when its cached copy is out of date (it is a request like any other).
4. Then each URL goes through URL_STEPS, in order: still leased? holding its server's
   address (per-IP politeness)? still inside the session's window? not excluded by an
   admin? its URL pattern not stopped as a trap? not paused by an operator? breaker closed? allowed by robots.txt? may the host
   clock send now? fetch. A step can let the URL go on, settle it without a request, ask
   to be woken later (the session then waits in the engine's timer heap, costing no
   thread), or end the session.
5. Every finished URL goes to the writer at once (crawl/writer.py: group commits across
   all sessions of the process); the end of the session goes after its URLs, and the
   writer releases the host with the clock's next time. A session whose process dies is
   never released: its lease expires (CRAWLER_LEASE_SECONDS) and its unwritten URLs, still
   queued, are fetched again by the next session.

step() runs on one of the engine's threads, one step at a time per session, so a session
needs no lock. It touches no database (but to claim a new host's server address once):
the engine's lease keeper renews leases and the writer stores everything.
"""

import time
from collections import deque
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from common import stagetime
from frontier import pacing, politeness
from frontier import service as frontier
from frontier.outcomes import FetchReport
from frontier.vocabulary import FetchError, WaitReason

from fetch import http
from . import observe, robots
from .ownlinks import LinksTaken, OwnLinks
from .pipeline import NETWORK_FAILURES, Results, fetch_one, robots_failure

# --- what a step says --------------------------------------------------------------------

@dataclass(frozen=True)
class Wait:
    until: float  # monotonic


@dataclass(frozen=True)
class End:
    reason: str


PARKED = "parked"  # step()'s answer while the session waits for more URLs (the writer brings them)
EMPTY_ANSWERS = 2  # asks for more URLs that found none before a session ends


SETTLED = "settled"  # the URL is done without a request; go to the next one
WRITER = "writer"  # step()'s answer while it waits for the writer to store its pages (writer_keeps_up)
SENT = "sent"  # a request was made for the URL


# --- what the writer receives ------------------------------------------------------------

@dataclass
class UrlsDone:
    host_id: int
    results: Results


@dataclass
class RobotsFetched:
    host_id: int
    answer: robots.RobotsAnswer
    origin: str = ""
    # Where the host's sitemaps enter the frontier: as deep as the session's shallowest URL,
    # judged by its scopes.
    depth: int = 0
    scopes: str = ""


@dataclass
class CertificateSeen:
    """A gemini:// host showed a certificate other than the one the session knew it by."""

    host_id: int
    fingerprint: str
    not_after: float | None
    seen_at: float


@dataclass
class MoreUrlsWanted:
    """A session has fetched what it was given: once everything before this is stored (its
    last pages' links among it), the writer looks for more of its host's due URLs."""

    host_id: int
    token: str
    taken: frozenset  # the URLs it had: never given twice (one whose result failed to store stays queued)
    limit: int
    # Set: not at its end but on its way (CRAWLER_SESSION_REFRESH_URLS), asking without
    # waiting for its host's best URLs scoring above this (the worst it carries), those it
    # carries included (`taken` then names only the URLs it is done with).
    above: int | None = None


@dataclass
class SessionEnded:
    host_id: int
    token: str
    leased_address: str
    update: frontier.HostUpdate
    requests: int
    connections: int
    reason: str
    origin: str = ""
    worker: str = ""


class HostSession:
    def __init__(self, lease: frontier.Lease, host: frontier.HostView, urls: list[frontier.QueuedUrl], sink,
                 now: float | None = None, worker: str = "", pool=None, heartbeat_age=None,
                 own_keys: set[int] | None = None, written=None):
        now = time.monotonic() if now is None else now
        self.lease, self.host, self.sink = lease, host, sink
        # How many of the items handed to `sink` are written (the writer's `written`; sink
        # returns an item's number), and the numbers of the results of URLs it took from its
        # pages not written yet (writer_keeps_up). None: no writer to wait for.
        self.written = written
        self.ahead: deque[int] = deque()
        self.pool = pool  # the engine's parse pool (crawl/parsepool.py), or None: analyse here
        self.worker = worker  # who sends the requests (the crawl log's worker field)
        # Seconds since the engine's heartbeat was last written (None: no engine, no check).
        self.heartbeat_age = heartbeat_age
        self.urls = deque(urls)
        self.taken = {queued.id for queued in urls}
        self.taken_urls = {queued.url for queued in urls}  # a URL taken from a page has no frontier id yet
        # Its pages' links to its host, taken at once (crawl/ownlinks.py); own_keys: the
        # host's URL keys at the lease (None: a host too big for that).
        self.own_links = OwnLinks(host.origin, own_keys)
        self.empty_answers = 0  # asks for more URLs in a row that found none
        self.clock = pacing.HostClock(host.crawl_delay, host.response_time, host.failures)
        self.window_end = now + settings.CRAWLER_SESSION_SECONDS
        self.lease_until = now + settings.CRAWLER_LEASE_SECONDS  # moved on by the lease keeper
        self.lost = False  # the keeper found the lease taken: stop at once
        self.connection = http.HostConnection(host.origin)
        self.leased_address = host.address if politeness.per_address() else ""  # only then was it claimed
        self.probing = host.failures >= settings.CRAWLER_HOST_FAILURE_THRESHOLD
        self.policy: robots.RobotsPolicy | None = None  # known after robots.txt
        self.requests = 0
        self.address = ""  # the server address the requests went to
        self.ended = ""  # why it ended ("" while it runs)
        self.certificate = host.tls_fingerprint  # trust on first use (gemini://)
        self.site_points = frontier.site_points(host.inlink_hosts)  # its standing when sessions compete
        self.better: deque[list] = deque()  # the writer's answers to a refresh (another thread appends)
        self.refreshing = False  # a refresh asked and not answered yet
        self.refresh_wanted = False  # its host has a URL that would go before the ones carried

    @property
    def host_id(self) -> int:
        return self.lease.host_id

    def next_score(self) -> int:
        """The importance of what this session asks for next (its robots.txt goes with its
        best URL) and its host's standing: the engine serves the best of the sessions due
        first."""
        return (self.urls[0].score if self.urls else 0) + self.site_points

    # --- the engine calls these -----------------------------------------------------------

    @stagetime.timed("session")
    def step(self) -> float | None:
        """Go as far as possible without waiting: until one request is made, a wait is
        needed, or the session is over. Returns when to call again (monotonic), or None."""
        self._swap_in_better()
        outcome = self._robots() if self.policy is None else None
        if outcome is None:
            outcome = self._next_url()
        self._refresh()
        if isinstance(outcome, Wait):
            return outcome.until
        if outcome == End("done") and self._want_more():
            return PARKED
        if outcome == WRITER:
            return WRITER
        self.finish(outcome.reason)
        return None

    def ahead_of(self, written: int) -> bool:
        """Whether CRAWLER_SESSION_OWN_LINKS_AHEAD results of URLs it took from its pages
        are among the items the writer has not written (`written`: those it has)."""
        while self.ahead and self.ahead[0] <= written:
            self.ahead.popleft()
        return len(self.ahead) >= settings.CRAWLER_SESSION_OWN_LINKS_AHEAD

    def _want_more(self) -> bool:
        """One visit, one connection: a session that ran out of URLs asks for its host's
        URLs discovered meanwhile (often by its own pages) while its window, its lease and
        CRAWLER_SESSION_MAX_URLS allow, instead of leaving them to a new session that would
        pay a lease cycle and a new connection. The writer answers (more_urls)."""
        room = settings.CRAWLER_SESSION_MAX_URLS - len(self.taken)
        now = time.monotonic()
        if self.empty_answers >= EMPTY_ANSWERS or self.lost or room <= 0 or self.policy is None:
            return False
        fits = self._fits_in_window(now)
        if fits <= 0:
            return False
        self.sink(MoreUrlsWanted(self.host_id, self.lease.token, _frontier_ids(self.taken), min(room, fits)))
        return True

    def _fits_in_window(self, now: float) -> int:
        cycle = max(self.clock.delay + (self.clock.response_time or 0.0), 0.01)
        return int((self.window_end - max(now, self.clock.next_request_at())) / cycle)

    def take_own_links(self, results: Results) -> None:
        """The links its pages just fetched make to its host, taken now (crawl/ownlinks.py):
        as many as CRAWLER_SESSION_MAX_URLS and the window leave room for, in score order
        among what it carries; the writer is told after the pages' results."""
        if not results.pages or self.policy is None or self.own_links.keys is None:
            return
        # The URL just fetched is still the first carried (the step that fetched it takes
        # it off): what is taken goes after it.
        self._carry(self.own_links.take(results.pages, self._room(carried=len(self.urls) - 1), self.taken_urls,
                                        self.policy.allows), first=1)

    def _take_sitemaps(self, answer: robots.RobotsAnswer, depth: int, scopes: str) -> None:
        """The sitemaps robots.txt names (or /sitemap.xml), taken as the writer admits them
        (crawl/robots.py): a sitemap goes before the pages it lists, not after a round trip."""
        if self.own_links.keys is None or self.policy is None:
            return
        candidates = robots.sitemap_candidates(self.host.origin, answer, depth, scopes)
        self._carry(self.own_links.take_candidates(candidates, self._room(carried=len(self.urls)), self.taken_urls,
                                                   self.policy.allows), first=0)

    def _room(self, carried: int) -> int:
        return min(settings.CRAWLER_SESSION_MAX_URLS - len(self.taken),
                   self._fits_in_window(time.monotonic()) - carried)

    def _carry(self, taken: list, first: int) -> None:
        """Carry what was taken, each in score order from position `first`; tell the writer."""
        if not taken:
            return
        for queued, _ in taken:
            self.taken.add(queued.id)
            self.taken_urls.add(queued.url)
            position = next((i for i in range(first, len(self.urls)) if self.urls[i].score < queued.score),
                            len(self.urls))
            self.urls.insert(position, queued)
        self.sink(LinksTaken(self.host_id, [(queued.id, candidate) for queued, candidate in taken]))

    def more_urls(self, urls: list) -> float:
        """The writer's answer to MoreUrlsWanted (the engine calls it, the session parked);
        returns when the session goes on (monotonic). With none found, it asks once more
        when its host may next be asked anyway (the clock's time: waiting costs the host
        nothing), for the links other sessions find meanwhile, then ends."""
        urls = [queued for queued in urls if queued.id not in self.taken and queued.url not in self.taken_urls]
        self.taken.update(queued.id for queued in urls)
        self.taken_urls.update(queued.url for queued in urls)
        self.own_links.learn([queued.url for queued in urls])
        self.urls.extend(urls)
        self.empty_answers = 0 if urls else self.empty_answers + 1
        now = time.monotonic()
        return now if urls else max(now, min(self.clock.next_request_at(), self.window_end))

    def offered(self, score: int) -> None:
        """The writer stored a URL of this host scoring `score` (new, or raised): if it
        would be among the next CRAWLER_SESSION_REFRESH_URLS this session fetches, the
        session asks for its host's best at its next step. (The engine's thread calls this;
        a flag the session's own step reads is all it touches.)"""
        window = settings.CRAWLER_SESSION_REFRESH_URLS
        if not window or self.ended:
            return
        urls = self.urls
        try:
            if urls and score > urls[min(window, len(urls)) - 1].score:
                self.refresh_wanted = True
        except IndexError:  # its step took one meanwhile: ask anyway, the answer is checked
            self.refresh_wanted = True

    def _refresh(self) -> None:
        """Ask the writer (without waiting) for this host's best URLs this session has not
        fetched: those found since it began and those it carries whose score rose since (a
        sitemap read after the lease, links from other hosts)."""
        if not self.refresh_wanted or self.refreshing or not self.urls or self.lost:
            return
        self.refresh_wanted, self.refreshing = False, True
        done = _frontier_ids(self.taken.difference(queued.id for queued in self.urls))
        self.sink(MoreUrlsWanted(self.host_id, self.lease.token, done, settings.CRAWLER_SESSION_REFRESH_URLS,
                                 above=min(queued.score for queued in self.urls)))

    def _swap_in_better(self) -> None:
        """The writer's answer: the URLs carried take their scores as they are now, better
        ones found since replace the worst carried (those stay queued for a later session),
        and everything carried is in score order again. By URL: one taken from a page is
        carried under a temporary id, and comes back under the frontier's."""
        while self.better:
            found = self.better.popleft()
            self.refreshing = False
            carried = {queued.url: queued for queued in self.urls}
            done = self.taken_urls.difference(carried)
            found = [queued for queued in found if queued.url not in done]
            if not found:
                continue
            self.own_links.learn([queued.url for queued in found])
            room = len(self.urls) + max(0, settings.CRAWLER_SESSION_MAX_URLS - len(self.taken))
            replaced = [carried[queued.url].id for queued in found if queued.url in carried]
            carried.update((queued.url, queued) for queued in found)
            ranked = sorted(carried.values(), key=lambda queued: -queued.score)  # stable: ties keep their order
            self.taken.difference_update(replaced)
            self.taken.difference_update(queued.id for queued in ranked[room:])
            self.taken_urls.difference_update(queued.url for queued in ranked[room:])
            self.taken.update(queued.id for queued in ranked[:room])
            self.taken_urls.update(queued.url for queued in ranked[:room])
            self.urls = deque(ranked[:room])

    def finish(self, reason: str) -> None:
        """End the session: its end goes to the writer after its URLs, which releases the
        host (and address) with the clock's next time."""
        if self.ended:
            return
        self.ended = reason
        self.connection.close()
        self.sink(SessionEnded(self.host_id, self.lease.token, self.leased_address, self._host_update(),
                               self.requests, self.connection.connections_opened, reason, self.host.origin,
                               self.worker))

    # --- robots.txt, once per session, before any URL -------------------------------------

    def _robots(self):
        refreshed = False
        if robots.needs_fetch(self.host):
            for check in (lease_held, not_paused, clock_allows):
                outcome = check(self, None)
                if outcome is not None:
                    return outcome
            self.host, answer, result = robots.fetch(self.host, via=self.connection)
            first = min(self.urls, key=lambda queued: queued.depth, default=None)
            depth, scopes = (first.depth, first.scopes) if first else (0, "")
            self.sink(RobotsFetched(self.host_id, answer, self.host.origin, depth, scopes))
            self._saw(result)
            self._observed(result, "robots", None, 1, None)
            self.clock.crawl_delay = self.host.crawl_delay
            refreshed = True
        if self.host.robots_error:
            return self._robots_unavailable(refreshed)
        self.policy = robots.policy_for(self.host)
        if refreshed:
            self._take_sitemaps(answer, depth, scopes)
        return None

    def _robots_unavailable(self, refreshed: bool) -> End:
        # RFC 9309: no verdict means disallow everything for now. The host comes back when
        # robots.txt is tried again, and a URL is charged an attempt only when it really
        # was tried, so a cached failure cannot burn its retries (nor can a resolver that
        # is down: that is nobody's fault).
        error = self.host.robots_error
        if error != FetchError.BLOCKED_ADDRESS:  # a refused host costs no request: no wait
            wait = max(0.0, (self.host.robots_expires_at - timezone.now()).total_seconds())
            self.clock.pause(time.monotonic() + wait, WaitReason.ROBOTS_UNAVAILABLE)
        unreachable = error == FetchError.DNS_UNAVAILABLE or (self.probing and error in NETWORK_FAILURES)
        if (refreshed and not unreachable) or error == FetchError.BLOCKED_ADDRESS:
            results = Results()
            for queued in self.urls:
                results.reports.append((FetchReport(queued.id, error=robots_failure(error)), queued.attempts))
            self.sink(UrlsDone(self.host_id, results))
            self.urls.clear()
        return End("robots_unavailable")

    # --- the URLs ---------------------------------------------------------------------------

    def _next_url(self):
        while self.urls:
            queued = self.urls[0]
            for check in URL_STEPS:
                outcome = check(self, queued)
                if outcome is None:
                    continue
                if outcome in (SETTLED, SENT):
                    self.urls.popleft()
                    if outcome == SENT:  # one request per step: the next one waits for the clock
                        if not self.urls:
                            return End("done")
                        # A breaker that just opened ends the session now: it must not sit
                        # out the pause holding the lease.
                        # Due since the clock allowed it, not since the analysis ended: a
                        # host waiting for its page's parse is late, and the engine's cap
                        # on sessions (crawl/capacity.py) must see it.
                        return (breaker_closed(self, None) or clock_allows(self, None)
                                or Wait(min(time.monotonic(), self.clock.next_request_at())))
                    break
                return outcome  # Wait or End
        return End("done")

    def _saw(self, result: http.FetchResult, retry_after: float | None = None) -> None:
        """Tell the clock about a request that just ended."""
        self.requests += 1
        self.address = result.address or self.address
        if result.tls_fingerprint and result.tls_fingerprint != self.certificate:
            self.certificate = result.tls_fingerprint
            self.sink(CertificateSeen(self.host_id, result.tls_fingerprint, result.tls_not_after, time.time()))
        # From the end of the response, not of its analysis: a page waits for a parse
        # process meanwhile, and the host's delay is the gap it sees between requests.
        end = result.ended_at or time.monotonic()
        if result.status is not None:
            self.clock.response(end, result.elapsed, result.status, retry_after)
        elif result.error in NETWORK_FAILURES:
            self.clock.network_failure(end, result.elapsed, result.error)
        elif result.error == FetchError.DNS_UNAVAILABLE:
            self.clock.resolver_failed(end)
        else:
            self.clock.request_failed(end)

    def _observed(self, result: http.FetchResult, kind: str, url_id: int | None, attempt: int,
                  retry_after: float | None) -> None:
        observe.request_made(result, kind=kind, url_id=url_id, host_id=self.host_id, origin=self.host.origin,
                             attempt=attempt, retry_after=retry_after, worker=self.worker, lease=self.lease.token)

    def _host_update(self) -> frontier.HostUpdate:
        now, wall = time.monotonic(), timezone.now()
        if politeness.per_host():
            host_next = self.clock.release_at(now, wall)
        else:  # only the address is paced; a pause (Retry-After, breaker) still holds the host
            host_next = wall + timedelta(seconds=max(0.0, self.clock.paused_until - now))
        address_next = None
        if self.requests and self.address and politeness.per_address() and self.clock.last_end is not None:
            address_next = wall + timedelta(seconds=max(0.0, self.clock.last_end + self.clock.delay - now))
        return frontier.HostUpdate(host_next, self.address, address_next, self.clock.response_time,
                                   self.clock.failures, self.clock.wait_reason(now))


# --- the steps of a URL, in order ----------------------------------------------------------
# Each takes (session, queued URL) and returns None (go on), SETTLED, SENT, WRITER, Wait or End.

def lease_held(session: HostSession, queued) -> End | None:
    """Never start a request that could outlive the lease: another worker would then be
    allowed to talk to this host at the same time. The lease keeper renews it long before."""
    if session.lost:
        return End("lease_lost")
    worst_case = settings.CRAWLER_CONNECT_TIMEOUT + settings.CRAWLER_TOTAL_DEADLINE + settings.CRAWLER_READ_TIMEOUT
    if session.lease_until - time.monotonic() < min(worst_case, settings.CRAWLER_LEASE_SECONDS / 2):
        return End("lease_running_out")
    # Soon the others may take this process for dead and release its leases
    # (crawl/recovery.py): after a freeze, or with a database that takes no heartbeat.
    if session.heartbeat_age is not None and session.heartbeat_age() > (
            settings.CRAWLER_LEASE_STALE_SECONDS - settings.CRAWLER_HEARTBEAT_SECONDS):
        return End("heartbeat_late")
    return None


def address_held(session: HostSession, queued) -> End | None:
    """With per-address politeness, a session sends only while it holds its server's
    address. A host's address is learned on first contact (usually robots.txt); the session
    then claims it (the one database write a fetch thread makes, once per new host) and
    goes on, or ends if another host's session holds it. A host that moved to another
    address ends its session; its next one is leased with the new address."""
    if not politeness.per_address() or not session.address or session.address == session.leased_address:
        return None
    if session.leased_address:
        return End("address_changed")
    try:
        claimed = frontier.claim_address(session.address, session.lease.token)
    finally:
        connection.close()  # fetch threads keep no database connection
    if not claimed:
        return End("address_busy")
    session.leased_address = session.address
    return None


def within_window(session: HostSession, queued) -> End | None:
    """A session holds its host for CRAWLER_SESSION_SECONDS; what is left waits for the next."""
    return End("window") if time.monotonic() >= session.window_end else None


def not_excluded(session: HostSession, queued) -> End | None:
    """An admin excluded the domain meanwhile: its queued URLs are already stopped."""
    return End("excluded") if frontier.origin_excluded(session.host.origin) else None


def pattern_not_stopped(session: HostSession, queued) -> str | None:
    """The URL's pattern was stopped as a trap, or its host as a mirror, meanwhile
    (frontier/traps.py): no request; the URL is set aside like the other queued URLs (one
    admitted by a process that had not heard of the stop yet included)."""
    reason = frontier.pattern_stopped(queued.url)
    if not reason:
        return None
    session.sink(UrlsDone(session.host_id, Results(reports=[(FetchReport(queued.id, set_aside=reason),
                                                              queued.attempts)])))
    return SETTLED


def not_paused(session: HostSession, queued) -> End | None:
    """An operator paused the crawl or this host: stop; the URLs left stay queued. The
    lease keeper refreshes the snapshot every few seconds, so a pause takes effect within
    LIMITS_RECHECK_SECONDS plus one request."""
    return End("paused") if frontier.paused_for(session.host_id) else None


def breaker_closed(session: HostSession, queued) -> End | None:
    """After CRAWLER_HOST_FAILURE_THRESHOLD network failures in a row, stop; a session that
    starts with the breaker open is a probe: one request, and it ends if that fails too."""
    if session.clock.breaker_open and not (session.probing and session.requests == 0):
        return End("breaker")
    return None


def robots_allow(session: HostSession, queued) -> str | None:
    if session.policy.allows(queued.url):
        return None
    session.sink(UrlsDone(session.host_id, Results(reports=[(FetchReport(queued.id, robots_blocked=True),
                                                              queued.attempts)])))
    return SETTLED


def writer_keeps_up(session: HostSession, queued) -> str | None:
    """A URL taken from the session's own pages goes only while fewer than
    CRAWLER_SESSION_OWN_LINKS_AHEAD results of such URLs wait for the writer; else the
    session waits until the writer has written (the engine wakes it). The writer's
    judgement of traps and mirrors (frontier/traps.py) counts stored pages: a session that
    no delay holds back would otherwise fetch a mirror's or a trap's pages faster than they
    can be judged, and the more so the busier the machine. A URL the frontier gave is not
    held: the writer had stored its referrer."""
    if queued.id > 0 or session.written is None:
        return None
    return WRITER if session.ahead_of(session.written()) else None


def clock_allows(session: HostSession, queued) -> Wait | End | None:
    """Wait out the host's delay (and any pause), measured from the end of the last
    response; a wait past the session's window ends the session instead."""
    when = session.clock.next_request_at()
    if when <= time.monotonic():
        return None
    if when >= session.window_end:
        return End("window")
    return Wait(when)


def fetch(session: HostSession, queued: frontier.QueuedUrl) -> str | End:
    results = Results()
    result, retry_after = fetch_one(results, queued, via=session.connection, pool=session.pool)
    session._saw(result, retry_after)
    session._observed(result, "page", queued.id, queued.attempts + 1, retry_after)
    if result.error == FetchError.DNS_UNAVAILABLE:  # nothing recorded: the URL waits for the resolver
        return End("dns_unavailable")
    if session.probing and result.error in NETWORK_FAILURES:
        return End("breaker")  # still down: the URL waits, uncharged
    number = session.sink(UrlsDone(session.host_id, results))
    if queued.id < 0 and number is not None:
        session.ahead.append(number)
    session.take_own_links(results)
    return SENT


URL_STEPS = (lease_held, address_held, within_window, not_excluded, pattern_not_stopped, not_paused, breaker_closed,
             robots_allow, writer_keeps_up, clock_allows, fetch)


def _frontier_ids(url_ids) -> frozenset:
    """The ids the frontier knows (a URL taken from a page has a temporary, negative one)."""
    return frozenset(url_id for url_id in url_ids if url_id > 0)
