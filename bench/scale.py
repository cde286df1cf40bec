"""`make bench-scale`: does a page cost the same when the crawl is a hundred times bigger?

The standard web's hosts of 100 pages (10 ms a response, two hosts with a Crawl-delay, a
slow one, one answering 429/503 first), 100, 1,000 and 10,000 of them: 10k, 100k and 1M
pages, each crawled by bench.run with the crawler's defaults in the embedded mode (SQLite,
`manage.py crawl`) and the distributed one (`distributed:2`: PostgreSQL and Redis, one
dispatcher, two `celery worker` processes with their default pools); then the distributed crawl of the 10k web with a frontier that already holds --waiting
URLs (10M by default: 100,000 hosts none of which is due during the crawl, written in
bulk), so the queue's indexes and the dispatcher's queries meet a big table.

    python -m bench.scale                                   # 10k and 100k, and 10k beside 10M waiting (~1 h)
    python -m bench.scale --sizes 10k,100k,1m               # 1M pages: hours more on 2 cores
    python -m bench.scale --sizes 10k --waiting 0           # the quick look (~6 min)

Prints one table: per size and mode, pages/s, CPU ms per page by process kind, PostgreSQL
ms per page (and its largest statement groups), peak RSS of every process, database and
WARC bytes per page, the seen-cache's entries and memory (embedded) and the share of URL
row updates that were HOT (PostgreSQL); then each figure's ratio to the 10k run of the
same mode (the issue's target: within 1.2x). Each run's whole result (bench.run's JSON,
with the politeness audit and the request log) is under --out.
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = {"10k": "scale-10k", "100k": "scale-100k", "1m": "scale-1m"}
MODES = ("embedded", "distributed:2")


def run(size: str, mode: str, out: Path, waiting: int, timeout: float) -> dict | None:
    """One bench.run crawl; its result, or None when it failed (the reason is on stderr)."""
    command = [sys.executable, "-m", "bench.run", "--size", SIZES[size], "--modes", mode, "--out", str(out),
               "--timeout", str(timeout)]
    if waiting:
        command += ["--waiting", str(waiting)]
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL)
    result = out / f"{SIZES[size]}-{mode.replace(':', '')}-1.json"
    if not result.exists():
        print(f"{size} {mode}: bench.run exited with {done.returncode} and no result", file=sys.stderr)
        return None
    figures = json.loads(result.read_text())
    figures["accepted"] = done.returncode == 0
    return figures


OUR_PROCESSES = ("crawler", "workers", "dispatcher")


def _ours(cpu: dict) -> dict:
    """CPU ms/page of our processes, by kind (PostgreSQL, Redis and the sample web apart)."""
    return {k: v for k, v in cpu.items() if k in OUR_PROCESSES}


def row(label: str, r: dict) -> dict:
    """The figures the table shows, by name."""
    cpu = r["cpu_ms_per_page"]
    ours = _ours(cpu)
    groups = r.get("postgresql_by_group") or {}
    top = sorted(((g["cpu_ms_per_page"], name) for name, g in groups.items() if name != "total"), reverse=True)[:3]
    seen = r.get("seen_cache") or {}
    updates = r.get("url_updates") or {}
    return {
        "run": label, "pages": r["pages"], "pages/s": r["pages_per_second"],
        "ours ms/page": round(sum(ours.values()), 2),
        "by process": ", ".join(f"{k} {v}" for k, v in ours.items()),
        "PostgreSQL ms/page": cpu.get("postgresql"),
        "largest groups": ", ".join(f"{name} {ms:.2f}" for ms, name in top),
        "peak RSS MB": ", ".join(f"{k} {v}" for k, v in r["peak_rss_mb"].items() if k != "sample_web"),
        "DB B/page": r["db_bytes_per_page"], "WARC B/page": r["warc_bytes_per_page"],
        "seen cache": f"{seen['entries']:,} / {seen['bytes'] / 2**20:.1f} MiB" if seen else "",
        "HOT": updates.get("hot_share"),
        "complete %": r["completeness_percent"], "violations": r["violations"],
    }


def ratios(r: dict, base: dict) -> str:
    """CPU, PostgreSQL and peak RSS figures against the 10k run of the same mode."""
    def ratio(a, b):
        return f"{a / b:.2f}x" if a and b else "-"

    cpu, base_cpu = r["cpu_ms_per_page"], base["cpu_ms_per_page"]
    ours, base_ours = sum(_ours(cpu).values()), sum(_ours(base_cpu).values())
    rss = ", ".join(f"{k} {ratio(v, base['peak_rss_mb'].get(k))}" for k, v in r["peak_rss_mb"].items()
                    if k != "sample_web")
    return (f"ours {ratio(ours, base_ours)}, PostgreSQL {ratio(cpu.get('postgresql'), base_cpu.get('postgresql'))}, "
            f"peak RSS: {rss}")


def table(rows: list[dict]) -> str:
    names = list(rows[0])
    lines = ["| " + " | ".join(names) + " |", "|" + "---|" * len(names)]
    lines += ["| " + " | ".join(str(r[n]) for n in names) + " |" for r in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10k,100k", help="comma-separated: 10k, 100k, 1m")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--waiting", type=int, default=10_000_000,
                        help="URLs waiting in the frontier for the extra distributed 10k run (0: none)")
    parser.add_argument("--out", default="var/scale")
    parser.add_argument("--timeout", type=float, default=6 * 3600, help="per crawl, seconds")
    args = parser.parse_args(argv)
    sizes = [s for s in args.sizes.split(",") if s]
    modes = [m for m in args.modes.split(",") if m]
    unknown = [s for s in sizes if s not in SIZES]
    if unknown:
        parser.error(f"unknown sizes {unknown}: {', '.join(SIZES)}")
    sizes.sort(key=list(SIZES).index)
    out = ROOT / args.out
    # The 10k web, then beside the waiting frontier, then the bigger webs (the longest last).
    steps = [(size, mode, 0) for size in sizes[:1] for mode in modes]
    if args.waiting:
        steps.append(("10k", next((m for m in modes if m.startswith("distributed")), "distributed:2"), args.waiting))
    steps += [(size, mode, 0) for size in sizes[1:] for mode in modes]
    results: dict[tuple[str, str], dict] = {}
    for size, mode, waiting in steps:
        label = f"10k + {waiting:,} waiting" if waiting else size
        result = run(size, mode, out / ("10k-waiting" if waiting else size), waiting, args.timeout)
        if result:
            results[(label, mode)] = result
            print(f"{label} {mode}: {result['pages']} pages, {result['pages_per_second']} pages/s", flush=True)
    if not results:
        return 1
    print()
    print(table([row(f"{size} {mode}", r) for (size, mode), r in results.items()]))
    print()
    for (size, mode), r in results.items():
        base = results.get(("10k", mode))
        if base is not None and r is not base:
            print(f"- {size} {mode} against 10k {mode}: {ratios(r, base)}")
    return 0 if all(r["accepted"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
