"""Set-based statements of the frontier's write path, one per batch (common/bulksql.py).

A crawled page costs the database a few rows (its state, its new links, its host's
release); a statement costs a parse, a plan and a round trip whatever its size. So the
writer's batches (crawl/writer.py: the group commits of a process) go in one statement per
table.

Every statement that locks rows another writer may lock too takes them in one global
order (url_key, host id), so concurrent workers wait for each other but never deadlock.
"""

from django.db import connection
from django.utils import timezone

from common.bulksql import arrays, column_type, defaults, in_chunks, locked, marks, typed

from . import importance
from .models import Host, Seed, ServerAddress, Url

# The URL columns a new link brings; every other column takes its model default. Columns,
# not fields: `priority` is the column of Url.score (frontier/models.py says why).
LINK_COLUMNS = ("url_key", "url", "host_id", "depth", "redirect_hops", "priority", "referrer_id", "scopes", "kind",
                "inlink_hosts", "hint", "inlink_bits")
_DEPTH, _SCOPES, _HINT = LINK_COLUMNS.index("depth"), LINK_COLUMNS.index("scopes"), LINK_COLUMNS.index("hint")
_URLS, _HOSTS, _ADDRESSES = Url._meta.db_table, Host._meta.db_table, ServerAddress._meta.db_table
_SEEDS = Seed._meta.db_table


def insert_urls(rows: list[tuple]) -> tuple[set[int], dict[int, tuple[int, str, str, int]]]:
    """Insert new URLs, rows of LINK_COLUMNS, skipping the keys the frontier has.

    Returns (keys inserted, {key: (depth, scopes, state, hint)} of rows that were there
    before and may need a change: known deeper, under other scopes, or with a smaller
    sitemap hint than this listing gives). On PostgreSQL that is one
    statement: the insert, and a look at the rows it did not insert, in one snapshot."""
    if not rows:
        return set(), {}
    rows = sorted(rows)  # url_key order: concurrent inserts of the same keys never deadlock
    if connection.vendor == "postgresql":
        return _insert_urls_postgres(rows)
    return _insert_urls_sqlite(rows)


