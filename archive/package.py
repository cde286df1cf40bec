"""The archive's part of a WACZ package of part of a crawl (archive/wacz.py): the selected
records copied into one new WARC file, and the capture time of a page read back.

The CDXJ sidecars (archive/cdxj.py) say where each response and revisit record is: file,
offset and length of its gzip member. A selected record's member is copied byte for byte
(its digests stay valid; only its headers are inflated, to read them), followed by the
request record written with it when that is the next member (archive/warc.py appends the
two together; a request names its response in WARC-Concurrent-To). A selected revisit
brings the response it refers to (WARC-Refers-To-Target-URI and -Date), in a second pass
when that response is outside the selection, so that replay finds the payload. The new
file starts with a warcinfo record of its own saying what was selected.

Memory: one index line, one copy buffer, and the (URL, second) keys of the originals the
selection's revisits need from outside it.
"""

import json
import os
import socket
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from django.conf import settings
from warcio.recordbuilder import RecordBuilder
from warcio.warcwriter import WARCWriter

from . import cdxj

_COPY_CHUNK = 1024 * 1024
_HEAD_BYTES = 16 * 1024  # compressed bytes read to find a record's headers
_HEAD_LIMIT = 64 * 1024  # and at most this much inflated: WARC and HTTP headers, never a body
_REQUEST_BYTES = 64 * 1024  # a request record is headers only; one larger is not looked for
_GZIP_MAGIC = b"\x1f\x8b"
_FIELDS_MIME = "application/warc-fields"  # warcinfo/metadata lines an older indexer may have written


class Capture(NamedTuple):
    """One index line: a response or revisit record and where it is."""

    url: str
    timestamp: str  # 14 digits, UTC, from WARC-Date
    mime: str  # "warc/revisit" for a revisit
    status: str
    filename: str
    offset: int
    length: int

    @property
    def revisit(self) -> bool:
        return self.mime == "warc/revisit"


def index_missing(directory: Path, progress: Callable[[Path], None] | None = None) -> int:
    """Give every WARC file in `directory` its index sidecar (files written before the
    crawler kept one: cdxj.rebuild reads them). Returns how many were indexed."""
    missing = cdxj.missing(directory)
    for path in missing:
        cdxj.rebuild(path)
        if progress:
            progress(path)
    return len(missing)


def index_size(directory: Path) -> int:
    """Bytes of index lines to read for a selection (a progress bar's total)."""
    return sum(path.stat().st_size for path in cdxj.sidecars(directory))


def captures(directory: Path, progress: Callable[[int], None] | None = None) -> Iterator[Capture]:
    """Every record the sidecars of `directory` list, file by file in name order, each
    file's in the order they were written. `progress` is told the bytes of each line."""
    for path in cdxj.sidecars(directory):
        with open(path, encoding="ascii", errors="replace") as lines:
            for line in lines:
                if progress:
                    progress(len(line))
                capture = _parse(line)
                if capture is not None:
                    yield capture


def _parse(line: str) -> Capture | None:
    if not line.endswith("\n"):
        return None  # being written: not whole yet
    parts = line.split(" ", 2)
    if len(parts) != 3:
        return None
    try:
        fields = json.loads(parts[2])
        capture = Capture(fields["url"], parts[1], fields.get("mime", ""), fields.get("status", ""),
                          fields["filename"], int(fields["offset"]), int(fields["length"]))
    except (ValueError, KeyError, TypeError):
        return None
    if capture.mime == _FIELDS_MIME or capture.offset < 0 or capture.length <= 0:
        return None
    return capture


@dataclass
class Copied:
    """What write_selection() wrote."""

    path: Path
    records: int = 0  # selected responses and revisits
    requests: int = 0  # request records that came with them
    originals: int = 0  # responses outside the selection that its revisits refer to
    unresolved: int = 0  # revisits whose response is not in the archive here
    unreadable: int = 0  # index lines whose record is not where they say (file gone, cut short)
    bytes: int = 0
    first: str = ""  # earliest and latest 14-digit capture time copied
    last: str = ""


def write_selection(directory: Path, keep: Callable[[Capture], bool], out_path: Path, description: str,
                    progress: Callable[[int], None] | None = None) -> Copied:
    """Copy the records of `directory` that `keep` selects into a new WARC file at
    `out_path` (see the module's docstring). `keep` must judge a capture by its own fields
    only: the second pass asks it again about the originals of revisits."""
    directory, out_path = Path(directory), Path(out_path)
    copied = Copied(out_path)
    needed: set[tuple[str, str]] = set()  # (URL, 14-digit time) of originals outside the selection
    with open(out_path, "xb") as out, _Files(directory) as files:
        WARCWriter(out, gzip=True).write_record(_warcinfo(out_path.name, description))
        for capture in captures(directory, progress):
            if not keep(capture):
                continue
            head = _copy(files, capture, out, copied)
            if head is None:
                continue
            copied.records += 1
            if capture.revisit:
                original = _refers_to(head)
                if original is None:
                    copied.unresolved += 1
                elif not keep(original):
                    needed.add((original.url, original.timestamp))
        if needed:
            found = set()
            for capture in captures(directory):
                key = (capture.url, capture.timestamp)
                if key in needed and not capture.revisit and _copy(files, capture, out, copied) is not None:
                    found.add(key)
                    copied.originals += 1
            copied.unresolved += len(needed - found)
    return copied


