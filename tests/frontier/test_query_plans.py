"""The write path's statements find their rows by key, whatever the planner knows.

A URL's state is indexed (the queue is read by it), so a statement that tests the state
in its WHERE lets the planner answer the test from that index: every row in the state.
On a crawl's tables before autovacuum has analyzed them (or with autovacuum off) it did:
bench.run measured the inlink statement at 14 ms and 2,375 buffers a call, the recording
of fetched URLs at 8–9 ms. The statements now lock their rows by key and test the state
on what the lock returns. These tests read the plans on a table of 20,000 URLs, once with
no statistics and once analyzed (both inside the test's transaction, rolled back;
deleting a table's statistics takes the superuser the test setup connects as).

Each test starts from empty tables of its own: ANALYZE writes a table's and its indexes'
sizes into pg_class in place, past the rollback, and the rows earlier tests inserted and
rolled back still fill their files; a planner without statistics estimates from those
sizes, so the plans depended on which tests ran before. TRUNCATE gives the tables and
their indexes new, empty files and never-analyzed sizes, inside the test's transaction
(its rollback brings the old ones back). On a table that small a statement naming a few
hundred keys is rightly a sequential scan, so the tests name 40 (a crawl's tables are
many times bigger than its batches).
"""

import re

import pytest
from django.db import connection

from frontier import bulk, importance
from frontier.models import Host, Url

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

STATE_INDEXES = ("url_state_due", "url_host_queue", "url_host_due")


@pytest.fixture(autouse=True)
def tables_of_its_own():
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {Host._meta.db_table}, {Url._meta.db_table} CASCADE")


def _copies(first, varying: dict, rows: str, params: tuple = ()) -> None:
    """Copy `first` (one row the ORM made, so every column has the model's default) once
    per row of `rows` (SQL after FROM), the `varying` columns computed per row (with
    `params`), in one INSERT ... SELECT: a twentieth of the time as many ORM objects take."""
    model = type(first)
    columns = [field.column for field in model._meta.concrete_fields if not field.primary_key]
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {model._meta.db_table} ({', '.join(columns)}) "
                       f"SELECT {', '.join(varying.get(c, 'first.' + c) for c in columns)} "
                       f"FROM {model._meta.db_table} AS first, {rows} WHERE first.id = %s", [*params, first.id])


SERIES = "generate_series(1, 19999) AS n"  # a first row and these copies: 20,000 rows


def urls_of_hosts_h(per_host: int) -> str:
    """20,000 URLs' rows without the first, URL k the (k % per_host)th of host http://h{k // per_host}.test."""
    return (f"generate_series(1, 19999) AS k JOIN {Host._meta.db_table} AS host "
            f"ON host.origin = 'http://h' || k / {per_host} || '.test'")


@pytest.fixture
def urls(tables_of_its_own):
    """20,000 URLs of one host, one in 50 queued."""
    host = Host.objects.create(origin="http://a.test")
    first = Url.objects.create(url="http://a.test/0", url_key=1, host=host, depth=2, score=-20, state="queued")
    _copies(first, {"url": "'http://a.test/' || n", "url_key": "n + 1", "url_hash": "NULL",
                    "state": "CASE WHEN n %% 50 = 0 THEN 'queued' ELSE 'fetched' END"}, SERIES)
    return host


def _statistics(known: bool, table: str = "frontier_url") -> None:
    with connection.cursor() as cursor:
        if known:
            cursor.execute(f"ANALYZE {table}")
            return
        cursor.execute(f"DELETE FROM pg_statistic WHERE starelid = '{table}'::regclass")


def _statements_of(call) -> tuple:
    """What `call` returns, and the (sql, params) of every statement it ran."""
    statements = []

    def capture(execute, sql, params, many, context):
        statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        return call(), statements


def _plan_of_last_statement(call) -> tuple:
    result, statements = _statements_of(call)
    sql, params = statements[-1]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sql, params)
        return result, "\n".join(row[0] for row in cursor.fetchall())


