"""Celery tasks: thin wrappers that unpack IDs and call plain functions (Celery's testing
guide: tasks handle serialization and routing, the logic lives elsewhere)."""

from celery import shared_task
from celery.signals import worker_process_shutdown, worker_shutdown

from . import runners


@shared_task(name=runners.SESSION_TASK, ignore_result=True)
def host_session(host_id: int, token: str, url_ids: list[int], address: str = "") -> bool:
    """Hand a host session to this worker process's engine (returns once it is taken in)."""
    return runners.run_worker_session(host_id, token, url_ids, address)


@worker_process_shutdown.connect  # a prefork pool child exits
@worker_shutdown.connect  # the worker itself (threads and solo pools run the engine here)
def _end_sessions(**kwargs) -> None:
    runners.stop_worker_engine()
