"""`manage.py export wacz -o crawl.wacz`: the crawl, or part of it, as a WACZ package (WACZ
1.1.1, which ReplayWeb.page, pywb and the web-archiving tools open): the WARC records, the
CDXJ index of them, pages/pages.jsonl with the title and text we indexed of each page, and
datapackage.json with every file's hash.

What goes in:
- the whole crawl (no selection): every WARC file of CRAWLER_WARC_DIR as it is;
- a selection (--host, --since/--until, --scope): the records that match, copied into one new
  WARC file (archive/package.py): responses and revisits, each with the request written after it,
  and the responses the selected revisits refer to even when those are outside the selection,
  so that every revisit resolves. Capture time is the record's WARC-Date (UTC, to the second);
  --since is inclusive, --until exclusive. A scope selects the captures whose URL it allows
  (the test admission applies to links), whichever seed led to them: a site reached from two
  seeds is one site, and a `web` scope selects everything.
- pages.jsonl: the indexed documents (HTML pages in the search index; duplicates, noindex
  pages, robots.txt, sitemaps and feeds are not pages) whose response record is in the package,
  with ts = that record's WARC-Date, in the json-pages-1.0 format with hasText.

The package is made by the `wacz` package's creator, in a child process: importing it
changes cdxj-indexer's record types for the whole process (fetch/cdxj.rebuild would then
index warcinfo records too), it prints to stdout, and its memory is returned when it ends.
Our pages.jsonl is copied in as it is (`-c`): without it the creator reads every passed page,
text included, into memory. The creator indexes the WARC files again itself (cdxj-indexer,
with its sort spilling to temporary files past 32 MB).

Bounded: index lines, documents and WARC bytes are streamed; the temporary files (the new
WARC file, pages.jsonl, the creator's sort runs) live in a directory beside the output, which
appears only when complete (renamed into place) and the directory is removed in any case.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError
from tqdm import tqdm

from . import cdxj
from . import package as archive_package
from frontier import service as frontier

# The creator's own entry point, with its return value as the exit status (its `python -m
# wacz` drops it: a refused pages file would exit 0), and pages.jsonl deflated in the zip, as
# the creator deflates the page lists it writes itself: it stores a copied one as it is, and
# the text of the pages is most of a package's bytes (480 MB of text for 20,000 pages of the
# sample web beside their 263 MB WARC file). The hashes in datapackage.json are of the
# files' contents, so they do not change.
_CREATOR = """
import sys, types, zipfile
from wacz import main as creator

class ZipInfo(zipfile.ZipInfo):
    def __init__(self, filename="NoName", date_time=(1980, 1, 1, 0, 0, 0)):
        super().__init__(filename, date_time)
        if filename.endswith(".jsonl"):
            self.compress_type = zipfile.ZIP_DEFLATED
            self._compresslevel = 1  # (3.13: compress_level) quicker than the default 6; 20% larger here

creator.zipfile = types.SimpleNamespace(**{**vars(zipfile), "ZipInfo": ZipInfo})
sys.exit(creator.main(sys.argv[1:]))
"""
PAGES_HEADER = {"format": "json-pages-1.0", "id": "pages", "title": "Pages", "hasText": True}


class WaczError(Exception):
    """The package cannot be made; the message says why (a command error)."""


@dataclass
class Selection:
    """What part of the crawl to package; nothing set = the whole crawl."""

    origin: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    scopes: list = field(default_factory=list)  # CrawlScope rows

    def __post_init__(self):
        self._since = cdxj.timestamp_of(self.since) if self.since else ""
        self._until = cdxj.timestamp_of(self.until) if self.until else ""
        self._in_scope = frontier.scope_url_test(self.scopes) if self.scopes else None

    @property
    def whole(self) -> bool:
        return not (self.origin or self.since or self.until or self.scopes)

    def keep(self, url: str, timestamp: str) -> bool:
        """Is a capture of `url` at `timestamp` (14 digits, UTC) selected?"""
        if self._since and timestamp < self._since:
            return False
        if self._until and timestamp >= self._until:
            return False
        if self.origin and _origin(url) != self.origin:
            return False
        return self._in_scope is None or self._in_scope(url)

    def describe(self) -> str:
        parts = []
        if self.origin:
            parts.append(f"host {self.origin}")
        if self.since:
            parts.append(f"captured from {_iso(self.since)}")
        if self.until:
            parts.append(f"captured before {_iso(self.until)}")
        if self.scopes:
            parts.append("scope " + " or ".join(f"{row.id} ({row})" for row in self.scopes))
        return ", ".join(parts) or "the whole crawl"


def _origin(url: str) -> str:
    canonical = frontier.canonical_url(url)
    return frontier.origin_of(canonical or url)


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str, option: str) -> datetime:
    """An ISO 8601 date or date and time; UTC unless it names an offset."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise WaczError(f"{option} {text!r} is not an ISO date or date and time "
                        "(2026-11-01, 2026-11-01T12:00, 2026-11-01T12:00+01:00)") from None
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment


