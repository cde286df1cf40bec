"""Frontier scale: does dispatch cost per URL stay flat as the frontier grows to 1M URLs?

For each frontier size (default 10,000 and 1,000,000 queued URLs over 1,000 hosts; with
--done-hosts N also N hosts whose every URL is fetched, ready longest) the
URL table is filled directly in PostgreSQL (generate_series, so preloading takes seconds),
then the dispatcher's own function, frontier.service.lease_ready_hosts, runs for a number
of rounds; after each round the leased hosts are released as due again (release_hosts, as a
writer gives back a group's ended sessions), so every round
does the full work of choosing hosts and their best URLs. Also measured: link admission
(frontier.service.add_urls: normalize, seen test against the big table, insert).

Figures per size: the idle sweep (the first, which sets aside every finished host, and
one with nothing to do: wall and PostgreSQL CPU seconds), then wall ms per dispatched URL,
dispatcher CPU ms per URL, PostgreSQL CPU ms per URL, and admission ms per URL; then the
1M/10k ratio of each.

Recrawl planning (--plan-sizes, default 1M; 10M takes a few minutes to load and ~4 GB):
the table filled with FETCHED pages carrying change summaries (rates spread over 16
octaves, one to seven visits a day to a month apart, five scores, a tenth of them due),
then beat's two jobs as beat runs them: plan_recrawl (the count of the observed pages, the
crawl's prior and the budget's price from a sample of them, frontier/planning.py) and
release_due (five batches of due URLs, one after the other: the median). Rows are written as this release writes them (url_key, no url_hash: the
previous release's key would fill a second unique index that new rows leave empty). Figures: wall
seconds, PostgreSQL CPU seconds, and this process's peak RSS (the beat worker's work).

    DATABASE_URL=postgres://…/crawlerweb_bench python -m bench.frontier_scale
    DATABASE_URL=postgres://…/crawlerweb_bench python -m bench.frontier_scale --sizes= --plan-sizes 1000000,10000000
"""

import argparse
import json
import os
import resource
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
RELEASES = 5  # release batches measured after a plan


def _empty_with_hosts(cur, hosts: int, domain: str) -> None:
    """An empty frontier of `hosts` hosts, http://h<i>.<domain>."""
    cur.execute("TRUNCATE frontier_url, frontier_host, frontier_deadletter RESTART IDENTITY CASCADE")
    cur.execute(
        """INSERT INTO frontier_host (origin, next_fetch_at, lease_owner, robots_body, robots_error,
                                      robots_sitemaps, wait_reason, url_count, failures, created_at)
           SELECT 'http://h' || i || '.' || %s, now(), '', '', '', '', '', 0, 0, now()
           FROM generate_series(1, %s) AS i""", [domain, hosts])


def preload(urls: int, hosts: int = HOSTS, done_hosts: int = 0) -> None:
    with connection.cursor() as cur:
        _empty_with_hosts(cur, hosts, "frontier.test")
        cur.execute(
            """INSERT INTO frontier_url (url_key, url, host_id, depth, redirect_hops, priority, state, outcome,
                                         attempts, next_fetch_at, content_hash, created_at, scopes, backoff_level,
                                         change_stats, etag, last_modified, last_observation, observations, text_hash)
               SELECT ('x' || substr(md5('u' || i), 1, 16))::bit(64)::bigint, 'http://h' || (i %% %s + 1) || '.frontier.test/p/' || i, i %% %s + 1,
                      i %% 5, 0, -(i %% 5), 'queued', '', 0, now(), '', now(), '', 0, '', '', '', '', 0, ''
               FROM generate_series(1, %s) AS i""", [hosts, hosts, urls])
        if done_hosts:
            _add_done_hosts(cur, done_hosts)
        cur.execute("UPDATE frontier_host h SET url_count = (SELECT count(*) FROM frontier_url u WHERE u.host_id = h.id)")
    with connection.cursor() as cur:
        cur.execute("VACUUM ANALYZE frontier_url")
        cur.execute("VACUUM ANALYZE frontier_host")


