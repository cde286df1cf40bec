"""The raw ceiling: the same pages fetched with the same HTTP client (fetch.http) and parsed
with the same parser (indexer.parse), in a bare loop with no frontier, no database and no
broker. The pipeline's throughput is reported as a fraction of this.

Like the crawler, it keeps one request in flight per host: each thread takes a whole host
and fetches its URLs back to back on one kept-alive connection. It uses one process per
core, each with several threads, so it is the best this machine does for this work.

    python -m bench.ceiling --urls-file URLS [--processes 2] [--threads 8]

Prints one JSON line: pages, elapsed_seconds, pages_per_second, cpu_seconds.
"""

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from urllib.parse import urlsplit


def _setup():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")
    import django

    django.setup()


def _host_loop(urls: list[str]) -> int:
    from fetch import http
    from indexer.parse import parse_html

    pages = 0
    for url in urls:
        result = http.fetch(url, body_types=("text/html", "application/xhtml+xml"))
        if result.status and result.body:
            parse_html(result.body, url, result.charset)
        pages += 1
    return pages


def _process(host_groups: list[list[str]], threads: int) -> tuple[int, float]:
    started = time.process_time()
    with ThreadPoolExecutor(threads) as pool:
        pages = sum(pool.map(_host_loop, host_groups))
    return pages, time.process_time() - started


def run(urls: list[str], processes: int, threads: int) -> dict:
    by_host = defaultdict(list)
    for url in urls:
        by_host[urlsplit(url).netloc].append(url)
    groups = sorted(by_host.values(), key=len, reverse=True)
    shares = [groups[i::processes] for i in range(processes)]
    with ProcessPoolExecutor(processes, initializer=_setup) as pool:
        list(pool.map(_setup_probe, range(processes)))  # start (and import) before the clock
        started = time.monotonic()
        results = list(pool.map(_process, shares, [threads] * processes))
        elapsed = time.monotonic() - started
    pages = sum(p for p, _ in results)
    return {
        "pages": pages,
        "elapsed_seconds": round(elapsed, 3),
        "pages_per_second": round(pages / elapsed, 1),
        "cpu_seconds": round(sum(c for _, c in results), 3),
        "cpu_ms_per_page": round(1000 * sum(c for _, c in results) / max(pages, 1), 3),
        "processes": processes,
        "threads": threads,
    }


def _setup_probe(_):
    import fetch.http  # noqa: F401
    import indexer.parse  # noqa: F401

    return os.getpid()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--urls-file", required=True)
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args(argv)
    with open(args.urls_file) as handle:
        urls = [line.strip() for line in handle if line.strip()]
    print(json.dumps(run(urls, args.processes, args.threads)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