@dataclass
class Packaged:
    """What a package holds, for the summary line."""

    path: Path
    warc_files: int = 0
    records: int | None = None  # copied for a selection; None: whole files
    originals: int = 0
    unresolved: int = 0
    pages: int = 0
    pages_not_here: int = 0
    bytes: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PageSource:
    """The indexed pages a package lists (pages.jsonl), as the indexer gives them: rows of
    id, title, warc_file, warc_offset, warc_length, depth for (origin, since, until), and
    their count. The archive knows records, not documents: its caller hands it the pages."""

    rows: Callable
    count: Callable


def package(selection: Selection, output: Path, source: PageSource, progress: bool = True,
            say: Callable[[str], None] = lambda text: None) -> Packaged:
    """Write the WACZ package of `selection` to `output`. Raises WaczError, writing nothing,
    when there is nothing to package or the creator fails."""
    started = time.monotonic()
    directory = Path(settings.CRAWLER_WARC_DIR)
    files = cdxj.warc_files(directory) if directory.is_dir() else []
    if not files:
        raise WaczError(f"no WARC files in CRAWLER_WARC_DIR ({directory}): nothing was archived here "
                        "(CRAWLER_WARC_ENABLED), or the archive is on another machine")
    output = Path(output).absolute()
    if not output.parent.is_dir():
        raise WaczError(f"cannot write {output}: no directory {output.parent}")
    try:
        work = Path(tempfile.mkdtemp(prefix=".wacz-", dir=output.parent))
    except OSError as exc:
        raise WaczError(f"cannot write in {output.parent}: {exc.strerror}") from None
    try:
        result = Packaged(output)
        if selection.whole:
            inputs, cwd = [path.name for path in files], directory
            result.warc_files = len(files)
        else:
            name = _select(selection, directory, work, result, progress, say)
            inputs, cwd = [name], work
            result.warc_files = 1
        pages = _write_pages(selection, source, directory, work / "pages.jsonl", result, progress)
        title, description = _title(selection), _description(selection, result, pages)
        made = work / "package.wacz"
        say(f"packaging {len(inputs)} WARC file(s) and {result.pages} pages with wacz")
        _create(made, work / "pages.jsonl", inputs, cwd, title, description, pages.main, work, progress, say)
        os.replace(made, output)
        result.bytes = output.stat().st_size
        result.seconds = time.monotonic() - started
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _select(selection: Selection, directory: Path, work: Path, result: Packaged, progress: bool, say) -> str:
    missing = cdxj.missing(directory)
    if missing:
        say(f"indexing {len(missing)} WARC file(s) that have no {cdxj.SUFFIX} index yet")
        with tqdm(total=len(missing), unit=" files", disable=not progress or None, file=sys.stderr) as bar:
            archive_package.index_missing(directory, lambda path: bar.update())
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d%H%M%S")
    name = f"crawlerweb-selection-{stamp}.warc.gz"
    say(f"selecting records: {selection.describe()}")
    with tqdm(total=archive_package.index_size(directory), unit="B", unit_scale=True, desc="index",
              disable=not progress or None, file=sys.stderr) as bar:
        copied = archive_package.write_selection(
            directory, lambda capture: selection.keep(capture.url, capture.timestamp), work / name,
            f"crawlerweb export: {selection.describe()}", bar.update)
    if copied.records == 0:
        raise WaczError(f"nothing in the archive matches ({selection.describe()}): no package written")
    result.records, result.originals, result.unresolved = copied.records, copied.originals, copied.unresolved
    if copied.unresolved:
        result.notes.append(f"{copied.unresolved} revisit(s) refer to a response that is not in the archive here")
    if copied.unreadable:
        result.notes.append(f"{copied.unreadable} index line(s) point at records not found where they say "
                            "(a file cut short or missing): left out")
    return name


@dataclass
class _Pages:
    first: str = ""  # ISO times of the earliest and latest page
    last: str = ""
    main: tuple[str, str] | None = None  # (URL, ISO time) of the package's main page


