"""One beat at a time (console/beatleader.py): a second `celery beat` started by mistake
sends nothing while the first leads, and takes over when the first dies."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from django.db import connection, transaction
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from console.beatleader import give_up_lead, hold_lead
from console.models import BeatLeader

from ..crawl_helpers import child_env, wait_until

ROOT = Path(__file__).resolve().parents[2]
QUEUE = "beat-leader-test"  # nobody consumes it: its length counts what beat sent

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_lead_is_held_renewed_and_taken_over_only_once_expired(settings):
    settings.CRAWLER_BEAT_LEASE_SECONDS = 30
    assert hold_lead("a") and hold_lead("a")  # taken, renewed
    assert not hold_lead("b")  # the second waits
    BeatLeader.objects.filter(pk=1).update(until=BeatLeader.objects.get(pk=1).since)  # a's lease ran out
    assert hold_lead("b") and not hold_lead("a")
    give_up_lead("b")  # a clean stop
    assert hold_lead("a")


def leader_pid() -> int | None:
    row = BeatLeader.objects.filter(pk=1).values_list("holder", flat=True).first()
    return int(row.split(":")[1]) if row else None


def start_beat(tmp_path, name, env, loglevel="WARNING"):
    return subprocess.Popen([sys.executable, "-m", "celery", "-A", "crawlerweb", "beat", "--loglevel", loglevel,
                             "--pidfile=", "-s", str(tmp_path / f"{name}-schedule")], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=open(tmp_path / f"{name}.log", "w"))


def stop_beat(proc, tmp_path, name, signal_now=True) -> int:
    """Stop a beat as a supervisor does (SIGTERM); a beat that has not stopped 20 s later is
    killed and fails the test with its log."""
    if signal_now:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
        pytest.fail(f"beat {name} did not stop within 20 s of SIGTERM; its log:\n"
                    + (tmp_path / f"{name}.log").read_text()[-3000:])


def one_task_a_second() -> None:
    PeriodicTask.objects.all().delete()
    every_second, _ = IntervalSchedule.objects.get_or_create(every=1, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.create(name="tick", task="console.sample_metrics", interval=every_second, queue=QUEUE)


@pytest.mark.postgres
def test_a_second_beat_sends_nothing_until_the_first_dies(tmp_path):
    one_task_a_second()
    env = child_env(CRAWLER_BEAT_LEASE_SECONDS="3")
    broker = redis.Redis.from_url(env["CELERY_BROKER_URL"])
    broker.flushdb()

    first = start_beat(tmp_path, "first", env)
    second = None
    try:
        wait_until(lambda: leader_pid() == first.pid, 30, "the first beat to lead")
        second = start_beat(tmp_path, "second", env)
        wait_until(lambda: "waits: another beat" in (tmp_path / "second.log").read_text(), 30, "the second beat to ask")
        sent, started = broker.llen(QUEUE), time.monotonic()
        time.sleep(6)  # the window the rate is measured over
        one_beat = (broker.llen(QUEUE) - sent) / (time.monotonic() - started)
        assert leader_pid() == first.pid
        assert 0.5 <= one_beat <= 1.5, f"{one_beat:.2f} messages a second for a 1 s task: not one beat's worth"
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        wait_until(lambda: leader_pid() == second.pid, 20, "the second beat to take over")
        sent = broker.llen(QUEUE)
        wait_until(lambda: broker.llen(QUEUE) - sent >= 2, 10, "the second beat to send once it leads")
        assert stop_beat(second, tmp_path, "second") == 0
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    assert BeatLeader.objects.get(pk=1).holder == ""  # the second stopped cleanly and gave the lead up


def beat_waits_on_a_row_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")  # else a transaction sees its first read again
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                       " AND wait_event_type = 'Lock' AND query LIKE %s", [f"%{BeatLeader._meta.db_table}%"])
        return cursor.fetchone()[0] > 0


@pytest.mark.postgres
def test_a_beat_stopped_while_its_tick_waits_on_the_database_stops_and_gives_the_lead_up(tmp_path):
    """Celery's own SIGTERM handler saves the schedule from inside the handler: with the tick's
    query in flight (holding psycopg's connection lock) that save waited for the lock forever,
    and the beat never stopped (seen in CI). Here the tick's UPDATE of the lead waits on a row
    lock this test holds while the beat is told to stop."""
    one_task_a_second()
    env = child_env(CRAWLER_BEAT_LEASE_SECONDS="3")
    redis.Redis.from_url(env["CELERY_BROKER_URL"]).flushdb()
    beat = start_beat(tmp_path, "beat", env, loglevel="INFO")  # INFO: Celery's "Shutting down" line
    try:
        wait_until(lambda: leader_pid() == beat.pid, 30, "the beat to lead")
        with transaction.atomic():
            BeatLeader.objects.select_for_update().get(pk=1)
            wait_until(beat_waits_on_a_row_lock, 10, "the beat's tick to wait on the lead's row")
            beat.send_signal(signal.SIGTERM)
            # The handler has run (service.stop() logs this) while the query is still in flight.
            wait_until(lambda: "beat: Shutting down" in (tmp_path / "beat.log").read_text(), 10,
                       "the beat's signal handler to run")
            assert beat.poll() is None  # it cannot stop before its query ends
        assert stop_beat(beat, tmp_path, "beat", signal_now=False) == 0  # once its query is through
    finally:
        if beat.poll() is None:
            beat.kill()
            beat.wait(timeout=10)
    assert BeatLeader.objects.get(pk=1).holder == ""
