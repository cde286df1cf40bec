"""The WARC archive: every HTTP response the crawler receives is written, after the request
that asked for it, to gzip-compressed WARC/1.0 files (ISO 28500), and the response record's
(file, offset, length) is kept so any page's raw bytes can be read back with one seek.

Files: CRAWLER_WARC_DIR/crawlerweb-<UTC time>-<serial>-<hostname>-<pid>.warc.gz. Each file
starts with a warcinfo record naming the crawler, its version and the settings that shaped
what was fetched, and every other record names it (WARC-Warcinfo-ID). Once a file passes
CRAWLER_WARC_MAX_FILE_BYTES the next records go to a new file. Beside each file its CDXJ
index, NAME.cdxj (archive/cdxj.py): a line per response or revisit, appended with it. One
writer per process (a forked Celery child opens its own file): records are built and
compressed outside the lock and appended under it, each as its own gzip member, which is
what lets a reader start at any record's offset.

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
point at that response (WARC-Refers-To, WARC-Refers-To-Target-URI and -Date), with the
profile "server-not-modified" or "identical-payload-digest": the status line and headers,
never a second copy of the body. A response record's WARC-Record-ID is a name-based UUID
(RFC 9562 version 5) of its URL and the microsecond its fetch began, which the frontier
keeps as the URL's payload_at: so a revisit names its original without the crawler storing
record ids, and the id is unique because one URL is never fetched twice in one
microsecond (one request per host at a time).

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
import uuid
import zlib
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib.metadata import version as _package_version
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

from common import stagetime
from frontier.vocabulary import FetchError

from . import cdxj
from fetch import http

_FRAMING_HEADERS = frozenset({"content-encoding", "transfer-encoding", "content-length"})
_FILE_NAME = re.compile(r"^crawlerweb-\d{14}-\d{5}-(?P<host>[A-Za-z0-9._-]+)-\d+\.warc\.gz$")
# A record read back is at most a capped body plus headers; anything longer is not ours.
_READ_SLACK = 1024 * 1024
_BUILDER = RecordBuilder()  # holds no state between records
# The namespace of response record ids (uuid5 of URL and fetch start, see above).
_RESPONSE_IDS = uuid.UUID("6f1f3e4c-5d2a-5b8e-9c41-2a7d0e9b3c15")
SOFTWARE = "crawlerweb/0.1"


class Built(NamedTuple):
    """One fetch's records, built and compressed, not yet written: the gzip members (the
    response or revisit first), its CDXJ entry, and the warcinfo record they name."""

    members: tuple[bytes, ...]
    entry: cdxj.Entry | None
    warcinfo_id: str


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
def build(result: http.FetchResult) -> list[Built]:
    """The records of a fetch, compressed, not yet written: (response, request) members for
    each redirect hop it followed, then for its final response; [] when archiving is off
    or no response arrived. Pure work (a parse pool process may do it); append() writes."""
    if not enabled() or result.status is None:
        return []
    return [_records(hop) for hop in result.redirects] + [_records(result)]


@stagetime.timed("warc")
def append(groups: list[Built]) -> Location | None:
    """Write built records, each to the file whose warcinfo they name (normally the current
    one), with their index lines; the last group's location."""
    location = None
    for built in groups:
        location = _writer().append(built)
    return location


_building_for: ContextVar[str] = ContextVar("building_for", default="")


def warcinfo_id() -> str:
    """The warcinfo record that records built now will name: that of the file they will go
    to. A parse pool process builds for its parent's writer: the parent sends this along."""
    return _writer().warcinfo_id() if enabled() else ""


@contextmanager
def building_for(warcinfo: str):
    """Build records in this context for another process's writer (the parse pool)."""
    token = _building_for.set(warcinfo)
    try:
        yield
    finally:
        _building_for.reset(token)


def _current_warcinfo_id() -> str:
    return _building_for.get() or _writer().warcinfo_id()


