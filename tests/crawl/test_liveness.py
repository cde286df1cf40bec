"""What the dashboard's live panels say (console/health.py, crawl/liveness.py): the hosts
held back and why, each in one state; top hosts by errors with retrying URLs counted;
processes alive, stale or stopped from their heartbeats; beat's last run; the crawl's one
word (paused, crawling, waiting, idle, stalled); the names Flower shows; /favicon.ico."""

import http.server
import threading
import time
from datetime import timedelta

import pytest
from django.db import DatabaseError, connection
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from console import health
from crawl import liveness
from crawl.models import ProcessHeartbeat
from console.schedules import ensure_periodic_tasks
from crawl import runners
from crawl.engine import SessionEngine
from frontier import service as frontier
from frontier import wakeups as frontier_wakeups
from frontier.models import CrawlLimits, Host, Url
from frontier.outcomes import FetchReport

from ..crawl_helpers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fresh_heartbeats():
    liveness.forget()  # each test is a new process as far as throttling goes
    ProcessHeartbeat.objects.all().delete()  # an engine's thread commits outside a test's transaction
    yield
    liveness.forget()


def origins(part: dict) -> list[str]:
    return [h["host"] for h in part["hosts"]]


# --- host health ---------------------------------------------------------------------------

def test_it_lists_each_held_back_host_once_with_its_state_until_and_reason(settings):
    settings.CRAWLER_HOST_FAILURE_THRESHOLD = 3
    now = timezone.now()
    soon, later = now + timedelta(minutes=5), now + timedelta(minutes=20)
    host = lambda origin, **fields: Host.objects.create(origin=origin, **fields)  # noqa: E731
    # Paused by an operator, and failing too: it is listed as paused only.
    host("http://paused.test", paused_at=now - timedelta(minutes=1), failures=5, next_fetch_at=later,
         wait_reason="breaker")
    host("http://breaker.test", failures=3, next_fetch_at=later, wait_reason="breaker")
    host("http://retry.test", next_fetch_at=soon, wait_reason="retry_after_503")
    host("http://robots.test", robots_fetched_at=now, robots_status=503, robots_error="http_503",
         robots_expires_at=soon, next_fetch_at=soon, wait_reason="robots_unavailable")
    host("http://healthy.test", next_fetch_at=now - timedelta(seconds=1), wait_reason="default_delay")
    # Waiting for its next request inside a running session: busy, not backing off.
    host("http://leased.test", next_fetch_at=soon, leased_until=later, lease_owner="w")
    host("http://failing-once.test", failures=2)  # below the threshold: closed

    found = health.host_health()

    assert origins(found["paused"]) == ["http://paused.test"]
    assert origins(found["breaker_open"]) == ["http://breaker.test"]
    assert origins(found["robots_unavailable"]) == ["http://robots.test"]
    assert origins(found["backing_off"]) == ["http://retry.test"]
    assert {name: part["count"] for name, part in found.items()} == {
        "paused": 1, "breaker_open": 1, "robots_unavailable": 1, "backing_off": 1}
    (retry,) = found["backing_off"]["hosts"]
    assert retry["until"] == soon.isoformat()
    assert (retry["reason"], retry["reason_text"]) == ("retry_after_503", "Retry-After (503 Service Unavailable)")
    (breaker,) = found["breaker_open"]["hosts"]
    assert breaker["failures"] == 3 and breaker["until"] == later.isoformat()
    (robots,) = found["robots_unavailable"]["hosts"]
    assert robots["robots_error"] == "http_503" and robots["robots_retry_at"] == soon.isoformat()


def test_a_wait_that_is_over_shows_no_stored_reason(settings):
    # The breaker host's last wait ended a minute ago: it is listed (failures in a row) but
    # the reason written when that wait was set says nothing about now (frontier/hoststate.py).
    settings.CRAWLER_HOST_FAILURE_THRESHOLD = 3
    now = timezone.now()
    Host.objects.create(origin="http://breaker.test", failures=3, next_fetch_at=now - timedelta(minutes=1),
                        wait_reason="retry_after_503")
    (breaker,) = health.host_health()["breaker_open"]["hosts"]
    assert (breaker["until"], breaker["reason"], breaker["reason_text"]) == (None, "", "")
    assert health.host_health()["backing_off"]["count"] == 0