def _add_done_hosts(cur, hosts: int) -> None:
    """Hosts whose every URL is fetched (a long crawl's usual host: done until a recrawl is
    due), free and ready since before the others, so the dispatcher's scan meets them first.
    Two fetched pages each."""
    cur.execute(
        """INSERT INTO frontier_host (origin, next_fetch_at, lease_owner, robots_body, robots_error,
                                      robots_sitemaps, wait_reason, url_count, failures, created_at)
           SELECT 'http://d' || i || '.done.test', now() - interval '1 day', '', '', '', '', '', 0, 0, now()
           FROM generate_series(1, %s) AS i""", [hosts])
    cur.execute(
        """INSERT INTO frontier_url (url_key, url, host_id, depth, redirect_hops, priority, state, outcome,
                                     attempts, next_fetch_at, content_hash, created_at, scopes, backoff_level,
                                     change_stats, etag, last_modified, last_observation, observations, text_hash)
           SELECT ('x' || substr(md5('d' || h.id || '/' || n), 1, 16))::bit(64)::bigint,
                  h.origin || '/' || n, h.id, 1, 0, -10, 'fetched', 'ok', 0, now() + interval '30 days', '', now(),
                  '', 0, '', '', '', '', 1, ''
           FROM frontier_host h, generate_series(1, 2) AS n WHERE h.origin LIKE '%%.done.test'""")


def measure_dispatch(rounds: int, hosts_per_round: int = 64) -> dict:
    postgres = ServiceMeter("postgres")
    leased_urls = 0
    postgres.begin()
    cpu, wall = time.process_time(), time.monotonic()
    for _ in range(rounds):
        leases = service.lease_ready_hosts("frontier-bench", hosts_per_round)
        leased_urls += sum(len(lease.url_ids) for lease in leases)
        # as a crawling process's writer gives back a group's ended sessions: one call
        update = service.HostUpdate(next_fetch_at=timezone.now())
        service.release_hosts([(lease.host_id, lease.token, lease.address, update) for lease in leases])
    wall, cpu = time.monotonic() - wall, time.process_time() - cpu
    pg = postgres.elapsed_cpu()
    return {
        "rounds": rounds,
        "urls_dispatched": leased_urls,
        "wall_ms_per_url": round(1000 * wall / max(leased_urls, 1), 4),
        "dispatcher_cpu_ms_per_url": round(1000 * cpu / max(leased_urls, 1), 4),
        "postgresql_cpu_ms_per_url": round(1000 * pg / max(leased_urls, 1), 4),
    }


def measure_sweeps() -> dict:
    """The idle sweep apart from the rounds (frontier/idle.py): the first, which sets aside
    every finished host (what an upgraded dispatcher does once), then one with nothing to do
    (what every dispatching process does each CRAWLER_IDLE_SWEEP_SECONDS), the host table
    vacuumed between as autovacuum would. The rounds after it do not sweep."""
    from frontier import idle

    figures = {}
    for name in ("first_sweep", "idle_sweep"):
        postgres = ServiceMeter("postgres")
        postgres.begin()
        wall = time.monotonic()
        _, set_aside = idle.sweep()
        figures[f"{name}_wall_s"] = round(time.monotonic() - wall, 3)
        figures[f"{name}_postgresql_cpu_s"] = round(postgres.elapsed_cpu(), 3)
        figures[f"{name}_set_aside"] = set_aside
        if name == "first_sweep":
            with connection.cursor() as cur:
                cur.execute("VACUUM ANALYZE frontier_host")
    idle._last_sweep["at"] = time.monotonic()
    return figures


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


