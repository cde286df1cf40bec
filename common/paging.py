"""Reading big tables page by page: an admin paginator that never counts a million rows,
and the keyset walk the exports use (`in_id_order`).

Django's admin asks the paginator for a COUNT(*) of the (filtered) list; on a URL table of
millions of rows that is a full scan on every page view. This one counts at most
ADMIN_COUNT_CAP + 1 rows (COUNT over a LIMIT subquery) and, for the unfiltered list on
PostgreSQL, reads the planner's row estimate instead (pg_class.reltuples, kept by ANALYZE).
Page links past the cap still work; the total shown is then a lower bound.
"""

from django.core.paginator import Paginator
from django.db import connection
from django.utils.functional import cached_property

ADMIN_COUNT_CAP = 10_000


class CappedCountPaginator(Paginator):
    @cached_property
    def count(self):
        queryset = self.object_list
        if not queryset.query.where and connection.vendor == "postgresql":
            estimate = _estimated_rows(queryset.model._meta.db_table)
            if estimate > ADMIN_COUNT_CAP:
                return estimate
        return queryset.order_by().values("pk")[:ADMIN_COUNT_CAP + 1].count()


def _estimated_rows(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass", [table])
        row = cursor.fetchone()
    return max(0, int(row[0])) if row else 0


def in_id_order(queryset, columns: tuple[str, ...], batch: int):
    """Rows of `queryset` as dicts of `columns` (which include "id"), in id order, read a
    batch at a time by keyset (`id > last`): memory for one batch, and no OFFSET that
    rescans what came before, however many rows there are (the exports)."""
    queryset = queryset.order_by("id")
    last = 0
    while True:
        rows = list(queryset.filter(id__gt=last).values(*columns)[:batch])
        yield from rows
        if len(rows) < batch:
            return
        last = rows[-1]["id"]
