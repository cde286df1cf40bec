"""The WARC archive: every HTTP response the crawler receives is written, after the request
that asked for it, to gzip-compressed WARC/1.0 files (ISO 28500), and the response record's
(file, offset, length) is kept so any page's raw bytes can be read back with one seek.

Files: CRAWLER_WARC_DIR/crawlerweb-<UTC time>-<serial>-<hostname>-<pid>.warc.gz. Each file
starts with a warcinfo record; once it passes CRAWLER_WARC_MAX_FILE_BYTES the next record
goes to a new file. One writer per process (a forked Celery child opens its own file):
records are built and compressed outside the lock and appended under it, each as its own
gzip member, which is what lets a reader start at any record's offset.

What a response record holds: the status line and headers as received, and the body as the
HTTP client delivered it, i.e. with chunked transfer coding and Content-Encoding undone (the
client decodes while reading so that it can cap the decompressed size; it never holds the
encoded bytes). So that WARC readers do not decode the body a second time, Content-Encoding,
Transfer-Encoding and Content-Length are kept as X-Archive-Orig-* headers and Content-Length
is set to the stored length. A body that was cut short says so in WARC-Truncated: "length"
(over the size cap), "time" (the total deadline), "disconnect" (the body broke off; its
partial bytes are not kept) or "unspecified" (not downloaded: not a type the crawler
reads). Responses that never arrived (timeouts, refused connections) have no record; their
outcome is in the URL's row.

Revisits (frontier/recrawl.py): a 304 answer to a conditional GET, and a 200 whose bytes are
those of the last response archived for the URL, are written as `revisit` records that
point at that response (WARC-Refers-To-Target-URI and -Date), with the profile
"server-not-modified" or "identical-payload-digest": the status line and headers, never a
second copy of the body.

Durability: records reach the OS after every append but are not fsynced. A record whose
write fails (disk full) is cut off again and the next one starts a new file, so every file
reads from start to end; the error fails the caller's batch. The database row
that points at a record is committed after the record was written, so a pointer never
refers to a record that was not written; a worker that dies in between leaves a record
nothing points to (the page is fetched again), which costs only disk.
"""

import base64
import hashlib
import itertools
import os
import re
import socket
import threading
import time
import zlib
from dataclasses import dataclass
from datetime import datetime, timezone
from io import BytesIO
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

from django.conf import settings
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordbuilder import RecordBuilder
from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

from crawlerweb import stagetime
from frontier.vocabulary import FetchError

from . import http

_FRAMING_HEADERS = frozenset({"content-encoding", "transfer-encoding", "content-length"})
_FILE_NAME = re.compile(r"^crawlerweb-\d{14}-\d{5}-(?P<host>[A-Za-z0-9._-]+)-\d+\.warc\.gz$")
# A record read back is at most a capped body plus headers; anything longer is not ours.
_READ_SLACK = 1024 * 1024
_BUILDER = RecordBuilder()  # holds no state between records


class Location(NamedTuple):
    """Where one response record sits: a gzip member `length` bytes long at `offset` (a
    plain tuple to the rest of the crawler: Document stores its three fields)."""

    filename: str
    offset: int
    length: int


@dataclass(frozen=True)
class ArchivedResponse:
    """A response record read back from the archive."""

    location: Location
    target_uri: str
    warc_date: str
    warc_headers: list[tuple[str, str]]
    status_line: str  # "HTTP/1.1 200 OK"
    http_headers: list[tuple[str, str]]
    body: bytes
    record_bytes: bytes  # the gzip member itself: a valid one-record .warc.gz

    @property
    def truncated(self) -> str:
        return dict(self.warc_headers).get("WARC-Truncated", "")


class ArchiveUnavailable(Exception):
    """A record cannot be read back here; the message says why and what to do."""


def enabled() -> bool:
    return settings.CRAWLER_WARC_ENABLED


def record(result: http.FetchResult) -> Location | None:
    """Archive a fetch: each redirect hop it followed, then its final response.
    Returns the final response record's location, or None when archiving is off or no
    response arrived."""
    return append(build(result))


@stagetime.timed("warc")
def build(result: http.FetchResult) -> list[tuple[bytes, bytes]]:
    """The records of a fetch, compressed, not yet written: (response, request) members for
    each redirect hop it followed, then for its final response; [] when archiving is off
    or no response arrived. Pure work (a parse pool process may do it); append() writes."""
    if not enabled() or result.status is None:
        return []
    return [_records(hop) for hop in result.redirects] + [_records(result)]


@stagetime.timed("warc")
def append(groups: list[tuple[bytes, ...]]) -> Location | None:
    """Write built records to this process's current file; the last group's location."""
    location = None
    for members in groups:
        location = _writer().append(members)
    return location


# WARC/1.0 revisit profiles (ISO 28500:2009 section 8.3; 1.1 kept the names).
NOT_MODIFIED = "http://netpreserve.org/warc/1.0/revisit/server-not-modified"
IDENTICAL_PAYLOAD = "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"


