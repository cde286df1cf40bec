"""URL rows named by key, changed or read only while they are in a given state, and found
by that key whatever the planner knows.

A URL's state is indexed (the queue is read by it: url_state_due, url_host_due,
url_host_queue), so `WHERE id IN (…) AND state = …` lets PostgreSQL answer the state test
from one of those indexes: a bitmap of every URL in that state, ANDed with the keys. On a
crawl's tables before autovacuum has analyzed them it does: the release of 5,000 due
revisits read the bitmap of every settled URL, the read of a batch of fetched URLs every
waiting one. Here the rows are read by their key alone, locked (PostgreSQL: FOR NO KEY
UPDATE in id order, the order every writer of URL rows takes them in, so two writers
wait for each other but never deadlock), their state and `where` tested on what the lock
returned (the row's newest version), and the update names ids only.

SQLite has one writer and no row locks: its statement keeps the tests in its WHERE.

`where` is a dict of the ORM's lookups on the row's own columns, equality or `__gt`
(`{"depth__gt": 2, "outcome": "trap"}`): the same dict filters the SQLite statement and
tests the rows PostgreSQL read.
"""

from django.db import connection, transaction

from common.bulksql import in_chunks

from .models import Url

_URLS = Url._meta.db_table
CHUNK = 5_000  # ids an UPDATE names (and keys a SQLite statement): the release's batch


def update_in_state(states, values: dict, *, ids=None, keys=None, where: dict | None = None) -> list[int]:
    """Update the rows named by `ids` (URL ids) or `keys` (url_key) that are in one of
    `states` (and match `where`) with `values` (the ORM's update(): F() expressions
    allowed); returns the ids updated, in id order."""
    states = _states(states)
    where = where or {}
    columns = tuple(_columns(where))
    column, named = _named(ids, keys)
    if not named:
        return []
    with transaction.atomic():
        if connection.vendor == "postgresql":
            updated = [row["id"] for row in _locked(column, named, columns) if _matches(row, states, where)]
        else:
            updated = []
            for chunk in in_chunks(named, CHUNK):
                updated += Url.objects.filter(**{f"{column}__in": chunk}, state__in=states, **where).values_list(
                    "id", flat=True)
            updated.sort()
        for chunk in in_chunks(updated, CHUNK):
            Url.objects.filter(id__in=chunk).update(**values)
    return updated


def _locked(column: str, named: list, columns: tuple[str, ...]) -> list[dict]:
    """The named rows, locked in id order in one statement (chunks named by key would lock
    in key order from one chunk to the next)."""
    names = ("id", "state", *[c for c in columns if c not in ("id", "state")])
    selected = ", ".join(_db_column(name) for name in names)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {selected} FROM {_URLS} WHERE {column} = ANY(%s) ORDER BY id FOR NO KEY UPDATE",
                       [named])
        return [dict(zip(names, row)) for row in cursor.fetchall()]


def _named(ids, keys) -> tuple[str, list]:
    """The column the rows are named by and its distinct values, sorted."""
    if (ids is None) == (keys is None):
        raise ValueError("name the rows by ids or by keys")
    return ("id", sorted(set(ids))) if ids is not None else ("url_key", sorted(set(keys)))


def _states(states) -> frozenset[str]:
    return frozenset([states] if isinstance(states, str) else [str(s) for s in states])


def _columns(where: dict):
    for lookup in where:
        name = lookup.removesuffix("__gt")
        if "__" in name:
            raise ValueError(f"where takes equality and __gt only, not {lookup}")
        yield name


def _db_column(name: str) -> str:
    return Url._meta.get_field(name).column


def _matches(row: dict, states: frozenset[str], where: dict) -> bool:
    if row["state"] not in states:
        return False
    for lookup, value in where.items():
        if lookup.endswith("__gt"):
            if not row[lookup.removesuffix("__gt")] > value:
                return False
        elif row[lookup] != value:
            return False
    return True
