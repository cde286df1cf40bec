"""Which pages first, measured (issue 29): `python -m bench.harvest` (`make bench-harvest`).

The harvest web (webs/harvestweb.py) knows each page's importance (PageRank of its link
graph). Each crawler crawls it from the same seeds with no default delay (`--default-delay`
sets ours), and the server's own request log says what it fetched in which order:

- harvest: of the top 1 % pages by PageRank, the share fetched within the first 10 % of
  the crawler's requests (robots.txt excluded; sitemaps count: they cost a request);
- sitemap-only: of the pages only a sitemap lists, the share fetched in the whole crawl;
- mirror: requests to the mirror host (a copy of host 0), those after its first page (the
  first copy the crawler sees: the issue's "after the first duplicates are seen"), and how
  many of its texts the index holds twice (host 0's page and the mirror's both indexed);
- trap: requests to the trap host past its real pages;
- requests in all, and the crawl's seconds.

Crawlers: ours with the defaults; ours breadth-first (the crawler before issue 29: the
score is the depth alone, one band, no sitemaps, no duplicate test across URLs, no trap
rule) — the baseline the issue names; Scrapy in its default order (depth-first: LIFO queues, DEPTH_PRIORITY 0), stopped
after as many pages as the web has (a trap has no end for it).
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from webs.harvestweb import HarvestConfig, HarvestWeb
from webs.httpserver import serving
from .scrapy_peer import SPIDER, ensure_venv

ROOT = Path(__file__).resolve().parent.parent
BREADTH_FIRST = {  # the order before issue 29: priority = -depth, hosts by time ready
    "CRAWLER_SCORE_HOME": "0", "CRAWLER_SCORE_SECTION": "0", "CRAWLER_SCORE_INLINK_HOST": "0",
    "CRAWLER_SCORE_BAND_HIGH": "-30000", "CRAWLER_SCORE_BAND_LOW": "-30000",
    "CRAWLER_SITEMAPS": "false", "CRAWLER_FEEDS": "false", "CRAWLER_NEAR_DUPLICATE_BITS": "-1",
    "CRAWLER_TRAP_MIN_PAGES": "0", "CRAWLER_MIRROR_MIN_PAGES": "0", "CRAWLER_SCORE_SITE_INLINK_HOST": "0",
    "CRAWLER_SESSION_REFRESH_URLS": "0",
}
MODES = ("ours", "breadth-first", "scrapy")


def read_requests(log: Path) -> list[str]:
    """URLs requested, in the order the server answered them (robots.txt left out)."""
    entries = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        fields = line.split("\t")
        if len(fields) >= 7 and fields[4] != "/robots.txt" and fields[3] in ("GET", "HEAD"):
            entries.append((float(fields[0]), f"http://{fields[2]}{fields[4]}"))
    return [url for _, url in sorted(entries)]


def figures(web: HarvestWeb, requested: list[str], budget_share: float = 0.1) -> dict:
    real = web.real_urls()
    budget = max(1, round(budget_share * len(real)))
    first = set(requested[:budget])
    fetched = set(requested)
    sitemap_only = web.sitemap_only_urls()
    mirror_host = f"http://{web.hosts[web.mirror]}/"
    mirror = [url for url in requested if url.startswith(mirror_host)]
    first_copy = next((url for url in mirror if url in web.mirror_urls()), None)
    return {
        "harvest": round(len(web.important & first) / len(web.important), 3),
        "important_pages": len(web.important),
        "budget_requests": budget,
        "sitemap_only_fetched": round(len(sitemap_only & fetched) / len(sitemap_only), 3),
        "mirror_requests": len(mirror),
        # The measure: what the mirror costs once its first copy is seen (its first page).
        "mirror_after_first_copy": len(mirror[mirror.index(first_copy) + 1:]) if first_copy in mirror else 0,
        "mirror_pages": len(web.mirror_urls()),
        "trap_requests_past_depth": sum(1 for url in requested if web.is_trap_beyond_depth(url)),
        "real_pages_fetched": round(len(real & fetched) / len(real), 4),
        "requests": len(requested),
    }


def crawl_ours(web: HarvestWeb, workdir: Path, extra_env: dict, timeout: float, delay: float = 0.0) -> dict:
    db = workdir / "harvest.sqlite3"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{db}", CRAWLER_ALLOWED_NETWORKS="127.0.0.0/8",
               CRAWLER_DEFAULT_DELAY=str(delay), CRAWLER_WARC_DIR=str(workdir / "warc"),
               CRAWLER_CRAWL_LOG_FILE=str(workdir / "crawl.jsonl"), **extra_env)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    started = time.monotonic()
    subprocess.run([sys.executable, "manage.py", "crawl", "--json", "--scope", "web", *web.seeds], cwd=ROOT,
                   env=env, check=True, timeout=timeout, stdout=subprocess.DEVNULL)
    elapsed = time.monotonic() - started
    with sqlite3.connect(db) as conn:
        indexed = {row[0] for row in conn.execute(
            "SELECT u.url FROM indexer_document d JOIN frontier_url u ON d.url_id = u.id WHERE d.indexed")}
    mirror = f"http://{web.hosts[web.mirror]}"
    twice = sum(1 for url in web.mirror_urls()
                if url in indexed and web.url(0, 0).rstrip("/") + url[len(mirror):] in indexed)
    return {"seconds": round(elapsed, 1), "mirror_texts_indexed_twice": twice}


def crawl_scrapy(web: HarvestWeb, workdir: Path, timeout: float) -> dict:
    python = ensure_venv()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}
    pages = len(web.real_urls())
    command = [str(python), str(SPIDER), *web.seeds, "--timeout", str(timeout), "--concurrency", "256",
               "-s", "DEPTH_PRIORITY=0", "-s", "SCHEDULER_DISK_QUEUE=scrapy.squeues.PickleLifoDiskQueue",
               "-s", "SCHEDULER_MEMORY_QUEUE=scrapy.squeues.LifoMemoryQueue", "-s", f"CLOSESPIDER_PAGECOUNT={pages}"]
    started = time.monotonic()
    subprocess.run(command, cwd=workdir, env=env, check=True, timeout=timeout + 60, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return {"seconds": round(time.monotonic() - started, 1), "mirror_texts_indexed_twice": None}


def run(config: HarvestConfig, modes: list[str], timeout: float, repeat: int = 1, delay: float = 0.0) -> dict:
    """Each mode `repeat` times (a crawl's order varies from run to run: threads, the band
    draw); the figures of every run, and the harvest's mean, min and max."""
    runs = {mode: [] for mode in modes}
    for _ in range(repeat):
        for mode, figures_ in _run_once(config, modes, timeout, delay).items():
            runs[mode].append(figures_)
    results = {}
    for mode, rows in runs.items():
        harvests = [row["harvest"] for row in rows]
        results[mode] = rows[-1] | {"harvest": round(sum(harvests) / len(harvests), 3),
                                    "harvest_range": [min(harvests), max(harvests)], "runs": len(rows)}
        for name in ("trap_requests_past_depth", "mirror_after_first_copy"):  # every run's, not the last one's
            values = [row[name] for row in rows]
            results[mode][name] = values[0] if len(set(values)) == 1 else f"{min(values)}–{max(values)}"
    return results