def _refers_to(head: dict[str, str]) -> Capture | None:
    """The response a revisit refers to, as a capture to look for (URL and second only)."""
    url, date = head.get("warc-refers-to-target-uri", ""), head.get("warc-refers-to-date", "")
    if not url or not date:
        return None  # a revisit that names no time: replay picks the URL's closest capture
    return Capture(url, cdxj.timestamp(date), "", "", "", 0, 0)


def _copy(files: "_Files", capture: Capture, out, copied: Copied) -> dict[str, str] | None:
    """Copy one record's member, then the request record written after it if there is one.
    Returns the record's WARC headers, or None (nothing copied) when it is not there."""
    f = files.get(capture.filename)
    if f is None:
        copied.unreadable += 1
        return None
    if os.fstat(f.fileno()).st_size < capture.offset + capture.length:
        copied.unreadable += 1  # cut short: copying it would leave the new file unreadable from there
        return None
    f.seek(capture.offset)
    chunk = f.read(min(capture.length, _COPY_CHUNK))
    head = _head(chunk) if chunk.startswith(_GZIP_MAGIC) else None
    if head is None or head.get("warc-target-uri") != capture.url:
        copied.unreadable += 1  # not the record the index line says
        return None
    remaining = capture.length
    while chunk:
        out.write(chunk)
        remaining -= len(chunk)
        chunk = f.read(min(remaining, _COPY_CHUNK)) if remaining > 0 else b""
    copied.bytes += capture.length
    copied.first = min(copied.first or capture.timestamp, capture.timestamp)
    copied.last = max(copied.last, capture.timestamp)
    request = _following_request(f, capture.offset + capture.length, head.get("warc-record-id", ""))
    if request:
        out.write(request)
        copied.bytes += len(request)
        copied.requests += 1
    return head


def _following_request(f, position: int, record_id: str) -> bytes:
    """The member at `position` if it is the request record concurrent to `record_id`."""
    if not record_id:
        return b""
    f.seek(position)
    data = f.read(_REQUEST_BYTES)
    if not data.startswith(_GZIP_MAGIC):
        return b""
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
    try:
        text = inflater.decompress(data, _HEAD_LIMIT)
    except zlib.error:
        return b""
    if not inflater.eof:
        return b""  # larger than any request record we write: not one
    head = _parse_head(text)
    if head is None or head.get("warc-type") != "request" or head.get("warc-concurrent-to") != record_id:
        return b""
    return data[: len(data) - len(inflater.unused_data)]


def _head(member_start: bytes) -> dict[str, str] | None:
    """The WARC headers (names lower-cased) of the record whose gzip member starts here."""
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
    try:
        text = inflater.decompress(member_start[:_HEAD_BYTES], _HEAD_LIMIT)
    except zlib.error:
        return None
    return _parse_head(text)


def _parse_head(text: bytes) -> dict[str, str] | None:
    end = text.find(b"\r\n\r\n")
    if not text.startswith(b"WARC/") or end < 0:
        return None
    head = {}
    for line in text[:end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        head[name.strip().decode("latin-1").lower()] = value.strip().decode("utf-8", "replace")
    return head


def _warcinfo(filename: str, description: str):
    return RecordBuilder().create_warcinfo_record(filename, {
        "software": "crawlerweb (warcio)",
        "format": "WARC File Format 1.0",
        "hostname": socket.gethostname(),
        "http-header-user-agent": settings.CRAWLER_USER_AGENT,
        "robots": "obey",
        "description": description,
    })


class RecordTimes:
    """Where a page's capture time is: its response record's WARC-Date, read from the record
    a document points to (one seek and a few inflated kilobytes; the files stay open)."""

    def __init__(self, directory: Path):
        self.files = _Files(Path(directory))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.files.close()

    def of(self, filename: str, offset: int | None, length: int | None) -> tuple[str, str] | None:
        """(WARC-Target-URI, WARC-Date) of the response record at filename:offset, or None
        when it is not here (no such file, cut short, not a response record)."""
        f = self.files.get(filename)
        if f is None or offset is None or offset < 0 or not length or os.fstat(f.fileno()).st_size < offset + length:
            return None
        f.seek(offset)
        head = _head(f.read(4096))
        if head is None:  # headers longer than most: look further
            f.seek(offset)
            head = _head(f.read(_HEAD_BYTES))
        if head is None or head.get("warc-type") != "response" or not head.get("warc-date"):
            return None
        return head.get("warc-target-uri", ""), head["warc-date"]


class _Files:
    """Open WARC files of one directory by name, a few at a time (records come grouped by
    file: the last few opened are the ones asked for again)."""

    KEEP_OPEN = 8

    def __init__(self, directory: Path):
        self.directory = directory
        self.open: dict[str, object] = {}

    def get(self, filename: str):
        f = self.open.pop(filename, None)
        if f is None:
            if "/" in filename or filename.startswith("."):
                return None  # an index line names a file in this directory, nothing else
            try:
                f = open(self.directory / filename, "rb")
            except OSError:
                return None
            if len(self.open) >= self.KEEP_OPEN:
                oldest = next(iter(self.open))
                self.open.pop(oldest).close()
        self.open[filename] = f  # most recently used last
        return f

    def close(self) -> None:
        for f in self.open.values():
            f.close()
        self.open.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
