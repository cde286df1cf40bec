"""The recrawl plan at scale: set-based on PostgreSQL (frontier/recrawl.py plan_recrawl).

The plan needs, of every fetched page, only which group it falls in: its change-rate class
(a quarter-octave grid: 2^(k/4) changes a day), its score, and whether it is still being
explored (and at which exploring visit). A few hundred groups hold millions of pages, so
the database counts them in one GROUP BY (one scan of the URL table; no row travels to
Python), the price is solved from the counts in Python as before, and the visits the new
plan wants sooner are moved in one UPDATE joined to the groups' wanted intervals, at most
CRAWLER_RECRAWL_RELEASE_BATCH rows per plan. The class is computed the same way on both
sides: round(log2(rate a day) * 4), the grid of recrawl._rate_class.

SQLite (the embedded crawler, a laptop's frontier) and the oracle policy (benchmarks) keep
the row-by-row path in recrawl.py.
"""

from django.db import connection

from .models import Url, UrlState

_URLS = Url._meta.db_table
NO_RATE = -100_000  # the class of a page never seen changing (change_rate null or 0)
_CLASS = f"COALESCE(round(ln(NULLIF(GREATEST(u.change_rate, 0), 0)) / ln(2.0) * 4)::int, {NO_RATE})"


def set_based() -> bool:
    return connection.vendor == "postgresql"


def _bucket(explore_visits: int) -> str:
    """The exploring visit a page is at (0, 1, …), or -1 once explored."""
    return f"CASE WHEN u.observations < {int(explore_visits)} THEN u.observations ELSE -1 END"


def group_counts(explore_visits: int) -> list[tuple[int, int, int, int]]:
    """(rate class k, priority, exploring visit or -1, pages) of the fetched and queued
    pages that have been observed: one scan."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT {_CLASS} AS k, u.priority, {_bucket(explore_visits)} AS bucket, count(*)
                FROM {_URLS} u
                WHERE u.state IN (%s, %s) AND u.observed_at IS NOT NULL
                GROUP BY 1, 2, 3""", [UrlState.FETCHED, UrlState.QUEUED])
        return [tuple(row) for row in cursor.fetchall()]


def move_sooner(wanted: dict[tuple[int, int, int], float], explore_visits: int, now, limit: int) -> int:
    """Move the planned visits of fetched pages whose group's wanted interval is more than
    a tenth shorter than their current one to observed_at + wanted (not before now), at
    most `limit` of them; returns how many."""
    if not wanted or limit <= 0:
        return 0
    keys = sorted(wanted)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""WITH wanted(k, priority, bucket, seconds) AS (
                    SELECT * FROM unnest(%b::int[], %b::int[], %b::int[], %b::float8[])),
                moved AS (
                    SELECT u.id, w.seconds FROM {_URLS} u
                    JOIN wanted w ON w.k = {_CLASS} AND w.priority = u.priority
                                 AND w.bucket = {_bucket(explore_visits)}
                    WHERE u.state = %s AND u.observed_at IS NOT NULL AND u.recrawl_interval IS NOT NULL
                      AND w.seconds < 0.9 * u.recrawl_interval
                      AND u.next_fetch_at > GREATEST(%s, u.observed_at + w.seconds * interval '1 second')
                    LIMIT %s)
                UPDATE {_URLS} u SET recrawl_interval = m.seconds,
                    next_fetch_at = GREATEST(%s, u.observed_at + m.seconds * interval '1 second')
                FROM moved m WHERE u.id = m.id""",
            [[k for k, _, _ in keys], [p for _, p, _ in keys], [b for _, _, b in keys], [wanted[key] for key in keys],
             UrlState.FETCHED, now, limit, now])
        return cursor.rowcount
