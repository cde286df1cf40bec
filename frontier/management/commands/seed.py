from crawlerweb.schema_check import MigratedCommand
from frontier import service
from frontier.management.scope_args import add_scope_arguments, scope_from_options


class Command(MigratedCommand):
    help = ("Add seed URLs to the frontier (normalized, filtered, deduplicated), each with a scope: "
            "where the links found from it may lead.")

    def add_arguments(self, parser):
        parser.add_argument("urls", nargs="+")
        add_scope_arguments(parser)

    def handle(self, *args, **options):
        spec = scope_from_options(options)
        result = service.add_seeds(options["urls"], spec)
        for url, verdict in zip(options["urls"], result.verdicts):
            self.stdout.write(f"{verdict}\t{url}" if verdict.startswith("rejected:") else f"ok\t{verdict}")
        self.stdout.write(f"{result.admitted} new, {result.known} already known, "
                          f"{sum(result.rejected.values())} rejected; scope: {spec.kind}")
