"""The write path's statements find their rows by key, whatever the planner knows.

A URL's state is indexed (the queue is read by it), so a statement that tests the state
in its WHERE lets the planner answer the test from that index: every row in the state.
On a crawl's tables before autovacuum has analyzed them (or with autovacuum off) it did:
bench.run measured the inlink statement at 14 ms and 2,375 buffers a call, the recording
of fetched URLs at 8–9 ms. The statements now lock their rows by key and test the state
on what the lock returns. These tests read the plans on a table of 20,000 URLs, once with
no statistics and once analyzed (both inside the test's transaction, rolled back;
deleting a table's statistics takes the superuser the test setup connects as).
"""

import re

import pytest
from django.db import connection

from frontier import bulk, importance
from frontier.models import Host, Url

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

STATE_INDEXES = ("url_state_due", "url_host_queue", "url_host_due")


@pytest.fixture
def urls():
    host = Host.objects.create(origin="http://a.test")
    Url.objects.bulk_create([Url(url=f"http://a.test/{n}", url_key=n + 1, host=host, depth=2, priority=-20,
                                 state="queued" if n % 50 == 0 else "fetched") for n in range(20_000)],
                            batch_size=5_000)
    return host


def _statistics(known: bool) -> None:
    with connection.cursor() as cursor:
        if known:
            cursor.execute("ANALYZE frontier_url")
            return
        cursor.execute("DELETE FROM pg_statistic WHERE starelid = 'frontier_url'::regclass")


def _plan_of_last_statement(call) -> tuple:
    statements = []

    def capture(execute, sql, params, many, context):
        statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        result = call()
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
    ids = list(Url.objects.order_by("id").values_list("id", flat=True)[:200])
    found, plan = _plan_of_last_statement(lambda: queued_urls(ids[::-1]))
    assert [queued.id for queued in found] == [i for i in ids[::-1] if (i - ids[0]) % 50 == 0]  # queued, in order
    _assert_by_key(plan)


@pytest.fixture
def hosts_half_exhausted():
    """200 hosts of 100 URLs each: the even ones with every URL waiting, the odd ones done."""
    from datetime import timedelta

    from django.utils import timezone

    hosts = Host.objects.bulk_create([Host(origin=f"http://h{n}.test", next_fetch_at=timezone.now() - timedelta(hours=1))
                                      for n in range(200)])
    Url.objects.bulk_create([Url(url=f"{host.origin}/{n}", url_key=i * 100 + n + 1, host=host, depth=1, priority=-10,
                                 state="queued" if i % 2 == 0 else "fetched")
                             for i, host in enumerate(hosts) for n in range(100)], batch_size=5_000)
    return hosts


@pytest.mark.parametrize("statistics", [False, True], ids=["no statistics", "analyzed"])
def test_the_ready_hosts_query_probes_each_host_instead_of_reading_the_queue(hosts_half_exhausted, statistics):
    from frontier.leases import lease_ready_hosts

    _statistics(statistics)
    statements = []

    def capture(execute, sql, params, many, context):
        statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        leases = lease_ready_hosts("plan-test", 8)
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