def _insert_urls_postgres(rows: list[tuple]) -> tuple[set[int], dict]:
    columns, values = defaults(Url, LINK_COLUMNS)
    names = ", ".join(LINK_COLUMNS)
    sql = f"""
        WITH input AS (SELECT * FROM unnest({arrays(Url, LINK_COLUMNS)}) AS t({names})),
        added AS (
            INSERT INTO {_URLS} ({names}, {", ".join(columns)})
            SELECT {names}, {typed(Url, columns)} FROM input ORDER BY url_key
            ON CONFLICT (url_key) DO NOTHING RETURNING url_key)
        SELECT url_key, NULL, NULL, NULL, NULL FROM added
        UNION ALL
        SELECT u.url_key, u.depth, u.scopes, u.state, u.hint FROM {_URLS} u JOIN input i USING (url_key)
        WHERE u.depth > i.depth OR u.scopes <> i.scopes OR u.hint < i.hint"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [list(column) for column in zip(*rows)] + values)
        found = cursor.fetchall()
    inserted = {key for key, depth, *_ in found if depth is None}
    existing = {key: tuple(rest) for key, *rest in found if rest[0] is not None}
    return inserted, existing


def _insert_urls_sqlite(rows: list[tuple]) -> tuple[set[int], dict]:
    # One process writes (the embedded crawler holds the write lock for its batch), so what
    # the SELECT did not find is what the INSERT adds.
    existing, candidates = {}, {row[0]: row for row in rows}
    with connection.cursor() as cursor:
        for chunk in in_chunks(list(candidates)):
            cursor.execute(f"SELECT url_key, depth, scopes, state, hint FROM {_URLS} "
                           f"WHERE url_key IN ({marks(len(chunk))})", chunk)
            for key, depth, scopes, state, hint in cursor.fetchall():
                row = candidates[key]
                changed = depth > row[_DEPTH] or scopes != row[_SCOPES] or hint < row[_HINT]
                existing[key] = (depth, scopes, state, hint) if changed else None
        fresh = [row for row in rows if row[0] not in existing]
        if fresh:
            columns, values = defaults(Url, LINK_COLUMNS)
            cursor.executemany(f"INSERT INTO {_URLS} ({', '.join(LINK_COLUMNS + tuple(columns))}) "
                               f"VALUES ({marks(len(LINK_COLUMNS) + len(columns))}) ON CONFLICT DO NOTHING",
                               [row + tuple(values) for row in fresh])
    return {row[0] for row in fresh}, {k: v for k, v in existing.items() if v is not None}


def write_states(columns: tuple[str, ...], rows: list[list]) -> set[int]:
    """Write URL rows back (each row: the columns' values, then the URL id) where the URL is
    still queued; returns the ids written. A URL recorded meanwhile by another worker (its
    lease had expired) is left as that worker wrote it."""
    if not rows:
        return set()
    rows = sorted(rows, key=lambda row: row[-1])  # id order: the locks of concurrent batches never cross
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            names = ", ".join(columns)
            cursor.execute(
                f"""WITH {locked(_URLS, columns=("state",))}
                    UPDATE {_URLS} u SET {", ".join(f"{c} = v.{c}" for c in columns)}
                    FROM unnest({arrays(Url, columns + ("id",))}) AS v({names}, id), locked
                    WHERE u.id = v.id AND locked.id = v.id AND locked.state = 'queued' RETURNING u.id""",
                [[row[-1] for row in rows]] + [list(column) for column in zip(*rows)])
            return {row[0] for row in cursor.fetchall()}
        # SQLite: one writer, and the caller read these rows queued in this transaction.
        sql = f"UPDATE {_URLS} SET {', '.join(f'{c} = %s' for c in columns)} WHERE id = %s AND state = 'queued'"
        if len(rows) == 1:
            cursor.execute(sql, rows[0])
            return {rows[0][-1]} if cursor.rowcount else set()
        cursor.executemany(sql, rows)
        return {row[-1] for row in rows}


def extend_leases(leases: list[tuple[int, str]], now, until, holder: str | None = None) -> set[int]:
    """Move the expiry of leases (host id, token) still held at `now` to `until` (and name
    their `holder`, when given); returns the ids of the hosts whose lease it was."""
    adapt = connection.ops.adapt_datetimefield_value
    set_holder = "" if holder is None else ", lease_holder = %s"
    holder_param = [] if holder is None else [holder]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            ids = [i for i, _ in leases]
            cursor.execute(
                f"""WITH {locked(_HOSTS)}
                    UPDATE {_HOSTS} h SET leased_until = %s{set_holder}
                    FROM unnest(%b::bigint[], %b::varchar(80)[]) AS v(id, token), locked
                    WHERE h.id = v.id AND locked.id = v.id AND h.lease_owner = v.token AND h.leased_until > %s
                    RETURNING h.id""",
                [ids, until, *holder_param, ids, [t for _, t in leases], now])
            return {row[0] for row in cursor.fetchall()}
        extended = set()
        for host_id, token in leases:
            cursor.execute(f"UPDATE {_HOSTS} SET leased_until = %s{set_holder} WHERE id = %s AND lease_owner = %s "
                           "AND leased_until > %s", [adapt(until), *holder_param, host_id, token, adapt(now)])
            if cursor.rowcount:
                extended.add(host_id)
        return extended


def release_hosts(rows: list[tuple]) -> set[int]:
    """Clear the leases of hosts and set what their sessions learned; rows of (id, lease
    token, next_fetch_at, response_time, failures, wait_reason, address or None), in id
    order. Only where the token still holds the lease; returns the ids released."""
    columns = ("id", "lease_owner", "next_fetch_at", "response_time", "failures", "wait_reason", "address")
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"""WITH {locked(_HOSTS)}
                    UPDATE {_HOSTS} h SET lease_owner = '', leased_until = NULL, next_fetch_at = v.next_fetch_at,
                        response_time = v.response_time, failures = v.failures, wait_reason = v.wait_reason,
                        address = COALESCE(v.address, h.address)
                    FROM unnest({arrays(Host, columns)}) AS v({", ".join(columns)}), locked
                    WHERE h.id = v.id AND locked.id = v.id AND h.lease_owner = v.lease_owner RETURNING h.id""",
                [[row[0] for row in rows]] + [list(column) for column in zip(*rows)])
            return {row[0] for row in cursor.fetchall()}
        released = set()
        for host_id, token, next_fetch_at, response_time, failures, wait_reason, address in rows:
            cursor.execute(f"UPDATE {_HOSTS} SET lease_owner = '', leased_until = NULL, next_fetch_at = %s, "
                           "response_time = %s, failures = %s, wait_reason = %s, address = COALESCE(%s, address) "
                           "WHERE id = %s AND lease_owner = %s",
                           [next_fetch_at, response_time, failures, wait_reason, address, host_id, token])
            if cursor.rowcount:
                released.add(host_id)
        return released


def release_addresses(rows: list[tuple]) -> None:
    """Clear the leases of server addresses, (address, token, next allowed time or None):
    the next time only moves later, never earlier."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            rows = sorted(rows)
            cursor.execute(
                f"""WITH locked AS (SELECT address FROM {_ADDRESSES} WHERE address = ANY(%b::inet[]) ORDER BY address
                                    FOR NO KEY UPDATE)
                    UPDATE {_ADDRESSES} a SET lease_owner = '', leased_until = NULL,
                        next_fetch_at = GREATEST(a.next_fetch_at, COALESCE(v.next_fetch_at, a.next_fetch_at))
                    FROM unnest(%b::inet[], %b::varchar(80)[], %b::timestamptz[]) AS v(address, token, next_fetch_at),
                        locked
                    WHERE a.address = v.address AND locked.address = v.address AND a.lease_owner = v.token""",
                [[row[0] for row in rows]] + [list(column) for column in zip(*rows)])
            return
        cursor.executemany(f"UPDATE {_ADDRESSES} SET lease_owner = '', leased_until = NULL, "
                           "next_fetch_at = MAX(next_fetch_at, COALESCE(%s, next_fetch_at)) "
                           "WHERE address = %s AND lease_owner = %s",
                           [(next_fetch_at, address, token) for address, token, next_fetch_at in sorted(rows)])


def existing_keys(keys: list[int]) -> set[int]:
    """Those of the URL keys the frontier has."""
    found = set()
    for chunk in in_chunks(keys):
        found.update(Url.objects.filter(url_key__in=chunk).values_list("url_key", flat=True))
    return found


def add_host_counts(counts: dict[int, int], bands: dict[int, int] | None = None) -> dict[int, int]:
    """Add to the hosts' admitted-URL counts (the per-host quota), and raise their score
    band to the given one where it is better (lower); returns the new counts."""
    if not counts:
        return {}
    ids = sorted(counts)
    bands = {i: (bands or {}).get(i, 2) for i in ids}
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"""WITH {locked(_HOSTS)}
                    UPDATE {_HOSTS} h SET url_count = h.url_count + v.n, band = LEAST(h.band, v.band)
                    FROM unnest(%b::bigint[], %b::integer[], %b::smallint[]) AS v(id, n, band), locked
                    WHERE h.id = v.id AND locked.id = v.id RETURNING h.id, h.url_count""",
                [ids, ids, [counts[i] for i in ids], [bands[i] for i in ids]])
            return dict(cursor.fetchall())
        cursor.executemany(f"UPDATE {_HOSTS} SET url_count = url_count + %s, band = MIN(band, %s) WHERE id = %s",
                           [(counts[i], bands[i], i) for i in ids])
        found = {}
        for chunk in in_chunks(ids):
            cursor.execute(f"SELECT id, url_count FROM {_HOSTS} WHERE id IN ({marks(len(chunk))})", chunk)
            found.update(cursor.fetchall())
        return found


