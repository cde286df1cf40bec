"""Hosts with nothing waiting are set aside, so that dispatch never reads them.

A long crawl's usual host has every URL fetched and waits for a revisit. The dispatcher's
ready-host scan (leases.lease_ready_hosts) walks the hosts whose politeness time has
passed, longest-ready first, and probes each for a due URL, so it met every such host on
every round: `bench.frontier_scale --done-hosts 20000` measured about 75 ms of PostgreSQL a
round for them, growing with the hosts a crawl has finished. A host found with no URL
waiting at all gets the band IDLE_BAND, which the scan never reads.

Nothing is lost by it because of one rule between two kinds of writer:

* whoever queues a URL (admission, the recrawl release, an operator's requeue) updates the
  row of its host in the same transaction, whatever the host's band (`wake`): the update
  takes the row's lock even when it changes nothing;
* whoever sets a host aside holds the host's row lock first and only then, in a later
  statement with a later snapshot, looks for waiting URLs (`set_aside`).

Whichever takes the row lock first, the other sees its work: a URL queued before the lock
was committed before the look; a wake that waited for the lock runs on the row set aside
and takes it back out. A URL queued but not due yet (a retry's back-off) keeps its host in
the scan: nothing would wake the host when its time comes.

A sweep, when a dispatcher or an embedded crawl starts and at most every
CRAWLER_IDLE_SWEEP_SECONDS after in each dispatching process, wakes hosts a writer missed
(the previous release's workers know nothing of this rule, nor does a URL queued by hand in
SQL) and sets aside the hosts left with nothing by other means (a domain excluded, a trap
stopped, and every finished host of a crawl begun before this release).
"""

import threading
import time

from django.conf import settings
from django.db import connection, transaction

from common import stagetime
from common.bulksql import in_chunks, locked, marks

from .importance import IDLE_BAND, LOWEST_BAND
from .models import Host, Url, UrlState

_HOSTS, _URLS = Host._meta.db_table, Url._meta.db_table
SWEEP_BATCH = 10_000  # hosts set aside per statement of a sweep


def waiting_url_sql(host_column: str, due: bool = False) -> str:
    """EXISTS (a URL of the host in `host_column` waits; with due=True one due by the
    second parameter), probed per host: one descent of an index on (host, state, …).

    Written out rather than as Exists(): PostgreSQL turns an EXISTS into a join, and for
    this one it chose to read every waiting URL once per call (a hash join over url_state_due
    with statistics, a scan of url_host_queue grouped by host without: 2.0-5.3 ms a call in
    bench.run, growing with the queue). OFFSET 0 is the planner's fence against pulling a
    subquery up (simplify_EXISTS_query), so the test stays a probe per host whatever the
    statistics say. SQLite probes per row anyway, and its grammar has no OFFSET without
    LIMIT. Parameters: the queued state, then (due=True) the time."""
    fence = " OFFSET 0" if connection.vendor == "postgresql" else ""
    when = " AND w.next_fetch_at <= %s" if due else ""
    return f"EXISTS (SELECT 1 FROM {_URLS} w WHERE w.host_id = {host_column} AND w.state = %s{when}{fence})"


def wake(host_ids=(), url_ids=()) -> None:
    """Take these hosts (and those of these URLs) out of the idle band: call in the
    transaction that queued URLs for them. Every row is updated, set aside or not, so that
    the update waits for a `set_aside` that holds the row (the module doc's rule)."""
    host_ids = set(host_ids)
    for chunk in in_chunks(list(url_ids), 5_000):
        host_ids.update(Url.objects.filter(id__in=chunk).values_list("host_id", flat=True).distinct())
    if not host_ids:
        return
    ids = sorted(host_ids)  # one lock order for every writer of host rows
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"""WITH {locked(_HOSTS)}
                               UPDATE {_HOSTS} h SET band = LEAST(h.band, %s) FROM locked WHERE h.id = locked.id""",
                           [ids, LOWEST_BAND])
            return
        cursor.executemany(f"UPDATE {_HOSTS} SET band = MIN(band, %s) WHERE id = %s", [(LOWEST_BAND, i) for i in ids])