def preload_fetched(urls: int, hosts: int = 10_000) -> None:
    """`urls` fetched pages with change summaries, as months of recrawling leave them: page
    i was visited n = 1 + i % 7 times, every 1 + i % 30 days, and changes 2^(±8) times a day;
    its summary (frontier/changerate.py, format 2) has the changes such a page shows."""
    with connection.cursor() as cur:
        _empty_with_hosts(cur, hosts, "plan.test")
        cur.execute(
            """INSERT INTO frontier_url (url_key, url, host_id, depth, redirect_hops, priority, state, outcome,
                                         attempts, next_fetch_at, content_hash, created_at, scopes, backoff_level,
                                         change_stats, etag, last_modified, last_observation, observations, text_hash,
                                         change_rate, observed_at, recrawl_interval)
               SELECT ('x' || substr(md5('u' || i), 1, 16))::bit(64)::bigint, 'http://h' || (i %% %s + 1) || '.plan.test/p/' || i, i %% %s + 1,
                      i %% 5, 0, -10 * (i %% 5), 'fetched', '', 0,
                      now() + ((i %% 10) - 1) * interval '1 day', '', now(), '', 0, s.summary, '', '', 'unchanged',
                      s.n, '', s.rate, now() - random() * interval '2 days', s.seconds
               FROM generate_series(1, %s) AS i,
               LATERAL (SELECT 1 + i %% 7 AS n, 86400.0 * (1 + i %% 30) AS seconds, power(2, random() * 16 - 8) AS rate) v,
               LATERAL (SELECT round(v.n * (1 - exp(-least(v.rate * v.seconds / 86400, 50))))::int AS x) c,
               LATERAL (SELECT v.n, v.seconds, v.rate,
                        format('{"v":2,"n":%%s,"x":%%s,"u":%%s,"k":0,"s":0,"t":%%s,"a":%%s,"h":[%%s]}',
                               v.n, c.x, (v.n - c.x) * v.seconds, v.n * v.seconds, v.n * v.seconds,
                               CASE WHEN c.x > 0 THEN format('[%%s,%%s,%%s]', floor(2 * log(2, v.seconds))::int + 10,
                                                              c.x, c.x * v.seconds) ELSE '' END) AS summary) s""",
            [hosts, hosts, urls])
    with connection.cursor() as cur:
        cur.execute("VACUUM ANALYZE frontier_url")


def _measured(postgres: ServiceMeter, call):
    """call()'s result, wall seconds and PostgreSQL CPU seconds."""
    postgres.begin()
    wall = time.monotonic()
    result = call()
    return result, time.monotonic() - wall, postgres.elapsed_cpu()


def measure_planning() -> dict:
    """beat's plan and one release."""
    from django.conf import settings

    from frontier import planning, recrawl

    postgres = ServiceMeter("postgres")
    recrawl.forget_plan()
    plan, plan_wall, plan_pg = _measured(postgres, planning.plan_recrawl)
    # Full release batches (CRAWLER_RECRAWL_RELEASE_BATCH), as beat makes them one after the
    # other: a budget that allows it; the median of RELEASES (the first follows the plan's
    # own writes).
    budget = settings.CRAWLER_RECRAWL_BUDGET_PER_DAY
    settings.CRAWLER_RECRAWL_BUDGET_PER_DAY = 86400.0 * settings.CRAWLER_RECRAWL_RELEASE_BATCH
    releases = []
    try:
        for _ in range(RELEASES):
            releases.append(_measured(postgres, recrawl.release_due))
    finally:
        settings.CRAWLER_RECRAWL_BUDGET_PER_DAY = budget
    released, release_wall, release_pg = sorted(releases, key=lambda r: r[1])[RELEASES // 2]
    return {
        "plan_pages": plan.pages, "plan_wall_s": round(plan_wall, 2), "plan_postgresql_cpu_s": round(plan_pg, 2),
        "released": released, "release_wall_ms": round(1000 * release_wall, 1),
        "release_postgresql_cpu_ms": round(1000 * release_pg, 1),
        "release_wall_ms_each": [round(1000 * r[1], 1) for r in releases],
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,1000000")
    parser.add_argument("--plan-sizes", default="1000000", help="fetched pages for the recrawl plan ('' = skip)")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--done-hosts", type=int, default=0,
                        help="also this many hosts with every URL fetched, ready longest (a long crawl's state)")
    parser.add_argument("--out", default="var/bench/frontier-scale.json")
    args = parser.parse_args(argv)
    if connection.vendor != "postgresql":
        parser.error("DATABASE_URL must be postgres://… (the frontier-scale benchmark is for the distributed mode)")
    results = {}
    for size in [int(s) for s in args.sizes.split(",") if s]:
        started = time.monotonic()
        preload(size, done_hosts=args.done_hosts)
        figures = {"preload_seconds": round(time.monotonic() - started, 1), "done_hosts": args.done_hosts}
        figures |= measure_sweeps()
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
    for size in [int(s) for s in args.plan_sizes.split(",") if s]:
        started = time.monotonic()
        preload_fetched(size)
        figures = {"preload_seconds": round(time.monotonic() - started, 1)} | measure_planning()
        results[f"plan_{size}"] = figures
        print(json.dumps({"fetched_urls": size, **figures}), flush=True)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as handle:
        json.dump(results, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
