import json
import signal
import sys
import threading
import time

from django.core.management.base import CommandError
from django.utils import timezone
from tqdm import tqdm

from crawl import instruments
from common import stagetime
from common.schema_check import MigratedCommand
from archive import warc
from crawl.runners import run_embedded
from frontier import service as frontier
from frontier.vocabulary import PageDetail
from frontier.management.scope_args import add_scope_arguments, describe_scopes, scope_from_options
from indexer.service import document_counts


class Command(MigratedCommand):
    help = (
        "Embedded crawl: seed the given URLs and crawl in-process until nothing is due within "
        "CRAWLER_CRAWL_DEFER_AFTER seconds and nothing is in flight, then print a summary and "
        "what was deferred (a later `crawl` without URLs resumes it). --continuous keeps "
        "crawling and recrawling until stopped (Ctrl-C). By default only the seeds' hosts are "
        "crawled (--scope)."
    )

    def add_arguments(self, parser):
        parser.add_argument("urls", nargs="*", help="seed URLs (optional if the frontier has work)")
        add_scope_arguments(parser)
        parser.add_argument("--threads", type=int, default=None,
                            help="fetch threads (default CRAWLER_FETCH_THREADS); hosts in flight are "
                                 "up to CRAWLER_SESSIONS_PER_PROCESS whatever this is")
        parser.add_argument("--max-seconds", type=float, default=None, help="stop after this long")
        parser.add_argument("--continuous", action="store_true",
                            help="keep crawling and recrawling changed pages until stopped (Ctrl-C), "
                                 "with a status line")
        parser.add_argument("--no-progress", action="store_true")
        parser.add_argument("--json", action="store_true", help="print the summary as JSON")

    def handle(self, *args, **options):
        instruments.crawling_process("embedded")  # Prometheus: CRAWLER_METRICS_PORT
        if options["urls"]:
            seeded = frontier.add_seeds(options["urls"], scope_from_options(options))
            if not seeded.admitted and not seeded.known:
                raise CommandError(f"no seed was accepted: {seeded.rejected}")
        elif not options["continuous"] and not frontier.has_pending_work():
            raise CommandError("nothing to crawl: give seed URLs")
        if options["continuous"]:
            return self._continuous(options)

        bar = None
        if not options["no_progress"]:
            # disable=None: no bar when stderr is not a terminal (logs, CI)
            bar = tqdm(total=0, unit="url", desc="crawl", file=sys.stderr, dynamic_ncols=True, disable=None)
        last = [0.0]

        def progress():
            now = time.monotonic()
            if bar is None or bar.disable or now - last[0] < 0.5:
                return
            last[0] = now
            summary = frontier.crawl_summary()
            bar.total = summary["urls"]
            bar.n = summary["urls"] - summary["by_state"].get("queued", 0)
            paused = {"crawl": "PAUSED (resume in the admin or POST /crawl/resume)"} if frontier.crawl_paused() else {}
            bar.set_postfix(sessions=summary["hosts_leased"], **paused, refresh=False)
            bar.refresh()

        stats = run_embedded(threads=options["threads"], progress=progress, max_seconds=options["max_seconds"])
        summary = frontier.crawl_summary()
        summary["deferred"] = [dict(group, due=group["due"].isoformat()) for group in frontier.deferred_work()]
        if bar is not None:
            bar.total = summary["urls"]
            bar.n = summary["urls"] - summary["by_state"].get("queued", 0)
            bar.close()
        summary.update(
            elapsed_seconds=round(stats.elapsed, 2),
            cpu_seconds=round(stats.cpu_seconds, 2),
            requests=stats.requests,
            pages_per_second=round(stats.requests / stats.elapsed, 1) if stats.elapsed else 0.0,
            sessions=stats.sessions,
            connections=stats.connections,
            sessions_ended=stats.ended,
            errors=stats.errors,
            stage_cpu_seconds={name: round(seconds, 3) for name, seconds in stagetime.totals().items()},
            seen_cache=dict(zip(("entries", "bytes"), frontier.seen_cache_peak())),  # at its fullest
        )
        summary["documents"] = document_counts()
        summary["archive"] = warc.disk_usage()
        if options["json"]:
            self.stdout.write(json.dumps(summary, indent=2))
            return
        self._print(summary)

    def _print(self, s):
        docs = s["documents"]
        w = self.stdout.write
        w(f"\nCrawl finished in {s['elapsed_seconds']} s ({s['cpu_seconds']} s CPU): "
          f"{s['requests']} requests, {s['pages_per_second']} requests/s, in {s['sessions']} host sessions "
          f"over {s['connections']} connections")
        w(f"URLs: {s['urls']} known, {s['fetched']} fetched, on {s['hosts']} hosts")
        scopes = describe_scopes(s["scope"])
        if scopes:
            w("Scope: " + scopes[0])
            for line in scopes[1:]:
                w("       " + line)
        w("  by state:  " + ", ".join(f"{k} {v}" for k, v in sorted(s["by_state"].items())))
        w("  by status: " + ", ".join(f"{k} {v}" for k, v in s["by_status"].items()))
        w(f"Documents: {docs['indexed']} indexed, {docs['duplicates']} duplicates, "
          f"{docs['noindex']} noindex; robots-blocked URLs: {s['by_state'].get('robots_blocked', 0)}; "
          f"dead letters: {s['dead_letters']}")
        # What was read for text and what only archived (images, archives, other documents:
        # docs/content.md).
        indexed = ", ".join(f"{kind or 'unknown'} {n}" for kind, n in docs.get("by_type", {}).items()) or "none"
        w(f"  by type:   indexed {indexed}; archived only (a type not read for text) "
          f"{s.get('by_outcome', {}).get('fetched:' + PageDetail.NOT_HTML, 0)}")
        if s["archive"]["dir"]:
            w(f"Archive: {s['archive']['files']} WARC files, {s['archive']['bytes'] / 1e6:.1f} MB in "
              f"{s['archive']['dir']}")
        if s["errors"]:
            w(self.style.WARNING(f"{s['errors']} sessions or writes failed (see log); their URLs were kept"))
        if s["deferred"]:
            w("Deferred (run `manage.py crawl` again once due; `crawl --continuous` waits for it):")
            for group in s["deferred"]:
                w(f"  {group['urls']} {group['state']} URLs, {group['reason']}: first due {group['due']}")

    def _continuous(self, options):
        """Crawl and recrawl until Ctrl-C (or --max-seconds), one status line every few seconds."""
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        last = [0.0]

        def status():
            now = time.monotonic()
            if now - last[0] < 2.0:
                return
            last[0] = now
            s, due = frontier.crawl_summary(), frontier.due_counts()
            by_state = s["by_state"]
            line = (f"{timezone.now():%H:%M:%S} fetched {s['fetched']} of {s['urls']} URLs, "
                    f"queued {by_state.get('queued', 0)}, sessions {s['hosts_leased']}, "
                    f"revisits due {due['due']}, scheduled {due['scheduled']}, backing off {due['backoff']}, "
                    f"changes seen {s['recrawl']['changed']}, 304s {s['recrawl']['not_modified']}")
            if frontier.crawl_paused():
                line = "PAUSED " + line
            if sys.stderr.isatty():
                sys.stderr.write("\r" + line[:200].ljust(200))
                sys.stderr.flush()
            else:
                self.stderr.write(line)

        stats = run_embedded(threads=options["threads"], progress=None if options["no_progress"] else status,
                             max_seconds=options["max_seconds"], continuous=True, stop=stop)
        summary = frontier.crawl_summary()
        summary.update(elapsed_seconds=round(stats.elapsed, 2), requests=stats.requests, released=stats.released,
                       errors=stats.errors, documents=document_counts())
        if options["json"]:
            self.stdout.write(json.dumps(summary, indent=2, default=str))
            return
        self.stdout.write(f"\nContinuous crawl stopped after {summary['elapsed_seconds']} s: {stats.requests} requests, "
                          f"{stats.released} revisits released; {summary['recrawl']}")
