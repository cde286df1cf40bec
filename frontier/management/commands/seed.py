from crawlerweb.schema_check import MigratedCommand
from frontier import service
from frontier.management.scope_args import add_scope_arguments, scope_from_options


class Command(MigratedCommand):
    help = ("Add seed URLs to the frontier (normalized, filtered, deduplicated), each with a scope: "
            "where the links found from it may lead. A bare origin (example.org, 127.0.1.3:8300) means "
            "http:// before it. Prints each verdict: ok, warning (accepted, but its address is one the "
            "crawler refuses) or rejected:<reason> with the limit it breaks.")

    def add_arguments(self, parser):
        parser.add_argument("urls", nargs="+", help="URLs, or bare origins (host, host:port)")
        add_scope_arguments(parser)

    def handle(self, *args, **options):
        spec = scope_from_options(options)
        result = service.add_seeds(options["urls"], spec)
        for index, (url, verdict) in enumerate(zip(options["urls"], result.verdicts)):
            if verdict.startswith("rejected:"):
                detail = result.details.get(index)
                self.stdout.write(f"{verdict}\t{url}" + (f"\t({detail})" if detail else ""))
            elif index in result.warnings:
                self.stdout.write(f"warning\t{verdict}\t{result.warnings[index][1]}")
            else:
                self.stdout.write(f"ok\t{verdict}")
        warned = f", {len(result.warnings)} with a warning" if result.warnings else ""
        self.stdout.write(f"{result.admitted} new, {result.known} already known{warned}, "
                          f"{sum(result.rejected.values())} rejected; scope: {spec.kind}")
