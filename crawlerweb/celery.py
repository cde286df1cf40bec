"""The Celery app. Queues: fetch.0 … fetch.N-1 (hosts sharded by a stable hash) and
`maintenance` (beat jobs). A worker started without -Q consumes all of them."""

import os

from celery import Celery, signals
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


# --- Prometheus (crawl/instruments.py): one exporter per machine, served by the worker's
# main process; its pool children write to the machine's metrics directory.

@signals.worker_init.connect
def _serve_metrics(sender=None, **_):
    from crawl import instruments

    instruments.serve_machine_metrics()
    if "prefork" not in getattr(getattr(sender, "pool_cls", None), "__module__", ""):  # threads/solo: main fetches
        instruments.process_started("worker")


@signals.worker_process_init.connect
def _pool_child_started(**_):
    from crawl import instruments

    instruments.process_started("worker")


@signals.worker_process_shutdown.connect
@signals.worker_shutdown.connect
def _process_stopping(**_):
    from crawl import instruments

    instruments.process_stopped()


@signals.after_task_publish.connect
def _count_sent_sessions(sender=None, **kwargs):
    from crawl import instruments

    instruments.session_published(sender, **kwargs)
