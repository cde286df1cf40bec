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
"""

import logging
import os
import socket
import uuid
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from django_celery_beat.schedulers import DatabaseScheduler

from crawlerweb.dbconn import reset_connection

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
        super().__init__(*args, **kwargs)

    def tick(self, *args, **kwargs):
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
        if not leading:
            return min(self.max_interval, settings.CRAWLER_BEAT_LEASE_SECONDS / 3)
        return min(super().tick(*args, **kwargs), settings.CRAWLER_BEAT_LEASE_SECONDS / 3)

    def close(self):
        try:
            if self.leading:
                give_up_lead(self.holder)
        finally:
            super().close()
