import time

from crawlerweb.schema_check import MigratedCommand
from indexer import service


class Command(MigratedCommand):
    help = ("Rebuild the full-text index from the stored documents, with the current analyzer. "
            "Run it after an upgrade that changes the analyzer or the index (the release notes say so).")

    def add_arguments(self, parser):
        parser.add_argument("--batch", type=int, default=200, help="documents analyzed and written per statement batch")

    def handle(self, *args, **options):
        started = time.monotonic()

        def progress(done, total):
            if done == total or done % (options["batch"] * 10) == 0:
                self.stdout.write(f"  {done}/{total} documents")

        count = service.reindex(batch=max(1, options["batch"]), progress=progress)
        self.stdout.write(f"reindexed {count} documents in {time.monotonic() - started:.1f} s")
