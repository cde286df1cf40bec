"""Frontier scale: does dispatch cost per URL stay flat as the frontier grows to 1M URLs?

For each frontier size (default 10,000 and 1,000,000 queued URLs over 1,000 hosts) the
URL table is filled directly in PostgreSQL (generate_series, so preloading takes seconds),
then the dispatcher's own function, frontier.service.lease_ready_hosts, runs for a number
of rounds; after each round the leased hosts are released as due again, so every round
does the full work of choosing hosts and their best URLs. Also measured: link admission
(frontier.service.add_urls: normalize, seen test against the big table, insert).

Figures per size: wall ms per dispatched URL, dispatcher CPU ms per URL, PostgreSQL CPU
ms per URL, and admission ms per URL; then the 1M/10k ratio of each.

    DATABASE_URL=postgres://…/crawlerweb_bench python -m bench.frontier_scale
"""

import argparse
import json
import os
import sys
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")
django.setup()

from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402

from bench.procstat import ServiceMeter  # noqa: E402
from frontier import service  # noqa: E402

HOSTS = 1000


def preload(urls: int, hosts: int = HOSTS) -> None:
    with connection.cursor() as cur:
        cur.execute("TRUNCATE frontier_url, frontier_host, frontier_deadletter RESTART IDENTITY CASCADE")
        cur.execute(
            """INSERT INTO frontier_host (origin, next_fetch_at, lease_owner, robots_body, robots_error,
                                          robots_sitemaps, wait_reason, url_count, failures, created_at)
               SELECT 'http://h' || i || '.frontier.test', now(), '', '', '', '', '', 0, 0, now()
               FROM generate_series(1, %s) AS i""", [hosts])
        cur.execute(
            """INSERT INTO frontier_url (url_hash, url, host_id, depth, redirect_hops, priority, state, outcome,
                                         attempts, next_fetch_at, content_hash, created_at, scopes, backoff_level,
                                         change_stats, etag, last_modified, last_observation, observations, text_hash)
               SELECT md5('u' || i), 'http://h' || (i %% %s + 1) || '.frontier.test/p/' || i, i %% %s + 1,
                      i %% 5, 0, -(i %% 5), 'queued', '', 0, now(), '', now(), '', 0, '', '', '', '', 0, ''
               FROM generate_series(1, %s) AS i""", [hosts, hosts, urls])
        cur.execute("UPDATE frontier_host h SET url_count = (SELECT count(*) FROM frontier_url u WHERE u.host_id = h.id)")
    with connection.cursor() as cur:
        cur.execute("VACUUM ANALYZE frontier_url")
        cur.execute("VACUUM ANALYZE frontier_host")


def measure_dispatch(rounds: int, hosts_per_round: int = 64) -> dict:
    postgres = ServiceMeter("postgres")
    leased_urls = 0
    postgres.begin()
    cpu, wall = time.process_time(), time.monotonic()
    for _ in range(rounds):
        leases = service.lease_ready_hosts("frontier-bench", hosts_per_round)
        leased_urls += sum(len(lease.url_ids) for lease in leases)
        now = timezone.now()
        for lease in leases:
            service.release_host(lease.host_id, lease.token, now)
    wall, cpu = time.monotonic() - wall, time.process_time() - cpu
    pg = postgres.elapsed_cpu()
    return {
        "rounds": rounds,
        "urls_dispatched": leased_urls,
        "wall_ms_per_url": round(1000 * wall / max(leased_urls, 1), 4),
        "dispatcher_cpu_ms_per_url": round(1000 * cpu / max(leased_urls, 1), 4),
        "postgresql_cpu_ms_per_url": round(1000 * pg / max(leased_urls, 1), 4),
    }


def measure_admission(batches: int, per_batch: int = 250) -> dict:
    started = time.monotonic()
    total = 0
    for b in range(batches):
        # half new URLs, half already in the frontier (the usual mix of a page's links)
        candidates = [service.Candidate(f"http://h{(b * per_batch + i) % HOSTS + 1}.frontier.test/new/{b}/{i}", 1)
                      for i in range(per_batch // 2)]
        candidates += [service.Candidate(f"http://h{i % HOSTS + 1}.frontier.test/p/{i}", 1)
                       for i in range(b * per_batch, b * per_batch + per_batch // 2)]
        service.add_urls(candidates)
        total += len(candidates)
    return {"admission_ms_per_url": round(1000 * (time.monotonic() - started) / total, 4)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,1000000")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--out", default="var/bench/frontier-scale.json")
    args = parser.parse_args(argv)
    if connection.vendor != "postgresql":
        parser.error("DATABASE_URL must be postgres://… (the frontier-scale benchmark is for the distributed mode)")
    results = {}
    for size in [int(s) for s in args.sizes.split(",")]:
        started = time.monotonic()
        preload(size)
        figures = {"preload_seconds": round(time.monotonic() - started, 1)}
        figures |= measure_dispatch(args.rounds)
        figures |= measure_admission(20)
        results[str(size)] = figures
        print(json.dumps({"frontier_urls": size, **figures}), flush=True)
    sizes = list(results)
    if len(sizes) >= 2:
        small, big = results[sizes[0]], results[sizes[-1]]
        results["ratio_largest_to_smallest"] = {
            key: round(big[key] / small[key], 2) if small[key] else None
            for key in ("wall_ms_per_url", "dispatcher_cpu_ms_per_url", "postgresql_cpu_ms_per_url",
                        "admission_ms_per_url")
        }
        print(json.dumps(results["ratio_largest_to_smallest"]))
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as handle:
        json.dump(results, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
