"""The Celery app. Queues: fetch.0 … fetch.N-1 (hosts sharded by a stable hash) and
`maintenance` (beat jobs). A worker started without -Q consumes all of them."""

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")

app = Celery("crawlerweb", amqp="crawl.tasknames:AMQP")  # task-sent events carry the shadow name too
app.config_from_object("django.conf:settings", namespace="CELERY")

from django.conf import settings  # noqa: E402  (after the settings module is chosen)

app.conf.task_queues = [Queue(f"fetch.{i}") for i in range(settings.CRAWLER_FETCH_QUEUES)] + [
    Queue("maintenance")
]
app.conf.task_default_queue = "maintenance"
app.autodiscover_tasks()
