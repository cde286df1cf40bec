"""`make bench`: how fast, how polite and how complete, with default settings, beside Scrapy.

Starts the sample web at a chosen size (every response after 10 ms unless --latency says
otherwise), crawls it in each chosen mode with the crawler's default settings, waits for
the end, audits the crawl from the sample web's own request log, and prints and writes
(JSON) the figures: pages/s (whole crawl and steady state) and the ratio to Scrapy's, CPU
ms per page by process kind (PostgreSQL on its own), peak RSS, database and WARC archive
bytes per page, completeness, duplicate fetches, politeness, pacing (connections per
host, gaps against the allowed delay, politeness efficiency), the fraction of the raw
ceiling (bench/ceiling.py) and, on PostgreSQL, its CPU for full-text indexing alone.

    python -m bench.run --size quick --modes embedded,scrapy
    python -m bench.run --size standard --latency 0.05 --modes embedded,distributed:1,scrapy --runs 3
    python -m bench.run --size polite --modes embedded,distributed:1,scrapy
    python -m bench.run --size smallsites --modes embedded,distributed:1,scrapy
    python -m bench.run --size quick --modes embedded,distributed:1 --no-warc   # the archive's cost

Modes: embedded (SQLite, `manage.py crawl`), embedded-postgres (the same process on
PostgreSQL), distributed:N (PostgreSQL + Redis, one dispatcher, N `celery worker`
processes with their default pool), scrapy (the peer, bench/scrapy_peer.py), ceiling.
Any of ours with the suffix -nodelay (`embedded-nodelay`, `distributed:1-nodelay`) runs with
CRAWLER_DEFAULT_DELAY=0, as Scrapy does, so the ratio compares work per page rather than
politeness policy (Crawl-delays, Retry-After and the adaptive delay still apply).

Besides the main table it prints our modes beside Scrapy (steady pages/s and CPU per
page as ratios), CPU ms per page by stage of our processes (common/stagetime.py) and,
when pg_stat_statements is loaded, PostgreSQL's CPU per page by statement group with the
pages/s one database core serves (bench/pgstatements.py).
PostgreSQL runs use the database BENCH_DATABASE_URL (emptied first) and the Redis database
BENCH_BROKER_URL (flushed first). The orchestrator does not set up Django and is not
metered. Exit status 1 if one of our runs breaks politeness, fetches a page twice or
misses more than 0.5% of the ground truth.
"""

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from . import pgstatements
from .cluster import run_cluster, wait_until_done
from .procstat import ServiceMeter, cpu_seconds, peak_rss_mb, tree_cpu_seconds, tree_rss_mb, wait_metered
from webs.sampleweb import WebConfig, audit_log, run_server
from webs.sampleweb.audit import read_log
from .scrapy_peer import ensure_venv, run_scrapy

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
BENCH_DATABASE_URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/crawlerweb_bench")
BENCH_BROKER_URL = os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/12")
DEPTH_LIMIT = 20

# Every server answers after 10 ms (`--latency` changes it); two hosts of the quick and
# standard sizes announce a Crawl-delay, one is slow, one answers 429/503 first
# (Retry-After: 0 here; the 1 s case is in the tests). Every host of the polite size but
# five announces Crawl-delay: 1. The smallsites sizes are many small sites read page by
# page (site_shape "chain": a site's next URL is on the page just fetched), 300 hosts of
# 10 pages, every host but five announcing Crawl-delay: 0.5 (smallsites) or none, so the
# default delay (smallsites-default). The crawler runs its defaults, so a host without a
# Crawl-delay gets CRAWLER_DEFAULT_DELAY (1 s) or more (adaptive delay).
SIZES = {
    "quick": WebConfig(hosts=20, pages_per_host=30, port=0, crawl_delay_hosts=2, crawl_delay=0.05,
                       slow_delay=0.02, retry_after=0, latency=0.01),
    "standard": WebConfig(hosts=200, pages_per_host=100, port=0, crawl_delay_hosts=2, crawl_delay=0.1,
                          slow_delay=0.05, retry_after=0, latency=0.01),
    "polite": WebConfig(hosts=480, pages_per_host=10, port=0, crawl_delay_hosts=475, crawl_delay=1.0,
                        slow_delay=0.05, retry_after=0, latency=0.01),
    "smallsites": WebConfig(hosts=300, pages_per_host=10, port=0, crawl_delay_hosts=295, crawl_delay=0.5,
                            slow_delay=0.05, retry_after=0, latency=0.01, site_shape="chain"),
    "smallsites-default": WebConfig(hosts=300, pages_per_host=10, port=0, crawl_delay_hosts=0,
                                    slow_delay=0.05, retry_after=0, latency=0.01, site_shape="chain"),
}
# The crawl as it grows (bench/scale.py): the standard web's hosts of 100 pages, ten times
# more of them at each step.
for _name, _hosts in (("scale-10k", 100), ("scale-100k", 1_000), ("scale-1m", 10_000)):
    SIZES[_name] = replace(SIZES["standard"], hosts=_hosts)