def test_the_lists_are_bounded_and_say_how_many_there_are():
    now = timezone.now()
    for n in range(5):
        Host.objects.create(origin=f"http://h{n}.test", next_fetch_at=now + timedelta(minutes=n + 1),
                            wait_reason="crawl_delay")
    backing_off = health.host_health(limit=2)["backing_off"]
    assert backing_off["count"] == 5
    assert origins(backing_off) == ["http://h4.test", "http://h3.test"]  # the longest waits first
    assert backing_off["hosts"][0]["reason_text"] == "robots.txt Crawl-delay"


def test_top_hosts_by_errors_counts_a_host_whose_urls_are_all_retrying():
    frontier.add_urls([frontier.Candidate(f"http://resets.test/{n}") for n in range(3)]
                      + [frontier.Candidate("http://gone.test/x"), frontier.Candidate("http://fine.test/y")])
    # A host resetting every connection: each URL tried once, queued for its retry.
    for url in Url.objects.filter(host__origin="http://resets.test"):
        frontier.record_fetch(FetchReport(url.id, error="connection"), attempts=0)
    frontier.record_fetch(FetchReport(Url.objects.get(url="http://gone.test/x").id, status=404), attempts=0)

    retrying = Url.objects.filter(host__origin="http://resets.test")
    assert {(u.state, u.attempts, u.outcome) for u in retrying} == {("queued", 1, "connection")}
    top = frontier.top_hosts()
    assert top["by_errors"] == [{"host": "http://resets.test", "count": 3}]
    # A 404 is the server's answer, not a failure of the crawl: counted apart, never as an error.
    assert top["by_gone"] == [{"host": "http://gone.test", "count": 1}]
    assert frontier.url_figures()["errors_by_kind"] == {"connection": 3}
    assert {e["url"] for e in frontier.recent_errors()} == {f"http://resets.test/{n}" for n in range(3)}


def test_urls_whose_retries_are_spent_still_count_as_errors():
    frontier.add_urls([frontier.Candidate("http://resets.test/a")])
    Url.objects.update(state="backoff", outcome="connection", attempts=0, backoff_level=1)
    assert frontier.top_hosts()["by_errors"] == [{"host": "http://resets.test", "count": 1}]


# --- heartbeats ------------------------------------------------------------------------------

