"""Beat's tasks for the frontier: thin wrappers over service functions."""

from celery import shared_task

from . import service


@shared_task(name="frontier.sweep_expired_leases", ignore_result=True)
def sweep_expired_leases() -> int:
    return service.sweep_expired_leases()