# Only what the sample web needs: loopback allowed, its depth. Everything else is default.
CRAWL_ENV = {
    "CRAWLER_ALLOWED_NETWORKS": "127.0.0.0/8",
    "CRAWLER_DEPTH_LIMIT": str(DEPTH_LIMIT),
}
# The gap the audit holds a crawler to on hosts without a Crawl-delay: ours is its default
# delay (crawlerweb/settings/crawler.py); Scrapy's is none (it sends the next request at once).
CRAWLER_DEFAULT_DELAY = float(os.environ.get("CRAWLER_DEFAULT_DELAY", "1.0"))
CRAWL_TABLES = ("frontier_", "indexer_")
EMBEDDED_MODES = ("embedded", "embedded-postgres")
PEER_MODE = "scrapy"
# A mode with this suffix crawls with CRAWLER_DEFAULT_DELAY=0, like Scrapy (Crawl-delays
# and adaptive delay still apply): the like-for-like comparison of work per page.
NO_DELAY = "-nodelay"


def manage(env: dict, *args: str) -> str:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, text=True,
                          stdout=subprocess.PIPE).stdout


# ----------------------------------------------------------------- embedded


def run_embedded(web, env: dict, workdir: Path, timeout: float, postgres: bool = False) -> dict:
    """`manage.py crawl` in one process: on SQLite (mode embedded, the default install), or
    on the bench's PostgreSQL (mode embedded-postgres: the pipeline's own cost on
    PostgreSQL, without Celery, the broker or a dispatcher process)."""
    if postgres:
        import psycopg

        env = env | {"DATABASE_URL": BENCH_DATABASE_URL}
        _reset_postgres()
    else:
        db = workdir / "embedded.sqlite3"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        env = env | {"DATABASE_URL": f"sqlite:///{db}"}
        manage(env, "migrate", "-v0")
        empty_size = _sqlite_size(db)
    env = env | _fresh_warc_dir(workdir)
    out = workdir / "embedded-crawl.json"
    statements = False
    if postgres:
        updates_before = _url_updates()
        with psycopg.connect(BENCH_DATABASE_URL, autocommit=True) as conn:
            statements = pgstatements.available(conn)
            if statements:
                pgstatements.reset(conn)
    postgres_meter = ServiceMeter("postgres")
    postgres_meter.begin()
    web_cpu = cpu_seconds(web.server_pid)
    with open(out, "w") as handle:
        proc = subprocess.Popen([sys.executable, "manage.py", "crawl", "--json", "--scope", "web", *web.seeds],
                                cwd=ROOT, env=env, stdout=handle, stderr=subprocess.DEVNULL)
        status, usage = wait_metered(proc, timeout)
    if status != 0:
        raise RuntimeError(f"manage.py crawl exited with status {status}")
    summary = json.loads(out.read_text())
    stages = summary.get("stage_cpu_seconds", {})
    figures = {
        "seen_cache": summary.get("seen_cache"),
        "cpu_seconds": {"crawler": usage.ru_utime + usage.ru_stime, "sample_web": cpu_seconds(web.server_pid) - web_cpu},
        "peak_rss_mb": {"crawler": round(usage.ru_maxrss / 1024, 1), "sample_web": peak_rss_mb(web.server_pid)},
        "stage_cpu_seconds": stages,
    }
    if postgres:
        figures["cpu_seconds"]["postgresql"] = postgres_meter.elapsed_cpu()
        figures["url_updates"] = _url_updates(updates_before)
        figures["peak_rss_mb"]["postgresql_backend"] = postgres_meter.peak_rss_mb()
        with psycopg.connect(BENCH_DATABASE_URL, autocommit=True) as conn:
            figures["counts"] = _counts(conn.cursor())
            figures["db_bytes"] = _pg_size(conn)
            if statements:
                figures["pg_statements"] = pgstatements.read(conn)
            figures["fts_cpu_per_document"] = _fts_cpu_per_document(conn)
    else:
        with sqlite3.connect(db) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            figures["counts"] = _counts(conn.cursor())
        figures["db_bytes"] = _sqlite_size(db) - empty_size
    figures["warc_bytes"] = _warc_size(env)
    return figures


def _fresh_warc_dir(workdir: Path) -> dict:
    warc_dir = workdir / "warc"
    shutil.rmtree(warc_dir, ignore_errors=True)
    return {"CRAWLER_WARC_DIR": str(warc_dir)}


def _warc_size(env: dict) -> int:
    return sum(p.stat().st_size for p in Path(env["CRAWLER_WARC_DIR"]).glob("*.warc.gz"))


def _sqlite_size(db: Path) -> int:
    return sum(Path(f"{db}{s}").stat().st_size for s in ("", "-wal") if Path(f"{db}{s}").exists())


# -------------------------------------------------------------- distributed


def prepare_postgres(env: dict) -> None:
    import psycopg

    name = BENCH_DATABASE_URL.rsplit("/", 1)[1]
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    manage(env | {"DATABASE_URL": BENCH_DATABASE_URL}, "migrate", "-v0")


def _reset_postgres() -> None:
    import psycopg
    import redis

    with psycopg.connect(BENCH_DATABASE_URL, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
                  if r[0].startswith(CRAWL_TABLES)]
        conn.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in tables) + " RESTART IDENTITY CASCADE")
        conn.execute("VACUUM ANALYZE")
    redis.Redis.from_url(BENCH_BROKER_URL).flushdb()