def response_record_id(url: str, started_at: datetime) -> str:
    """The WARC-Record-ID of the response to `url` whose fetch began at `started_at`."""
    moment = started_at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"<urn:uuid:{uuid.uuid5(_RESPONSE_IDS, url + chr(10) + moment)}>"


# WARC/1.0 revisit profiles (ISO 28500:2009 section 8.3; 1.1 kept the names).
NOT_MODIFIED = "http://netpreserve.org/warc/1.0/revisit/server-not-modified"
IDENTICAL_PAYLOAD = "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"


def record_revisit(result: http.FetchResult, profile: str, refers_to: datetime | None) -> Location | None:
    """Archive a revisit: the response's status line and headers in a `revisit` record
    pointing at the earlier response of the same URL received at `refers_to`."""
    return append(build_revisit(result, profile, refers_to))


@stagetime.timed("warc")
def build_revisit(result: http.FetchResult, profile: str, refers_to: datetime | None) -> list[Built]:
    """record_revisit()'s records, built, not written (see build())."""
    if not enabled() or result.status is None:
        return []
    revisit = {"WARC-Profile": profile, "WARC-Refers-To-Target-URI": result.final_url}
    if refers_to is not None:
        revisit["WARC-Refers-To"] = response_record_id(result.final_url, refers_to)
        revisit["WARC-Refers-To-Date"] = _warc_date(refers_to.timestamp())
    if profile == IDENTICAL_PAYLOAD:  # the digest the original's record got (over a Gemini block for Gemini)
        payload = result.gemini_header.encode("utf-8") + b"\r\n" + result.body if result.gemini else result.body
        revisit["WARC-Payload-Digest"] = payload_digest(payload)
    return [_records(result, revisit)]


def payload_digest(body: bytes) -> str:
    """The WARC payload digest of a body, as warcio writes it on response records."""
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


def _warc_date(timestamp: float) -> str:
    return datetime_to_iso_date(datetime.fromtimestamp(timestamp, timezone.utc).replace(tzinfo=None))


def _records(result: http.FetchResult, revisit: dict | None = None) -> Built:
    """(response or revisit member, request member), each compressed on its own."""
    date = _warc_date(result.started_at)
    info = _current_warcinfo_id()
    warc_headers = {"WARC-Date": date, **(revisit or {})}
    if not revisit:
        started = datetime.fromtimestamp(result.started_at, timezone.utc)  # as the frontier keeps it
        warc_headers["WARC-Record-ID"] = response_record_id(result.final_url, started)
    warc_headers["WARC-Warcinfo-ID"] = info
    if result.address:
        warc_headers["WARC-IP-Address"] = result.address
    truncated = _truncation(result)
    if truncated:
        warc_headers["WARC-Truncated"] = truncated
    body = b"" if revisit else result.body
    if result.gemini:
        response, request = _gemini_records(result, revisit, warc_headers, body, info)
    else:
        response, request = _http_records(result, revisit, warc_headers, body, info)
    members = (_member(response), _member(request))
    # The line cdxj-indexer would write: a 304 revisit has no payload digest.
    digest = response.rec_headers.get_header("WARC-Payload-Digest") or ("" if revisit else payload_digest(body))
    content_type = next((value for name, value in result.response_headers if name.lower() == "content-type"), "")
    status = result.gemini_header[:2] if result.gemini else result.status
    entry = cdxj.entry(result.final_url, date, "revisit" if revisit else "response", status, content_type, digest)
    return Built(members, entry, info)


def _http_records(result: http.FetchResult, revisit: dict | None, warc_headers: dict, body: bytes, info: str):
    headers = []
    for name, value in result.response_headers:
        if name.lower() in _FRAMING_HEADERS:
            name = "X-Archive-Orig-" + name
        headers.append((name, value))
    # An identical-payload revisit stands for the same payload as its original: its headers
    # say that payload's length, so a tool that joins them to the original's body agrees.
    same_payload = revisit is not None and revisit.get("WARC-Profile") == IDENTICAL_PAYLOAD
    headers.append(("Content-Length", str(len(result.body) if same_payload else len(body))))
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
        warc_headers_dict=_request_headers(response, warc_headers, info),
        http_headers=StatusAndHeaders(f"GET {target} {protocol}",
                                      [("Host", parts.netloc), *(result.sent_headers or http.request_headers()).items()],
                                      is_http_request=True),
    )
    return response, request


