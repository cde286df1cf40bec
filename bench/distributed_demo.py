"""`make demo-distributed`: the sample web crawled by Celery workers and dispatchers on
PostgreSQL + Redis, with figures (pages, pages/s, CPU seconds by process kind) and the
politeness/completeness audit from the sample web's own request log.

Needs DATABASE_URL (postgres://, migrated; its crawl tables are emptied first) and
CELERY_BROKER_URL (its Redis database is flushed first). Prints JSON; exits 1 if the audit
finds a violation or the crawl is incomplete.
"""

import argparse
import json
import os
import sys
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")
django.setup()

import redis  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402

from bench.cluster import run_cluster, wait_for_workers, wait_until_done, worker_name  # noqa: E402
from bench.procstat import cpu_seconds  # noqa: E402
from webs.sampleweb import WebConfig, audit_log, run_server  # noqa: E402
from crawlerweb.celery import app  # noqa: E402
from frontier import service  # noqa: E402
from indexer.backends import get_search_backend  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8300)
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--pages-per-host", type=int, default=30)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--dispatchers", type=int, default=2)
    parser.add_argument("--log", default="var/distributed-requests.log")
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args(argv)
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        parser.error("DATABASE_URL must be postgres://… for the distributed demo")

    call_command("flush", "--no-input")
    get_search_backend().clear()
    redis.Redis.from_url(settings.CELERY_BROKER_URL).flushdb()
    config = WebConfig(hosts=args.hosts, pages_per_host=args.pages_per_host, port=args.port)
    with run_server(config, args.log) as web:
        # concurrency=None: each worker as `celery -A crawlerweb worker` starts it (its default pool)
        with run_cluster(dict(os.environ), workers=args.workers, dispatchers=args.dispatchers,
                         concurrency=None) as cluster:
            wait_for_workers(app, [worker_name(i) for i in range(args.workers)])  # before the clock starts
            started = time.monotonic()
            service.add_seeds(web.seeds, service.ScopeSpec("web"))
            finished = wait_until_done(service.has_pending_work, cluster, args.timeout)
            web_cpu = cpu_seconds(web.server_pid)
        elapsed = finished - started
    summary = service.crawl_summary()
    depth = settings.CRAWLER_DEPTH_LIMIT
    audit = audit_log(args.log, web, settings.CRAWLER_DEFAULT_DELAY, depth_limit=depth)
    pages = summary["fetched"]
    crawler_cpu = sum(cluster.cpu.values())
    report = {
        "mode": f"distributed: {args.workers} workers x {settings.CELERY_WORKER_CONCURRENCY} pool processes "
                f"(one session engine each), "
                f"{args.dispatchers} dispatchers",
        "pages_fetched": pages,
        "requests_in_server_log": audit["requests"],
        "elapsed_seconds": round(elapsed, 2),
        "pages_per_second": round(pages / elapsed, 1),
        "cpu_seconds": {kind: round(sum(v for k, v in cluster.cpu.items() if k.startswith(kind)), 2)
                        for kind in ("worker", "dispatcher")} | {"sample_web": round(web_cpu, 2)},
        "crawler_cpu_ms_per_page": round(1000 * crawler_cpu / max(pages, 1), 1),
        "ground_truth": len(web.ground_truth(depth_limit=depth)),
        "missing": len(audit["missing"]),
        "unexpected": len(audit["unexpected"]),
        "duplicate_fetches": len(audit["duplicate_fetches"]),
        "violations": audit["violations"],
        "by_state": summary["by_state"],
    }
    print(json.dumps(report, indent=2))
    return 1 if audit["violations"] or audit["missing"] or audit["unexpected"] else 0


if __name__ == "__main__":
    sys.exit(main())