class Pages(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = b"<html><title>page</title><body>a page</body></html>"
        self.send_response(404 if self.path == "/robots.txt" else 200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def pages():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_it_shows_a_worker_once_a_real_engine_has_run_its_keeper_and_a_stopped_one_as_stopped(settings, pages):
    settings.CRAWLER_LEASE_SECONDS = 1.2  # the keeper ticks every 0.2 s
    settings.CRAWLER_HEARTBEAT_SECONDS = 0.1
    frontier.add_seeds([f"{pages}/{n}" for n in range(3)])
    engine = SessionEngine(fetch_threads=2, name="worker-test").start()
    try:
        for lease in frontier.lease_ready_hosts("test", 5):
            engine.submit(lease)
        row = wait_until(lambda: ProcessHeartbeat.objects.filter(requests__gte=4).first())  # robots.txt + 3 pages
        live = health.liveness()
        # Ours, and whatever an earlier test's engine still beats (seen once on a full run:
        # named in the message, counted alongside, so that this test still judges its own).
        (process,) = [p for p in live["processes"] if p["name"] == engine.worker]
        others = [p for p in live["processes"] if p["name"] != engine.worker and p["state"] == "online"]
        assert (process["kind"], process["state"]) == ("worker", "online")
        assert process["requests"] >= 4 and process["last_request_at"] is not None
        assert live["workers_online"] == 1 + sum(p["kind"] == "worker" for p in others), others
        assert live["dispatchers_online"] == sum(p["kind"] == "dispatcher" for p in others), others
        assert live["crawl"]["state"] == "crawling"
        assert row.pid and row.hostname
    finally:
        engine.stop()
    live = health.liveness()
    (process,) = [p for p in live["processes"] if p["name"] == engine.worker]
    assert process["state"] == "stopped"
    assert live["workers_online"] == sum(p["kind"] == "worker" and p["state"] == "online" for p in live["processes"])


def test_stop_waits_for_the_keepers_last_beat_when_the_database_is_slow_to_take_it(settings, pages):
    """The keeper's last word ("stopped", its hosts given back) is written before stop()
    returns, even when the heartbeat row is held by another transaction for longer than a
    second: a worker process exits right after stop(), and a stop that did not wait would
    leave a heartbeat that the console and the other processes read as a death."""
    from django.db import transaction
    from django.db.models import F

    settings.CRAWLER_LEASE_SECONDS = 1.2
    settings.CRAWLER_HEARTBEAT_SECONDS = 0.1
    frontier.add_seeds([f"{pages}/0"])
    engine = SessionEngine(fetch_threads=1, name="worker-slow-stop").start()
    held, release = threading.Event(), threading.Event()

    def hold_the_row(row_id):
        try:
            with transaction.atomic():  # a write lock on the row (the whole file on SQLite)
                ProcessHeartbeat.objects.filter(pk=row_id).update(requests=F("requests"))
                held.set()
                release.wait(10)
        finally:
            connection.close()

    holder = None
    try:
        for lease in frontier.lease_ready_hosts("test", 5):
            engine.submit(lease)
        row = wait_until(lambda: ProcessHeartbeat.objects.filter(requests__gte=2, stopped_at=None).first())
        holder = threading.Thread(target=hold_the_row, args=(row.id,))
        holder.start()
        assert held.wait(10)
        threading.Timer(2.5, release.set).start()  # longer than any fixed short join
        engine.stop()
    finally:
        release.set()
        if holder is not None:
            holder.join(10)
    assert ProcessHeartbeat.objects.get(pk=row.id).stopped_at is not None


def test_a_lease_given_back_is_free_at_once_and_the_engine_goes_on_opening_sessions(pages):
    """A Celery worker whose engine stays full gives its next lease back (crawl/runners.py):
    the host can be leased again at once, and the same engine still opens later leases."""
    frontier.add_seeds([f"{pages}/given-back"])
    (given,) = frontier.lease_ready_hosts("test", 5)
    engine = SessionEngine(fetch_threads=1, name="give-back-test").start()
    try:
        engine.give_back(given)
        wait_until(lambda: Host.objects.filter(id=given.host_id, lease_owner="").exists(), 10,
                   "the given-back host to be released")
        assert Url.objects.get().last_fetched_at is None
        (again,) = frontier.lease_ready_hosts("test", 5)
        assert again.host_id == given.host_id and again.token != given.token
        engine.submit(again)
        wait_until(lambda: Url.objects.exclude(last_fetched_at=None).exists(), 15,
                   "the page of the next lease to be fetched")
    finally:
        engine.stop()


def test_a_process_whose_heartbeat_ages_goes_stale(settings):
    assert liveness.beat("worker", "w-1", sessions=2, requests=10)
    now = timezone.now()
    assert health.liveness(now)["processes"][0]["state"] == "online"
    later = now + timedelta(seconds=settings.CRAWLER_HEARTBEAT_STALE_SECONDS + 1)
    live = health.liveness(later)
    assert live["processes"][0]["state"] == "stale"
    assert live["workers_online"] == 0


def test_heartbeats_are_throttled_and_a_dispatcher_adds_up_its_leases(settings):
    settings.CRAWLER_HEARTBEAT_SECONDS = 60
    assert liveness.beat("dispatcher", "d-1", leased=3)
    assert not liveness.beat("dispatcher", "d-1", leased=2)  # within the period: remembered, not written
    assert ProcessHeartbeat.objects.get().leases == 3
    assert liveness.beat("dispatcher", "d-1", stopped=True)  # the last word is always written
    row = ProcessHeartbeat.objects.get()
    assert (row.leases, row.stopped_at is not None, row.last_lease_at is not None) == (5, True, True)


def test_a_heartbeat_that_cannot_be_written_never_reaches_the_caller(monkeypatch):
    def refuse(*args, **kwargs):
        raise DatabaseError("the database is away")

    monkeypatch.setattr(ProcessHeartbeat.objects, "update_or_create", refuse)
    assert liveness.beat("worker", "w-1", sessions=1, requests=1) is False


def test_old_heartbeats_are_deleted_after_the_retention(settings):
    ProcessHeartbeat.objects.create(kind="worker", name="gone", hostname="h", pid=1,
                                    seen_at=timezone.now() - timedelta(hours=settings.CRAWLER_HEARTBEAT_RETENTION_HOURS + 1))
    liveness.beat("worker", "new", requests=0)
    assert list(ProcessHeartbeat.objects.values_list("name", flat=True)) == ["new"]


# --- the crawl's state ----------------------------------------------------------------------------

def test_the_crawl_is_stalled_when_urls_are_due_and_nothing_is_fetched(settings):
    settings.CRAWLER_STALLED_SECONDS = 60
    now = timezone.now()
    assert health.crawl_state()["state"] == "idle"

    frontier.add_urls([frontier.Candidate("http://due.test/a")])
    assert health.crawl_state()["state"] == "waiting"  # due just now: not overdue yet

    long_ago = now - timedelta(seconds=120)
    Url.objects.update(next_fetch_at=long_ago)
    Host.objects.update(next_fetch_at=long_ago)
    stalled = health.crawl_state()
    assert stalled["state"] == "stalled" and stalled["last_request_at"] is None

    heartbeat = ProcessHeartbeat.objects.create(kind="worker", name="w", hostname="h", pid=1, last_request_at=now)
    assert health.crawl_state()["state"] == "crawling"
    heartbeat.last_request_at = now - timedelta(seconds=61)
    heartbeat.save()
    assert health.crawl_state()["state"] == "stalled"  # the worker stopped sending

    Host.objects.update(paused_at=now)  # an operator's pause is not a stall
    assert health.crawl_state()["state"] == "waiting"
    CrawlLimits.objects.create(paused_at=now)
    paused = health.crawl_state()
    assert paused["state"] == "paused" and paused["paused_since"] == now.isoformat()


def test_a_host_held_back_by_its_own_delay_is_not_a_stall(settings):
    settings.CRAWLER_STALLED_SECONDS = 60
    frontier.add_urls([frontier.Candidate("http://slow.test/a")])
    Url.objects.update(next_fetch_at=timezone.now() - timedelta(seconds=120))
    Host.objects.update(next_fetch_at=timezone.now() + timedelta(minutes=5), wait_reason="retry_after_429")
    assert health.crawl_state()["state"] == "waiting"


# --- beat --------------------------------------------------------------------------------------------

def test_beat_shows_when_it_last_ran_and_when_it_is_late():
    ensure_periodic_tasks()
    now = timezone.now()
    PeriodicTask.objects.update(last_run_at=None)
    never = health.beat_runs(now)
    assert never["last_run_at"] is None and never["late"] is True
    PeriodicTask.objects.filter(task="console.sample_metrics").update(last_run_at=now - timedelta(seconds=10))
    recent = health.beat_runs(now)
    assert recent["seconds_ago"] == 10.0 and recent["late"] is False
    assert {t["task"] for t in recent["tasks"]} >= {"console.sample_metrics", "frontier.sweep_expired_leases"}
    PeriodicTask.objects.update(last_run_at=now - timedelta(hours=2))
    assert health.beat_runs(now)["late"] is True


# --- how the crawl runs --------------------------------------------------------------------------

def test_the_mode_is_embedded_on_sqlite_and_read_from_the_processes_on_postgresql():
    ensure_periodic_tasks()
    now = timezone.now()
    for pid in (1, 2):
        ProcessHeartbeat.objects.create(kind="worker", name=f"w-{pid}", hostname="h", pid=pid)
    PeriodicTask.objects.update(last_run_at=now - timedelta(minutes=20))  # beat ran, and stopped
    mode = health.liveness(now)["mode"]
    if connection.vendor == "sqlite":  # one machine, no broker: whatever rows say
        assert (mode["mode"], mode["label"]) == ("embedded", "embedded (SQLite, no crawl running)")
        return
    assert (mode["mode"], mode["label"]) == ("distributed", "distributed: 2 workers, no dispatcher, "
                                                            "beat late (last run 20 min ago)")
    ProcessHeartbeat.objects.all().delete()
    ProcessHeartbeat.objects.create(kind="embedded", name="embedded", hostname="h", pid=3,
                                    seen_at=now - timedelta(minutes=2), stopped_at=now - timedelta(minutes=2))
    assert health.liveness(now)["mode"]["mode"] == "embedded"  # the last one heard from


# --- Flower's names, the favicon -------------------------------------------------------------------------

class Recorder:
    """Stands in for the Celery app: keeps what the dispatcher sends."""

    def __init__(self):
        self.sent = []

    def send_task(self, name, **options):
        self.sent.append((name, options))


def test_the_dispatcher_names_each_session_task_after_its_host(monkeypatch):
    from celery.worker.request import Request
    from kombu import Connection, Exchange, Queue

    import crawl.tasks  # noqa: F401 - registers fetch.host_session, as a worker's autodiscovery does
    from crawlerweb.celery import app as celery_app

    monkeypatch.setattr(runners, "dispatch_room", lambda app: 10)
    frontier.add_urls([frontier.Candidate("http://a.test/1"), frontier.Candidate("http://b.test:8080/2")])
    recorder = Recorder()
    assert runners.dispatch_once("d-1", recorder) == 2
    assert sorted(options["shadow"] for _, options in recorder.sent) == [
        "fetch.host_session[http://a.test]", "fetch.host_session[http://b.test:8080]"]
    assert {name for name, _ in recorder.sent} == {runners.SESSION_TASK}  # the task the worker runs

    # What Flower hears of such a message: the dispatcher's task-sent event and the worker's
    # task-received event (the worker's request) both name it by the shadow, whichever comes
    # last; the task the worker runs is still fetch.host_session.
    name, options = recorder.sent[0]
    with Connection("memory://") as conn:
        queue = celery_app.amqp.queues[options["queue"]]
        queue(conn.default_channel).declare()
        exchange = celery_app.events.Dispatcher(enabled=False).exchange  # celeryev, typed for the broker
        events = Queue("events", Exchange(exchange.name, type=exchange.type), routing_key="#")
        events(conn.default_channel).declare()
        celery_app.send_task(name, connection=conn, **options)
        message = conn.SimpleQueue(queue).get(timeout=1)
        sent_event = conn.SimpleQueue(events).get(timeout=1).payload
        request = Request(message, app=celery_app)
    assert message.headers["shadow"] == options["shadow"]
    assert sent_event["type"] == "task-sent" and sent_event["name"] == options["shadow"]
    assert request.name == options["shadow"] and request.type == runners.SESSION_TASK


def test_the_dispatcher_reports_its_leases_and_its_stop(monkeypatch, settings):
    settings.CRAWLER_HEARTBEAT_SECONDS = 0.05
    monkeypatch.setattr(runners, "dispatch_room", lambda app: 10)
    frontier.add_urls([frontier.Candidate("http://a.test/1"), frontier.Candidate("http://b.test/2")])
    recorder, stop = Recorder(), threading.Event()
    thread = threading.Thread(target=runners.run_dispatcher, args=("d-1", recorder, stop))
    thread.start()
    try:
        wait_until(lambda: ProcessHeartbeat.objects.filter(kind="dispatcher", leases=2).exists())
        (process,) = health.liveness()["processes"]
        assert (process["state"], process["name"]) == ("online", "d-1") and process["last_lease_at"]
        assert health.liveness()["dispatchers_online"] == 1
    finally:
        stop.set()
        thread.join(10)
    assert ProcessHeartbeat.objects.get().stopped_at is not None


def _started(target, *args, **kwargs) -> threading.Thread:
    """`target` running in a thread that closes its own database connection when it ends."""
    def run():
        try:
            target(*args, **kwargs)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


@pytest.mark.postgres
def test_an_idle_dispatcher_sleeps_until_work_is_announced(monkeypatch, settings):
    """Nothing to lease: the dispatcher waits on its notification channel rather than
    polling, and URLs added by another process wake it at once."""
    settings.CRAWLER_DISPATCH_IDLE_WAIT, settings.CRAWLER_DISPATCH_IDLE_WAIT_LONGEST = 8.0, 30.0
    monkeypatch.setattr(runners, "dispatch_room", lambda app: 10)
    rounds, real_round = [], runners._dispatch_round
    monkeypatch.setattr(runners, "_dispatch_round",
                        lambda name, app: rounds.append(len(recorder.sent)) or real_round(name, app))
    recorder, stop = Recorder(), threading.Event()
    thread = _started(runners.run_dispatcher, "d-idle", recorder, stop)
    try:
        wait_until(lambda: rounds, 10, "the first round")
        added = frontier.add_urls([frontier.Candidate("http://a.test/1")])  # another process's links
        assert added.admitted == 1
        # Without the notification the dispatcher looks again only after its 8 s wait.
        wait_until(lambda: recorder.sent, 4, "the dispatcher to lease the new host")
        wait_until(lambda: len(rounds) >= 3, 4, "the round after the lease")
        assert rounds[:3] == [0, 0, 1]  # nothing, then woken by the new URL: leased it
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()


@pytest.mark.postgres
def test_a_dispatchers_lost_listening_connection_is_made_again(monkeypatch):
    """The database restarted: the listener polls meanwhile, then listens again."""
    monkeypatch.setattr(frontier.WorkListener, "RECONNECT_SECONDS", 0.0)
    listener, stop = frontier.WorkListener(), threading.Event()
    try:
        assert listener.available()
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [listener._conn.info.backend_pid])
            assert cursor.fetchone() == (True,)
        assert listener.wait(2.0, stop) is False  # the broken connection is noticed, not raised
        assert listener.available()  # connected again
        frontier_wakeups.announce()
        assert listener.wait(5.0, stop) is True
    finally:
        listener.close()


def test_an_idle_continuous_crawl_sleeps_and_still_stops_at_once(monkeypatch, settings):
    """`crawl --continuous` with nothing to do: the loop's waits double up to the longest
    idle wait instead of leasing every 0.4 s, and a stop (Ctrl-C) is seen at once."""
    settings.CRAWLER_DISPATCH_IDLE_WAIT, settings.CRAWLER_DISPATCH_IDLE_WAIT_LONGEST = 0.5, 30.0
    rounds, real_lease = [], frontier.lease_ready_hosts
    monkeypatch.setattr(frontier, "lease_ready_hosts", lambda *a, **k: rounds.append(1) or real_lease(*a, **k))
    stop = threading.Event()
    thread = _started(runners.run_embedded, threads=2, continuous=True, stop=stop)
    try:
        wait_until(lambda: rounds, 10, "the first round")
        time.sleep(4.0)  # the span whose lease rounds are counted
        # 0.5, 1, 2 s waits: at most four rounds in four seconds (polling every 0.4 s: ten).
        assert len(rounds) <= 4, rounds
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()  # it was in a wait of 4 s or more, and left it when stopped


def test_the_favicon_answers(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 200 and response["Content-Type"] == "image/x-icon"
    assert b"".join(response.streaming_content)[:4] == b"\x00\x00\x01\x00"  # an ICO header
