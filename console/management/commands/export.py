import os
import sys

from django.core.management.base import CommandError
from tqdm import tqdm

from console.exportfiles import open_rows
from archive.wacz import PageSource, export_wacz, wacz_arguments
from common.schema_check import MigratedCommand
from frontier import service as frontier
from indexer import service as indexer

FORMATS = ("jsonl", "parquet")


class Command(MigratedCommand):
    help = ("Export what the crawl holds, streamed in id order (bounded memory whatever the size), as JSON "
            "lines (one object per line) or Parquet (a file, written a row group at a time): `documents` "
            "(URL, title, headings, text, main_text (the text without the site's furniture), status, fetch time, "
            "content and text hashes, SimHash, duplicate, "
            "archive location; --outlinks adds each page's links, read again from its archived response) or "
            "`urls` (every URL with its frontier state). --host keeps one site. An export that fails or is "
            "interrupted leaves no file. `wacz -o FILE` packages the archive as a WACZ file for replay tools: "
            "the whole crawl, or what --host, --since/--until and --scope select.")

    def add_arguments(self, parser):
        parser.add_argument("what", choices=("documents", "urls", "wacz"))
        parser.add_argument("--output", "-o", default="-", help="a file to write ('-', the default: standard output)")
        parser.add_argument("--format", choices=FORMATS,
                            help="jsonl (the default) or parquet (the default for an --output ending in .parquet; "
                                 "needs a file)")
        parser.add_argument("--host", help="only this host's rows (an origin or any URL on it)")
        parser.add_argument("--outlinks", action="store_true",
                            help="documents: add `outlinks`, the page's links as the crawler takes them (absolute, "
                                 "in page order, each once), parsed again from its archived response; null when "
                                 "that cannot be read here")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar on standard error")
        wacz_arguments(parser)

    def handle(self, *args, **options):
        what, output = options["what"], options["output"]
        if what == "wacz":
            if options["format"] or options["outlinks"]:
                raise CommandError("--format and --outlinks are for documents and urls, not a WACZ package")
            return export_wacz(self, _origin(options["host"]), options,
                               PageSource(indexer.indexed_pages, indexer.indexed_page_count))
        if options["since"] or options["until"] or options["scope"]:
            raise CommandError("--since, --until and --scope select what goes into a WACZ package (export wacz)")
        to_file = output != "-"
        fmt = options["format"] or ("parquet" if output.lower().endswith(".parquet") else "jsonl")
        if fmt == "parquet" and not to_file:
            raise CommandError("Parquet is written to a file: give --output FILE.parquet "
                               "(standard output takes --format jsonl)")
        if options["outlinks"] and what != "documents":
            raise CommandError("--outlinks is for documents")
        origin = _origin(options["host"])
        if what == "documents":
            total, rows = indexer.document_count(origin), indexer.document_rows(origin)
        else:
            total, rows = frontier.url_count(origin), frontier.url_rows(origin)
        outlinks = _Outlinks() if options["outlinks"] else None
        if outlinks:
            rows = outlinks.added_to(rows)
        stream = _open(output, fmt) if to_file else self.stdout
        written = 0
        try:
            out = open_rows(fmt, stream, what, outlinks=bool(outlinks), to_terminal=not to_file)
            try:
                with tqdm(total=total, unit=" rows", disable=options["no_progress"] or None, file=sys.stderr) as bar:
                    for row in rows:
                        out.write(row)
                        written += 1
                        bar.update()
            finally:
                out.close()  # Parquet's footer; after a failure too, or pyarrow's finaliser writes it to a closed file
        except BaseException:
            if to_file:  # a failed or interrupted export leaves no file that looks whole
                stream.close()
                os.unlink(output)
            raise
        finally:
            if to_file:
                stream.close()
        if to_file:
            self.stderr.write(f"{written} {what} written to {output} ({fmt})")
        if outlinks and outlinks.missing:
            self.stderr.write(f"{outlinks.missing} documents had no archived response: outlinks null")


def _origin(host: str | None) -> str | None:
    if not host:
        return None
    url = frontier.canonical_url(host if "://" in host else "http://" + host)
    if url is None:
        raise CommandError(f"not a host: {host!r}")
    return frontier.origin_of(url)


def _open(path: str, fmt: str):
    try:
        return open(path, "wb") if fmt == "parquet" else open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror}") from None


class _Outlinks:
    """Adds each document's outlinks (indexer/pagelinks.py), counting those it cannot read."""

    def __init__(self):
        self.missing = 0

    def added_to(self, rows):
        for row in rows:
            row["outlinks"] = indexer.archived_outlinks(row["url"], row["warc_file"], row["warc_offset"],
                                                      row["warc_length"])
            self.missing += row["outlinks"] is None
            yield row
