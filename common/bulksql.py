"""Helpers for the write path's set-based statements (frontier/bulk.py, indexer/store.py):
one statement per batch, whatever its size, written without the ORM's per-row work.

PostgreSQL takes a batch as arrays, one per column, unnested into rows
(`INSERT … SELECT … FROM unnest(%b::bigint[], …)`, `UPDATE … FROM unnest(…)`): one
statement, one plan, one round trip. SQLite runs in the crawler's own process with no
round trip, so executemany of one prepared statement is its set-based form.
"""

from django.db import connection

SQLITE_MAX_VARIABLES = 30_000  # SQLite 3.32+ allows 32,766 per statement


def column_type(model, column: str) -> str:
    """The database type of a model's column ("bigint", "varchar(64)", …)."""
    field = next(f for f in model._meta.concrete_fields if f.column == column)
    return field.db_type(connection)


def arrays(model, columns) -> str:
    """`%b::type[]` placeholders, one per column, for unnest()."""
    return ", ".join(f"%b::{column_type(model, c)}[]" for c in columns)


def defaults(model, skip) -> tuple[list[str], list]:
    """The model's columns but the primary key and `skip`, and their defaults as the
    database takes them (a callable default such as timezone.now is called now)."""
    columns, values = [], []
    for field in model._meta.concrete_fields:
        if field.primary_key or field.column in skip:
            continue
        columns.append(field.column)
        values.append(field.get_db_prep_save(field.get_default(), connection))
    return columns, values


def typed(model, columns) -> str:
    """`%s::type` placeholders, one per column (a parameter in a SELECT list has no type
    of its own on PostgreSQL)."""
    return ", ".join(f"%s::{column_type(model, c)}" for c in columns)


def locked(table: str, key: str = "id", skip_locked: bool = False, columns: tuple[str, ...] = ()) -> str:
    """A CTE that locks the rows of `table` whose `key` is in the array parameter, in `key`
    order, for an UPDATE … FROM unnest(…) that follows: such an UPDATE locks rows in its
    join's order, which the planner picks (a hash join: any order), and two statements
    locking overlapping rows in different orders deadlock. FOR NO KEY UPDATE is the lock
    the UPDATE takes anyway, so foreign-key checks on those rows still go through.
    skip_locked: rows another transaction holds are left out (for hints, not records).
    columns: the locked rows' newest values, for the UPDATE to test (`locked.state`) where a
    test of its own row in its WHERE might be answered from another index than the key's
    (a state index: every row in that state)."""
    skip = " SKIP LOCKED" if skip_locked else ""
    selected = ", ".join((key, *columns))
    return (f"locked AS (SELECT {selected} FROM {table} WHERE {key} = ANY(%s) ORDER BY {key} "
            f"FOR NO KEY UPDATE{skip})")


def in_chunks(values: list, size: int = SQLITE_MAX_VARIABLES):
    for start in range(0, len(values), size):
        yield values[start:start + size]


def marks(n: int) -> str:
    return ", ".join(["%s"] * n)