def add_inlinks(masks: dict[int, int], points: int, cap: int) -> tuple[list[tuple[int, int]], list[int]]:
    """Count newly seen referring hosts of waiting URLs ({url_key: their bits}, see
    importance.referrer_mask): the bits a URL did not have are hosts no process counted
    for it yet, each raising its score by `points`, up to `cap` hosts. Returns (host id,
    new score) of the URLs raised, for their hosts' bands, and the keys of URLs whose score
    takes no more links (not waiting: fetched or settled; or at the cap), which the caller
    need not send again. One statement, the rows found by their unique key; a URL that has
    every bit already, or `cap` hosts, is not written."""
    if not masks:
        return [], []
    keys = sorted(masks)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            gained = "bit_count((v.mask & ~u.inlink_bits)::bit(64))::int"  # the bits it lacked
            cursor.execute(
                # = ANY everywhere: the rows found by their index whatever a generic plan
                # thinks of the arrays and CTEs joined to them (one scanned the queue instead)
                f"""WITH v(key, mask) AS (SELECT * FROM unnest(%s::bigint[], %s::bigint[])),
                    found AS (SELECT u.id, u.url_key, v.mask, u.state = 'queued' AND u.inlink_hosts < %s AS open,
                                     u.inlink_bits & v.mask <> v.mask AS new
                              FROM {_URLS} u JOIN v ON u.url_key = v.key WHERE u.url_key = ANY(%s)),
                    -- The lock answers with the row's newest state, tested after it: a state in
                    -- the WHERE could be answered from the state index, a scan of the whole queue.
                    locked AS (SELECT id, state, inlink_hosts FROM {_URLS}
                               WHERE id = ANY(ARRAY(SELECT id FROM found WHERE open AND new))
                               ORDER BY id FOR NO KEY UPDATE SKIP LOCKED),
                    raised AS (UPDATE {_URLS} u SET inlink_bits = u.inlink_bits | v.mask,
                                   inlink_hosts = u.inlink_hosts + {gained},
                                   priority = LEAST(u.priority + %s * (LEAST(u.inlink_hosts + {gained}, %s)
                                                                       - u.inlink_hosts), {importance.MAX_SCORE})
                               FROM found v WHERE v.id = u.id AND u.id = ANY(ARRAY(
                                   SELECT id FROM locked WHERE state = 'queued' AND inlink_hosts < %s))
                               RETURNING u.id, u.host_id, u.priority)
                    SELECT r.host_id, r.priority, CASE WHEN f.open THEN NULL ELSE f.url_key END
                    FROM found f LEFT JOIN raised r ON r.id = f.id WHERE r.id IS NOT NULL OR NOT f.open""",
                [keys, [masks[key] for key in keys], cap, keys, points, cap, cap])
            rows = cursor.fetchall()
            return [(host_id, score) for host_id, score, key in rows if key is None], \
                [key for _, _, key in rows if key is not None]
        found, closed, updates = [], [], []  # SQLite: one writer, so read, then write what changed
        for chunk in in_chunks(keys):
            cursor.execute(f"SELECT id, url_key, host_id, priority, inlink_hosts, inlink_bits, state FROM {_URLS} "
                           f"WHERE url_key IN ({marks(len(chunk))})", chunk)
            for url_id, key, host_id, score, hosts, bits, state in cursor.fetchall():
                if state != "queued" or hosts >= cap:
                    closed.append(key)
                    continue
                new_hosts = (masks[key] & ~bits).bit_count()
                if new_hosts:
                    score = min(score + points * (min(hosts + new_hosts, cap) - hosts), importance.MAX_SCORE)
                    updates.append((bits | masks[key], hosts + new_hosts, score, url_id))
                    found.append((host_id, score))
        cursor.executemany(f"UPDATE {_URLS} SET inlink_bits = %s, inlink_hosts = %s, priority = %s WHERE id = %s",
                           updates)
        return found, closed


