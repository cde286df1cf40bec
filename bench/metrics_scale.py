"""What the operator's surfaces cost on a big frontier: /metrics and the admin's URL list.

For each frontier size (default 10,000 and 1,000,000 URLs over 1,000 hosts; preloaded
like bench.frontier_scale, then 60% marked fetched, 5% gone, 2% retrying) it times, as
the median of --repeat runs:
  - a fresh metrics sample (what beat's task or a request finding a stale sample pays:
    one grouped scan of the URL table plus the host, document and broker figures);
  - GET /metrics served from a cached sample (what a Prometheus scrape usually pays), JSON
    and Prometheus text;
  - GET /metrics in Prometheus text taking a fresh sample itself (what a scrape pays when
    beat is not sampling and the newest sample is older than CRAWLER_METRICS_MAX_AGE);
  - the admin's URL list, unfiltered and filtered by state (no full COUNT(*)).

    DATABASE_URL=postgres://…/crawlerweb_bench python -m bench.metrics_scale
"""

import argparse
import json
import os
import statistics
import sys
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")
django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import override_settings, setup_test_environment  # noqa: E402

from bench.frontier_scale import preload  # noqa: E402
from console import metrics  # noqa: E402
from console.keys import create_key  # noqa: E402
from console.models import MetricSample  # noqa: E402


def age_the_crawl() -> None:
    """Give the preloaded (all queued) frontier a crawl's mix of states."""
    with connection.cursor() as cur:
        cur.execute("""UPDATE frontier_url SET state = 'fetched', last_status = 200,
                       last_fetched_at = now() - (id % 1200) * interval '1 second' WHERE id % 100 < 60""")
        cur.execute("""UPDATE frontier_url SET state = 'gone', last_status = 404, outcome = 'http_404',
                       last_fetched_at = now() WHERE id % 100 BETWEEN 60 AND 64""")
        cur.execute("""UPDATE frontier_url SET attempts = 1, last_status = 503, outcome = 'http_503',
                       last_fetched_at = now() WHERE id % 100 BETWEEN 65 AND 66""")
        cur.execute("VACUUM ANALYZE frontier_url")


def timed(action, repeat: int) -> float:
    """Median wall milliseconds of `action` over `repeat` runs."""
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        runs.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(runs), 1)


def measure(size: int, repeat: int) -> dict:
    preload(size)
    age_the_crawl()
    MetricSample.objects.all().delete()
    key = create_key("bench")[1]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    admin = Client()
    User.objects.filter(username="bench-admin").delete()
    admin.force_login(User.objects.create_superuser("bench-admin", password="unused"))

    def get(c, path, **extra):
        response = c.get(path, **extra)
        assert response.status_code == 200, (path, response.status_code)

    def scrape_with_a_fresh_sample():
        with override_settings(CRAWLER_METRICS_MAX_AGE=0):
            get(client, "/metrics?format=prometheus")

    figures = {
        "urls": size,
        "fresh_sample_ms": timed(metrics.sample, repeat),
        "metrics_json_cached_ms": timed(lambda: get(client, "/metrics"), repeat),
        "metrics_prometheus_cached_ms": timed(lambda: get(client, "/metrics?format=prometheus"), repeat),
        "metrics_prometheus_fresh_ms": timed(scrape_with_a_fresh_sample, repeat),
        "admin_url_list_ms": timed(lambda: get(admin, "/admin/frontier/url/"), repeat),
        "admin_url_list_queued_ms": timed(lambda: get(admin, "/admin/frontier/url/?state=queued"), repeat),
    }
    print(json.dumps(figures), flush=True)
    return figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,1000000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default="var/bench/metrics-scale.json")
    args = parser.parse_args(argv)
    if connection.vendor != "postgresql":
        sys.exit("bench.metrics_scale needs DATABASE_URL=postgres://…")
    setup_test_environment()  # the test client's response.context etc., no other effect
    results = [measure(int(size), args.repeat) for size in args.sizes.split(",")]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=2)
    print(f"{'URLs':>10} {'fresh sample':>13} {'/metrics json':>14} {'/metrics prom':>14} {'prom, fresh':>12} "
          f"{'admin list':>11} {'admin queued':>13}   (median ms)")
    for r in results:
        print(f"{r['urls']:>10,} {r['fresh_sample_ms']:>13} {r['metrics_json_cached_ms']:>14} "
              f"{r['metrics_prometheus_cached_ms']:>14} {r['metrics_prometheus_fresh_ms']:>12} "
              f"{r['admin_url_list_ms']:>11} {r['admin_url_list_queued_ms']:>13}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