# Gemini in WARC: no HTTP message to wrap, so the record's block is the protocol's own bytes —
# the header line ("20 text/gemini", the protocol's status line) and CRLF, then the body;
# the request record's block is the request line. Their Content-Type says which
# (application/gemini with msgtype, as application/http does for HTTP).
GEMINI_RESPONSE_TYPE = "application/gemini; msgtype=response"
GEMINI_REQUEST_TYPE = "application/gemini; msgtype=request"


def _gemini_records(result: http.FetchResult, revisit: dict | None, warc_headers: dict, body: bytes, info: str):
    block = result.gemini_header.encode("utf-8") + b"\r\n" + body
    response = _BUILDER.create_warc_record(
        result.final_url, "revisit" if revisit else "response", payload=BytesIO(block), length=len(block),
        warc_content_type=GEMINI_RESPONSE_TYPE, warc_headers_dict=warc_headers,
    )
    line = result.final_url.encode("utf-8") + b"\r\n"
    request = _BUILDER.create_warc_record(
        result.final_url, "request", payload=BytesIO(line), length=len(line), warc_content_type=GEMINI_REQUEST_TYPE,
        warc_headers_dict=_request_headers(response, warc_headers, info),
    )
    return response, request


def _request_headers(response, warc_headers: dict, info: str) -> dict:
    headers = {"WARC-Date": warc_headers["WARC-Date"],
               "WARC-Concurrent-To": response.rec_headers.get_header("WARC-Record-ID"), "WARC-Warcinfo-ID": info}
    if "WARC-IP-Address" in warc_headers:
        headers["WARC-IP-Address"] = warc_headers["WARC-IP-Address"]
    return headers


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


class _OpenFile:
    """One WARC file being written, with its index beside it."""

    def __init__(self, directory: Path, name: str, warcinfo_id: str, mode: str = "xb"):
        self.name, self.warcinfo_id = name, warcinfo_id
        self.warc = open(directory / name, mode)  # "xb": never append to another writer's file
        try:
            self.index = open(cdxj.sidecar_path(directory / name), "ab")
        except OSError:
            self.warc.close()
            raise

    def close(self) -> None:
        for f in (self.warc, self.index):
            try:
                f.close()
            except OSError:
                pass  # closing flushes what is left in the buffer, which may fail (disk full)


