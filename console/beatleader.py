"""One beat at a time: two `celery beat` processes started by mistake must not send the
periodic tasks twice (the recrawl release and plan, the metrics sample, the lease sweep).

LeaderScheduler is django-celery-beat's DatabaseScheduler behind a leader lease: one
BeatLeader row, taken and renewed with a conditional UPDATE (held by me, or expired), on
every tick. A beat that does not hold it sends nothing and asks again every few seconds
(it waits); when the leader dies, its lease runs out after CRAWLER_BEAT_LEASE_SECONDS and
the waiting beat takes over, re-reading the schedule (and each task's last run) from the
database first, so that it does not run at once what the old leader ran a moment ago. A
clean stop gives the lead up at once.

The tasks are safe to run twice anyway (release_due spends a time-based budget under a
row lock; a plan is idempotent); the lease makes a second beat cost nothing as well.

Stopping: Celery's beat saves the schedule from inside its SIGTERM/SIGINT handler. Python
runs a handler in the main thread between two steps of whatever it was doing, and with
psycopg 3 that can be the middle of a query, holding the connection's (non-reentrant) lock:
the handler's own query then waits for that lock forever, and the beat never exits (seen in
CI while a tick waited on the database). So a beat on this scheduler stops without any
database work in the handler: the handler asks the loop to stop, and only when no query is
running interrupts its sleep; the tick or save in flight ends normally, and the loop's own
`finally` gives the lead up and saves the schedule.
"""

import logging
import os
import socket
import threading
import uuid
from datetime import timedelta

from celery import platforms
from celery.signals import beat_init
from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from django_celery_beat.schedulers import DatabaseScheduler

from common.dbconn import reset_connection

from .models import BeatLeader

log = logging.getLogger(__name__)


def hold_lead(holder: str) -> bool:
    """Take or renew the lead for `holder`: True while it holds it."""
    now = timezone.now()
    BeatLeader.objects.get_or_create(pk=1)
    taken = BeatLeader.objects.filter(pk=1).filter(Q(holder=holder) | Q(until__isnull=True) | Q(until__lt=now))
    changed = taken.update(holder=holder, until=now + timedelta(seconds=settings.CRAWLER_BEAT_LEASE_SECONDS))
    if changed:
        BeatLeader.objects.filter(pk=1, holder=holder, since__isnull=True).update(since=now)
    return bool(changed)


def give_up_lead(holder: str) -> None:
    BeatLeader.objects.filter(pk=1, holder=holder).update(holder="", until=None, since=None)


class LeaderScheduler(DatabaseScheduler):
    def __init__(self, *args, **kwargs):
        self.holder = f"{socket.gethostname()[:30]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self.leading = False
        self.told_waiting = False  # said once in its log that another beat leads
        self.database_work = 0  # > 0 while the main thread may be inside a query
        self.stopping = False
        super().__init__(*args, **kwargs)

    def tick(self, *args, **kwargs):
        self.database_work += 1
        try:
            return self._tick(*args, **kwargs)
        finally:
            self.database_work -= 1

    def sync(self):
        self.database_work += 1
        try:
            super().sync()
        finally:
            self.database_work -= 1

    def _tick(self, *args, **kwargs):
        if self.stopping:
            return 0  # no sleep: the loop sees the stop at once
        try:
            leading = hold_lead(self.holder)
        except Exception:  # noqa: BLE001 - the database is away: send nothing, ask again
            log.warning("could not take the beat lead", exc_info=True)
            reset_connection()
            leading = False
        if leading and not self.leading:
            log.info("beat %s leads: sending the periodic tasks", self.holder)
            self._initial_read, self._heap = True, None  # what the previous leader ran, from the database
        elif self.leading and not leading:
            log.warning("beat %s lost the lead: another beat sends the periodic tasks", self.holder)
        elif not leading and not self.told_waiting:  # a second beat started by mistake: say so
            log.warning("beat %s waits: another beat sends the periodic tasks", self.holder)
            self.told_waiting = True
        self.leading = leading
        if self.stopping:
            return 0
        if not leading:
            return min(self.max_interval, settings.CRAWLER_BEAT_LEASE_SECONDS / 3)
        return min(super().tick(*args, **kwargs), settings.CRAWLER_BEAT_LEASE_SECONDS / 3)

    def close(self):
        self.database_work += 1
        try:
            if self.leading:
                give_up_lead(self.holder)
                self.leading = False
        finally:
            try:
                super().close()
            finally:
                self.database_work -= 1

    def stop_on_signal(self, service) -> None:
        """SIGTERM/SIGINT: stop the beat loop without touching the database here (see the
        module's docstring)."""
        self.stopping = True
        service.stop()  # the loop's `while` ends after this pass
        if not self.database_work:
            raise SystemExit()  # only a sleep to interrupt: no query is in flight


@beat_init.connect
def stop_without_database_work_in_the_handler(sender, **kwargs):
    """Replace Celery's SIGTERM/SIGINT handler (installed just before beat_init is sent) for
    a beat on LeaderScheduler running in the main thread (an embedded beat leaves signals to
    its worker)."""
    scheduler = sender.scheduler
    if not isinstance(scheduler, LeaderScheduler) or threading.current_thread() is not threading.main_thread():
        return

    def handler(signum, frame):
        scheduler.stop_on_signal(sender)

    platforms.signals.update(SIGTERM=handler, SIGINT=handler)
