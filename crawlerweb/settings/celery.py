"""Celery's settings (distributed mode). Every choice is deliberate; docs/robustness.md
explains each against failures."""

import os

from .env import BASE_DIR, SettingError, envbool, envchoice, envfloat, envfloatlist, envint, envlist, envnetworks, envstr  # noqa: F401

CELERY_BROKER_URL = envstr("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
# Every choice below is deliberate; docs/robustness.md explains each against failures.
# Messages are hints, the database is the truth: a fetch message names a host lease. If a
# worker dies holding one, the lease expires and a dispatcher hands the host out again, so a
# lost message costs nothing. Early ack therefore; late ack would only add redeliveries of
# stale leases (begin_lease refuses them, but each costs a round trip).
CELERY_TASK_ACKS_LATE = False
CELERY_TASK_REJECT_ON_WORKER_LOST = False  # meaningful only with late ack
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False  # idem
# One message reserved per pool slot: a dying worker strands as little as possible.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Redis: reserved-but-unacked messages of a dead worker come back after the visibility
# timeout; by then their leases (CRAWLER_LEASE_SECONDS, far shorter) have expired and the
# redelivered message is refused by its stale token. Short socket timeouts and a health
# check make workers notice a restarted Redis quickly and reconnect.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": 3600,
    "socket_timeout": 10,
    "socket_connect_timeout": 5,
    "health_check_interval": 10,
    "retry_on_timeout": True,
}
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None  # forever: a broker restart must not stop a worker
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery 5.7.0 can crash a worker while it reconnects to a restarted Redis: see the module.
CELERY_WORKER_CONSUMER = "crawlerweb.worker_consumer:Consumer"
# A task only hands a host session to its process's engine (crawl/engine.py), which holds
# CRAWLER_SESSIONS_PER_PROCESS of them on CRAWLER_FETCH_THREADS threads; the pool's job is
# to give each core an engine: prefork, one child per core (parsing needs the CPU, and one
# Python process uses one core).
CELERY_WORKER_POOL = envstr("CELERY_WORKER_POOL", "prefork")
CELERY_WORKER_CONCURRENCY = envint("CELERY_WORKER_CONCURRENCY", os.cpu_count() or 1, minimum=1)
# CELERY_TASK_TIME_LIMIT is set from CRAWLER_LEASE_SECONDS at the end of this file.
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_SEND_TASK_EVENTS = True
CELERY_TASK_SEND_SENT_EVENT = True
# django-celery-beat's DatabaseScheduler behind a leader lease: a second beat waits.
CELERY_BEAT_SCHEDULER = "console.beatleader:LeaderScheduler"
