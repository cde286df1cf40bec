"""Records: what fetches did to URLs and hosts, written back in batches.

The URL state machine itself is frontier/outcomes.py (a pure function); this module applies
its transitions, conditional on the URL still being queued, so a result that arrives after
another worker's is ignored.
"""

from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from typing import Iterable, NamedTuple

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from common import stagetime

from . import bulk, idle, instate, recrawl
from .models import DeadLetter, Host, Url, UrlKind, UrlState
from .outcomes import FetchReport, next_state
from .vocabulary import Observation

# Sitemap URLs kept per host at most (a robots.txt may list thousands).
MAX_SITEMAPS = 100


def save_robots(host_id: int, status: int | None, body: str, crawl_delay: float | None,
                error: str, fetched_at: datetime, expires_at: datetime, sitemaps: Iterable[str] = ()) -> None:
    Host.objects.filter(id=host_id).update(
        robots_status=status, robots_body=body, crawl_delay=crawl_delay, robots_error=error[:40],
        robots_fetched_at=fetched_at, robots_expires_at=expires_at,
        robots_sitemaps="\n".join(list(dict.fromkeys(sitemaps))[:MAX_SITEMAPS]),
    )


def record_certificate(host_id: int, fingerprint: str, not_after: datetime | None, seen_at: datetime) -> str:
    """Trust on first use (fetch/gemini.py): remember the certificate a host showed. Returns
    "first", "same", "renewed" (a new one after the old one expired) or "changed_early"
    (before it expired: recorded in tls_changed_early_at, the crawl goes on)."""
    with transaction.atomic():
        row = (Host.objects.select_for_update().filter(id=host_id)
               .values_list("tls_fingerprint", "tls_not_after").first())
        if row is None:
            return ""
        known, known_not_after = row
        if known == fingerprint:
            if known_not_after != not_after:
                Host.objects.filter(id=host_id).update(tls_not_after=not_after)
            return "same"
        update = {"tls_fingerprint": fingerprint, "tls_not_after": not_after}
        verdict = "first"
        if known:
            update["tls_previous_fingerprint"] = known
            verdict = "changed_early" if known_not_after is None or known_not_after > seen_at else "renewed"
            if verdict == "changed_early":
                update["tls_changed_early_at"] = seen_at
        Host.objects.filter(id=host_id).update(**update)
        return verdict


class QueuedUrl(NamedTuple):
    id: int
    url: str
    depth: int
    hops: int
    attempts: int
    scopes: str  # the key its links are judged by (frontier.scope)
    # What a revisit compares with (empty on a first visit):
    etag: str = ""  # validators for a conditional GET
    last_modified: str = ""
    content_hash: str = ""  # the last full response archived, received at payload_at
    payload_at: datetime | None = None
    text_hash: str = ""  # the stored copy's text fingerprint (indexer/fingerprint.py)
    simhash: int | None = None
    kind: str = UrlKind.PAGE  # a page, or a link source (sitemap, feed)
    score: int = 0  # its importance score when leased (frontier/importance.py)


QUEUED_FIELDS = ("id", "url", "depth", "redirect_hops", "attempts", "scopes", "etag", "last_modified",
                  "content_hash", "payload_at", "text_hash", "simhash", "kind", "score")


@stagetime.timed("leases")
def queued_urls(url_ids: list[int]) -> list[QueuedUrl]:
    """Those of the URLs still queued, in the given order. Found by id, their state tested
    here: a state in the WHERE could be answered from an index of every waiting URL."""
    rows = {r[0]: QueuedUrl(*r[:-1]) for r in
            Url.objects.filter(id__in=url_ids).values_list(*QUEUED_FIELDS, "state") if r[-1] == UrlState.QUEUED}
    return [rows[i] for i in url_ids if i in rows]


def record_fetch(report: FetchReport, attempts: int) -> str | None:
    """Apply one fetch result; returns the new state, or None if another worker got there
    first (the row was no longer queued)."""
    return record_fetches([(report, attempts)])[report.url_id]


class Recorded(dict):
    """url id -> new state (None: no longer queued, when known); `gone` lists the URLs
    found gone twice in a row, whose pages leave the index."""

    gone: list[int]


# What a result may change on a URL row: read before, written back whole, in one
# statement shape for every result so a batch goes in one executemany.
_WRITTEN = ("state", "outcome", "attempts", "next_fetch_at", "last_status", "last_fetched_at", "content_hash",
            "payload_at", "etag", "last_modified", "text_hash", "simhash", "last_observation", "last_change_at",
            "observed_at", "observations", "change_stats", "change_rate", "recrawl_interval", "backoff_level")
_READ = tuple(dict.fromkeys(recrawl.ROW_FIELDS + _WRITTEN))
_DATETIMES = frozenset({"next_fetch_at", "last_fetched_at", "payload_at", "last_change_at", "observed_at"})


