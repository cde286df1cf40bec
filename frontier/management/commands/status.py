import json

from django.core.management.base import BaseCommand

from frontier import service


class Command(BaseCommand):
    help = "Print frontier counts: URLs by state, status and outcome; hosts; dead letters."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options):
        summary = service.crawl_summary()
        if options["json"]:
            self.stdout.write(json.dumps(summary, indent=2))
            return
        for key, value in summary.items():
            self.stdout.write(f"{key}: {value}")
