"""How long to leave a server alone, and for whom: per host, per IP address, or both.

- Delay: a robots.txt Crawl-delay wins (capped when it is stored). Without one, the gap
  follows the host's measured response time: CRAWLER_ADAPTIVE_DELAY_FACTOR times a running
  average, clamped between CRAWLER_DEFAULT_DELAY and CRAWLER_MAX_ADAPTIVE_DELAY, so a
  struggling server is given room and a fast one is not held back.
- Scope (CRAWLER_POLITENESS_SCOPE): many host names on one server must not multiply its
  load (virtual hosting), so by default a ServerAddress row is leased together with the
  host: one request in flight per address, and the address's own next allowed time.
  A host's address is learned on first contact (its robots.txt); until then only the host
  rules apply.
- Circuit breaker: CRAWLER_HOST_FAILURE_THRESHOLD network failures in a row pause a host,
  for CRAWLER_HOST_PAUSE_SECONDS doubling up to CRAWLER_HOST_PAUSE_MAX.
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import DateTimeField, Value
from django.db.models.functions import Greatest

from .models import ServerAddress

# Weight of the newest batch in the running response-time average.
_SMOOTHING = 0.3


def delay_for(crawl_delay: float | None, response_time: float | None) -> float:
    if crawl_delay is not None:
        return crawl_delay
    floor = settings.CRAWLER_DEFAULT_DELAY
    adaptive = settings.CRAWLER_ADAPTIVE_DELAY_FACTOR * (response_time or 0.0)
    return max(floor, min(adaptive, settings.CRAWLER_MAX_ADAPTIVE_DELAY))


def running_response_time(previous: float | None, samples: list[float]) -> float | None:
    """Exponentially weighted average of response times (seconds), newest batch last."""
    if not samples:
        return previous
    current = sum(samples) / len(samples)
    return current if previous is None else (1 - _SMOOTHING) * previous + _SMOOTHING * current


def breaker_pause(failures: int) -> float:
    """Seconds to pause a host after `failures` network failures in a row (0: closed)."""
    over = failures - settings.CRAWLER_HOST_FAILURE_THRESHOLD
    if over < 0:
        return 0.0
    return min(settings.CRAWLER_HOST_PAUSE_SECONDS * 2 ** min(over, 30), settings.CRAWLER_HOST_PAUSE_MAX)


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
