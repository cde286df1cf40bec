"""Beat's tasks for the console: thin wrappers, the work is in metrics.py."""

from celery import shared_task

from . import metrics


@shared_task(name="console.sample_metrics", ignore_result=True)
def sample_metrics() -> int:
    return metrics.sample().id
