from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from archive import cdxj


class Command(BaseCommand):
    help = ("Write the archive's CDXJ index, sorted as pywb and other Wayback tools read it, from the "
            "index files the crawler keeps beside its WARC files (CRAWLER_WARC_DIR). WARC files "
            "without one (written by an older version, or copied in) are indexed first.")

    def add_arguments(self, parser):
        parser.add_argument("--output", "-o", default="-", help="a file to write ('-', the default: standard output)")
        parser.add_argument("--dir", default=None, help="the WARC directory (default CRAWLER_WARC_DIR)")

    def handle(self, *args, **options):
        directory = Path(options["dir"] or settings.CRAWLER_WARC_DIR)
        if not cdxj.warc_files(directory):
            raise CommandError(f"no WARC files in {directory}")
        for path in cdxj.missing(directory):
            self.stderr.write(f"indexing {path.name} (it had no index): {cdxj.rebuild(path)} records")
        sidecars = cdxj.sidecars(directory)
        if options["output"] == "-":
            for line in cdxj.sorted_lines(sidecars):
                self.stdout.write(line, ending="")
            return
        try:
            count = cdxj.write_sorted(sidecars, Path(options["output"]))
        except OSError as exc:
            raise CommandError(f"cannot write {options['output']}: {exc.strerror}") from None
        self.stderr.write(f"{count} records of {len(sidecars)} WARC files indexed in {options['output']}")