def set_aside(host_ids, locked: bool = False) -> int:
    """Of these hosts, put those with no URL waiting in the idle band; how many were.
    Locks the rows first (a transaction of its own, or the caller's), then looks; `locked`:
    the caller's transaction holds their rows already (a release that just updated them)."""
    ids = sorted(set(host_ids))
    if not ids:
        return 0
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql" and not locked:
            cursor.execute(f"SELECT id FROM {_HOSTS} WHERE id = ANY(%s) AND band < %s ORDER BY id "
                           "FOR NO KEY UPDATE SKIP LOCKED", [ids, IDLE_BAND])
            ids = [row[0] for row in cursor.fetchall()]  # a host another writer holds: next time
        if connection.vendor == "postgresql":
            if not ids:
                return 0
            cursor.execute(f"UPDATE {_HOSTS} h SET band = %s WHERE h.id = ANY(%s) AND h.band < %s AND NOT "
                           f"{waiting_url_sql('h.id')}", [IDLE_BAND, ids, IDLE_BAND, UrlState.QUEUED.value])
            return cursor.rowcount
        # SQLite: one writer at a time, so the look cannot miss a URL another is queueing.
        set_aside_count = 0
        for chunk in in_chunks(ids, 500):
            cursor.execute(f"UPDATE {_HOSTS} SET band = %s WHERE id IN ({marks(len(chunk))}) "
                           f"AND band < %s AND NOT {waiting_url_sql(_HOSTS + '.id')}",
                           [IDLE_BAND, *chunk, IDLE_BAND, UrlState.QUEUED.value])
            set_aside_count += cursor.rowcount
        return set_aside_count


@stagetime.timed("leases")
def sweep() -> tuple[int, int]:
    """Wake idle hosts with URLs waiting, and set aside hosts with none: (woken, set
    aside). Each a set-based pass over the hosts (and their URLs' index)."""
    sleeping = _asleep_with_urls_waiting()
    with transaction.atomic():
        wake(sleeping)
    # The hosts in id order, from where the last batch ended (keyset): a walk that started
    # from the first host each time re-read every host before the batch (n² / batch rows at
    # a million hosts), and one that stopped at a batch others held left the rest awake.
    set_aside_total, after = 0, 0
    while True:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT h.id FROM {_HOSTS} h WHERE h.id > %s AND h.band < %s "
                           f"AND NOT {waiting_url_sql('h.id')} ORDER BY h.id LIMIT %s",
                           [after, IDLE_BAND, UrlState.QUEUED.value, SWEEP_BATCH])
            found = [row[0] for row in cursor.fetchall()]
        set_aside_total += set_aside(found)
        if len(found) < SWEEP_BATCH:
            return len(sleeping), set_aside_total
        after = found[-1]


def _asleep_with_urls_waiting() -> list[int]:
    """Hosts set aside that have a URL waiting (a writer missed them).

    On PostgreSQL from the waiting URLs' side: the distinct hosts of url_host_queue (the
    queued URLs' index, host first), one descent each (a skip scan: PostgreSQL has none of
    its own), then each host's row by its key (a subquery, not a join: a planner that
    takes the hosts for few hashes all of them). A probe per idle host read every host a long
    crawl has finished, on every sweep of every dispatcher (0.55 s at a million finished
    hosts, bench.frontier_scale --done-hosts); this reads only the hosts with work. The
    state is written into the statement: a partial index serves a parameter only in a
    custom plan. SQLite (an embedded crawl's few hosts) probes per idle host."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            queued = f"'{UrlState.QUEUED.value}'"  # a constant of ours, not input
            cursor.execute(f"""
                WITH RECURSIVE waiting(host_id) AS (
                    (SELECT host_id FROM {_URLS} WHERE state = {queued} ORDER BY host_id LIMIT 1)
                    UNION ALL
                    SELECT (SELECT u.host_id FROM {_URLS} u WHERE u.state = {queued} AND u.host_id > w.host_id
                            ORDER BY u.host_id LIMIT 1)
                    FROM waiting w WHERE w.host_id IS NOT NULL)
                SELECT host_id FROM waiting
                WHERE (SELECT h.band FROM {_HOSTS} h WHERE h.id = waiting.host_id) = %s""", [IDLE_BAND])
        else:
            cursor.execute(f"SELECT h.id FROM {_HOSTS} h WHERE h.band = %s AND {waiting_url_sql('h.id')}",
                           [IDLE_BAND, UrlState.QUEUED.value])
        return [row[0] for row in cursor.fetchall()]


_last_sweep = {"at": None}
_sweep_lock = threading.Lock()


def sweep_idle_hosts_next_round() -> None:
    """A runner starts (a dispatcher, an embedded crawl): its first round sweeps, whatever
    this process swept before, so that URLs queued meanwhile by hand or by another release
    are found at once."""
    with _sweep_lock:
        _last_sweep["at"] = None


def sweep_when_due() -> None:
    """The sweep, if this process has not run one for CRAWLER_IDLE_SWEEP_SECONDS (and at
    its first dispatch round, so that an upgraded dispatcher sets aside what is finished)."""
    if settings.CRAWLER_IDLE_SWEEP_SECONDS <= 0:
        return
    now = time.monotonic()
    with _sweep_lock:
        last = _last_sweep["at"]
        if last is not None and now - last < settings.CRAWLER_IDLE_SWEEP_SECONDS:
            return
        _last_sweep["at"] = now
    sweep()