def _run_once(config: HarvestConfig, modes: list[str], timeout: float, delay: float = 0.0) -> dict:
    results = {}
    with tempfile.TemporaryDirectory(prefix="harvest-") as tmp:
        for mode in modes:
            workdir = Path(tmp) / mode
            workdir.mkdir()
            log = workdir / "requests.log"
            flags = [f"--{k.replace('_', '-')}={v}" for k, v in asdict(config).items()] + ["--log", str(log)]
            with serving("webs.harvestweb", flags) as (_, ready):
                served = HarvestWeb(HarvestConfig(**ready["config"]))
                if mode == "scrapy":
                    extra = crawl_scrapy(served, workdir, timeout)
                else:
                    extra = crawl_ours(served, workdir, BREADTH_FIRST if mode == "breadth-first" else {}, timeout,
                                       delay)
            # Leaving `serving` stopped the server, which flushes its log before it exits.
            results[mode] = figures(served, read_requests(log)) | extra
    return results


def report(results: dict) -> str:
    columns = ("harvest", "harvest_range", "sitemap_only_fetched", "mirror_requests", "mirror_after_first_copy",
               "mirror_pages", "mirror_texts_indexed_twice", "trap_requests_past_depth",
               "real_pages_fetched", "requests", "seconds")
    lines = ["| crawler | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for mode, row in results.items():
        lines.append(f"| {mode} | " + " | ".join(str(row.get(c, "")) for c in columns) + " |")
    if "ours" in results and "breadth-first" in results and results["breadth-first"]["harvest"]:
        lines.append(f"\nharvest, ours ÷ breadth-first: {results['ours']['harvest'] / results['breadth-first']['harvest']:.2f}"
                     f" (means of {results['ours']['runs']} runs; trap and mirror after its first copy: every run's"
                     f" range; the other figures: the last run); the most any order"
                     f" could reach on this web: {1 / results['breadth-first']['harvest']:.2f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--hosts", type=int, default=HarvestConfig.hosts)
    parser.add_argument("--pages", type=int, default=HarvestConfig.pages)
    parser.add_argument("--seed", type=int, default=HarvestConfig.seed)
    parser.add_argument("--sitemap-lists", choices=("best", "all"), default=HarvestConfig.sitemap_lists,
                        help="a host's sitemap lists its ten best pages with <priority> (best), or every page without")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per crawl at most")
    parser.add_argument("--default-delay", type=float, default=0.0,
                        help="CRAWLER_DEFAULT_DELAY of our crawls (0: the crawling process, not politeness, "
                             "limits the order; 1 is the crawler's default)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each mode (the harvest: mean, min, max)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    config = HarvestConfig(hosts=args.hosts, pages=args.pages, seed=args.seed, sitemap_lists=args.sitemap_lists)
    results = run(config, [m for m in args.modes.split(",") if m], args.timeout, max(1, args.repeat),
                  args.default_delay)
    print(json.dumps(results, indent=1) if args.json else report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
