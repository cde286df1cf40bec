"""python -m bench.searcheval: the known-item search evaluation, end to end.

    python -m bench.searcheval [--packages PKG ...] [--backend sqlite|postgres|both] [--limit-queries N]
                               [--seed S] [--recrawl] [--rebuild-queries] [--no-baselines]

1. corpus: the Debian doc packages downloaded and extracted under var/searcheval/ (once);
2. queries: their Sphinx indexes -> known-item queries, kept in var/searcheval/queries.json
   (rebuilt when the packages, their versions, the limit or the seed change);
3. serve + crawl: the sites on loopback, crawled by our crawler into each backend's fresh
   database (skipped, unless --recrawl, when a finished crawl of the same packages by the
   same indexer code is there: bench/searcheval/crawl.py);
4. ours: indexer.service.search for every query in a Django process per backend, and the
   indexed documents exported as JSONL;
5. baselines: tantivy and bm25s on the first backend's export, in var/searcheval-venv;
6. scoring: the same metrics for every system, on the queries whose target page every
   evaluated backend indexed (the others are listed as not crawled); one markdown table,
   MRR per query kind, and var/searcheval/results.json.
"""
from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

from . import corpus, crawl, genindex, queries, report, serve
from .metrics import Outcome, Query, page_key, rank_of, score

ROOT = Path(__file__).resolve().parents[2]
WORKDIR = ROOT / "var" / "searcheval"
QUERY_FORMAT = 1  # bump when the query-building rules change
LABELS = {"sqlite": "ours SQLite", "postgres": "ours PostgreSQL"}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.searcheval", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packages", nargs="+", default=list(corpus.DEFAULT_PACKAGES))
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--limit-queries", type=int, default=600, help="queries in all, balanced per site")
    parser.add_argument("--seed", type=int, default=1, help="the query sample's seed")
    parser.add_argument("--recrawl", action="store_true", help="crawl again even if a finished crawl is there")
    parser.add_argument("--rebuild-queries", action="store_true")
    parser.add_argument("--no-baselines", action="store_true")
    parser.add_argument("--port", type=int, default=0, help="the sites' port (0: a free one)")
    parser.add_argument("--workdir", type=Path, default=WORKDIR)
    return parser.parse_args(argv)


def query_set(sites: list[corpus.Site], args) -> tuple[list[queries.KnownItem], dict]:
    """The saved query set if it was built from the same corpus and options, else a new one."""
    path = args.workdir / "queries.json"
    wanted = {"format": QUERY_FORMAT, "versions": {s.name: s.version for s in sites},
              "limit": args.limit_queries, "seed": args.seed}
    if path.exists() and not args.rebuild_queries:
        items, meta = queries.load(path)
        if {k: meta.get(k) for k in wanted} == wanted:
            return items, meta
    roots = {s.name: s.root for s in sites}
    entries = {s.name: genindex.read_index(s.root) for s in sites}
    items, summary = queries.build(entries, args.limit_queries, args.seed,
                                   exists=lambda site, page: (roots[site] / page).is_file())
    meta = wanted | {"sites": summary}
    queries.save(path, items, meta)
    return items, meta


def crawls(backends: list[str], sites: list[corpus.Site], args, timings: dict) -> dict:
    """backend -> its crawl record, crawling where no reusable one is there."""
    versions = {s.name: s.version for s in sites}
    records = {}
    for backend in backends:
        record, why = (None, "--recrawl") if args.recrawl else crawl.reusable(backend, args.workdir, versions)
        records[backend] = record
        if record is not None:
            print(f"{backend}: reusing the crawl of {record['finished_at']} ({record['seconds']} s; --recrawl to redo)",
                  flush=True)
        else:
            print(f"{backend}: crawling afresh ({why})", flush=True)
    todo = [b for b, record in records.items() if record is None]
    if todo:
        with serve.run_sites({s.name: s.root for s in sites}, args.port, args.workdir / "requests.log") as bases:
            for backend in todo:
                print(f"{backend}: crawling {len(bases)} sites ({', '.join(bases.values())}) ...", flush=True)
                records[backend] = crawl.crawl(backend, args.workdir, bases, versions)
                summary = records[backend]["summary"]
                print(f"{backend}: {summary['fetched']} URLs fetched, {summary['documents']['indexed']} documents "
                      f"indexed in {records[backend]['seconds']} s", flush=True)
                if summary["by_state"].get("queued") or summary.get("deferred"):
                    print(f"{backend}: WARNING the crawl did not finish: {summary['by_state']}, "
                          f"deferred {summary.get('deferred')}", flush=True)
                timings[f"crawl_{backend}_seconds"] = records[backend]["seconds"]
    return records