def _assert_by_key(plan: str) -> None:
    for index in STATE_INDEXES:
        assert index not in plan, plan
    assert "Seq Scan on frontier_url" not in plan, plan


@pytest.mark.parametrize("statistics", [False, True], ids=["no statistics", "analyzed"])
def test_counting_links_locks_the_urls_it_raises_by_id(urls, statistics):
    _statistics(statistics)
    keys = list(range(1, 20_001, 400))  # waiting URLs (n % 50 == 0)
    masks = {key: importance.referrer_mask(["http://b.test"]) for key in keys}
    (raised, closed), plan = _plan_of_last_statement(lambda: bulk.add_inlinks(masks, 12, 5))
    assert (len(raised), closed) == (len(keys), [])
    _assert_by_key(plan)


@pytest.mark.parametrize("statistics", [False, True], ids=["no statistics", "analyzed"])
def test_recording_fetched_urls_locks_them_by_id(urls, statistics):
    _statistics(statistics)
    rows = list(Url.objects.filter(state="queued").order_by("id").values_list("id", flat=True)[:40])
    fetched = list(Url.objects.filter(state="fetched").order_by("id").values_list("id", flat=True)[:5])
    written, plan = _plan_of_last_statement(
        lambda: bulk.write_states(("state", "outcome"), [["fetched", "ok", url_id] for url_id in rows + fetched]))
    assert written == set(rows)  # a URL recorded already is left as it was
    assert Url.objects.filter(id__in=fetched, outcome="ok").count() == 0
    _assert_by_key(plan)


def _plans_of(call, table: str = "frontier_url") -> tuple:
    """What `call` returns, and the plan of each statement it ran that names `table`."""
    result, statements = _statements_of(call)
    plans = []
    with connection.cursor() as cursor:
        for sql, params in statements:
            if table in sql and not sql.lstrip().upper().startswith(("SAVEPOINT", "RELEASE")):
                cursor.execute("EXPLAIN " + sql, params)
                plans.append("\n".join(row[0] for row in cursor.fetchall()))
    return result, plans


@pytest.mark.parametrize("statistics", [False, True], ids=["no statistics", "analyzed"])
def test_reading_a_batch_of_fetched_urls_finds_them_by_id(urls, statistics):
    from frontier.outcomes import FetchReport
    from frontier.records import record_fetches

    _statistics(statistics)
    queued = list(Url.objects.filter(state="queued").order_by("id").values_list("id", flat=True)[:40])
    fetched = list(Url.objects.filter(state="fetched").order_by("id").values_list("id", flat=True)[:5])
    reports = [(FetchReport(url_id=url_id, status=404), 0) for url_id in queued + fetched]
    recorded, plans = _plans_of(lambda: record_fetches(reports))
    assert [recorded[url_id] for url_id in queued] == ["gone"] * 40
    assert [recorded[url_id] for url_id in fetched] == [None] * 5  # recorded already: left alone
    assert len(plans) == 2, plans  # the read, and the write (test_recording_fetched_urls_locks_them_by_id)
    for plan in plans:
        _assert_by_key(plan)


@pytest.mark.parametrize("by", ["ids", "keys"])
@pytest.mark.parametrize("statistics", [False, True], ids=["no statistics", "analyzed"])
def test_an_update_in_a_state_finds_its_rows_by_key(urls, statistics, by):
    from frontier import instate

    _statistics(statistics)
    rows = list(Url.objects.order_by("id").values_list("id", "url_key", "state")[:1_000:25])  # half of them queued
    named = {by: [row[0 if by == "ids" else 1] for row in rows]}
    changed, plans = _plans_of(lambda: instate.update_in_state("queued", dict(outcome="by key"), **named,
                                                                where={"depth__gt": 1}))
    assert changed == [row[0] for row in rows if row[2] == "queued"] and len(changed) == 20
    assert Url.objects.filter(outcome="by key").count() == 20
    assert len(plans) == 2, plans  # the lock, the update
    for plan in plans:
        _assert_by_key(plan)


