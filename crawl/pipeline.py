"""Turning responses into results, and storing results: the two halves of the fetch path
that the session engine (crawl/session.py, crawl/engine.py) runs around the network.

fetch_one() is pure work, no database: request, archive, parse, into a Results. The
writer (crawl/writer.py) merges the Results of many URLs of many sessions and stores them
with store() in a dozen statements, whatever the number of sessions they came from.
"""

import email.utils
import logging
from dataclasses import dataclass, field
from datetime import datetime
from datetime import timezone as dt_timezone

from django.conf import settings
from django.db import transaction

from frontier import service as frontier
from frontier.outcomes import RETRY_AFTER_STATUSES, FetchReport
from frontier.vocabulary import FetchError, Observation, PageDetail, RedirectOutcome
from indexer import service as indexer

from archive import warc
from fetch import http, robotstxt

log = logging.getLogger(__name__)
UrlKind = frontier.UrlKind
_YIELD_DETAILS = frozenset({PageDetail.INDEXED, PageDetail.DUPLICATE, PageDetail.NEAR_DUPLICATE})
# How each kind of link source is read (indexer.prepare_source).
_SOURCE_FORMATS = {UrlKind.SITEMAP: "sitemap", UrlKind.NESTED_SITEMAP: "sitemap", UrlKind.FEED: "feed"}

# No answer from the server: these count toward the host's circuit breaker. A name that
# does not exist ("dns") is not among them: that is final enough for the URLs' own
# retries to run out and dead-letter them, where a tripped breaker would keep them forever.
NETWORK_FAILURES = frozenset({FetchError.TIMEOUT, FetchError.CONNECTION})


@dataclass
class Redirect:
    url_id: int
    attempts: int
    status: int
    target: frontier.Candidate | None  # None: no Location header


@dataclass(frozen=True)
class Visit:
    """What a 2xx response tells the recrawl schedule besides its page."""

    observation: str  # an Observation
    etag: str = ""
    last_modified: str = ""
    started_at: float | None = None  # when the response began (its WARC-Date)


@dataclass
class Results:
    """What some fetches produced, waiting to be stored (one URL's, or a merged group's)."""

    reports: list[tuple[FetchReport, int]] = field(default_factory=list)  # (report, attempts)
    # Pages to store: new, or changed since the stored copy.
    pages: list[tuple[indexer.PreparedPage, frontier.QueuedUrl, Visit]] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)

    @property
    def weight(self) -> int:
        """Its share of a group commit: pages (what a write holds in memory), at least 1."""
        return max(1, len(self.pages))

    def extend(self, other: "Results") -> None:
        self.reports.extend(other.reports)
        self.pages.extend(other.pages)
        self.redirects.extend(other.redirects)

    def url_ids(self) -> list[int]:
        return ([report.url_id for report, _ in self.reports] + [page.url_id for page, _, _ in self.pages]
                + [redirect.url_id for redirect in self.redirects])

    def split(self) -> list["Results"]:
        """One Results per URL."""
        return ([Results(reports=[report]) for report in self.reports] + [Results(pages=[page]) for page in self.pages]
                + [Results(redirects=[redirect]) for redirect in self.redirects])


def robots_failure(robots_error: str) -> str:
    """The outcome of a URL that could not be tried because robots.txt gave no verdict.
    A refused address is final (the page would be refused too); a network failure keeps
    its name (the admin sees "dns", not a vague "robots"); anything else is "robots.txt
    unavailable". All but the first are retried later, as RFC 9309 asks."""
    if robots_error in (FetchError.BLOCKED_ADDRESS, FetchError.DNS, FetchError.CONNECTION, FetchError.TIMEOUT):
        return robots_error
    return FetchError.ROBOTS_UNAVAILABLE


@dataclass
class Analysis:
    """What a response means for the crawl, worked out with no database and no file:
    pure CPU, so a parse pool process (crawl/parsepool.py) may do it."""

    revisit: str = ""  # the WARC revisit profile when the response repeats the archived one
    records: list = field(default_factory=list)  # WARC records to append (warc.build)
    page: indexer.PreparedPage | None = None  # a 2xx page, parsed and fingerprinted
    observation: str = ""  # what a 2xx revisit saw of the text (an Observation)
    body_hash: str | None = None  # of a 2xx body
    failed: str = ""  # the analysis broke (parse_failed, a PdfOutcome): the response is archived, not used


