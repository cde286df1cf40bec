"""Seeding at scale: server time of one `POST /seed/urls` with 10,000 seeds.

Each run starts from an empty frontier (URLs, hosts, seeds and scopes truncated), then
posts the seeds through Django's test client with an API key, in this process: the time is
the server's (reading the JSON, admission, the answer), with no network in it. Reported
per run: milliseconds, SQL statements, and the rows it left (URLs, hosts, scopes, seeds);
then a second post of the same list (everything known already).

    DATABASE_URL=postgres://…/crawlerweb_seedwork python -m bench.seeding [--seeds 10000]
        [--hosts distinct|one] [--scope host] [--runs 3] [--profile]

It truncates the frontier's tables: give it a database of its own.
"""

import argparse
import cProfile
import json
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

from console.keys import create_key  # noqa: E402
from frontier import service  # noqa: E402
from frontier.limits import forget_cached_limits  # noqa: E402
from frontier.models import CrawlScope, Host, Seed, Url  # noqa: E402


def seed_list(count: int, hosts: str) -> list[str]:
    if hosts == "one":
        return [f"http://one.example/p/{n}.html" for n in range(count)]
    return [f"http://h{n}.seed.example/" for n in range(count)]


def empty_frontier() -> None:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("TRUNCATE frontier_seed, frontier_crawlscope, frontier_url, frontier_host "
                           "RESTART IDENTITY CASCADE")
        else:
            for model in (Seed, CrawlScope, Url, Host):
                model.objects.all().delete()
    service.forget_caches()
    forget_cached_limits()


def post(client: Client, key: str, body: str, profile: cProfile.Profile | None) -> tuple[float, int, dict]:
    count = [0]

    def counted(execute, sql, params, many, context):
        count[0] += 1
        return execute(sql, params, many, context)

    with connection.execute_wrapper(counted):  # cheaper than capturing every query's text
        started = time.perf_counter()
        if profile:
            profile.enable()
        response = client.post("/seed/urls", body, content_type="application/json",
                               HTTP_AUTHORIZATION=f"Bearer {key}")
        if profile:
            profile.disable()
        elapsed = time.perf_counter() - started
    assert response.status_code == 200, response.content[:500]
    return elapsed, count[0], response.json()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10_000)
    parser.add_argument("--hosts", choices=("distinct", "one"), default="distinct")
    parser.add_argument("--scope", default=None, help="host, domain, prefix or web (default: the setting)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="cProfile the first run's request")
    args = parser.parse_args()

    _, key = create_key("bench.seeding")
    payload = {"urls": seed_list(args.seeds, args.hosts)}
    if args.scope:
        payload["scope"] = args.scope
    body = json.dumps(payload)
    client = Client(HTTP_HOST="127.0.0.1")
    client.post("/seed/urls", json.dumps({"urls": ["http://warm.example/"]}), content_type="application/json",
                HTTP_AUTHORIZATION=f"Bearer {key}")  # imports, the key's first check, connections
    results = []
    for run in range(args.runs):
        empty_frontier()
        profile = cProfile.Profile() if args.profile and run == 0 else None
        first, first_queries, answer = post(client, key, body, profile)
        again, again_queries, _ = post(client, key, body, None)
        results.append({
            "run": run + 1, "ms": round(first * 1000), "queries": first_queries,
            "again_ms": round(again * 1000), "again_queries": again_queries,
            "added": answer["added"], "urls": Url.objects.count(), "hosts": Host.objects.count(),
            "scopes": CrawlScope.objects.count(), "seeds": Seed.objects.count(),
        })
        print(json.dumps(results[-1]), flush=True)
        if profile:
            pstats.Stats(profile).sort_stats(os.environ.get("BENCH_SORT", "cumulative")).print_stats(70)
    best = min(results, key=lambda r: r["ms"])
    print(json.dumps({"database": connection.vendor, "seeds": args.seeds, "hosts": args.hosts,
                      "scope": args.scope or "default", "best_ms": best["ms"], "best_again_ms":
                      min(r["again_ms"] for r in results)}))
    empty_frontier()


if __name__ == "__main__":
    main()
