from django.core.management.base import BaseCommand

from frontier import service


class Command(BaseCommand):
    help = "Add seed URLs to the frontier (normalized, filtered, deduplicated)."

    def add_arguments(self, parser):
        parser.add_argument("urls", nargs="+")

    def handle(self, *args, **options):
        result = service.add_seeds(options["urls"])
        for url, verdict in zip(options["urls"], result.verdicts):
            self.stdout.write(f"{verdict}\t{url}" if verdict.startswith("rejected:") else f"ok\t{verdict}")
        self.stdout.write(f"{result.admitted} new, {result.known} already known, "
                          f"{sum(result.rejected.values())} rejected")
