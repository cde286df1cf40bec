from django.core.management.base import CommandError

from console.keys import create_key
from common.schema_check import MigratedCommand


class Command(MigratedCommand):
    help = "Create a REST API key. The key is printed once; only its hash is stored."

    def add_arguments(self, parser):
        parser.add_argument("name", help="who or what will use the key (e.g. 'prometheus')")

    def handle(self, *args, **options):
        name = options["name"].strip()
        if not name:
            raise CommandError("give the key a name")
        row, key = create_key(name[:100])
        self.stderr.write(f"API key {row.prefix} created for {row.name!r}; it is shown only this once:")
        self.stdout.write(key)