def _write_pages(selection: Selection, source: PageSource, directory: Path, path: Path, result: Packaged,
                 progress: bool) -> _Pages:
    """pages.jsonl: a header line, then one line per indexed page whose response record is
    in the package. The main page: the first seed page (depth 0), else the first page."""
    pages, main_is_seed = _Pages(), False
    rows = source.rows(selection.origin, selection.since, selection.until)
    total = source.count(selection.origin, selection.since, selection.until)
    with (archive_package.RecordTimes(directory) as times, open(path, "w", encoding="utf-8") as out,
          tqdm(total=total, unit=" pages", disable=not progress or None, file=sys.stderr) as bar):
        out.write(json.dumps(PAGES_HEADER) + "\n")
        for row in rows:
            bar.update()
            found = times.of(row["warc_file"], row["warc_offset"], row["warc_length"])
            if found is None:
                result.pages_not_here += 1
                continue
            url, date = found
            if not selection.keep(url, cdxj.timestamp(date)):
                continue
            out.write(json.dumps({"id": f"page-{row['id']}", "url": url, "ts": date, "title": row["title"],
                                  "text": row["text"]}, ensure_ascii=False) + "\n")
            result.pages += 1
            pages.first, pages.last = min(pages.first or date, date), max(pages.last, date)
            if pages.main is None or (row["depth"] == 0 and not main_is_seed):
                pages.main, main_is_seed = (url, date), row["depth"] == 0
    if result.pages_not_here:
        result.notes.append(f"{result.pages_not_here} indexed page(s) whose response is not in CRAWLER_WARC_DIR "
                            "here (written on another machine?): left out")
    return pages


def _title(selection: Selection) -> str:
    if selection.origin:
        return f"crawlerweb crawl of {selection.origin}"
    if selection.scopes:
        return "crawlerweb crawl of " + " and ".join(str(row) for row in selection.scopes)
    return "crawlerweb crawl"


def _description(selection: Selection, result: Packaged, pages: _Pages) -> str:
    text = f"{result.pages} pages archived by crawlerweb"
    if pages.first:
        text += f", captured {pages.first} to {pages.last}"
    return f"{text}; selection: {selection.describe()}."


def _create(made: Path, pages: Path, inputs: list[str], cwd: Path, title: str, description: str,
            main: tuple[str, str] | None, work: Path, progress: bool, say) -> None:
    command = [sys.executable, "-c", _CREATOR, "create", "-o", str(made), "-p", str(pages), "-c",
               "--title", title, "--desc", description]
    if main is not None:
        command += ["--url", main[0], "--date", main[1]]
    # Relative names (the creator names each file's archive/ entry after it) keep the
    # command line short for a crawl of thousands of files.
    command += inputs
    env = dict(os.environ, TMPDIR=str(work))  # its sort runs and spooled records: cleaned up with ours
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, errors="replace")
    tail = deque(maxlen=20)
    for line in process.stdout:
        line = line.rstrip()
        tail.append(line)
        if progress and line:
            say(f"wacz: {line}")
    if process.wait() != 0 or not made.exists():
        raise WaczError("the wacz packager failed:\n" + "\n".join(tail))


# --- the command's side (console/management/commands/export.py routes `wacz` here) ---------

def wacz_arguments(parser) -> None:
    parser.add_argument("--since", metavar="ISO", help="wacz: only captures from this time on (UTC unless given an "
                        "offset; a date means its midnight)")
    parser.add_argument("--until", metavar="ISO", help="wacz: only captures before this time")
    parser.add_argument("--scope", metavar="ID|SEED", help="wacz: only captures whose URL this crawl scope allows "
                        "(a scope's id, as the admin lists them, or a seed URL for the scope it was seeded with)")


def export_wacz(command, origin: str | None, options: dict, pages: PageSource) -> None:
    if options["output"] in ("-", ""):
        raise CommandError("a WACZ package is a zip file: name it with -o FILE.wacz")
    try:
        since = parse_time(options["since"], "--since") if options["since"] else None
        until = parse_time(options["until"], "--until") if options["until"] else None
        if since and until and since >= until:
            raise WaczError(f"--since {_iso(since)} is not before --until {_iso(until)}: nothing can match")
        try:
            scopes = frontier.scopes_named(options["scope"]) if options["scope"] else []
        except frontier.InvalidScope as exc:
            raise WaczError(f"--scope: {exc}") from None
        progress = not options["no_progress"]
        say = (lambda text: command.stderr.write(text)) if progress else (lambda text: None)
        result = package(Selection(origin, since, until, scopes), Path(options["output"]), pages, progress, say)
    except WaczError as exc:
        raise CommandError(str(exc)) from None
    what = (f"{result.records} records selected and {result.originals} responses their revisits refer to"
            if result.records is not None else f"{result.warc_files} WARC files")
    for note in result.notes:
        command.stderr.write(f"note: {note}")
    command.stderr.write(f"{options['output']}: {result.pages} pages, {what}, {result.bytes / 1e6:.1f} MB "
                         f"in {result.seconds:.1f} s")
