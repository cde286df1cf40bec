"""For whom a host's pace holds: per host, per server address, or both. (How long to wait
is frontier/pacing.py's one answer.)

- Scope (CRAWLER_POLITENESS_SCOPE): many host names on one server must not multiply its
  load (virtual hosting), so by default a ServerAddress row is leased together with the
  host: one request in flight per address, and the address's own next allowed time.
  A host's address is learned on first contact (its robots.txt); until then only the host
  rules apply.
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import DateTimeField, Value
from django.db.models.functions import Greatest

from .models import ServerAddress


def per_host() -> bool:
    return settings.CRAWLER_POLITENESS_SCOPE in ("host", "both")


def per_address() -> bool:
    return settings.CRAWLER_POLITENESS_SCOPE in ("ip", "both")


def claim_addresses(addresses: list[str], token: str, now: datetime, lease_seconds: float) -> set[str]:
    """Lease the free, ready addresses among `addresses`; returns those claimed.

    One conditional UPDATE … RETURNING: a concurrent dispatcher that claimed an address
    first makes the row fail the condition here (PostgreSQL re-checks it after the lock),
    so an address is never leased twice."""
    if not addresses:
        return set()
    table = ServerAddress._meta.db_table
    marks = ", ".join(["%s"] * len(addresses))
    adapt = connection.ops.adapt_datetimefield_value
    sql = (f"UPDATE {table} SET lease_owner = %s, leased_until = %s WHERE address IN ({marks})"
           " AND (leased_until IS NULL OR leased_until <= %s) AND next_fetch_at <= %s RETURNING address")
    params = [token, adapt(now + timedelta(seconds=lease_seconds)), *sorted(addresses), adapt(now), adapt(now)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {row[0] for row in cursor.fetchall()}


def release_address(address: str, token: str, next_fetch_at: datetime | None) -> None:
    changes = {"lease_owner": "", "leased_until": None}
    if next_fetch_at is not None:
        changes["next_fetch_at"] = _not_before(next_fetch_at)
    ServerAddress.objects.filter(address=address, lease_owner=token).update(**changes)


def push_address(address: str, next_fetch_at: datetime) -> None:
    """Record a request to an address that was not leased (first contact, or the host moved)."""
    remember_address(address, next_fetch_at)
    ServerAddress.objects.filter(address=address).update(next_fetch_at=_not_before(next_fetch_at))


def _not_before(when: datetime):
    return Greatest("next_fetch_at", Value(when, output_field=DateTimeField()))


def remember_address(address: str, next_fetch_at: datetime) -> None:
    """Make sure the address has its row; a new one starts at the host's next time."""
    ServerAddress.objects.bulk_create([ServerAddress(address=address, next_fetch_at=next_fetch_at)],
                                      ignore_conflicts=True)
