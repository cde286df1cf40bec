import signal
import subprocess
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from archive import replay

DEFAULT_PORT = 8090
DEFAULT_REFRESH = 10.0


class Command(BaseCommand):
    # Reads the WARC files only: no database, so it runs wherever the archive is (a web
    # server with the shared CRAWLER_WARC_DIR) and on a database not migrated yet.
    help = ("Replay the WARC archive in a browser: a pywb collection of CRAWLER_WARC_DIR's files (links to "
            "them and a CDXJ index, kept current while the crawl goes on), served by pywb from "
            ".venv-replay on 127.0.0.1 until Ctrl-C.")

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"pywb's port (default {DEFAULT_PORT})")
        parser.add_argument("--refresh", type=float, default=DEFAULT_REFRESH,
                            help=f"seconds between checks for new records; the index is merged again when "
                                 f"they came (default {DEFAULT_REFRESH:g})")
        parser.add_argument("--dir", default=str(Path(settings.BASE_DIR) / "var" / "replay"),
                            help="the pywb directory: config.yaml, collections/ (default var/replay)")
        parser.add_argument("--collection", default="crawl", help="the collection's name, the URL's first part "
                            "(default crawl)")

    def handle(self, *args, **options):
        if options["refresh"] <= 0:
            raise CommandError("--refresh must be a number of seconds above 0")
        warc_dir = Path(settings.CRAWLER_WARC_DIR)
        root = Path(options["dir"]).resolve()
        collection = replay.Collection(root, options["collection"])
        log_path = root / "wayback.log"
        process = None
        earlier = signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM (systemd, kill) ends it as Ctrl-C does
        try:
            files = replay.check_archive(warc_dir)
            replay.wayback()
            collection.create()
            started = time.perf_counter()
            refresher = replay.Refresher(collection, warc_dir)
            stats = refresher.refresh()  # the first one indexes every old file: it can take a while
            indexed = time.perf_counter() - started
            self._problems(refresher)
            process = replay.start(root, options["port"], log_path)
            replay.wait_until_serving(process, options["port"], log_path)
            base = f"http://127.0.0.1:{options['port']}/{collection.name}/"
            self.stdout.write(
                f"{stats.lines} captures of {len(files)} WARC files in {warc_dir}, indexed in "
                f"{indexed * 1000:.0f} ms; the index follows the crawl every {options['refresh']:g} s.\n"
                f"Open {base} (search it by URL) or {base}<14-digit time>/<URL> for one capture.\n"
                f"For cached links on the search page: CRAWLER_REPLAY_URL={base.rstrip('/')}\n"
                f"pywb's log: {log_path}. Ctrl-C stops.", ending="\n")
            self.stdout.flush()
            self._serve(process, refresher, options["refresh"], stats.lines, options["verbosity"])
        except replay.ReplayError as exc:
            raise CommandError(str(exc)) from None
        except KeyboardInterrupt:
            if process is not None:
                replay.stop(process)
            self.stdout.write("pywb stopped." if process is not None else "stopped before pywb started.")
        finally:
            if process is not None:
                replay.stop(process)
            signal.signal(signal.SIGTERM, earlier)

    def _serve(self, process: subprocess.Popen, refresher: replay.Refresher, period: float, lines: int,
               verbosity: int) -> None:
        while True:
            try:
                status = process.wait(period)
            except subprocess.TimeoutExpired:
                stats = refresher.refresh()
                self._problems(refresher)
                if stats is not None and verbosity > 0:
                    self.stdout.write(f"{time.strftime('%H:%M:%S')} index: {stats.lines} captures "
                                      f"({stats.lines - lines:+d})")
                    lines = stats.lines
                continue
            raise replay.ReplayError(f"pywb exited with status {status}; its log: {refresher.collection.root / 'wayback.log'}")

    def _problems(self, refresher: replay.Refresher) -> None:
        for problem in refresher.problems:
            self.stderr.write(problem)


def _interrupt(signum, frame):
    raise KeyboardInterrupt
