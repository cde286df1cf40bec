"""Celery tasks: thin wrappers that unpack IDs and call plain functions (Celery's testing
guide: tasks handle serialization and routing, the logic lives elsewhere)."""

from celery import shared_task, signals

from . import instruments, runners


@shared_task(name=runners.SESSION_TASK, ignore_result=True)
def host_session(host_id: int, token: str, url_ids: list[int], address: str = "") -> bool:
    """Hand a host session to this worker process's engine (returns once it is taken in)."""
    return runners.run_worker_session(host_id, token, url_ids, address)


@signals.worker_process_shutdown.connect  # a prefork pool child exits
@signals.worker_shutdown.connect  # the worker itself (threads and solo pools run the engine here)
def _end_sessions(**kwargs) -> None:
    runners.stop_worker_engine()


# --- Prometheus (crawl/instruments.py): one exporter per machine, served by the worker's
# main process; its pool children write to the machine's metrics directory. Connected when
# Django starts (CrawlConfig.ready), which a worker does before it sends worker_init.

@signals.worker_init.connect
def _serve_metrics(sender=None, **_):
    instruments.serve_machine_metrics()
    if "prefork" not in getattr(getattr(sender, "pool_cls", None), "__module__", ""):  # threads/solo: main fetches
        instruments.process_started("worker")


@signals.worker_process_init.connect
def _pool_child_started(**_):
    instruments.process_started("worker")


@signals.worker_process_shutdown.connect
@signals.worker_shutdown.connect
def _process_stopping(**_):
    instruments.process_stopped()


@signals.after_task_publish.connect
def _count_sent_sessions(sender=None, **kwargs):
    instruments.session_published(sender, **kwargs)
