"""The archive's index in CDXJ, the format the web-archiving tools read (pywb, ReplayWeb.page,
the `wacz` packager): one line per response, revisit, resource or metadata record,

    <SURT key> <14-digit UTC timestamp> {"url", "mime", "status", "digest", "length", "offset", "filename"}

with the fields, their order and their spelling as webrecorder's cdxj-indexer writes them
(tests/archive/test_cdxj.py holds our lines equal to its lines for the same file). A gemini://
record's line says more than cdxj-indexer's, which reads no Gemini: the media type of a 2x
answer as `mime` and the two-digit Gemini status as `status`.

Written as records are appended, not by reading the files again: each WARC file
NAME.warc.gz gets a sidecar NAME.cdxj beside it, one line per indexed record in the order
the records were written (archive/warc.py appends the line under the same lock as the
record, after it). Reading a finished file again costs its decompression, which the
writer has just done the other way (docs/benchmarks.md compares the two). Replay needs the
lines sorted (tools binary-search them): sorted_lines() merges the sidecars, each sorted in
memory (a sidecar holds one WARC file's records, so its size is bounded by
CRAWLER_WARC_MAX_FILE_BYTES). A WARC file without a sidecar (written before the crawler
kept them, or copied in) gets one from rebuild(), which reads the file with cdxj-indexer.
"""

import heapq
import json
import os
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

import surt

SUFFIX = ".cdxj"
WARC_SUFFIX = ".warc.gz"
INDEXED_TYPES = frozenset({"response", "revisit", "resource", "metadata"})  # cdxj-indexer's default


class Entry(NamedTuple):
    """What a record's index line says before it is written: the line without its place."""

    key: str  # the SURT form of the URL: how the tools sort and look up
    timestamp: str  # 14 digits, UTC, from WARC-Date
    url: str
    mime: str  # the response's media type; "warc/revisit" for a revisit
    status: str
    digest: str  # WARC-Payload-Digest, when the record has one

    def line(self, filename: str, offset: int, length: int) -> str:
        fields = {"url": self.url}
        for name, value in (("mime", self.mime), ("status", self.status), ("digest", self.digest)):
            if value:  # as cdxj-indexer: a field the record does not have is left out
                fields[name] = value
        fields.update(length=str(length), offset=str(offset), filename=filename)
        return f"{self.key} {self.timestamp} {json.dumps(fields)}\n"


def entry(url: str, warc_date: str, record_type: str, status: int | str | None, content_type: str,
          digest: str) -> Entry:
    """The index entry of a record about to be written (a response or a revisit)."""
    mime = "warc/revisit" if record_type == "revisit" else _media_type(content_type)
    return Entry(url_key(url), timestamp(warc_date), url, mime, str(status) if status is not None else "", digest)


def url_key(url: str) -> str:
    try:
        return surt.surt(url)
    except Exception:  # what cdxj-indexer does with a URL SURT cannot read: the URL itself
        return url


def timestamp(warc_date: str) -> str:
    """"2026-11-26T21:29:50Z" (or with a fraction) -> "20261126212950"."""
    digits = "".join(ch for ch in warc_date[:19] if ch.isdigit())
    return digits.ljust(14, "0")


def timestamp_of(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y%m%d%H%M%S")


def _media_type(content_type: str) -> str:
    # As cdxj-indexer: the value up to the first ';' or whitespace.
    for i, ch in enumerate(content_type):
        if ch == ";" or ch.isspace():
            return content_type[:i]
    return content_type


def sidecar_path(warc_path: Path) -> Path:
    name = warc_path.name
    stem = name[: -len(WARC_SUFFIX)] if name.endswith(WARC_SUFFIX) else name
    return warc_path.with_name(stem + SUFFIX)


def warc_files(directory: Path) -> list[Path]:
    return sorted(Path(directory).glob("*" + WARC_SUFFIX))


def sidecars(directory: Path) -> list[Path]:
    """The index files of the WARC files in `directory` that have one."""
    return [path for path in map(sidecar_path, warc_files(directory)) if path.exists()]


def missing(directory: Path) -> list[Path]:
    """The WARC files in `directory` that have no index file yet."""
    return [path for path in warc_files(directory) if not sidecar_path(path).exists()]


def sorted_lines(paths: Iterable[Path]) -> Iterator[str]:
    """Every line of the given index files, in the byte order the tools binary-search (the
    lines are ASCII: json.dumps escapes the rest)."""
    runs = []
    for path in paths:
        with open(path, encoding="ascii", errors="replace") as f:
            lines = [line for line in f if line.endswith("\n")]  # a line being written is not whole yet
        lines.sort()
        runs.append(lines)
    return heapq.merge(*runs)


def write_sorted(paths: Iterable[Path], out_path: Path) -> int:
    """Merge the index files into one sorted file, replaced atomically (a reader sees the
    old or the new one, never half). Returns the number of lines."""
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    partial = out_path.with_name(out_path.name + f".{os.getpid()}.partial")
    count = 0
    with open(partial, "w", encoding="ascii") as out:
        for line in sorted_lines(paths):
            out.write(line)
            count += 1
    os.replace(partial, out_path)
    return count


def rebuild(warc_path: Path) -> int:
    """Index a WARC file by reading it (cdxj-indexer), for a file that has no sidecar.
    Returns the number of lines."""
    from cdxj_indexer.main import CDXJIndexer  # only for old or copied-in files

    target = sidecar_path(warc_path)
    partial = target.with_name(target.name + ".partial")
    with open(partial, "w", encoding="ascii") as out:
        # The record types named: importing `wacz` adds "warcinfo" to cdxj-indexer's defaults.
        CDXJIndexer(output=out, inputs=[str(warc_path)], records=",".join(sorted(INDEXED_TYPES))).process_all()
    try:
        # A link, not a rename: a writer that opened the file meanwhile made the sidecar
        # it appends to, and that one stands.
        os.link(partial, target)
    except FileExistsError:
        pass
    finally:
        os.unlink(partial)
    with open(target, encoding="ascii") as f:
        return sum(1 for _ in f)
