"""Recovery in seconds (crawl/recovery.py): the leases of a crawling process whose heartbeat
stopped are released by the others, fenced by the lease token; a process that froze stops
sending before it could be taken for dead. The real thing (SIGKILL and SIGSTOP of a Celery
worker mid-crawl) is in tests/crawl/test_faults.py."""

import types
from datetime import timedelta

import pytest
from django.utils import timezone

from crawl import liveness
from crawl.models import ProcessHeartbeat, ProcessKind
from crawl import recovery
from crawl.session import End, lease_held
from frontier import service as frontier
from frontier.models import Host, ServerAddress

from ..crawl_helpers import wait_until

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh(settings):
    settings.CRAWLER_HEARTBEAT_SECONDS, settings.CRAWLER_LEASE_STALE_SECONDS = 1.0, 3.0
    settings.CRAWLER_DEFAULT_DELAY = 2.0
    liveness.forget()
    recovery.forget()
    yield
    liveness.forget()


def heartbeat(name, holder, seconds_ago):
    return ProcessHeartbeat.objects.create(kind=ProcessKind.WORKER, name=name, hostname="m", pid=1, holder=holder,
                                           seen_at=timezone.now() - timedelta(seconds=seconds_ago))


def leased(origin, token, holder, until_in=100.0, address=None):
    now = timezone.now()
    return Host.objects.create(origin=origin, lease_owner=token, lease_holder=holder, address=address,
                               leased_until=now + timedelta(seconds=until_in), next_fetch_at=now)


def test_the_leases_of_a_process_whose_heartbeat_stopped_are_released_long_before_they_expire():
    heartbeat("dead", "h-dead", seconds_ago=10)
    heartbeat("alive", "h-alive", seconds_ago=0.5)
    heartbeat("long gone", "h-gone", seconds_ago=1000)  # its leases expired by themselves long ago
    dead = leased("http://dead.test", "d:1", "h-dead", address="127.0.0.9")
    ServerAddress.objects.create(address="127.0.0.9", lease_owner="d:1",
                                 leased_until=timezone.now() + timedelta(seconds=100))
    alive = leased("http://alive.test", "a:1", "h-alive")
    expired = leased("http://expired.test", "d:2", "h-dead", until_in=-1)
    before = timezone.now()
    assert recovery.sweep() == [dead.id]
    dead.refresh_from_db()
    assert (dead.lease_owner, dead.leased_until, dead.lease_holder) == ("", None, "")
    # One delay from now: the dead process may have just sent a request.
    assert dead.next_fetch_at >= before + timedelta(seconds=2.0)
    address = ServerAddress.objects.get(address="127.0.0.9")
    assert (address.lease_owner, address.leased_until) == ("", None)
    assert address.next_fetch_at >= before + timedelta(seconds=2.0)
    assert Host.objects.get(id=alive.id).lease_owner == "a:1"  # a live process keeps its leases
    assert Host.objects.get(id=expired.id).lease_owner == "d:2"  # expired: free anyway, untouched
    # The dead holder is forgotten: the next sweeps touch no host.
    assert ProcessHeartbeat.objects.get(name="dead").holder == ""
    assert recovery.sweep(force=True) == []


def test_a_process_that_was_only_slow_cannot_write_over_its_successor():
    heartbeat("slow", "h-slow", seconds_ago=10)
    host = leased("http://slow.test", "s:1", "h-slow")
    assert recovery.sweep() == [host.id]
    # A dispatcher leases the host again; the slow process wakes up and tries to go on.
    Host.objects.filter(id=host.id).update(lease_owner="next:1", leased_until=timezone.now() + timedelta(seconds=60))
    assert frontier.renew_leases([(host.id, "s:1", "")]) == set()  # its keeper finds the lease gone
    assert frontier.begin_leases([(host.id, "s:1")], holder="h-slow") == {}
    assert frontier.release_host(host.id, "s:1", timezone.now() + timedelta(days=1)) is False
    host.refresh_from_db()
    assert host.lease_owner == "next:1" and host.next_fetch_at < timezone.now() + timedelta(hours=1)


def test_a_dispatcher_lease_forgets_the_previous_holder():
    """A new lease is not the dead process's, whatever the row said before it was begun."""
    heartbeat("dead", "h-dead", seconds_ago=10)
    host = leased("http://h.test", "d:1", "h-dead", until_in=-1)  # expired: leased again below
    frontier.add_urls([frontier.Candidate("http://h.test/page")])
    [lease] = frontier.lease_ready_hosts("dispatcher", 5)
    assert Host.objects.get(id=host.id).lease_holder == ""
    assert recovery.sweep() == []
    assert frontier.begin_leases([(host.id, lease.token)], holder="h-new")
    assert Host.objects.get(id=host.id).lease_holder == "h-new"


def test_heartbeats_carry_the_holder_and_a_clean_stop_gives_it_up():
    holder = liveness.holder(ProcessKind.WORKER, "w")
    assert holder == liveness.holder(ProcessKind.WORKER, "w") and len(holder) == 16
    assert liveness.written_ago(ProcessKind.WORKER, "w") == float("inf")
    assert liveness.beat(ProcessKind.WORKER, "w", sessions=1)
    assert ProcessHeartbeat.objects.get(name="w").holder == holder
    assert liveness.written_ago(ProcessKind.WORKER, "w") < 1.0
    ProcessHeartbeat.objects.filter(name="w").update(seen_at=timezone.now() - timedelta(seconds=5))
    assert liveness.stale_holders() == [holder]
    assert liveness.beat(ProcessKind.WORKER, "w", stopped=True)
    assert ProcessHeartbeat.objects.get(name="w").holder == ""
    assert liveness.stale_holders(timezone.now() + timedelta(seconds=10)) == []


