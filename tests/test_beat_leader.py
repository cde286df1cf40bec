"""One beat at a time (console/beatleader.py): a second `celery beat` started by mistake
sends nothing while the first leads, and takes over when the first dies."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from console.beatleader import give_up_lead, hold_lead
from console.models import BeatLeader

from .crawl_helpers import child_env, wait_until

ROOT = Path(__file__).resolve().parent.parent
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


@pytest.mark.postgres
def test_a_second_beat_sends_nothing_until_the_first_dies(tmp_path):
    PeriodicTask.objects.all().delete()
    every_second, _ = IntervalSchedule.objects.get_or_create(every=1, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.create(name="tick", task="console.sample_metrics", interval=every_second, queue=QUEUE)
    env = child_env(CRAWLER_BEAT_LEASE_SECONDS="3")
    broker = redis.Redis.from_url(env["CELERY_BROKER_URL"])
    broker.flushdb()

    def beat(name):
        return subprocess.Popen([sys.executable, "-m", "celery", "-A", "crawlerweb", "beat", "--loglevel", "WARNING",
                                 "--pidfile=", "-s", str(tmp_path / f"{name}-schedule")], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=open(tmp_path / f"{name}.log", "w"))

    first = beat("first")
    second = None
    try:
        wait_until(lambda: leader_pid() == first.pid, 30, "the first beat to lead")
        second = beat("second")
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
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=20)
    assert BeatLeader.objects.get(pk=1).holder == ""  # the second stopped cleanly and gave the lead up