class _FileWriter:
    """Appends gzip members to this process's current file (and their lines to its index),
    rotating by size. A record built just before a rotation names the file it was built
    for: it goes there (the previous file stays open until the next rotation)."""

    def __init__(self, directory: Path, max_bytes: int):
        self.directory, self.max_bytes = directory, max_bytes
        self.pid = os.getpid()
        self.key = (self.pid, directory, max_bytes)
        self.lock = threading.Lock()
        self.current: _OpenFile | None = None
        self.previous: _OpenFile | None = None
        self.next_warcinfo_id = _BUILDER._make_warc_id()  # the id of the file opened next

    @property
    def name(self) -> str:
        return self.current.name if self.current else ""

    def warcinfo_id(self) -> str:
        with self.lock:
            return self.current.warcinfo_id if self.current else self.next_warcinfo_id

    def append(self, built: Built) -> Location:
        with self.lock:
            target = self.previous if self.previous and built.warcinfo_id == self.previous.warcinfo_id else None
            if target is None:
                if self.current is None:
                    self._open_next()
                target = self.current
            offset, index_at = target.warc.tell(), target.index.tell()
            try:
                for member in built.members:
                    target.warc.write(member)
                target.warc.flush()
                if built.entry is not None:
                    target.index.write(built.entry.line(target.name, offset, len(built.members[0])).encode("ascii"))
                    target.index.flush()
            except OSError:
                self._abandon(target, offset, index_at)
                raise
            location = Location(target.name, offset, len(built.members[0]))
            if target is self.current and target.warc.tell() >= self.max_bytes:
                self._rotate()
            return location

    def _rotate(self) -> None:
        """The current file is full: records built from now on name the next one."""
        if self.previous is not None:
            self.previous.close()
        self.previous, self.current = self.current, None
        self.next_warcinfo_id = _BUILDER._make_warc_id()

    def _abandon(self, target: _OpenFile, offset: int, index_at: int) -> None:
        """After a failed write (disk full): cut the torn record and its line off, so both
        files stay readable from start to end, and start a new file next time."""
        target.close()
        for path, size in ((self.directory / target.name, offset),
                           (cdxj.sidecar_path(self.directory / target.name), index_at)):
            try:
                os.truncate(path, size)
            except OSError:
                pass
        if target is self.current:
            self.current = None
            self.next_warcinfo_id = _BUILDER._make_warc_id()
        else:
            self.previous = None

    def _open_next(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname()) or "host"
        while True:
            stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
            name = f"crawlerweb-{stamp}-{next(_serials) % 100_000:05d}-{host}-{self.pid}.warc.gz"
            try:
                opened = _OpenFile(self.directory, name, self.next_warcinfo_id)
                break
            except FileExistsError:
                continue
        try:
            opened.warc.write(_warcinfo(name, opened.warcinfo_id))
            opened.warc.flush()
        except OSError:
            opened.close()
            raise
        self.current = opened

    def close(self) -> None:
        with self.lock:
            for opened in (self.previous, self.current):
                if opened is not None:
                    opened.close()
            self.previous = self.current = None


def _warcinfo(name: str, record_id: str) -> bytes:
    """The first record of a file: who wrote it and under which rules (WARC 1.0 annex C's
    warcinfo fields, and the settings that decide what was fetched and kept)."""
    fields = {
        "software": f"{SOFTWARE} (warcio/{_package_version('warcio')})",
        "format": "WARC File Format 1.0",
        "conformsTo": "http://bibnum.bnf.fr/WARC/WARC_ISO_28500_version1_latestdraft.pdf",
        "hostname": socket.gethostname(),
        "http-header-user-agent": settings.CRAWLER_USER_AGENT,
        "robots": "obey",
        "description": "a crawl by crawlerweb: one request per host at a time, redirects archived hop by hop",
        "crawler-default-delay-seconds": str(settings.CRAWLER_DEFAULT_DELAY),
        "crawler-adaptive-delay-factor": str(settings.CRAWLER_ADAPTIVE_DELAY_FACTOR),
        "crawler-max-body-bytes": str(settings.CRAWLER_MAX_BODY_BYTES),
        "crawler-total-deadline-seconds": str(settings.CRAWLER_TOTAL_DEADLINE),
        "crawler-depth-limit": str(settings.CRAWLER_DEPTH_LIMIT),
    }
    info = _BUILDER.create_warcinfo_record(name, fields)
    info.rec_headers.replace_header("WARC-Record-ID", record_id)
    return _member(info)


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
    target_uri = warc_record.rec_headers.get_header("WARC-Target-URI", "")
    http_headers = warc_record.http_headers
    if target_uri.startswith("gemini://"):  # the block is the header line, CRLF, the body
        header, _, body = body.partition(b"\r\n")
        status_line, header_list = header.decode("utf-8", errors="replace"), []
    elif http_headers is None:  # bytes that parse as a response record but hold no HTTP message
        raise ArchiveUnavailable(f"no WARC record at {location.filename}:{location.offset} "
                                 "(a response record without HTTP headers)")
    else:
        status_line = f"{http_headers.protocol} {http_headers.statusline}".strip()
        header_list = list(http_headers.headers)
    return ArchivedResponse(
        location=location,
        target_uri=target_uri,
        warc_date=warc_record.rec_headers.get_header("WARC-Date", ""),
        warc_headers=list(warc_record.rec_headers.headers),
        status_line=status_line,
        http_headers=header_list,
        body=body,
        record_bytes=member,
    )