def raise_hints(hinted: dict[int, list[int]]) -> list[tuple[int, int]]:
    """Waiting URLs a sitemap lists ({hint: url keys}) take that hint where it is higher
    than theirs, their score moving with it; returns (host id, new score) of those raised."""
    found = []
    for hint, keys in sorted(hinted.items()):
        found += _raise_waiting(sorted(keys), "priority = {least}(priority + (%s - hint), 30000), hint = %s",
                                [hint, hint], "hint < %s", [hint])
    return found


def _raise_waiting(keys: list[int], assignments: str, assignment_params: list, condition: str,
                   condition_params: list) -> list[tuple[int, int]]:
    """UPDATE the waiting URLs of these keys where `condition` holds with `assignments`
    ({least}: the backend's two-argument minimum); returns (host id, new score) of each.
    On PostgreSQL a row another writer holds is skipped, not waited for: it is being
    recorded as fetched, and its score no longer matters. The rows are locked by key and
    the state and `condition` tested on what the lock returns: in its WHERE, the planner
    could answer them from an index of every waiting URL."""
    if not keys:
        return []
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"""WITH locked AS (SELECT * FROM {_URLS} WHERE url_key = ANY(%s)
                                    ORDER BY id FOR NO KEY UPDATE SKIP LOCKED)
                    UPDATE {_URLS} SET {assignments.format(least="LEAST")}
                    WHERE id = ANY(ARRAY(SELECT id FROM locked WHERE state = 'queued' AND {condition}))
                    RETURNING host_id, priority""",
                [keys, *assignment_params, *condition_params])
            return cursor.fetchall()
        found = []
        for chunk in in_chunks(keys):  # SQLite: one writer
            cursor.execute(
                f"""UPDATE {_URLS} SET {assignments.format(least="MIN")}
                    WHERE url_key IN ({marks(len(chunk))}) AND state = 'queued' AND {condition}
                    RETURNING host_id, priority""", [*assignment_params, *chunk, *condition_params])
            found.extend(cursor.fetchall())
        return found


