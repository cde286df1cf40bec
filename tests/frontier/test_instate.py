"""frontier/instate.py: URL rows named by key change only while in a state, on both
backends; on PostgreSQL the state is tested on the row the lock returns, so a row another
writer moves on meanwhile is left as that writer left it. (The plans: test_query_plans.py.)"""

import threading

import pytest
from django.db import connection, transaction
from django.db.models import F

from frontier import instate
from frontier.models import Host, Url, UrlState

from ..crawl_helpers import until_a_backend_waits_for_a_lock


def _urls(states):
    host = Host.objects.create(origin="http://a.test")
    return [Url.objects.create(url=f"http://a.test/{n}", url_key=1000 + n, host=host, depth=n, score=-10 * n,
                               state=state, outcome="trap" if n % 2 else "")
            for n, state in enumerate(states)]


@pytest.mark.django_db
def test_only_rows_in_the_state_change_and_their_ids_come_back_in_order():
    rows = _urls(["queued", "fetched", "queued", "failed", "queued"])
    ids = [row.id for row in rows]
    changed = instate.update_in_state(UrlState.QUEUED, dict(state=UrlState.EXCLUDED, outcome="set aside"),
                                      ids=ids[::-1] + [ids[0]])  # any order, repeats
    assert changed == [ids[0], ids[2], ids[4]]
    assert list(Url.objects.order_by("id").values_list("state", "outcome")) == [
        ("excluded", "set aside"), ("fetched", "trap"), ("excluded", "set aside"), ("failed", "trap"),
        ("excluded", "set aside")]


@pytest.mark.django_db
def test_rows_named_by_key_with_a_where_and_an_expression():
    rows = _urls(["queued"] * 4 + ["fetched"])
    keys = [row.url_key for row in rows]
    changed = instate.update_in_state(UrlState.QUEUED, dict(depth=1, score=F("score") - 10 * (1 - F("depth"))),
                                      keys=keys, where={"depth__gt": 1})
    assert changed == [rows[2].id, rows[3].id]  # depth 0 and 1 are not deeper; the fetched one is not queued
    assert list(Url.objects.order_by("id").values_list("depth", "score")) == [
        (0, 0), (1, -10), (1, -10), (1, -10), (4, -40)]
    changed = instate.update_in_state([UrlState.QUEUED, UrlState.FETCHED], dict(outcome="odd"), keys=keys,
                                      where={"outcome": "trap"})
    assert changed == [rows[1].id, rows[3].id]
    assert instate.update_in_state(UrlState.QUEUED, dict(outcome="x"), ids=[rows[0].id, 10 ** 9]) == [rows[0].id]


@pytest.mark.django_db
def test_a_call_names_its_rows_one_way_and_a_where_it_can_test():
    with pytest.raises(ValueError):
        instate.update_in_state(UrlState.QUEUED, dict(outcome="x"))
    with pytest.raises(ValueError):
        instate.update_in_state(UrlState.QUEUED, dict(outcome="x"), ids=[1], keys=[1])
    with pytest.raises(ValueError):
        instate.update_in_state(UrlState.QUEUED, dict(outcome="x"), ids=[1], where={"depth__lt": 3})
    assert instate.update_in_state(UrlState.QUEUED, dict(outcome="x"), ids=[]) == []


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_row_another_writer_moves_on_meanwhile_is_left_as_it_left_it():
    """A writer holds a queued row and records it fetched; the update waits for the row and
    tests the state the lock returns: fetched, so it leaves the row alone. A test in the
    statement's WHERE, answered from its snapshot or an index, could have matched it."""
    rows = _urls(["queued", "queued"])
    held, done = threading.Event(), threading.Event()
    changed = []

    def update():
        try:
            held.wait(10)
            changed.extend(instate.update_in_state(UrlState.QUEUED, dict(state=UrlState.EXCLUDED),
                                                   ids=[row.id for row in rows]))
        finally:
            connection.close()
            done.set()

    thread = threading.Thread(target=update)
    thread.start()
    with transaction.atomic():
        Url.objects.filter(id=rows[0].id).update(state=UrlState.FETCHED, outcome="ok")  # holds the row
        held.set()
        until_a_backend_waits_for_a_lock()
    assert done.wait(10)
    thread.join()
    assert changed == [rows[1].id]
    assert list(Url.objects.order_by("id").values_list("state", "outcome")) == [("fetched", "ok"), ("excluded", "trap")]