def analyse(result: http.FetchResult, queued: frontier.QueuedUrl) -> Analysis:
    """The CPU-heavy half of fetch_one(): hash, archive records, parse, fingerprint, compare
    with the stored copy, and the search backend's analysis of a page to be stored."""
    status = result.status
    body_hash = indexer.content_hash(result.body) if status is not None and 200 <= status < 300 else None
    if status == 304 or (body_hash is not None and _same_payload(result, body_hash, queued)):
        profile = warc.NOT_MODIFIED if status == 304 else warc.IDENTICAL_PAYLOAD
        observation = Observation.NOT_MODIFIED if status == 304 else Observation.UNCHANGED
        return Analysis(profile, warc.build_revisit(result, profile, queued.payload_at), None, observation,
                        body_hash)
    analysis = Analysis(records=warc.build(result), body_hash=body_hash)
    if result.error or status is None or not 200 <= status < 300:
        return analysis
    try:
        if queued.kind != UrlKind.PAGE:  # a sitemap or feed: read for its links, never indexed
            page = indexer.prepare_source(queued.id, queued.url, status, result.content_type, result.body, body_hash,
                                          _SOURCE_FORMATS[queued.kind], nested=queued.kind == UrlKind.NESTED_SITEMAP,
                                          charset=result.charset)
            analysis.page = page
            analysis.observation = Observation.CHANGED if queued.content_hash else Observation.FIRST
            return analysis
        page = indexer.prepare_page(queued.id, queued.url, status, result.content_type, result.charset, result.body,
                                    body_hash=body_hash, robots_header=result.headers.get("x-robots-tag", ""),
                                    robots_token=robotstxt.crawler_token(),
                                    content_language=result.headers.get("content-language", ""))
        page.started_at = result.started_at
        observation = indexer.compare_text(queued.text_hash, queued.simhash, page.fingerprint)
        if observation not in (Observation.UNCHANGED, Observation.NOISE):
            indexer.prepare_index(page)
    except indexer.PdfProblem as problem:  # encrypted, truncated, malformed, no text: archived, settled
        log.info("%s not read: %s", queued.url, problem)
        analysis.failed = problem.outcome
        return analysis
    except Exception:  # a page no analysis should fail on: settled, never fetched again and again
        log.exception("analysing %s failed: settled as parse_failed", queued.url)
        analysis.failed = PageDetail.PARSE_FAILED
        return analysis
    analysis.page, analysis.observation = page, observation
    return analysis


def fetch_one(results: Results, queued: frontier.QueuedUrl, via: http.HostConnection | None = None,
              pool=None) -> tuple[http.FetchResult, float | None]:
    """Fetch and parse one URL into `results` (no database access). Returns the raw result
    and the Retry-After it asked for (429/503), if any. A failed resolver records
    nothing: the URL waits. `pool`: a parse pool to analyse the response in (else here).

    A revisit is a conditional GET (the validators the last response gave). What it saw
    is an observation for the change-rate estimate: a 304, or a 200 with the same bytes
    (both archived as revisit records, nothing parsed or stored), or a 200 whose text is
    the same or moved only by noise (archived in full; the stored copy, its index entry
    and its links stay), or a change (stored like a new page)."""
    url_id, attempts = queued.id, queued.attempts
    if queued.kind == UrlKind.PAGE:
        # HTML and PDF bodies are read; one served as octet-stream or as no type only if it
        # sniffs as a PDF (indexer/pdf.py); any other type is not downloaded.
        result = http.fetch(queued.url, body_types=indexer.PAGE_BODY_TYPES, via=via,
                            conditional=conditional_headers(queued), sniff_types=indexer.SNIFFED_TYPES,
                            sniff=indexer.sniffs_as_pdf, sniff_bytes=indexer.SNIFF_BYTES)
    else:  # a sitemap or feed: served as any type (gzip, text/plain, XML), up to the sitemaps.org size
        result = http.fetch(queued.url, max_bytes=settings.CRAWLER_SITEMAP_MAX_BYTES, via=via,
                            conditional=conditional_headers(queued))
    if result.error == FetchError.DNS_UNAVAILABLE:
        return result, None
    # A page goes to the pool; an error, a redirect or a 304 is only an archive record.
    page = result.status is not None and 200 <= result.status < 300 and not result.error
    analysis = pool.analyse(result, queued) if pool is not None and page else analyse(result, queued)
    status = result.status
    archived = warc.append(analysis.records)  # an OSError (disk full) ends the session: its URLs wait
    if analysis.revisit:
        results.reports.append((FetchReport(url_id, status=status, detail=analysis.observation,
                                            **_observed(result, analysis.observation)), attempts))
        return result, None
    if result.error or status is None:
        results.reports.append((FetchReport(url_id, status=status, error=result.error or FetchError.NO_RESPONSE),
                                attempts))
        return result, None
    if 200 <= status < 300:
        page, observation = analysis.page, analysis.observation
        if analysis.failed:
            results.reports.append((FetchReport(url_id, status=status, detail=analysis.failed), attempts))
        elif observation in (Observation.UNCHANGED, Observation.NOISE):  # the stored copy stands
            results.reports.append((FetchReport(url_id, status=status, detail=observation,
                                                content_hash=page.content_hash, **_observed(result, observation)),
                                    attempts))
        else:
            page.archived = archived
            results.pages.append((page, queued, Visit(observation, *_validators(result), result.started_at)))
        return result, None
    if 300 <= status < 400:
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