def record_revisit(result: http.FetchResult, profile: str, refers_to: datetime | None) -> Location | None:
    """Archive a revisit: the response's status line and headers in a `revisit` record
    pointing at the earlier response of the same URL received at `refers_to`."""
    return append(build_revisit(result, profile, refers_to))


@stagetime.timed("warc")
def build_revisit(result: http.FetchResult, profile: str, refers_to: datetime | None) -> list[tuple[bytes, bytes]]:
    """record_revisit()'s records, built, not written (see build())."""
    if not enabled() or result.status is None:
        return []
    revisit = {"WARC-Profile": profile, "WARC-Refers-To-Target-URI": result.final_url}
    if refers_to is not None:
        revisit["WARC-Refers-To-Date"] = _warc_date(refers_to.timestamp())
    if profile == IDENTICAL_PAYLOAD:
        revisit["WARC-Payload-Digest"] = payload_digest(result.body)
    return [_records(result, revisit)]


def payload_digest(body: bytes) -> str:
    """The WARC payload digest of a body, as warcio writes it on response records."""
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


def _warc_date(timestamp: float) -> str:
    return datetime_to_iso_date(datetime.fromtimestamp(timestamp, timezone.utc).replace(tzinfo=None))


def _records(result: http.FetchResult, revisit: dict | None = None) -> tuple[bytes, bytes]:
    """(response or revisit member, request member), each compressed on its own."""
    date = _warc_date(result.started_at)
    warc_headers = {"WARC-Date": date, **(revisit or {})}
    if result.address:
        warc_headers["WARC-IP-Address"] = result.address
    truncated = _truncation(result)
    if truncated:
        warc_headers["WARC-Truncated"] = truncated
    headers = []
    for name, value in result.response_headers:
        if name.lower() in _FRAMING_HEADERS:
            name = "X-Archive-Orig-" + name
        headers.append((name, value))
    body = b"" if revisit else result.body
    headers.append(("Content-Length", str(len(body))))
    protocol = "HTTP/1.0" if result.http_version == 10 else "HTTP/1.1"
    status_line = f"{result.status} {result.reason}".rstrip()
    response = _BUILDER.create_warc_record(
        result.final_url, "revisit" if revisit else "response", payload=BytesIO(body), length=len(body),
        warc_headers_dict=warc_headers, http_headers=StatusAndHeaders(status_line, headers, protocol=protocol),
    )
    parts = urlsplit(result.final_url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    request = _BUILDER.create_warc_record(
        result.final_url, "request", payload=BytesIO(b""), length=0,
        warc_headers_dict={"WARC-Date": date, "WARC-Concurrent-To": response.rec_headers.get_header("WARC-Record-ID")},
        http_headers=StatusAndHeaders(f"GET {target} {protocol}",
                                      [("Host", parts.netloc), *(result.sent_headers or http.request_headers()).items()],
                                      is_http_request=True),
    )
    return _member(response), _member(request)


def _truncation(result: http.FetchResult) -> str:
    if result.error == FetchError.TOO_LARGE:
        return "length"
    if result.error == FetchError.DEADLINE:
        return "time"
    if result.error in (FetchError.CONNECTION, FetchError.TIMEOUT, FetchError.PROTOCOL):
        return "disconnect"  # the body broke off; what had arrived is not kept
    if not result.body_read:
        return "unspecified"
    return ""


def _member(warc_record) -> bytes:
    # warcio would compress at level 9; CRAWLER_WARC_GZIP_LEVEL gives nearly the same size
    # for a fraction of the CPU (docs/benchmarks.md).
    out = BytesIO()
    WARCWriter(out, gzip=False).write_record(warc_record)
    compressor = zlib.compressobj(settings.CRAWLER_WARC_GZIP_LEVEL, zlib.DEFLATED, zlib.MAX_WBITS + 16)
    return compressor.compress(out.getvalue()) + compressor.flush()


class _FileWriter:
    """Appends gzip members to the current file of this process, rotating by size."""

    def __init__(self, directory: Path, max_bytes: int):
        self.directory, self.max_bytes = directory, max_bytes
        self.pid = os.getpid()
        self.key = (self.pid, directory, max_bytes)
        self.lock = threading.Lock()
        self.file = None
        self.name = ""

    def append(self, members: tuple[bytes, ...]) -> Location:
        with self.lock:
            if self.file is None or self.file.tell() >= self.max_bytes:
                self._open_next()
            offset = self.file.tell()
            try:
                for member in members:
                    self.file.write(member)
                self.file.flush()
            except OSError:
                self._abandon(offset)
                raise
            return Location(self.name, offset, len(members[0]))

    def _abandon(self, offset: int) -> None:
        """After a failed write (disk full): cut the torn record off, so the file stays
        readable from start to end, and start a new file next time."""
        path, file, self.file = self.directory / self.name, self.file, None
        for step in (file.close, lambda: os.truncate(path, offset)):
            try:
                step()
            except OSError:
                pass  # closing flushes what is left in the buffer, which may fail the same way

    def _open_next(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
        self.directory.mkdir(parents=True, exist_ok=True)
        host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname()) or "host"
        while True:
            stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
            name = f"crawlerweb-{stamp}-{next(_serials) % 100_000:05d}-{host}-{self.pid}.warc.gz"
            try:
                self.file = open(self.directory / name, "xb")  # never append to another writer's file
                break
            except FileExistsError:
                continue
        self.name = name
        self.file.write(self._warcinfo(name))
        self.file.flush()

    @staticmethod
    def _warcinfo(name: str) -> bytes:
        info = _BUILDER.create_warcinfo_record(name, {
            "software": "crawlerweb (warcio)",
            "format": "WARC File Format 1.0",
            "hostname": socket.gethostname(),
            "http-header-user-agent": settings.CRAWLER_USER_AGENT,
            "robots": "obey",
        })
        return _member(info)

    def close(self) -> None:
        with self.lock:
            if self.file is not None:
                self.file.close()
                self.file = None


_serials = itertools.count(1)  # this process's files, in the order they were started
_writer_lock = threading.Lock()
_current: _FileWriter | None = None


def _writer() -> _FileWriter:
    # One writer per process and configuration: a forked child or changed settings (tests,
    # a reload) start a file of their own.
    global _current
    key = (os.getpid(), Path(settings.CRAWLER_WARC_DIR), settings.CRAWLER_WARC_MAX_FILE_BYTES)
    writer = _current
    if writer is not None and writer.key == key:
        return writer
    with _writer_lock:
        if _current is None or _current.key != key:
            if _current is not None and _current.pid == os.getpid():
                _current.close()
            _current = _FileWriter(*key[1:])
        return _current


def close() -> None:
    """Close this process's current file (the next record starts a new one)."""
    global _current
    with _writer_lock:
        if _current is not None and _current.pid == os.getpid():
            _current.close()
        _current = None


def disk_usage() -> dict:
    """The archive directory's WARC files on this machine: {"dir", "files", "bytes"}."""
    paths = list(Path(settings.CRAWLER_WARC_DIR).glob("*.warc.gz")) if enabled() else []
    return {"dir": settings.CRAWLER_WARC_DIR if enabled() else "", "files": len(paths),
            "bytes": sum(p.stat().st_size for p in paths)}


def read_response(location: Location) -> ArchivedResponse:
    """Read one response record back. Raises ArchiveUnavailable with a message for people."""
    match = _FILE_NAME.match(location.filename)
    if match is None or location.offset < 0 or location.length <= 0:
        raise ArchiveUnavailable(f"{location.filename!r} at {location.offset} is not a record this crawler wrote")
    if location.length > settings.CRAWLER_MAX_BODY_BYTES + _READ_SLACK:
        raise ArchiveUnavailable(f"a record of {location.length} bytes is larger than any this crawler writes")
    path = Path(settings.CRAWLER_WARC_DIR) / location.filename
    try:
        with open(path, "rb") as f:
            f.seek(location.offset)
            member = f.read(location.length)
    except FileNotFoundError:
        raise ArchiveUnavailable(
            f"{location.filename} is not in CRAWLER_WARC_DIR ({settings.CRAWLER_WARC_DIR}) on this machine. "
            f"It was written on host {match['host']}: point CRAWLER_WARC_DIR of the workers and of the web "
            f"server at the same shared storage, or copy the file here.") from None
    except OSError as exc:
        raise ArchiveUnavailable(f"cannot read {location.filename}: {exc.strerror}") from None
    if len(member) != location.length:
        raise ArchiveUnavailable(f"{location.filename} ends before the record at {location.offset} does "
                                 "(the file was truncated or is still being copied)")
    try:
        warc_record = next(iter(ArchiveIterator(BytesIO(member))))
        body = warc_record.raw_stream.read(settings.CRAWLER_MAX_BODY_BYTES + _READ_SLACK)
    except (ArchiveLoadFailed, StopIteration, OSError, zlib.error, ValueError) as exc:
        raise ArchiveUnavailable(f"no WARC record at {location.filename}:{location.offset} ({exc})") from None
    if warc_record.rec_type != "response":
        raise ArchiveUnavailable(f"the record at {location.filename}:{location.offset} is a {warc_record.rec_type}")
    http_headers = warc_record.http_headers
    if http_headers is None:  # bytes that parse as a response record but hold no HTTP message
        raise ArchiveUnavailable(f"no WARC record at {location.filename}:{location.offset} "
                                 "(a response record without HTTP headers)")
    return ArchivedResponse(
        location=location,
        target_uri=warc_record.rec_headers.get_header("WARC-Target-URI", ""),
        warc_date=warc_record.rec_headers.get_header("WARC-Date", ""),
        warc_headers=list(warc_record.rec_headers.headers),
        status_line=f"{http_headers.protocol} {http_headers.statusline}".strip(),
        http_headers=list(http_headers.headers),
        body=body,
        record_bytes=member,
    )
