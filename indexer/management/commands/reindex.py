import time

from common.schema_check import MigratedCommand
from indexer import service


class Command(MigratedCommand):
    help = ("Re-analyse the stored documents and rebuild the full-text index with the current analyzer: each "
            "page parsed again from its archived response where the archive has it here (decoding, text, "
            "language), else its language identified from the stored text. Run it after an upgrade that "
            "changes decoding, languages, the analyzer or the index (the release notes say so).")

    def add_arguments(self, parser):
        parser.add_argument("--batch", type=int, default=200, help="documents analyzed and written per statement batch")
        parser.add_argument("--stored-text-only", action="store_true",
                            help="do not read the archive: keep the stored text, identify languages from it")

    def handle(self, *args, **options):
        started = time.monotonic()

        def progress(done, total):
            if done == total or done % (options["batch"] * 10) == 0:
                self.stdout.write(f"  {done}/{total} documents")

        counts = service.reindex(batch=max(1, options["batch"]), progress=progress,
                                 reread=None if options["stored_text_only"] else service.archived_page)
        seconds = time.monotonic() - started
        self.stdout.write(f"reindexed {counts.indexed} documents in {seconds:.1f} s ({counts.documents} re-analysed: "
                          f"{counts.reparsed} parsed again from the archive, {counts.from_stored_text} from the "
                          f"stored text)")
