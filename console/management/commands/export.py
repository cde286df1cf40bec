import json
import sys
from datetime import datetime

from django.core.management.base import CommandError
from tqdm import tqdm

from console.wacz import export_wacz, wacz_arguments
from crawlerweb.schema_check import MigratedCommand
from frontier import service as frontier
from indexer import service as indexer


class Command(MigratedCommand):
    help = ("Export what the crawl holds as JSON lines, one object per line, streamed in id order "
            "(bounded memory whatever the size): `documents` (URL, title, headings, text, status, "
            "fetch time, content and text hashes, SimHash, duplicate, archive location) or `urls` "
            "(every URL with its frontier state). --host keeps one site. `wacz -o FILE` packages the "
            "archive as a WACZ file for replay tools: the whole crawl, or what --host, "
            "--since/--until and --scope select.")

    def add_arguments(self, parser):
        parser.add_argument("what", choices=("documents", "urls", "wacz"))
        parser.add_argument("--output", "-o", default="-", help="a file to write ('-', the default: standard output)")
        parser.add_argument("--host", help="only this host's rows (an origin or any URL on it)")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar on standard error")
        wacz_arguments(parser)

    def handle(self, *args, **options):
        origin = None
        if options["host"]:
            host = options["host"]
            url = frontier.canonical_url(host if "://" in host else "http://" + host)
            if url is None:
                raise CommandError(f"not a host: {host!r}")
            origin = frontier.origin_of(url)
        if options["what"] == "wacz":
            return export_wacz(self, origin, options)
        if options["since"] or options["until"] or options["scope"]:
            raise CommandError("--since, --until and --scope select what goes into a WACZ package (export wacz)")
        if options["what"] == "documents":
            total, rows = indexer.document_count(origin), indexer.document_rows(origin)
        else:
            total, rows = frontier.url_count(origin), frontier.url_rows(origin)
        to_file = options["output"] != "-"
        try:
            out = open(options["output"], "w", encoding="utf-8") if to_file else self.stdout
        except OSError as exc:
            raise CommandError(f"cannot write {options['output']}: {exc.strerror}") from None
        written = 0
        try:
            with tqdm(total=total, unit=" rows", disable=options["no_progress"] or None, file=sys.stderr) as bar:
                for row in rows:
                    out.write(json.dumps(row, ensure_ascii=False, default=_json_value) + "\n", **_ending(to_file))
                    written += 1
                    bar.update()
        finally:
            if to_file:
                out.close()
        if options["output"] != "-":
            self.stderr.write(f"{written} {options['what']} written to {options['output']}")


def _ending(to_file: bool) -> dict:
    return {} if to_file else {"ending": ""}  # the command's stdout would add a newline of its own


def _json_value(value):
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")