def run_ours(backend: str, record: dict, texts: list[str], workdir: Path) -> dict:
    """Our search on this backend's database, in a Django subprocess, and its documents
    exported (docs-<backend>.jsonl)."""
    query_file, out = workdir / "ours-queries.json", workdir / f"ours-{backend}.json"
    query_file.write_text(json.dumps(texts))
    docs = workdir / f"docs-{backend}.jsonl"
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "bench.searcheval.oursearch", "--queries", str(query_file),
                    "--out", str(out), "--export", str(docs)],
                   cwd=ROOT, env=crawl.child_env(record["database_url"]), check=True)
    result = json.loads(out.read_text())
    result["wall_seconds"] = round(time.monotonic() - start, 1)
    result["docs"] = docs
    return result


def documents(path: Path) -> tuple[list[str], int]:
    """The exported documents' addresses, and how many bodies were cut at the index cap."""
    addresses, cut = [], 0
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            addresses.append(doc["address"])
            cut += len(doc["body"]) >= report.MAX_INDEX_CHARS
    return addresses, cut


def target_url(bases: dict, item: queries.KnownItem) -> str:
    return bases[item.site] + item.target


def outcomes(items, bases: dict, urls: list, seconds: list, keep: set[int]) -> list[Outcome]:
    return [Outcome(Query(item.query, target_url(bases, item), item.kind), tuple(urls[i]), seconds[i])
            for i, item in enumerate(items) if i in keep]


def scorable(items, records: dict, indexed: dict) -> tuple[set[int], list[dict]]:
    """The positions of the queries whose target every evaluated backend indexed, and the
    others (reported as not crawled, never scored)."""
    keep, not_crawled = set(), []
    for i, item in enumerate(items):
        missing = [b for b in records if page_key(target_url(records[b]["sites"], item)) not in indexed[b]]
        if missing:
            not_crawled.append({"query": item.query, "site": item.site, "target": item.target, "missing_in": missing})
        else:
            keep.add(i)
    return keep, not_crawled


def coverage(sites: list[corpus.Site], bases: dict, addresses: list[str], summary: dict, cut: int) -> dict:
    """What the crawl indexed against what is on disk, per site."""
    keys = {page_key(a) for a in addresses}
    per_site = {}
    for site in sites:
        on_disk = corpus.html_pages(site.root)
        missed = [p for p in on_disk if page_key(bases[site.name] + queries.page_path(p)) not in keys]
        per_site[site.name] = {"pages_on_disk": len(on_disk),
                               "indexed": sum(1 for a in addresses if a.startswith(bases[site.name])),
                               "on_disk_not_indexed": len(missed), "examples_not_indexed": missed[:10]}
    return {"sites": per_site, "urls_fetched": summary["fetched"], "by_outcome": summary["by_outcome"],
            "bodies_cut_at_index_cap": cut}