def conditional_headers(queued: frontier.QueuedUrl) -> dict[str, str] | None:
    """If-None-Match / If-Modified-Since from the last response's validators, when it left
    a copy to compare with (RFC 9110 section 13.1)."""
    if not queued.content_hash:
        return None
    headers = {}
    if queued.etag:
        headers["If-None-Match"] = queued.etag
    if queued.last_modified:
        headers["If-Modified-Since"] = queued.last_modified
    return headers or None


def _same_payload(result: http.FetchResult, body_hash: str, queued: frontier.QueuedUrl) -> bool:
    """The whole body arrived and is the one archived last time."""
    return result.body_read and not result.error and body_hash == queued.content_hash


def _validators(result: http.FetchResult) -> tuple[str, str]:
    return result.headers.get("etag", "")[:200], result.headers.get("last-modified", "")[:64]


def _observed(result: http.FetchResult, observation: str) -> dict:
    etag, last_modified = _validators(result)
    return {"observation": observation, "etag": etag, "last_modified": last_modified, "started_at": result.started_at}


def _settle_small_changes(results: Results) -> None:
    """Revisits whose text moved past the SimHash threshold but by only a few words against
    the stored copy (CRAWLER_CHANGE_NOISE_WORDS: a rotated sponsor word) are noise after
    all: the stored copy, its index entry and its links stand, as for noise seen by the
    distance (fetch_one), and the estimator is told "noise", not "changed"."""
    revisits = [page for page, queued, visit in results.pages
                if visit.observation == Observation.CHANGED and queued.text_hash and queued.kind == UrlKind.PAGE]
    small = indexer.small_changes(revisits) if revisits else set()
    if not small:
        return
    kept = []
    for page, queued, visit in results.pages:
        if page.url_id not in small:
            kept.append((page, queued, visit))
            continue
        results.reports.append((FetchReport(page.url_id, status=page.status, detail=Observation.NOISE,
                                            content_hash=page.content_hash, observation=Observation.NOISE,
                                            etag=visit.etag, last_modified=visit.last_modified,
                                            started_at=visit.started_at), queued.attempts))
    results.pages[:] = kept


