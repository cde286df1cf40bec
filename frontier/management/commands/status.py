import json

from common.schema_check import MigratedCommand
from frontier import service
from frontier.management.scope_args import describe_scopes


class Command(MigratedCommand):
    help = ("Print frontier counts: URLs by state, status and outcome; hosts; dead letters; what revisits saw, "
            "revisits due and scheduled, and the work that waits (deferred).")

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options):
        summary = service.crawl_summary()
        summary["revisits"] = service.due_counts()
        summary["deferred"] = [dict(group, due=group["due"].isoformat()) for group in service.deferred_work()]
        if options["json"]:
            self.stdout.write(json.dumps(summary, indent=2))
            return
        scope = summary.pop("scope")
        for key, value in summary.items():
            self.stdout.write(f"{key}: {value}")
        self.stdout.write("scope:" + "".join(f"\n  {line}" for line in describe_scopes(scope) or ["(no seeds)"]))
