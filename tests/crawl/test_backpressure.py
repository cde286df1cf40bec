"""Back-pressure: with nobody consuming the fetch queues, leases expiring and hosts being
leased again, the dispatcher stops adding at 80% of CRAWLER_MAX_QUEUED_MESSAGES instead of
letting the broker grow without bound; when the queues drain it resumes."""

from datetime import timedelta

import pytest
import redis
from celery import Celery
from django.utils import timezone

from crawl import runners
from frontier import service
from frontier.models import Host

from ..crawl_helpers import BROKER

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def broker():
    client = redis.Redis.from_url(BROKER)
    client.flushdb()
    app = Celery("backpressure-test", broker=BROKER)
    yield app, client
    client.flushdb()
    app.close()


def messages_in_redis(client) -> int:
    """Counted from Redis itself, not through the code under test."""
    return sum(client.llen(key) for key in client.scan_iter("fetch.*"))


def expire_all_leases():
    Host.objects.update(leased_until=timezone.now() - timedelta(seconds=1))


def test_the_dispatcher_stops_at_the_high_water_mark_and_resumes_when_drained(settings, broker):
    app, client = broker
    settings.CRAWLER_MAX_QUEUED_MESSAGES = 50
    settings.CRAWLER_DISPATCH_BATCH = 30
    settings.CRAWLER_MAX_ACTIVE_LEASES = 1000
    settings.CRAWLER_DEFAULT_DELAY = 0
    service.add_seeds([f"http://127.0.0.{n // 250 + 2}:{1000 + n % 250}/" for n in range(300)])

    sent = []
    for _ in range(6):  # a consumer that never comes: every lease expires, hosts are ready again
        sent.append(runners.dispatch_once("d", app))
        expire_all_leases()
    assert messages_in_redis(client) == 40  # 80% of 50, never more
    assert sent[:2] == [30, 10] and sent[2:] == [0, 0, 0, 0]

    client.flushdb()  # the workers catch up
    assert runners.dispatch_once("d", app) == 30
    assert messages_in_redis(client) == 30
