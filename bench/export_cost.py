"""What an export costs (`manage.py export`, docs/benchmarks.md "Export"): rows/s, peak
memory and file size of each format, and what --outlinks adds.

    DATABASE_URL=postgres://…/scratch python -m bench.export_cost [--rows 1000000] [--archived 10000]

Fills a PostgreSQL database of its own (`make bench-export` makes one) up to --rows
documents on as many URLs over 1,000 hosts, about 1.9 KB of text each, set-based
(INSERT … SELECT generate_series; rows already there from an earlier, smaller run are kept,
so `--rows 200000` then `--rows 1000000` measures both sizes on one database). Then
--archived documents of one more host get real responses: sample-web pages (10-40 KB, their
links as the sample web writes them) written to a WARC directory of the bench's own
(var/bench-export/warc), remade on every run, for --outlinks.

Each export runs as `manage.py export` in a child process, to a file; its wall time and its
own CPU time and peak RSS (wait4's rusage, read by a small launcher that forks it) are
reported, and each run is bounded by --timeout. A database holding other URLs is refused.
"""

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
WORK = ROOT / "var" / "bench-export"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")
os.environ["CRAWLER_WARC_DIR"] = str(WORK / "warc")  # the export children read the same archive

import django  # noqa: E402

django.setup()

from django.db import connection, transaction  # noqa: E402

from webs.sampleweb import SampleWeb, WebConfig  # noqa: E402
from archive import warc
from fetch import http  # noqa: E402
from frontier.models import Host, Url, UrlState  # noqa: E402
from frontier.normalize import normalize  # noqa: E402
from indexer.models import Document  # noqa: E402

HOSTS = 1000
HOST_PREFIX = "http://export-bench-"
LINKS_HOST = "http://export-bench-links.test"
SENTENCES = 4096  # a pool of the sample web's sentences; each document draws its own 35 (about 1.9 KB)
SENTENCES_PER_DOCUMENT = 35


def check_database(rows: int) -> int:
    """How many of the bench's documents are there already; exits on a database that holds
    anything else, or more than asked for."""
    if connection.vendor != "postgresql":
        raise SystemExit("needs DATABASE_URL=postgres://… (a database of its own: `make bench-export`)")
    others = Url.objects.exclude(url__startswith=HOST_PREFIX).exists()
    if others:
        raise SystemExit("this database holds URLs that are not the bench's: give it a database of its own")
    have = Document.objects.exclude(url__host__origin=LINKS_HOST).count()
    if have > rows:
        raise SystemExit(f"this database holds {have:,} bench documents, more than --rows {rows:,}: "
                         "give a larger --rows or a new database")
    return have


def fill(have: int, rows: int) -> None:
    """Hosts, then URLs have+1..rows and their documents, each in one set-based statement."""
    started = time.monotonic()
    rng = random.Random(1)
    prose = SampleWeb(WebConfig()).prose
    sentences = [prose.sentence(rng) for _ in range(SENTENCES)]
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("""
            INSERT INTO frontier_host (origin, next_fetch_at, lease_owner, robots_body, robots_error, url_count,
                                       created_at)
            SELECT %s || h || '.test', now(), '', '', '', 0, now() FROM generate_series(0, %s) h
            ON CONFLICT (origin) DO NOTHING""", [HOST_PREFIX, HOSTS - 1])
        # SimHashes spread over the whole signed 64-bit range (hashtextextended), negatives included.
        cur.execute("""
            INSERT INTO frontier_url (url_key, url, host_id, depth, redirect_hops, priority, state, outcome,
                                      attempts, next_fetch_at, last_status, last_fetched_at, content_hash,
                                      created_at, text_hash, simhash, last_observation, observations,
                                      change_rate, recrawl_interval)
            SELECT g, h.origin || '/p/' || g || '.html', h.id, 1 + g %% 6, 0, 10 + g %% 50, 'fetched', 'indexed',
                   1, now() + interval '1 day', 200, now() - g * interval '1 second',
                   md5(g::text) || md5((-g)::text), now(), md5(g::text), hashtextextended(g::text, 0), 'first',
                   g %% 3, (g %% 100) / 10.0, 86400
            FROM generate_series(%s, %s) g
            JOIN frontier_host h ON h.origin = %s || (g %% %s) || '.test'""",
                    [have + 1, rows, HOST_PREFIX, HOSTS])
        cur.execute("""
            INSERT INTO indexer_document (url_id, address, title, headings, body, content_hash, content_type, status,
                                          size, noindex, indexed, fetched_at, warc_file, boilerplate)
            SELECT u.id, u.url, 'Page ' || u.url_key || ' of the export bench', 'A heading · Another heading',
                   (SELECT string_agg(s[1 + (u.url_key * 2654435761 + k * 40503) %% %s], ' ')
                      FROM generate_series(1, %s) k),
                   u.content_hash, 'text/html', 200, 20000 + u.url_key %% 20000, false, true, u.last_fetched_at,
                   '', ''
            FROM frontier_url u, (SELECT %s::text[] AS s) pool
            WHERE u.url_key BETWEEN %s AND %s""",
                    [SENTENCES, SENTENCES_PER_DOCUMENT, sentences, have + 1, rows])
        cur.execute("UPDATE frontier_host h SET url_count = (SELECT count(*) FROM frontier_url u WHERE u.host_id = h.id)")
    with connection.cursor() as cur:
        cur.execute("VACUUM ANALYZE frontier_url")
        cur.execute("VACUUM ANALYZE indexer_document")
    print(f"filled documents {have + 1:,}..{rows:,} in {time.monotonic() - started:.0f} s", flush=True)