@stagetime.timed("records")
def record_fetches(results: list[tuple[FetchReport, int]]) -> Recorded:
    """Apply a batch of fetch results (report, attempts before it) in one transaction.

    Returns url id -> new state. A URL that was no longer queued (its lease had expired
    and another worker recorded it first) is left alone: its state is None. The rows go
    back in one statement (frontier/bulk.py), which says which of them it changed.
    """
    recorded = Recorded()
    recorded.gone = []
    if not results:
        return recorded
    now = timezone.now()
    adapt = connection.ops.adapt_datetimefield_value
    with transaction.atomic():
        # Read by id, the state tested here: a state in the WHERE could be answered from an
        # index of every waiting URL (frontier/instate.py).
        rows = {r["id"]: r for r in Url.objects.filter(id__in=[report.url_id for report, _ in results]).values(*_READ)
                if r["state"] == UrlState.QUEUED}
        params, dead = [], []
        for report, attempts in results:
            row = rows.get(report.url_id)
            if row is None:
                recorded[report.url_id] = None
                continue
            before_status = row["last_status"]
            t = next_state(report, attempts, now, max_attempts=settings.CRAWLER_MAX_ATTEMPTS,
                           retry_base=settings.CRAWLER_RETRY_BASE_DELAY, backoff_level=row["backoff_level"],
                           backoff=tuple(settings.CRAWLER_FAILURE_BACKOFF))
            _apply(row, report, t, now)
            if t.state == UrlState.GONE and before_status in (404, 410):
                recorded.gone.append(report.url_id)  # its page leaves the index: if it comes back,
                row.update(content_hash="", text_hash="", simhash=None, etag="", last_modified="")  # it is new
            params.append([adapt(row[name]) if name in _DATETIMES else row[name] for name in _WRITTEN]
                          + [report.url_id])
            recorded[report.url_id] = str(t.state)
            if t.dead_letter:
                dead.append((report, t))
        applied = bulk.write_states(_WRITTEN, params)
        for url_id in {p[-1] for p in params} - applied:  # recorded by another worker meanwhile
            recorded[url_id] = None
        recorded.gone = [url_id for url_id in recorded.gone if url_id in applied]
        for report, t in dead:
            if report.url_id in applied:
                DeadLetter.objects.update_or_create(
                    url_id=report.url_id,
                    defaults=dict(reason=t.outcome, last_status=report.status, attempts=t.attempts),
                )
    return recorded


def _apply(row: dict, report: FetchReport, t, now: datetime) -> None:
    """Change the URL row (a dict of its columns) as the result and its transition say."""
    before = recrawl.Before(*(row[name] for name in recrawl.ROW_FIELDS))
    row.update(state=str(t.state), outcome=str(t.outcome)[:40], attempts=t.attempts, next_fetch_at=t.next_fetch_at,
               backoff_level=t.backoff_level)
    if report.status is not None or report.error:
        row.update(last_status=report.status, last_fetched_at=now)
    if report.content_hash:  # a full response was archived: what a later revisit refers to
        row.update(content_hash=report.content_hash, payload_at=_started_at(report, now))
    if report.text_hash:  # a page was stored: the copy later visits compare with
        row.update(text_hash=report.text_hash, simhash=report.simhash)
    if t.state == UrlState.FETCHED:
        if report.status != 304 or report.etag or report.last_modified:
            row.update(etag=report.etag, last_modified=report.last_modified)
        observation = report.observation or Observation.FIRST
        row.update(recrawl.after_visit(before, observation, report.last_modified, _answered_at(report, now)))
    elif t.state in recrawl.RECHECKED:
        row["next_fetch_at"] = recrawl.recheck_at(now)


def _started_at(report: FetchReport, now: datetime) -> datetime:
    """When the response began (the fetching process's clock: its WARC-Date); else now."""
    return datetime.fromtimestamp(report.started_at, dt_timezone.utc) if report.started_at else now


def _answered_at(report: FetchReport, now: datetime) -> datetime:
    """_started_at, for the recrawl schedule: not after now and not more than
    CRAWLER_LEASE_SECONDS before it (a clock that is off says nothing)."""
    return min(now, max(_started_at(report, now), now - timedelta(seconds=settings.CRAWLER_LEASE_SECONDS)))


def requeue_dead_letters(dead_letter_ids: Iterable[int]) -> int:
    """Put dead-lettered URLs back in the queue with fresh attempts (admin action)."""
    with transaction.atomic():
        letters = DeadLetter.objects.filter(id__in=list(dead_letter_ids))
        url_ids = list(letters.values_list("url_id", flat=True))
        Url.objects.filter(id__in=url_ids).update(
            state=UrlState.QUEUED, attempts=0, outcome="requeued", next_fetch_at=timezone.now()
        )
        idle.wake(url_ids=url_ids)
        letters.delete()
    return len(url_ids)


def settle_unstorable(url_ids: list[int], reason: str) -> int:
    """URLs whose fetch results the database refuses (crawl/writer.py): failed, to the
    dead-letter table for an admin to look at and requeue, instead of being fetched and
    failing again forever. Only URLs still queued. Returns how many were settled."""
    now = timezone.now()
    with transaction.atomic():
        changed = set(instate.update_in_state(UrlState.QUEUED, dict(state=UrlState.FAILED, outcome=reason[:40],
                                                                    last_fetched_at=now, next_fetch_at=now), ids=url_ids))
        settled = Url.objects.filter(id__in=changed).values_list("id", "last_status", "attempts")
        for url_id, last_status, attempts in settled:
            DeadLetter.objects.update_or_create(url_id=url_id, defaults=dict(reason=reason[:80], last_status=last_status,
                                                                             attempts=attempts))
    return len(changed)