@pytest.mark.parametrize("statistics", [False, True], ids=["no statistics", "analyzed"])
def test_the_release_of_due_revisits_queues_them_by_id(urls, statistics, settings):
    from datetime import timedelta

    from django.utils import timezone

    from frontier import recrawl
    from frontier.models import RecrawlPlan

    settings.CRAWLER_RECRAWL_RELEASE_BATCH = 1_000
    settings.CRAWLER_RECRAWL_BUDGET_PER_DAY = 86_400_000  # 1,000 a second: the credit below is what limits
    _statistics(statistics)
    now = timezone.now()
    Url.objects.filter(state="fetched").update(next_fetch_at=now + timedelta(days=1))
    due = list(Url.objects.filter(state="fetched").order_by("id").values_list("id", flat=True)[:40])
    Url.objects.filter(id__in=due).update(next_fetch_at=now - timedelta(hours=1))
    RecrawlPlan.objects.update_or_create(pk=1, defaults=dict(credit=500.0, released_at=now))
    released, plans = _plans_of(lambda: recrawl.release_due(now=now))
    assert released == 40 and Url.objects.filter(id__in=due, state="queued").count() == 40
    lock, update = [plan for plan in plans if "LockRows" in plan or plan.lstrip().startswith("Update")]
    _assert_by_key(lock)
    _assert_by_key(update)


@pytest.mark.parametrize("statistics", [False, True], ids=["no statistics", "analyzed"])
def test_a_sitemaps_hints_raise_waiting_urls_found_by_key(urls, statistics):
    _statistics(statistics)
    keys = list(range(1, 20_001, 400))  # waiting URLs (n % 50 == 0)
    raised, plan = _plan_of_last_statement(lambda: bulk.raise_hints({20: keys}))
    assert len(raised) == len(keys)
    _assert_by_key(plan)


@pytest.mark.parametrize("statistics", [False, True], ids=["no statistics", "analyzed"])
def test_a_sessions_urls_are_read_by_id(urls, statistics):
    from frontier.records import queued_urls

    _statistics(statistics)
    first = Url.objects.order_by("id").values_list("id", flat=True)[0]
    ids = list(Url.objects.order_by("id").values_list("id", flat=True)[:1_000:25])  # 40, half of them queued
    found, plan = _plan_of_last_statement(lambda: queued_urls(ids[::-1]))
    assert [queued.id for queued in found] == [i for i in ids[::-1] if (i - first) % 50 == 0]  # queued, in order
    assert len(found) == 20
    _assert_by_key(plan)


@pytest.fixture
def hosts_half_exhausted(tables_of_its_own):
    """200 hosts of 100 URLs each: the even ones with every URL waiting, the odd ones done."""
    from datetime import timedelta

    from django.utils import timezone

    hosts = Host.objects.bulk_create([Host(origin=f"http://h{n}.test", next_fetch_at=timezone.now() - timedelta(hours=1))
                                      for n in range(200)])
    first = Url.objects.create(url="http://h0.test/0", url_key=1, host=hosts[0], depth=1, score=-10, state="queued")
    _copies(first, {"url": "host.origin || '/' || k %% 100", "url_key": "k + 1", "host_id": "host.id",
                    "state": "CASE WHEN k / 100 %% 2 = 0 THEN 'queued' ELSE 'fetched' END"}, urls_of_hosts_h(100))
    return hosts