def archive_pages(count: int) -> None:
    """`count` documents of LINKS_HOST whose responses are sample-web pages in the bench's
    own WARC directory (both remade: a run never reads an older run's archive)."""
    started = time.monotonic()
    Url.objects.filter(host__origin=LINKS_HOST).delete()  # and their documents
    shutil.rmtree(WORK / "warc", ignore_errors=True)
    warc.close()
    web = SampleWeb(WebConfig(pages_per_host=250))
    pages = [f"http://{netloc}/p/{n}.html" for netloc in web.hosts for n in range(250)]
    host, _ = Host.objects.get_or_create(origin=LINKS_HOST)
    urls, documents = [], []
    for n in range(count):
        body = web.body(web.page(pages[n % len(pages)]))
        norm = normalize(f"{LINKS_HOST}/p/{n}.html")
        result = http.FetchResult(norm.url, status=200, headers={"content-type": "text/html; charset=utf-8"},
                                  body=body, final_url=norm.url, started_at=time.time(), reason="OK",
                                  response_headers=[("Content-Type", "text/html; charset=utf-8")], body_read=True)
        location = warc.record(result)
        urls.append(Url(url=norm.url, url_key=norm.key, host=host, state=UrlState.FETCHED, last_status=200))
        documents.append(dict(page_url=norm.url, title=f"Archived page {n}", body="text", content_hash=f"{n:064x}",
                              size=len(body), warc_file=location.filename, warc_offset=location.offset,
                              warc_length=location.length))
    warc.close()
    Url.objects.bulk_create(urls, batch_size=2000)
    Document.objects.bulk_create([Document(url=url, **fields) for url, fields in zip(urls, documents)],
                                 batch_size=2000)
    size = sum(p.stat().st_size for p in (WORK / "warc").glob("*.warc.gz"))
    print(f"archived {count:,} pages ({size / 1e6:.0f} MB of WARC) in {time.monotonic() - started:.0f} s", flush=True)


# Starts the export and reports its peak RSS. A child's ru_maxrss starts from the memory of
# the process it was forked from (Linux keeps the high-water mark across exec), so the
# export is forked from this small launcher, not from the bench (Django and the sample web).
_LAUNCHER = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss, usage.ru_utime + usage.ru_stime)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def export(label: str, args: list[str], path: Path, timeout: float) -> dict:
    """One `manage.py export` in a child process: wall seconds, its peak RSS, rows, file size."""
    path.unlink(missing_ok=True)
    command = [sys.executable, "manage.py", "export", *args, "-o", str(path), "--no-progress"]
    with open(WORK / "export.err", "w") as err:
        started = time.monotonic()
        launcher = subprocess.Popen([sys.executable, "-S", "-c", _LAUNCHER, *command], cwd=ROOT,
                                    stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True)
        try:
            out, _ = launcher.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(launcher.pid, signal.SIGKILL)  # the launcher's session: it and the export
            launcher.wait()
            raise SystemExit(f"{label}: no end after {timeout:.0f} s")
        wall = time.monotonic() - started
    said = (WORK / "export.err").read_text()
    if launcher.returncode != 0:
        raise SystemExit(f"{label}: exit {launcher.returncode}\n{said}")
    rows = int(said.split()[0])
    peak_kb, cpu = out.split()
    return {"what": label, "rows": rows, "wall_s": wall, "rows_per_s": rows / wall, "cpu_s": float(cpu),
            "peak_mb": int(peak_kb) / 1024, "file_mb": path.stat().st_size / 1e6, "said": said.strip()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="documents (and URLs) to export")
    parser.add_argument("--archived", type=int, default=10_000, help="documents with archived pages, for --outlinks")
    parser.add_argument("--runs", type=int, default=1, help="runs of each export; the fastest is reported "
                        "(on a shared machine the others were slowed by someone else)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds one export may take")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    have = check_database(args.rows)
    if have < args.rows:
        fill(have, args.rows)
    archive_pages(args.archived)
    links = ["--host", LINKS_HOST]
    cases = [
        ("documents, none (--host with none: Django's own)", ["documents", "--host", "none.invalid"], "jsonl"),
        ("documents", ["documents"], "jsonl"),
        ("documents", ["documents"], "parquet"),
        ("urls", ["urls"], "jsonl"),
        ("urls", ["urls"], "parquet"),
        ("archived pages", ["documents", *links], "jsonl"),
        ("archived pages --outlinks", ["documents", *links, "--outlinks"], "jsonl"),
        ("archived pages --outlinks", ["documents", *links, "--outlinks"], "parquet"),
    ]
    results = []
    for label, export_args, fmt in cases:
        runs = []
        for _ in range(args.runs):
            runs.append(export(f"{label} ({fmt})", export_args, WORK / f"export.{fmt}", args.timeout))
            print(f"{runs[-1]['what']}: {runs[-1]['rows']:,} rows in {runs[-1]['wall_s']:.2f} s, "
                  f"peak {runs[-1]['peak_mb']:.0f} MB (load {os.getloadavg()[0]:.1f})", flush=True)
        results.append(min(runs, key=lambda run: run["wall_s"]))
    # CPU: the export process's own (user + system), not PostgreSQL's; less moved by other
    # work on the machine than the wall time.
    print("\n| what | rows | wall s | rows/s | export CPU s | peak RSS MB | file MB |\n|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['what']} | {r['rows']:,} | {r['wall_s']:.2f} | {r['rows_per_s']:,.0f} | {r['cpu_s']:.2f} "
              f"| {r['peak_mb']:.0f} | {r['file_mb']:.1f} |")


if __name__ == "__main__":
    main()