def run_distributed(web, env: dict, workers: int, workdir: Path, timeout: float, waiting: int = 0) -> dict:
    """waiting: URLs put in the frontier first, in bulk, none of them due during the crawl
    (a big frontier's queue beside the web being crawled); its bytes are not the crawl's."""
    import psycopg

    prom_dir = workdir / "prometheus"  # the processes' stage counters (crawl/instruments.py)
    shutil.rmtree(prom_dir, ignore_errors=True)
    prom_dir.mkdir()
    env = env | {"DATABASE_URL": BENCH_DATABASE_URL, "CELERY_BROKER_URL": BENCH_BROKER_URL,
                 "PROMETHEUS_MULTIPROC_DIR": str(prom_dir)} | _fresh_warc_dir(workdir)
    _reset_postgres()
    prefilled_bytes = _prefill_waiting(waiting) if waiting else 0
    updates_before = _url_updates()
    sessions_before = _pg_sessions()
    postgres, redis_meter = ServiceMeter("postgres"), ServiceMeter("redis-server")
    with run_cluster(env, workers=workers, dispatchers=1, concurrency=None) as cluster:  # the worker's default
        pids = {name: proc.pid for name, proc in cluster.procs.items()}
        _wait_settled(list(pids.values()))  # imports and connections done: start the meters
        with psycopg.connect(BENCH_DATABASE_URL, autocommit=True) as conn:
            statements = pgstatements.available(conn)
            poller = _Poller(conn)
            if statements:
                pgstatements.reset(conn)
            start_cpu = {name: tree_cpu_seconds(pid) for name, pid in pids.items()}  # workers: with pool children
            postgres.begin()
            redis_meter.begin()
            web_cpu = cpu_seconds(web.server_pid)
            manage(env, "seed", "--scope", "web", *web.seeds)
            rss_samples = []

            def sample_worker_rss() -> None:  # pages so far from the sample web's log: no query
                rss_samples.append((_log_lines(web.log_path), max(tree_rss_mb(pids[n]) for n in pids
                                                                  if n.startswith("worker"))))

            wait_until_done(poller.pending, cluster, timeout, on_progress=sample_worker_rss, poll=0.5,
                            allow_killed=False)
            end_cpu = {name: tree_cpu_seconds(pid) for name, pid in pids.items()}
            pg_cpu, redis_cpu = postgres.elapsed_cpu() - poller.cpu(), redis_meter.elapsed_cpu()
            web_cpu = cpu_seconds(web.server_pid) - web_cpu
            figures = {"counts": _counts(conn.cursor()), "db_bytes": _pg_size(conn) - prefilled_bytes,
                       "postgresql_settings": _pg_settings(conn), "waiting_prefilled": waiting}
            if statements:
                figures["pg_statements"] = pgstatements.read(conn)
            pg_rss, redis_rss = postgres.peak_rss_mb(), redis_meter.peak_rss_mb()
            figures["fts_cpu_per_document"] = _fts_cpu_per_document(conn)
    figures["counts"]["urls"] -= waiting
    figures["url_updates"] = _url_updates(updates_before)  # the cluster gone: its statistics flushed
    cpu = {name: end_cpu[name] - start_cpu[name] for name in pids}
    figures["cpu_seconds"] = {
        "dispatcher": sum(v for n, v in cpu.items() if n.startswith("dispatcher")),
        "workers": sum(v for n, v in cpu.items() if n.startswith("worker")),
        "postgresql": pg_cpu, "redis": redis_cpu, "sample_web": web_cpu,
    }
    figures["peak_rss_mb"] = {
        "dispatcher": max(v for n, v in cluster.peak_rss.items() if n.startswith("dispatcher")),
        "worker": max(v for n, v in cluster.peak_rss.items() if n.startswith("worker")),
        "postgresql_backend": pg_rss, "redis": redis_rss, "sample_web": peak_rss_mb(web.server_pid),
    }
    figures["worker_rss_mb"] = _rss_trend(rss_samples)
    figures["warc_bytes"] = _warc_size(env)
    figures["db_sessions"] = _pg_sessions() - sessions_before
    figures["stage_cpu_seconds"] = _stage_totals(prom_dir)
    return figures


class _Poller:
    """The bench's own question to the database while a crawl runs (is anything left?),
    tagged so the statement groups leave it out, and its backend's CPU kept apart so the
    PostgreSQL figure is the crawler's alone."""

    def __init__(self, conn):
        self.conn = conn
        self.pid = conn.execute(f"{pgstatements.BENCH_TAG} SELECT pg_backend_pid()").fetchone()[0]
        self.start = cpu_seconds(self.pid)

    def pending(self) -> bool:
        return self.conn.execute(
            f"""{pgstatements.BENCH_TAG} SELECT EXISTS (SELECT 1 FROM frontier_url WHERE state = 'queued'
                                                          AND next_fetch_at < now() + interval '1 day')
                   OR EXISTS (SELECT 1 FROM frontier_host WHERE leased_until > now())""").fetchone()[0]

    def cpu(self) -> float:
        return cpu_seconds(self.pid) - self.start