def main(argv=None) -> int:
    args = parse_args(argv)
    command = "python -m bench.searcheval " + " ".join(shlex.quote(a) for a in (argv if argv is not None
                                                                                 else sys.argv[1:]))
    args.workdir.mkdir(parents=True, exist_ok=True)
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    timings = {}

    start = time.monotonic()
    sites = corpus.prepare(args.packages, args.workdir)
    timings["corpus_seconds"] = round(time.monotonic() - start, 1)
    print(f"corpus: {sum(s.pages for s in sites)} HTML pages on disk: "
          + ", ".join(f"{s.name} {s.version} ({s.pages})" for s in sites), flush=True)

    start = time.monotonic()
    items, meta = query_set(sites, args)
    timings["queries_seconds"] = round(time.monotonic() - start, 1)
    print(f"queries: {len(items)} ({args.workdir / 'queries.json'})", flush=True)

    records = crawls(backends, sites, args, timings)
    for backend in backends:
        timings.setdefault(f"crawl_{backend}_seconds", f"{records[backend]['seconds']} (reused)")
    texts = [item.query for item in items]
    ours, indexed, cover = {}, {}, {}
    for backend in backends:
        ours[backend] = run_ours(backend, records[backend], texts, args.workdir)
        timings[f"eval_{backend}_seconds"] = ours[backend]["wall_seconds"]
        addresses, cut = documents(ours[backend]["docs"])
        indexed[backend] = {page_key(a) for a in addresses}
        cover[backend] = coverage(sites, records[backend]["sites"], addresses, records[backend]["summary"], cut)

    keep, not_crawled = scorable(items, records, indexed)

    rows, per_system = {}, {}
    for backend in backends:
        found = outcomes(items, records[backend]["sites"], ours[backend]["urls"], ours[backend]["seconds"], keep)
        rows[LABELS[backend]], per_system[LABELS[backend]] = score(found), found

    baselines = {}
    if not args.no_baselines:
        from .baseline_venv import run_baselines

        source = backends[0]
        start = time.monotonic()
        baselines = run_baselines(ours[source]["docs"], texts, args.workdir)
        timings["baselines_seconds"] = round(time.monotonic() - start, 1)
        for name, result in baselines.items():
            found = outcomes(items, records[source]["sites"], result["urls"], result["seconds"], keep)
            rows[name], per_system[name] = score(found), found

    pages = sum(s.pages for s in sites)
    headline = (f"Known-item search on {len(sites)} documentation sites: {pages} HTML pages on disk, "
                + ", ".join(f"{len(indexed[b])} documents indexed ({b})" for b in backends)
                + f"; {len(keep)} queries scored ({len(items)} sampled, {len(not_crawled)} with a target not indexed).")
    setups = {name: f"{r['setup']} (indexed in {r['index_seconds']} s, documents from {backends[0]})"
              for name, r in baselines.items()}
    print("\n" + report.render(headline, command, rows, cover, crawl.CRAWL_OVERRIDES, setups, timings))

    per_query = []
    for position, i in enumerate(sorted(keep)):  # the order outcomes() keeps
        item = items[i]
        per_query.append({"query": item.query, "site": item.site, "target": item.target, "kind": item.kind,
                          "ranks": {name: rank_of(found[position].urls, found[position].query.target)
                                    for name, found in per_system.items()}})
    result = {
        "command": command,
        "corpus": {"sites": [{"name": s.name, "version": s.version, "root": str(s.root), "pages": s.pages}
                             for s in sites], "pages": pages},
        "queries": {"sampled": len(items), "scored": len(keep), "build": meta.get("sites"),
                    "not_crawled": not_crawled},
        "crawl": {b: {k: records[b][k] for k in ("database_url", "sites", "seconds", "finished_at", "overrides", "code")}
                  | {"coverage": cover[b]} for b in backends},
        "systems": {name: m.as_dict() for name, m in rows.items()},
        "baselines": {name: {"setup": r["setup"], "index_seconds": r["index_seconds"], "documents_from": backends[0]}
                      for name, r in baselines.items()},
        "timings": timings,
        "per_query": per_query,
    }
    report.write_json(args.workdir / "results.json", result)
    print(f"Results: {args.workdir / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