def store(results: Results) -> dict[int, int]:
    """Write what fetches produced; returns {host id: best score} of the waiting URLs the
    links added or raised (the sessions of those hosts may want to swap them in).

    Frontier admissions first, the record of the fetches last: redirect targets and
    discovered links enter the frontier (frontier.add_urls takes its rows in one global
    order and holds no lock across statements, so concurrent workers never deadlock), then
    the pages and URL states are stored in one transaction. A crash anywhere before that
    commit leaves the URLs queued: they are fetched again and their links, if already
    admitted, are simply known. (Recording first would lose the links of pages already
    marked fetched.)
    """
    _settle_small_changes(results)
    reports = list(results.reports)
    for redirect in results.redirects:
        outcome = _follow_redirect(redirect.target)
        reports.append((FetchReport(redirect.url_id, status=redirect.status, redirect_outcome=outcome),
                        redirect.attempts))
    links, lastmods = [], []
    for page, queued, _ in results.pages:
        via = frontier.origin_of(page.url)
        kind = UrlKind.NESTED_SITEMAP if page.lists_sitemaps else UrlKind.PAGE
        hints = page.sitemap_priorities
        if hints is None:
            links += [frontier.Candidate(link, queued.depth + 1, 0, page.url_id, base=page.base, scopes=queued.scopes,
                                         kind=kind, via=via) for link in page.links]
        else:  # a sitemap of pages: its listing (and each <priority>) is a hint, not a vote
            depth = queued.depth + settings.CRAWLER_SITEMAP_ENTRY_DEPTH
            links += [frontier.Candidate(link, depth, 0, page.url_id, base=page.base, scopes=queued.scopes,
                                         hint=frontier.sitemap_hint(priority)) for link, priority in zip(page.links, hints)]
            lastmods.append((page.base, [(link, lastmod) for link, lastmod in zip(page.links, page.sitemap_lastmods)
                                         if lastmod]))
        links += [frontier.Candidate(feed, queued.depth + 1, 0, page.url_id, base=page.base, scopes=queued.scopes,
                                     kind=UrlKind.FEED, via=via) for feed in page.feeds]
    raised = frontier.add_urls(links).raised if links else {}
    for base, changes in lastmods:  # pages a sitemap says changed since our visit: visited sooner
        if changes:
            frontier.sitemap_changes(changes, base)
    _admit_canonicals(results.pages)
    with transaction.atomic():
        details = indexer.store_pages([page for page, _, _ in results.pages])
        for page, queued, visit in results.pages:
            fingerprint = page.fingerprint
            reports.append((FetchReport(
                page.url_id, status=page.status, detail=details[page.url_id], content_hash=page.content_hash,
                observation=visit.observation, etag=visit.etag, last_modified=visit.last_modified,
                started_at=visit.started_at,
                text_hash=fingerprint.text_hash if fingerprint else "", simhash=fingerprint.simhash if fingerprint else None,
            ), queued.attempts))
        gone = frontier.record_fetches(reports).gone
        if gone:  # gone twice in a row: the page leaves the index
            indexer.remove_pages(gone)
        # Pages left out for a URL these visits showed cannot stand for them are indexed.
        indexer.settle_canonical_targets([report.url_id for report, _ in reports])
        # What each URL pattern and host yields, for the traps and mirrors that stop
        # themselves (frontier/traps.py): new text or a copy (of another host's page?);
        # noindex and canonical pages say nothing either way.
        counted = [page for page, _, _ in results.pages if details.get(page.url_id) in _YIELD_DETAILS]
        copies = indexer.originals_of([page.url_id for page in counted if details[page.url_id] != PageDetail.INDEXED])
        frontier.count_pattern_yield([
            (page.url, details[page.url_id] == PageDetail.INDEXED, _copied_from(page.url, copies.get(page.url_id)))
            for page in counted])
    frontier.fetched_here([queued.url for _, queued, _ in results.pages])  # links to them: nothing to count
    return raised


def _copied_from(url: str, original: str | None) -> str:
    """The origin of the other host whose page this one copies, or ""."""
    origin = frontier.origin_of(original) if original else ""
    return origin if origin and origin != frontier.origin_of(url) else ""


def _admit_canonicals(pages: list) -> None:
    """A page whose <link rel=canonical> names another URL: that URL enters the frontier at
    the page's depth. Refused there (out of scope, filtered), it can never stand for the
    page, which is then indexed as itself; otherwise the indexer decides, and decides again
    once that URL is visited (indexer/canonicals.py)."""
    pages = sorted((item for item in pages if item[0].canonical), key=lambda item: item[0].url_id)
    if not pages:
        return
    admitted = frontier.add_urls([frontier.Candidate(page.canonical, queued.depth, 0, page.url_id, scopes=queued.scopes)
                                  for page, queued, _ in pages])
    for (page, _, _), verdict in zip(pages, admitted.verdicts):
        if verdict.startswith("rejected:"):
            page.canonical = ""


def _follow_redirect(target: frontier.Candidate | None) -> str:
    """Send the target back through the frontier (never followed inline)."""
    if target is None:
        return RedirectOutcome.WITHOUT_LOCATION
    admitted = frontier.add_urls([target])
    if admitted.rejected:
        return f"{RedirectOutcome.REFUSED}:{next(iter(admitted.rejected))}"
    return RedirectOutcome.ADMITTED if admitted.admitted else RedirectOutcome.KNOWN


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
