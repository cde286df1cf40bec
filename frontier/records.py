"""Records: what fetches did to URLs and hosts, written back in batches.

The URL state machine itself is frontier/outcomes.py (a pure function); this module applies
its transitions, conditional on the URL still being queued, so a result that arrives after
another worker's is ignored.
"""

from datetime import datetime
from typing import Iterable, NamedTuple

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from .models import DeadLetter, Host, Url, UrlState
from .outcomes import FetchReport, next_state

# Sitemap URLs kept per host at most (a robots.txt may list thousands).
MAX_SITEMAPS = 100


def save_robots(host_id: int, status: int | None, body: str, crawl_delay: float | None,
                error: str, fetched_at: datetime, expires_at: datetime, sitemaps: Iterable[str] = ()) -> None:
    Host.objects.filter(id=host_id).update(
        robots_status=status, robots_body=body, crawl_delay=crawl_delay, robots_error=error[:40],
        robots_fetched_at=fetched_at, robots_expires_at=expires_at,
        robots_sitemaps="\n".join(list(dict.fromkeys(sitemaps))[:MAX_SITEMAPS]),
    )


class QueuedUrl(NamedTuple):
    id: int
    url: str
    depth: int
    hops: int
    attempts: int
    scopes: str  # the key its links are judged by (frontier.scope)


def queued_urls(url_ids: list[int]) -> list[QueuedUrl]:
    """Those of the URLs still queued, in the given order."""
    rows = {
        r[0]: QueuedUrl(*r)
        for r in Url.objects.filter(id__in=url_ids, state=UrlState.QUEUED).values_list(
            "id", "url", "depth", "redirect_hops", "attempts", "scopes"
        )
    }
    return [rows[i] for i in url_ids if i in rows]


def record_fetch(report: FetchReport, attempts: int) -> str | None:
    """Apply one fetch result; returns the new state, or None if another worker got there
    first (the row was no longer queued)."""
    return record_fetches([(report, attempts)])[report.url_id]


# One statement shape for every result, so a whole batch goes in one executemany.
# CASE keeps last_status/last_fetched_at/content_hash when the report carries none.
_RECORD_SQL = """UPDATE frontier_url SET state = %s, outcome = %s, attempts = %s, next_fetch_at = %s,
    last_status = CASE WHEN %s THEN %s ELSE last_status END,
    last_fetched_at = CASE WHEN %s THEN %s ELSE last_fetched_at END,
    content_hash = CASE WHEN %s THEN %s ELSE content_hash END
    WHERE id = %s AND state = 'queued'"""


def record_fetches(results: list[tuple[FetchReport, int]]) -> dict[int, str | None]:
    """Apply a batch of fetch results (report, attempts before it) in one transaction.

    Returns url id -> new state. A URL that was no longer queued (its lease had expired
    and another worker recorded it first) is left alone; its state is then reported as
    None only when it is the single result (the per-row count of a batch is not known).
    """
    if not results:
        return {}
    now = timezone.now()
    adapt = connection.ops.adapt_datetimefield_value
    now_db = adapt(now)
    rows, states, dead = [], {}, []
    for report, attempts in results:
        t = next_state(
            report, attempts, now,
            max_attempts=settings.CRAWLER_MAX_ATTEMPTS, retry_base=settings.CRAWLER_RETRY_BASE_DELAY,
        )
        fetched = report.status is not None or bool(report.error)
        rows.append((
            t.state, t.outcome[:40], t.attempts, adapt(t.next_fetch_at),
            fetched, report.status, fetched, now_db, bool(report.content_hash), report.content_hash,
            report.url_id,
        ))
        states[report.url_id] = str(t.state)
        if t.dead_letter:
            dead.append((report, t))
    with transaction.atomic(), connection.cursor() as cursor:
        if len(rows) == 1:
            cursor.execute(_RECORD_SQL, rows[0])
            if cursor.rowcount == 0:
                return {results[0][0].url_id: None}
        else:
            cursor.executemany(_RECORD_SQL, rows)
        for report, t in dead:
            if not Url.objects.filter(id=report.url_id, state=UrlState.FAILED).exists():
                continue  # the update above did not apply to this row
            DeadLetter.objects.update_or_create(
                url_id=report.url_id,
                defaults=dict(reason=t.outcome, last_status=report.status, attempts=t.attempts),
            )
    return states


def requeue_dead_letters(dead_letter_ids: Iterable[int]) -> int:
    """Put dead-lettered URLs back in the queue with fresh attempts (admin action)."""
    with transaction.atomic():
        letters = DeadLetter.objects.filter(id__in=list(dead_letter_ids))
        url_ids = list(letters.values_list("url_id", flat=True))
        Url.objects.filter(id__in=url_ids).update(
            state=UrlState.QUEUED, attempts=0, outcome="requeued", next_fetch_at=timezone.now()
        )
        letters.delete()
    return len(url_ids)