def _log_lines(path) -> int:
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def _stage_totals(prom_dir: Path) -> dict:
    """CPU seconds by stage over every crawling process, from their Prometheus files."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry, str(prom_dir))
    totals = {}
    for family in registry.collect():
        if family.name == "crawlerweb_stage_cpu_seconds":
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    totals[sample.labels["stage"]] = totals.get(sample.labels["stage"], 0.0) + sample.value
    return totals


FTS_SAMPLE = 1000  # documents re-indexed to price full-text indexing alone


def _fts_cpu_per_document(conn) -> float | None:
    """PostgreSQL CPU seconds per document for full-text indexing alone: taking the search
    backend's worker-built tsvector literals and their GIN insert, redone for a sample of the
    crawl's indexed documents into a scratch table after the crawl (outside the CPU meters).
    Nothing the pipeline does can bring PostgreSQL's share below this while whole pages
    are indexed in it; the report shows it per page as the PostgreSQL floor."""
    from types import SimpleNamespace

    from indexer.backends.postgres import index_rows

    documents = [SimpleNamespace(id=r[0], page_url=r[1], title=r[2], headings=r[3], body=r[4]) for r in conn.execute(
        "SELECT id, address, title, headings, body FROM indexer_document WHERE indexed ORDER BY id LIMIT %s",
        [FTS_SAMPLE]).fetchall()]
    rows = index_rows(documents)  # the worker's part, outside the meter
    _send_binary_tsvectors(conn)
    pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    conn.execute("""CREATE TEMP TABLE fts_cost (document_id bigint PRIMARY KEY, vector tsvector NOT NULL,
                    key_vector tsvector NOT NULL, title_len int, url_len int, long_len int)""")
    conn.execute("CREATE INDEX ON fts_cost USING GIN (vector)")
    used, done = 0.0, 0
    # A quick crawl's sample can take less CPU than the clock's tick: insert it again (into
    # an emptied table) until the meter has seen enough, at most 20 times.
    for _ in range(20):
        if not rows or used >= 0.2:
            break
        before = cpu_seconds(pid)
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO fts_cost VALUES (%s, %s::tsvector, %s::tsvector, %s, %s, %s)", rows)
        used += cpu_seconds(pid) - before
        done += len(rows)
        conn.execute("TRUNCATE fts_cost")
    conn.execute("DROP TABLE fts_cost")
    return used / done if done and used else None


def _send_binary_tsvectors(conn) -> None:
    """This (non-Django) connection sends the search backend's binary vectors as such."""
    from indexer.backends import postgres

    if hasattr(postgres, "TSVector"):  # older releases sent text literals
        conn.adapters.register_dumper(postgres.TSVector, postgres.TSVectorDumper)


def _pg_settings(conn) -> dict:
    """The server settings a PostgreSQL figure depends on. Autovacuum off (some CI images
    turn it off) leaves the tables without statistics, and the planner guessing."""
    return {name: conn.execute(f"{pgstatements.BENCH_TAG} SHOW {name}").fetchone()[0]
            for name in ("autovacuum", "shared_buffers", "synchronous_commit")}


def _pg_sessions(limit: float = 10.0) -> int:
    """PostgreSQL sessions ever opened on the bench database. A backend's statistics may
    reach pg_stat_database only when it exits, so this first waits (bounded, polling) for
    the crawl's backends to be gone."""
    import psycopg

    with psycopg.connect(BENCH_DATABASE_URL, autocommit=True) as conn:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline and conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()[0]:
            time.sleep(0.1)
        return conn.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()").fetchone()[0]


def _wait_settled(pids: list[int], quiet_cpu: float = 0.05, limit: float = 60.0) -> None:
    """Wait until freshly started processes stop burning start-up CPU (imports, broker and
    database connections), so the meters count crawl work only. What is awaited is a
    quantity, not an event, hence sampling it: done when 0.5 s adds < quiet_cpu seconds."""
    deadline = time.monotonic() + limit
    last = sum(tree_cpu_seconds(p) for p in pids)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = sum(tree_cpu_seconds(p) for p in pids)
        if now - last < quiet_cpu:
            return
        last = now


def _prefill_waiting(urls: int, hosts: int = 100_000) -> int:
    """`urls` URLs queued on `hosts` hosts (http://w<i>.waiting.test) none of which is due for
    30 days, written in bulk as this release writes them; returns the tables' bytes after."""
    import psycopg

    with psycopg.connect(BENCH_DATABASE_URL, autocommit=True) as conn:
        conn.execute(
            """INSERT INTO frontier_host (origin, next_fetch_at, lease_owner, robots_body, robots_error,
                                          robots_sitemaps, wait_reason, url_count, failures, created_at)
               SELECT 'http://w' || i || '.waiting.test', now() + interval '30 days', '', '', '', '', '',
                      %s / %s, 0, now()
               FROM generate_series(1, %s) AS i""", [urls, hosts, hosts])
        first = conn.execute("SELECT min(id) FROM frontier_host WHERE origin LIKE 'http://w%%.waiting.test'").fetchone()[0]
        conn.execute(
            """INSERT INTO frontier_url (url_key, url, host_id, depth, redirect_hops, priority, state, outcome,
                                         attempts, next_fetch_at, content_hash, created_at, scopes, backoff_level,
                                         change_stats, etag, last_modified, last_observation, observations, text_hash)
               SELECT ('x' || substr(md5('w' || i), 1, 16))::bit(64)::bigint,
                      'http://w' || (i %% %s + 1) || '.waiting.test/p/' || i, %s + i %% %s,
                      1 + i %% 5, 0, -(i %% 7), 'queued', '', 0, now() + interval '30 days', '', now(), '', 0,
                      '', '', '', '', 0, ''
               FROM generate_series(1, %s) AS i""", [hosts, first, hosts, urls])
        conn.execute("VACUUM ANALYZE")
        return _pg_size(conn)