@pytest.mark.parametrize("statistics", [False, True], ids=["no statistics", "analyzed"])
def test_the_ready_hosts_query_probes_each_host_instead_of_reading_the_queue(hosts_half_exhausted, statistics):
    from frontier.leases import lease_ready_hosts

    _statistics(statistics)
    leases, statements = _statements_of(lambda: lease_ready_hosts("plan-test", 8))
    waiting = {host.id for i, host in enumerate(hosts_half_exhausted) if i % 2 == 0}
    assert len(leases) == 8 and {lease.host_id for lease in leases} <= waiting
    assert all(len(lease.url_ids) > 0 for lease in leases)
    ready = [(sql, params) for sql, params in statements if "SKIP LOCKED" in sql and "frontier_url" in sql]
    assert ready, statements
    for sql, params in ready:
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN " + sql, params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert "SubPlan" in plan and "Semi Join" not in plan, plan
        url_scans = [line for line in plan.splitlines() if "on frontier_url" in line]
        assert url_scans and all(re.search(r"Index (Only )?Scan using url_host_(due|queue) on frontier_url", line)
                                 for line in url_scans), plan
        assert plan.count("Index Cond: (host_id = frontier_host.id") >= len(url_scans), plan  # probed per host


@pytest.mark.parametrize("statistics", [False, True], ids=["no statistics", "analyzed"])
def test_the_leases_held_are_counted_from_the_leased_hosts_only(tables_of_its_own, statistics):
    """Once a dispatch round: a scan of the host table read every host a crawl has known
    (15 ms a round at 101,000 hosts)."""
    from datetime import timedelta

    from django.utils import timezone

    from frontier import leases

    now = timezone.now()
    first = Host.objects.create(origin="http://h0.test", next_fetch_at=now, leased_until=now + timedelta(seconds=60))
    _copies(first, {"origin": "'http://h' || n || '.test'",
                    "leased_until": "CASE WHEN n %% 1000 = 0 THEN first.leased_until END"}, SERIES)
    Host.objects.filter(origin="http://h1.test").update(leased_until=now - timedelta(seconds=1))  # expired
    _statistics(statistics, table="frontier_host")
    held, plans = _plans_of(lambda: leases.leases_held(now), table="frontier_host")
    assert held == 20
    assert len(plans) == 1 and "host_leased" in plans[0] and "Seq Scan" not in plans[0], plans


@pytest.mark.parametrize("statistics", [False, True], ids=["no statistics", "analyzed"])
def test_the_sweep_finds_hosts_set_aside_with_work_from_the_waiting_urls(tables_of_its_own, statistics):
    """Every sweep of every dispatcher: a probe per host set aside read every host a long
    crawl has finished (0.55 s at a million). The hosts come from the waiting URLs' index,
    one descent per host with work, whatever the planner knows."""
    from frontier import idle

    first_host = Host.objects.create(origin="http://h0.test", band=0)
    _copies(first_host, {"origin": "'http://h' || n || '.test'",
                         "band": f"CASE WHEN n %% 10 = 0 THEN 0 ELSE {importance.IDLE_BAND} END"},
            "generate_series(1, 4999) AS n")
    host_id = dict(Host.objects.values_list("origin", "id"))
    missed = [host_id[f"http://h{n}.test"] for n in range(1, 200, 40)]  # set aside, and a URL queued behind the rule's back
    awake = [host_id[f"http://h{n}.test"] for n in range(0, 200, 50)]  # waiting in the scan, as they should
    # 4 URLs a host; the first of each host named above waits
    first = Url.objects.create(url="http://h0.test/0", url_key=1, host=first_host, depth=1, state="queued")
    _copies(first, {"url": "host.origin || '/' || k %% 4", "url_key": "k + 1", "host_id": "host.id",
                    "state": "CASE WHEN k %% 4 = 0 AND host.id = ANY(%s) THEN 'queued' ELSE 'fetched' END"},
            urls_of_hosts_h(4), (missed + awake,))
    _statistics(statistics)
    _statistics(statistics, table="frontier_host")
    found, plans = _plans_of(idle._asleep_with_urls_waiting)
    assert sorted(found) == sorted(missed)
    (plan,) = plans
    assert "Seq Scan" not in plan, plan
    url_scans = [line for line in plan.splitlines() if "on frontier_url" in line]
    assert url_scans and all("url_host_queue" in line for line in url_scans), plan
    assert re.search(r"Index Scan using frontier_host_pkey on frontier_host", plan), plan