@pytest.mark.parametrize("age, ended", [(0.0, None), (1.9, None), (2.1, "heartbeat_late"), (60.0, "heartbeat_late")])
def test_a_session_stops_sending_before_its_process_could_be_taken_for_dead(age, ended):
    """Staleness at 3 s, heartbeats every 1 s: past 2 s without a written heartbeat (a
    frozen process that woke up, a database that takes none) no request starts."""
    session = types.SimpleNamespace(lost=False, lease_until=1e12, heartbeat_age=lambda: age)
    result = lease_held(session, None)
    assert (result.reason if isinstance(result, End) else None) == ended


@pytest.mark.django_db(transaction=True)  # the engine's threads have their own connections
def test_an_engine_says_it_stopped_cleanly_only_once_every_host_is_given_back():
    """Its last heartbeat takes its holder out of the others' sweep: written only after the
    writer gave back every session's host. A stop that could not (the process is dying, the
    database is away) leaves the holder in place, so the others release what it still held."""
    from crawl.engine import SessionEngine

    def stopped_row(unreleased):
        engine = SessionEngine(fetch_threads=1, name=f"worker-{unreleased}").start()
        wait_until(lambda: ProcessHeartbeat.objects.filter(holder=engine.holder).exists(), 5, "the first heartbeat")
        if unreleased:  # a session whose host release was never written
            with engine._lock:
                engine._sessions[1] = types.SimpleNamespace(ended=True, requests=0, finish=lambda reason: None)
        engine.stop(timeout=2.0)
        return engine.holder, ProcessHeartbeat.objects.get(name=engine.worker)

    holder, row = stopped_row(unreleased=False)
    assert (row.holder, row.stopped_at is not None) == ("", True)
    holder, row = stopped_row(unreleased=True)
    assert (row.holder, row.stopped_at) == (holder, None)
    ProcessHeartbeat.objects.filter(holder=holder).update(seen_at=timezone.now() - timedelta(seconds=5))
    assert holder in liveness.stale_holders()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_store_frozen_mid_transaction_holds_no_lock_past_its_process_being_taken_for_dead(settings, monkeypatch):
    """A writer frozen inside its store (its process stopped) held the row locks of what it
    was writing, and every other writer storing the same rows waited for the whole freeze.
    Its transaction now ends once its process could be taken for dead."""
    import threading

    from django.db import DatabaseError, connection, connections

    from crawl import writer as writer_module

    settings.CRAWLER_LEASE_STALE_SECONDS = 0.5
    monkeypatch.setattr(recovery, "IDLE_TRANSACTION_FLOOR", 0.5)
    host = Host.objects.create(origin="http://frozen.test", next_fetch_at=timezone.now())
    locked, waking, outcome = threading.Event(), threading.Event(), {}

    def frozen_store():  # the writer's own thread and connection, as in a crawling process
        try:
            writer_module.Writer()._tune_connection()
            with connection.cursor() as cursor:
                cursor.execute("BEGIN")
                cursor.execute(f"UPDATE {Host._meta.db_table} SET failures = 1 WHERE id = %s", [host.id])
                locked.set()
                waking.wait(60)  # frozen between two statements of its store
                try:
                    cursor.execute(f"UPDATE {Host._meta.db_table} SET failures = 2 WHERE id = %s", [host.id])
                    outcome["woke"] = "wrote"
                except DatabaseError as error:
                    outcome["woke"], outcome["error"] = str(error), error
        finally:
            connections.close_all()

    holder = threading.Thread(target=frozen_store)
    holder.start()
    try:
        assert locked.wait(30)
        with connection.cursor() as cursor:  # another process's writer, storing the same row
            cursor.execute("SET statement_timeout = 20000")  # without the fix: fails here after 20 s
            cursor.execute(f"UPDATE {Host._meta.db_table} SET failures = 3 WHERE id = %s", [host.id])
            cursor.execute("SET statement_timeout = 0")
    finally:
        waking.set()
        holder.join(30)
    assert Host.objects.get(id=host.id).failures == 3  # the frozen store's first write went with its transaction
    assert "idle-in-transaction timeout" in outcome["woke"], outcome
    # and the writer takes that for the database away: the store's URLs stay queued, no dead letters
    assert writer_module._database_away(outcome["error"])


@pytest.mark.postgres
def test_a_dispatchers_connection_ends_its_idle_transactions_too(settings):
    """The dispatcher's lease transaction locks the hosts it leases (FOR UPDATE): frozen
    inside it, it would hold them. Its connection gets the writer's limit, once."""
    from django.db import connection

    settings.CRAWLER_LEASE_STALE_SECONDS = 9.0
    tuned = recovery.end_idle_transactions_of_this_thread()
    with connection.cursor() as cursor:
        cursor.execute("SHOW idle_in_transaction_session_timeout")
        assert cursor.fetchone()[0] == "9s"
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        recovery.end_idle_transactions_of_this_thread(tuned)
    assert len(queries) == 0  # set once a connection: the dispatcher asks every round
    settings.CRAWLER_LEASE_STALE_SECONDS = 1.0
    recovery.end_idle_transactions_of_this_thread()
    with connection.cursor() as cursor:
        cursor.execute("SHOW idle_in_transaction_session_timeout")
        assert cursor.fetchone()[0] == "5s"  # never below the floor
