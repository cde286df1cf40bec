"""The embedded runner: the whole crawl in one process, no broker.

The main thread leases ready hosts exactly like the distributed dispatcher and hands each
lease to a thread pool that fetches and parses it (fetch.service.collect_batch, the first
half of what a Celery worker runs). The main thread is the only writer: it records the
batches that finished together (commit_batches, the second half) in one transaction.
SQLite allows one writer at a time, so writing from every thread would only make them
queue for the lock.
It stops by itself when no URL is queued and no lease is outstanding.
"""

import logging
import os
import socket
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from frontier import service as frontier

from .group_commit import groups
from .service import collect_batch, commit_batches, group_weight

log = logging.getLogger(__name__)


@dataclass
class RunStats:
    leases: int = 0
    requests: int = 0
    elapsed: float = 0.0
    cpu_seconds: float = 0.0
    errors: int = 0


def _collect(host: frontier.HostView, lease: frontier.Lease):
    try:
        return collect_batch(host, lease.token, lease.url_ids)
    finally:
        connection.close()  # each pool thread has its own connection; don't leak it


def _commit(group: list, stats: RunStats) -> int:
    """Write the batches that finished together in one go (fetch.service.commit_batches);
    if that fails, each alone, so one bad batch costs only its own lease."""
    try:
        return commit_batches(group)
    except Exception:
        if len(group) == 1:
            log.exception("batch for host %s failed", group[0].host_id)
            stats.errors += 1
            return 0
    return sum(_commit([one], stats) for one in group)


def run_crawl(threads: int | None = None, progress=None, max_seconds: float | None = None) -> RunStats:
    threads = threads or settings.CRAWLER_EMBEDDED_THREADS
    owner = f"embedded-{socket.gethostname()}-{os.getpid()}"
    stats = RunStats()
    started, cpu_started = time.monotonic(), time.process_time()
    in_flight = {}
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="fetch") as pool:
        while True:
            if max_seconds and time.monotonic() - started > max_seconds:
                break
            free = threads - len(in_flight)
            leases = frontier.lease_ready_hosts(owner, free) if free > 0 else []
            for lease in leases:
                host = frontier.begin_lease(lease.host_id, lease.token)
                if host is not None:
                    in_flight[pool.submit(_collect, host, lease)] = lease
            stats.leases += len(leases)
            if in_flight:
                done, _ = wait(list(in_flight), timeout=0.05 if not leases else 0, return_when=FIRST_COMPLETED)
                collected = []
                for future in done:
                    lease = in_flight.pop(future)
                    try:
                        collected.append(future.result())
                    except Exception:  # a bug or a database error: the lease expires, the URL waits
                        log.exception("batch for %s failed", lease.origin)
                        stats.errors += 1
                for group in groups(collected, settings.CRAWLER_COMMIT_GROUP_PAGES, group_weight):
                    stats.requests += _commit(group, stats)
                if progress and done:
                    progress()
            elif not leases:
                if not frontier.has_pending_work():
                    break
                time.sleep(max(0.005, frontier.next_due_in(settings.CRAWLER_DISPATCH_IDLE_WAIT * 4)))
                if progress:
                    progress()
    stats.elapsed = time.monotonic() - started
    stats.cpu_seconds = time.process_time() - cpu_started
    return stats