def add_host_referrers(sketches: dict[str, tuple[int, int]]) -> None:
    """Add referring hosts to hosts' standing ({origin: (bits, ranks)} of the hosts seen
    linking to it, importance.referrer_sketch): OR-ed into the host's sketches, so a
    referring host any process counted before changes nothing. Only rows gaining a bit are
    written. On PostgreSQL one statement, and a host row another writer holds is skipped,
    not waited for (a host's standing is a hint; waiting would order these locks against
    the lease writes)."""
    if not sketches:
        return
    origins = sorted(sketches)
    bits, ranks = [sketches[o][0] for o in origins], [sketches[o][1] for o in origins]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"""WITH v(origin, bits, ranks) AS (SELECT * FROM unnest(%s::text[], %s::bigint[], %s::bigint[])),
                    locked AS (SELECT h.id FROM {_HOSTS} h JOIN v ON h.origin = v.origin
                               WHERE h.origin = ANY(%s) AND (h.referrer_bits | v.bits <> h.referrer_bits
                                                             OR h.referrer_ranks | v.ranks <> h.referrer_ranks)
                               ORDER BY h.id FOR NO KEY UPDATE OF h SKIP LOCKED)
                    UPDATE {_HOSTS} h SET referrer_bits = h.referrer_bits | v.bits,
                                          referrer_ranks = h.referrer_ranks | v.ranks
                    FROM v, locked WHERE h.id = locked.id AND h.origin = v.origin""",
                [origins, bits, ranks, origins])
            return
        found = {}  # SQLite: one writer, so read, then write what gains a bit
        for chunk in in_chunks(origins):
            cursor.execute(f"SELECT origin, id, referrer_bits, referrer_ranks FROM {_HOSTS} "
                           f"WHERE origin IN ({marks(len(chunk))})", chunk)
            found.update((origin, rest) for origin, *rest in cursor.fetchall())
        updates = []
        for origin, (host_id, old_bits, old_ranks) in sorted(found.items()):
            new_bits, new_ranks = old_bits | sketches[origin][0], old_ranks | sketches[origin][1]
            if (new_bits, new_ranks) != (old_bits, old_ranks):
                updates.append((new_bits, new_ranks, host_id))
        cursor.executemany(f"UPDATE {_HOSTS} SET referrer_bits = %s, referrer_ranks = %s WHERE id = %s", updates)


def raise_host_bands(bands: dict[int, int]) -> None:
    """Hosts' score bands raised to these where better (lower). On PostgreSQL one
    statement (a statement per host was most of what a batch of links sent), locking in id
    order only the rows it raises."""
    if not bands:
        return
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            ids = sorted(bands)
            cursor.execute(
                f"""WITH v(id, band) AS (SELECT * FROM unnest(%s::bigint[], %s::smallint[])),
                    locked AS (SELECT h.id FROM {_HOSTS} h JOIN v ON h.id = v.id
                               WHERE h.id = ANY(%s) AND h.band > v.band ORDER BY h.id FOR NO KEY UPDATE OF h)
                    UPDATE {_HOSTS} h SET band = v.band FROM v, locked
                    WHERE h.id = v.id AND locked.id = v.id AND h.band > v.band""",
                [ids, [bands[i] for i in ids], ids])
            return
        cursor.executemany(f"UPDATE {_HOSTS} SET band = %s WHERE id = %s AND band > %s",
                           [(band, host_id, band) for host_id, band in sorted(bands.items())])