def _url_updates(before: dict | None = None) -> dict:
    """Updates of URL rows and how many were HOT (no index touched), since `before`. Read
    once the crawl's connections are gone: a backend adds its counts to the shared ones as
    it exits (before that, at most once a second)."""
    import psycopg

    with psycopg.connect(BENCH_DATABASE_URL, autocommit=True) as conn:
        others = ("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                  "AND backend_type = 'client backend' AND pid <> pg_backend_pid()")
        deadline = time.monotonic() + 10
        while conn.execute(others).fetchone()[0] and time.monotonic() < deadline:
            time.sleep(0.1)
        updates, hot = conn.execute("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
                                    "WHERE relname = 'frontier_url'").fetchone()
    now = {"updates": updates, "hot": hot}
    if before is None:
        return now
    updates, hot = updates - before["updates"], hot - before["hot"]
    return {"updates": updates, "hot": hot, "hot_share": round(hot / updates, 3) if updates else None}


def _rss_trend(samples: list[tuple[int, float]]) -> dict:
    """Worker RSS when a quarter of the pages were done, and at the end: flat or growing."""
    if not samples:
        return {}
    total = samples[-1][0] or 1
    quarter = next((rss for fetched, rss in samples if fetched >= total / 4), samples[0][1])
    return {"at_25_percent": quarter, "at_end": samples[-1][1], "growth": round(samples[-1][1] - quarter, 1)}


def _pg_size(conn) -> int:
    return conn.execute(
        """SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = 'public' AND c.relkind = 'r'
             AND (c.relname LIKE 'frontier\\_%%' OR c.relname LIKE 'indexer\\_%%')""").fetchone()[0]


def _counts(cursor) -> dict:
    cursor.execute("SELECT count(*) FROM frontier_url WHERE last_fetched_at IS NOT NULL")
    fetched = cursor.fetchone()[0]
    cursor.execute("SELECT count(*) FROM indexer_document WHERE indexed")
    indexed = cursor.fetchone()[0]
    cursor.execute("SELECT count(*) FROM frontier_url")
    return {"pages": fetched, "indexed": indexed, "urls": cursor.fetchone()[0]}


# ------------------------------------------------------------------ ceiling


def run_ceiling(web, env: dict, workdir: Path) -> dict:
    urls = sorted(web.ground_truth(depth_limit=DEPTH_LIMIT))
    urls_file = workdir / "ceiling-urls.txt"
    urls_file.write_text("\n".join(urls) + "\n")
    out = subprocess.run([sys.executable, "-m", "bench.ceiling", "--urls-file", str(urls_file)],
                         cwd=ROOT, env=env | {"DATABASE_URL": "sqlite:///:memory:"}, check=True, text=True,
                         stdout=subprocess.PIPE).stdout
    return json.loads(out.strip().splitlines()[-1])


# ------------------------------------------------------------------- report


def steady_rate(log_path) -> float:
    """Pages/s between the 10th and the 90th percentile of responses: the crawl without its
    start (few URLs known yet) and its tail (the Crawl-delay and slow hosts)."""
    ends = sorted(e.end for e in read_log(log_path) if e.path != "/robots.txt")
    if len(ends) < 20:
        return 0.0
    lo, hi = int(len(ends) * 0.1), int(len(ends) * 0.9)
    return round((hi - lo) / max(ends[hi] - ends[lo], 1e-9), 1)


def politeness_efficiency(log_path, web, default_delay: float) -> dict:
    """How close the crawl came to what the hosts' delays allow, in the steady window
    (10th to 90th percentile of responses). A host may be sent one request per (its delay +
    its response time) between its first and its last request; the bound is the sum of
    that over hosts, the efficiency the pages those hosts actually got in the window ÷ the
    bound. Hosts the crawler may ask without a delay (Scrapy without a Crawl-delay) have
    no bound and are left out. An upper bound: a host waiting for its next URL to be
    discovered counts as ready."""
    entries = read_log(log_path)
    ends = sorted(e.end for e in entries if not e.is_robots)
    if len(ends) < 20:
        return {}
    lo, hi = ends[int(len(ends) * 0.1)], ends[int(len(ends) * 0.9)]
    by_host = defaultdict(list)
    for e in entries:
        by_host[e.netloc].append(e)
    allowed = done = 0.0
    for netloc, host_entries in by_host.items():
        delay = web.delay_for(netloc)
        delay = default_delay if delay is None else delay
        if delay <= 0:
            continue
        response = statistics.mean(e.end - e.start for e in host_entries)
        first, last = min(e.start for e in host_entries), max(e.end for e in host_entries)
        allowed += max(0.0, min(last, hi) - max(first, lo)) / (delay + response)
        done += sum(1 for e in host_entries if not e.is_robots and lo <= e.end <= hi)
    if not allowed:
        return {}
    return {"bound_pages_per_second": round(allowed / max(hi - lo, 1e-9), 1), "efficiency": round(done / allowed, 3)}


def report(mode: str, web, log_path, figures: dict, default_delay: float = CRAWLER_DEFAULT_DELAY) -> dict:
    audit = audit_log(log_path, web, default_delay, depth_limit=DEPTH_LIMIT)
    truth = len(web.ground_truth(depth_limit=DEPTH_LIMIT))
    pages = figures["counts"]["pages"]
    elapsed = audit["elapsed"]
    cpu = {k: round(v, 2) for k, v in figures["cpu_seconds"].items()}
    crawler_total = sum(v for k, v in cpu.items() if k != "sample_web")
    return {
        "mode": mode,
        "pages": pages,
        "indexed": figures["counts"]["indexed"],
        "elapsed_seconds": round(elapsed, 2),
        "pages_per_second": round(pages / max(elapsed, 1e-9), 1),
        "steady_pages_per_second": steady_rate(log_path),
        "cpu_seconds": cpu,
        "cpu_ms_per_page": {k: round(1000 * v / max(pages, 1), 2) for k, v in cpu.items()}
        | {"total_without_sample_web": round(1000 * crawler_total / max(pages, 1), 2)},
        "peak_rss_mb": figures["peak_rss_mb"],
        "worker_rss_mb": figures.get("worker_rss_mb", {}),
        "db_bytes_per_page": round(figures["db_bytes"] / max(pages, 1)),
        "seen_cache": figures.get("seen_cache"),  # embedded: the seen test's entries and bytes at its fullest
        "url_updates": figures.get("url_updates"),  # PostgreSQL: URL row updates, and the HOT ones
        "waiting_prefilled": figures.get("waiting_prefilled", 0),
        "warc_bytes_per_page": round(figures["warc_bytes"] / max(pages, 1)),
        "db_sessions": figures.get("db_sessions"),  # PostgreSQL connections opened (distributed)
        "postgresql_settings": figures.get("postgresql_settings"),
        # PostgreSQL's full-text indexing alone, per page crawled (distributed): its floor
        "postgresql_fts_floor_ms_per_page": (
            round(1000 * figures["fts_cpu_per_document"] * figures["counts"]["indexed"] / max(pages, 1), 2)
            if figures.get("fts_cpu_per_document") else None),
        "ground_truth": truth,
        "completeness_percent": round(100 * (len(audit["fetched"]) - len(audit["unexpected"])) / truth, 2),
        "missing": len(audit["missing"]),
        "unexpected": len(audit["unexpected"]),
        "duplicate_fetches": len(audit["duplicate_fetches"]),
        "requests": audit["requests"],
        "politeness": {
            "max_in_flight_per_host": max(audit["max_in_flight"].values(), default=0),
            "gap_violations": len(audit["gap_violations"]),
            "retry_after_violations": len(audit["retry_after_violations"]),
            "robots_disallowed_fetched": len(audit["robots_disallowed_fetched"]),
        },
        "violations": audit["violations"],
        # connections per host, most open at once to one host, gap ÷ allowed gap
        "pacing": audit["pacing"],
        "politeness_bound": politeness_efficiency(log_path, web, default_delay),
        "stages_ms_per_page": _stages_per_page(figures, cpu, pages),
        "postgresql_by_group": (pgstatements.per_page(figures["pg_statements"], cpu.get("postgresql", 0.0), pages)
                                if figures.get("pg_statements") else None),
        # the one part that does not scale out: how many pages/s one PostgreSQL core serves
        "pages_per_second_per_db_core": (round(1000 / (1000 * cpu["postgresql"] / max(pages, 1)), 1)
                                         if cpu.get("postgresql") else None),
    }


def _stages_per_page(figures: dict, cpu: dict, pages: int) -> dict | None:
    """CPU ms per page by stage of our crawling processes, and what no stage covers
    ("other": threads' scheduling, Celery, the interpreter) against their metered CPU."""
    stages = figures.get("stage_cpu_seconds")
    if not stages:
        return None
    ours = sum(v for k, v in cpu.items() if k in ("crawler", "workers"))
    table = {name: round(1000 * seconds / max(pages, 1), 3) for name, seconds in stages.items()}
    table["other"] = round(1000 * max(0.0, ours - sum(stages.values())) / max(pages, 1), 3)
    return table


def acceptable(run: dict) -> bool:
    if run["mode"] in ("ceiling", PEER_MODE):  # figures to compare with, not ours to judge
        return True
    # Fetched is not stored: a run whose writes failed (every URL settled store_failed) is
    # complete by the server's log; most of the web's pages must also be in the index.
    stored = run.get("indexed") is None or run["indexed"] >= 0.5 * run["ground_truth"]
    return (run["violations"] == 0 and run["duplicate_fetches"] == 0 and run["completeness_percent"] >= 99.5
            and run["politeness"]["max_in_flight_per_host"] <= 1 and stored)


def medians(runs: list[dict]) -> dict:
    keys = ("pages_per_second", "steady_pages_per_second", "elapsed_seconds")
    summary = {k: statistics.median(r[k] for r in runs) for k in keys}
    if runs[0]["mode"] != "ceiling":
        summary["cpu_ms_per_page"] = {k: statistics.median(r["cpu_ms_per_page"][k] for r in runs)
                                      for k in runs[0]["cpu_ms_per_page"]}
        summary["worst"] = {
            "completeness_percent": min(r["completeness_percent"] for r in runs),
            "violations": max(r["violations"] for r in runs),
            "duplicate_fetches": max(r["duplicate_fetches"] for r in runs),
        }
        summary["peak_rss_mb"] = {k: max(r["peak_rss_mb"][k] for r in runs) for k in runs[0]["peak_rss_mb"]}
        summary["db_bytes_per_page"] = statistics.median(r["db_bytes_per_page"] for r in runs)
        summary["warc_bytes_per_page"] = statistics.median(r["warc_bytes_per_page"] for r in runs)
        floors = [r["postgresql_fts_floor_ms_per_page"] for r in runs if r.get("postgresql_fts_floor_ms_per_page")]
        if floors:
            summary["postgresql_fts_floor_ms_per_page"] = statistics.median(floors)
        summary["pacing"] = {k: _median_of(r["pacing"].get(k) for r in runs) for k in runs[0]["pacing"]}
        summary["pacing"]["max_parallel_connections_per_host"] = max(
            (r["pacing"]["max_parallel_connections_per_host"] or 0) for r in runs)
        summary["politeness_efficiency"] = _median_of(r["politeness_bound"].get("efficiency") for r in runs)
        rss = [r["worker_rss_mb"].get("growth") for r in runs if r.get("worker_rss_mb")]
        if rss:
            summary["worker_rss_growth_mb"] = max(rss)
        stages = [r["stages_ms_per_page"] for r in runs if r.get("stages_ms_per_page")]
        if stages:
            summary["stages_ms_per_page"] = {k: statistics.median(s.get(k, 0.0) for s in stages) for k in stages[0]}
        groups = [r["postgresql_by_group"] for r in runs if r.get("postgresql_by_group")]
        if groups:
            summary["postgresql_by_group"] = {
                k: {f: statistics.median(g[k][f] for g in groups) for f in ("cpu_ms_per_page", "calls_per_page")}
                for k in groups[0]}
        if runs[0].get("postgresql_settings"):
            summary["postgresql_settings"] = runs[0]["postgresql_settings"]
        per_core = [r["pages_per_second_per_db_core"] for r in runs if r.get("pages_per_second_per_db_core")]
        if per_core:
            summary["pages_per_second_per_db_core"] = statistics.median(per_core)
    return summary


def _median_of(values):
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def table(size: str, summary: dict, ceiling: float | None, latency: float) -> str:
    peer = summary.get(PEER_MODE, {}).get("pages_per_second")
    lines = [f"size {size}, server latency {1000 * latency:g} ms: medians of runs",
             "| mode | pages/s | × Scrapy | steady pages/s | of ceiling | politeness efficiency | connections/host"
             " (max parallel) | median / p90 gap ÷ allowed | CPU ms/page (all but sample web) | PostgreSQL CPU ms/page"
             " | worst completeness | violations | duplicates |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for mode, m in summary.items():
        if mode == "ceiling":
            lines.append(f"| ceiling | {m['pages_per_second']} | - | {m['steady_pages_per_second']} | 100% |"
                         + " - |" * 8)
            continue
        frac = f"{100 * m['pages_per_second'] / ceiling:.0f}%" if ceiling else "-"
        ratio = f"{m['pages_per_second'] / peer:.2f}" if peer else "-"
        pacing = m["pacing"]
        efficiency = m["politeness_efficiency"]
        lines.append(
            f"| {mode} | {m['pages_per_second']} | {ratio} | {m['steady_pages_per_second']} | {frac} | "
            f"{'-' if efficiency is None else f'{100 * efficiency:.0f}%'} | "
            f"{pacing['connections_per_host']} ({pacing['max_parallel_connections_per_host']}) | "
            f"{pacing['median_gap_ratio']} / {pacing['p90_gap_ratio']} | "
            f"{m['cpu_ms_per_page']['total_without_sample_web']} | {m['cpu_ms_per_page'].get('postgresql', '-')} | "
            f"{m['worst']['completeness_percent']}% | {m['worst']['violations']} | {m['worst']['duplicate_fetches']} |")
    lines += _ratio_table(summary)
    lines += _stage_table(summary)
    lines += _group_table(summary)
    settings = next((m["postgresql_settings"] for m in summary.values() if m.get("postgresql_settings")), None)
    if settings:
        lines.append("\nPostgreSQL: " + ", ".join(f"{name} {value}" for name, value in settings.items())
                     + ("" if settings.get("autovacuum") == "on" else
                        " (autovacuum off: the tables have no statistics; `scripts/services.sh --statements`)"))
    return "\n".join(lines)


def _ratio_table(summary: dict) -> list[str]:
    """Each mode beside the peer: steady pages/s and all our CPU per page, as ratios."""
    peer = summary.get(PEER_MODE)
    if not peer:
        return []
    peer_cpu = peer["cpu_ms_per_page"]["total_without_sample_web"]
    lines = ["", "beside Scrapy (same web, same run):", "| mode | steady pages/s | × Scrapy | CPU ms/page | × Scrapy |"
             " pages/s one PostgreSQL core serves |", "|---|---|---|---|---|---|"]
    for mode, m in summary.items():
        if mode == "ceiling":
            continue
        cpu = m["cpu_ms_per_page"]["total_without_sample_web"]
        lines.append(f"| {mode} | {m['steady_pages_per_second']} | "
                     f"{m['steady_pages_per_second'] / max(peer['steady_pages_per_second'], 1e-9):.2f} | {cpu} | "
                     f"{cpu / max(peer_cpu, 1e-9):.2f} | {m.get('pages_per_second_per_db_core') or '-'} |")
    return lines


def _by_mode(summary: dict, key: str, title: str, row: str, cell) -> list[str]:
    """A table with a row per name of summary[mode][key] and a column per mode that has it."""
    modes = [mode for mode, m in summary.items() if m.get(key)]
    if not modes:
        return []
    lines = ["", title, f"| {row} | " + " | ".join(modes) + " |", "|---" * (len(modes) + 1) + "|"]
    for name in summary[modes[0]][key]:
        lines.append(f"| {name} | " + " | ".join(cell(summary[mode][key].get(name)) for mode in modes) + " |")
    return lines


def _stage_table(summary: dict) -> list[str]:
    lines = _by_mode(summary, "stages_ms_per_page", "CPU ms per page by stage (our crawling processes; "
                     "PostgreSQL apart):", "stage", lambda ms: f"{ms or 0.0:.3f}")
    if lines:
        lines.append("| total | " + " | ".join(f"{sum(m['stages_ms_per_page'].values()):.3f}"
                                              for m in summary.values() if m.get("stages_ms_per_page")) + " |")
    return lines


def _group_table(summary: dict) -> list[str]:
    return _by_mode(summary, "postgresql_by_group", "PostgreSQL CPU ms per page by statement group "
                    "(pg_stat_statements; calls per page in brackets):", "group",
                    lambda g: f"{g['cpu_ms_per_page']:.3f} ({g['calls_per_page']})" if g else "-")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=sorted(SIZES), default="quick")
    parser.add_argument("--modes", default="embedded,distributed:2,scrapy,ceiling",
                        help="comma-separated: embedded, embedded-postgres, distributed:N, scrapy, ceiling")
    parser.add_argument("--latency", type=float, default=None,
                        help="seconds every sample-web response takes (default: the size's, 0.01)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--out", default="var/bench", help="folder for the JSON results")
    parser.add_argument("--timeout", type=float, default=1800, help="per crawl, seconds")
    parser.add_argument("--no-warc", action="store_true", help="crawl with the WARC archive off (its cost)")
    parser.add_argument("--waiting", type=int, default=0,
                        help="distributed modes: URLs queued first, in bulk, none due during the crawl")
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for mode in modes:
        base = mode.removesuffix(NO_DELAY)
        if not (mode in ("ceiling", PEER_MODE) or base in EMBEDDED_MODES
                or (base.startswith("distributed:") and base[12:].isdigit())):
            parser.error(f"unknown mode {mode!r}")
    out = ROOT / args.out
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ) | CRAWL_ENV | {"CRAWLER_WARC_ENABLED": "false" if args.no_warc else "true"}
    if any(m.startswith(("distributed", "embedded-postgres")) for m in modes):
        prepare_postgres(env)
    config = SIZES[args.size] if args.latency is None else replace(SIZES[args.size], latency=args.latency)
    if PEER_MODE in modes:
        ensure_venv()  # installs Scrapy into its own virtualenv once
    results: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="crawlerweb-bench-") as tmp:
        workdir = Path(tmp)
        for run_index in range(args.runs):
            for mode in modes:
                log_path = workdir / "requests.log"
                base, no_delay = mode.removesuffix(NO_DELAY), mode.endswith(NO_DELAY)
                mode_env = env | {"CRAWLER_DEFAULT_DELAY": "0"} if no_delay else env
                with run_server(replace(config), log_path) as web:
                    if base in EMBEDDED_MODES:
                        figures = run_embedded(web, mode_env, workdir, args.timeout, postgres=base == "embedded-postgres")
                    elif mode == "ceiling":
                        ceiling = run_ceiling(web, env, workdir)
                    elif mode == PEER_MODE:
                        figures = run_scrapy(web, workdir, args.timeout)
                    else:
                        figures = run_distributed(web, mode_env, int(base.split(":")[1]), workdir, args.timeout,
                                                  waiting=args.waiting)
                if mode == "ceiling":
                    result = {"mode": "ceiling", **ceiling, "steady_pages_per_second": steady_rate(log_path)}
                else:
                    result = report(mode, web, log_path, figures,
                                    default_delay=0.0 if mode == PEER_MODE or no_delay else CRAWLER_DEFAULT_DELAY)
                result |= {"size": args.size, "latency": config.latency, "run": run_index + 1, "machine": _machine()}
                results.setdefault(mode, []).append(result)
                name = f"{args.size}-{mode.replace(':', '')}-{run_index + 1}"
                (out / f"{name}.json").write_text(json.dumps(result, indent=2))
                shutil.copyfile(log_path, out / f"{name}.requests.log")  # to audit again later
                print(json.dumps(result), flush=True)
    summary = {mode: medians(runs) for mode, runs in results.items()}
    ceiling_rate = summary.get("ceiling", {}).get("pages_per_second")
    (out / f"{args.size}-{round(1000 * config.latency)}ms-summary.json").write_text(json.dumps(summary, indent=2))
    print(table(args.size, summary, ceiling_rate, config.latency))
    return 0 if all(acceptable(r) for runs in results.values() for r in runs) else 1


def _machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown cpu")
    return f"{os.cpu_count()} cores, {cpu}"


if __name__ == "__main__":
    sys.exit(main())
