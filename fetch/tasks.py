"""Celery tasks: thin wrappers that unpack IDs and call fetch.service (Celery's testing guide:
tasks handle serialization and routing, the logic lives in plain functions)."""

from celery import shared_task

from . import service

FETCH_TASK = "fetch.fetch_batch"


@shared_task(name=FETCH_TASK, ignore_result=True)
def fetch_batch(host_id: int, token: str, url_ids: list[int]) -> int:
    return service.fetch_batch(host_id, token, url_ids)