def set_host_bands(bands: dict[int, int]) -> None:
    """Hosts' score bands set (after a lease took their best URLs: what is left is no better).
    On PostgreSQL one statement, skipping a host row another writer holds (a band is a hint)."""
    if not bands:
        return
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            ids = sorted(bands)
            cursor.execute(
                f"""WITH {locked(_HOSTS, skip_locked=True)}
                    UPDATE {_HOSTS} h SET band = v.band FROM unnest(%b::bigint[], %b::smallint[]) AS v(id, band), locked
                    WHERE h.id = v.id AND locked.id = v.id AND h.band <> v.band""",
                [ids, ids, [bands[i] for i in ids]])
            return
        cursor.executemany(f"UPDATE {_HOSTS} SET band = %s WHERE id = %s AND band <> %s",
                           [(band, host_id, band) for host_id, band in sorted(bands.items())])


def insert_new(model, columns: tuple[str, ...], rows: list[tuple], returning: tuple[str, ...] = ()) -> list[tuple]:
    """Insert rows of `columns` (every other column its model default) whose unique key is
    not taken; a row whose key is there (or is being inserted by a concurrent transaction,
    which it waits for) is skipped. Rows go in the order of their first column: concurrent
    inserts of the same keys never deadlock. For hosts and scopes, which are found or
    created by the thousand when seeds arrive: the ORM's bulk_create builds a model object
    per row and a placeholder per value, which costs more than the statement.

    Returns the `returning` columns of the rows inserted on PostgreSQL; nothing on SQLite
    (its executemany returns no rows): the caller reads back what it did not get."""
    if not rows:
        return []
    rows = sorted(rows)
    table = model._meta.db_table
    other, values = defaults(model, columns)
    names = ", ".join(columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"""INSERT INTO {table} ({names}, {", ".join(other)})
                    SELECT {names}, {typed(model, other)} FROM unnest({arrays(model, columns)}) AS t({names})
                    ORDER BY {columns[0]} ON CONFLICT DO NOTHING{" RETURNING " + ", ".join(returning) if returning else ""}""",
                values + [list(column) for column in zip(*rows)])
            return cursor.fetchall() if returning else []
        cursor.executemany(f"INSERT INTO {table} ({names}, {', '.join(other)}) "
                           f"VALUES ({marks(len(columns) + len(other))}) ON CONFLICT DO NOTHING",
                           [row + tuple(values) for row in rows])
    return []


def find(model, key: str, columns: tuple[str, ...], keys: list) -> list[tuple]:
    """Rows (key, *columns) of `model` whose unique `key` is one of `keys`: on PostgreSQL one
    array parameter, not one placeholder per key."""
    table, names = model._meta.db_table, ", ".join((key, *columns))
    found = []
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"SELECT {names} FROM {table} WHERE {key} = ANY(%b::{column_type(model, key)}[])",
                           [list(keys)])
            return cursor.fetchall()
        for chunk in in_chunks(list(keys)):
            cursor.execute(f"SELECT {names} FROM {table} WHERE {key} IN ({marks(len(chunk))})", chunk)
            found.extend(cursor.fetchall())
    return found


def log_seeds(seeds: list[tuple[str, int | None]]) -> None:
    """Log seeds (canonical URL, scope id or None) not logged before with that scope."""
    if not seeds:
        return
    now = timezone.now()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"""INSERT INTO {_SEEDS} (url, scope_id, created_at)
                    SELECT v.url, v.scope_id, %s FROM unnest(%b::text[], %b::bigint[]) AS v(url, scope_id)
                    WHERE NOT EXISTS (SELECT 1 FROM {_SEEDS} s
                                      WHERE s.url = v.url AND s.scope_id IS NOT DISTINCT FROM v.scope_id)""",
                [now, [url for url, _ in seeds], [scope_id for _, scope_id in seeds]])
            return
        known = set()
        for chunk in in_chunks([url for url, _ in seeds]):
            cursor.execute(f"SELECT url, scope_id FROM {_SEEDS} WHERE url IN ({marks(len(chunk))})", chunk)
            known.update(cursor.fetchall())
        adapt = connection.ops.adapt_datetimefield_value
        cursor.executemany(f"INSERT INTO {_SEEDS} (url, scope_id, created_at) VALUES (%s, %s, %s)",
                           [(url, scope_id, adapt(now)) for url, scope_id in seeds if (url, scope_id) not in known])
