"""Beat's tasks for the frontier: thin wrappers over service functions."""

from celery import shared_task

from . import service


@shared_task(name="frontier.sweep_expired_leases", ignore_result=True)
def sweep_expired_leases() -> int:
    return service.sweep_expired_leases()


@shared_task(name="frontier.release_due_urls", ignore_result=True)
def release_due_urls() -> int:
    """Move URLs whose revisit (or back-off retry, or recheck) is due back into the fetch
    queue, within the recrawl budget (frontier/recrawl.py)."""
    return service.release_due()


@shared_task(name="frontier.plan_recrawl", ignore_result=True)
def plan_recrawl() -> float:
    """Solve the recrawl budget's price from every URL's change-rate estimate."""
    return service.plan_recrawl().price
