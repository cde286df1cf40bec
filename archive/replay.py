"""Replay of the WARC archive in a browser, with pywb (`python manage.py replay`).

pywb runs as a process of its own from .venv-replay (`make replay-setup`;
requirements-replay.txt says why it cannot live in .venv). This module lays out what it
reads and keeps it current while the crawl goes on:

    ROOT/config.yaml                              replay only (CONFIG below)
    ROOT/collections/NAME/archive/*.warc.gz       symlinks to the files of CRAWLER_WARC_DIR
    ROOT/collections/NAME/indexes/index.cdxj      the sidecars' lines (archive/cdxj.py), sorted

Refresher.refresh() links new WARC files, gives the files that have no sidecar one
(cdxj.rebuild: files written before the crawler kept sidecars, or copied in), and, when a
sidecar or the set of files changed, merges the sidecars again into a new index that
replaces the old one atomically: pywb opens the index for every lookup, so it reads the
old one or the new one, never half of one. The archive links are made before the index
names their files.

Revisits are resolved in the merged index. pywb replays a revisit record with the revisit's
own HTTP headers and the original's payload: a 304 (profile server-not-modified) is played
back as a 304 with no body (pywb takes any 3xx for a redirect and loads no payload), and an
identical-payload revisit written before archive/warc.py gave its headers the payload's
length (4b92dc4) says `Content-Length: 0`, an empty page. So a revisit's line is replaced by
one with the revisit's timestamp that points at the response it stands for — the latest
earlier response of the same URL with the same payload digest, or, for a 304 (no digest),
the latest earlier 2xx response — and pywb serves that response whole, with no second
lookup for the original at each request. A revisit whose original is not in the archive
any more is left out (pywb then shows the nearest capture it has).

start() runs pywb's `wayback` bound to 127.0.0.1, in a session of its own (a Ctrl-C meant for
`replay` reaches replay, which stops pywb: stop()) and, on Linux, ended by the kernel if
`replay` dies without stopping it.

capture_url() is the replay address of a document's archived copy, for the search page,
the search API and the admin (CRAWLER_REPLAY_URL).
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from django.conf import settings

from . import cdxj

VENV = Path(settings.BASE_DIR) / ".venv-replay"
SETUP_HINT = "run `make replay-setup`"
REVISIT_MIME = '"mime": "warc/revisit"'  # as cdxj.Entry.line() and cdxj-indexer write it

CONFIG = """\
# Written by `python manage.py replay` (archive/replay.py) at every start: edits are lost.
# Replay only: no `recorder` (nothing is recorded), no `live` collection (nothing is fetched
# from the web), no proxy mode; collections come from the collections/ directory.
#
# Framed replay (pywb's default): the archived page runs in an iframe under pywb's bar (its
# URL, capture time and other captures), so the page's document holds the page and pywb's
# scripts only, never the bar's text or styles (unframed, pywb inserts its banner into the
# page, whose CSS and scripts then meet it); the address bar follows the page as one
# navigates in it.
framed_replay: true
enable_memento: true
"""


class ReplayError(Exception):
    """Replay cannot start; the message is one line that says why and what to do."""


def wayback() -> Path:
    """pywb's server in .venv-replay, or ReplayError."""
    path = VENV / "bin" / "wayback"
    if not os.access(path, os.X_OK):
        raise ReplayError(f"pywb is not installed ({path} not found): {SETUP_HINT}")
    return path


def check_archive(warc_dir: Path) -> list[Path]:
    """The archive's WARC files, or ReplayError when there is nothing to replay."""
    if not settings.CRAWLER_WARC_ENABLED:
        raise ReplayError("CRAWLER_WARC_ENABLED is off: the crawler archives nothing, so there is nothing to replay")
    files = cdxj.warc_files(warc_dir)
    if not files:
        raise ReplayError(f"no WARC files in {warc_dir} (CRAWLER_WARC_DIR): crawl something first")
    return files


def capture_url(url: str, fetched_at: datetime | None) -> str | None:
    """The replay address of the capture of `url` made at `fetched_at` (a document's fetch
    time, which is its response record's WARC-Date), or None when CRAWLER_REPLAY_URL is
    unset. The timestamp is the index line's: WARC-Date to the second."""
    base = settings.CRAWLER_REPLAY_URL
    if not base or fetched_at is None or not url.startswith(("http://", "https://")):
        return None  # pywb replays the web's captures, not Gemini's
    return f"{base.rstrip('/')}/{cdxj.timestamp_of(fetched_at)}/{url}"


@dataclass(frozen=True)
class Collection:
    root: Path
    name: str

    @property
    def directory(self) -> Path:
        return self.root / "collections" / self.name

    @property
    def archive(self) -> Path:
        return self.directory / "archive"

    @property
    def index(self) -> Path:
        return self.directory / "indexes" / "index.cdxj"

    def create(self) -> None:
        """The collection's directories and pywb's config.yaml."""
        if not re.fullmatch(r"[A-Za-z0-9_-]+", self.name):
            raise ReplayError(f"{self.name!r} is not a collection name (letters, digits, - and _)")
        self.archive.mkdir(parents=True, exist_ok=True)
        self.index.parent.mkdir(parents=True, exist_ok=True)
        (self.root / "config.yaml").write_text(CONFIG, encoding="utf-8")


@dataclass
class IndexStats:
    lines: int = 0
    revisits: int = 0  # resolved to the response they stand for
    unresolved: int = 0  # left out: their original is not in the index


def link_archive(collection: Collection, warc_dir: Path) -> int:
    """Make archive/ hold a symlink to every WARC file of `warc_dir`, and no dangling one.
    Returns the number of files linked."""
    files = {path.name: path.resolve() for path in cdxj.warc_files(warc_dir)}
    for entry in collection.archive.iterdir():
        if entry.is_symlink() and (entry.name not in files or Path(os.readlink(entry)) != files[entry.name]):
            entry.unlink()  # a file that went away, or CRAWLER_WARC_DIR moved
    for name, target in files.items():
        link = collection.archive / name
        if not link.is_symlink():
            link.symlink_to(target)
    return len(files)


def write_index(sidecars: list[Path], out_path: Path) -> IndexStats:
    """Merge the sidecars into one sorted index with the revisits resolved (see the module's
    docstring), replacing `out_path` atomically."""
    stats = IndexStats()
    partial = out_path.with_name(out_path.name + f".{os.getpid()}.partial")  # not *.cdxj: pywb skips it
    with open(partial, "w", encoding="ascii") as out:
        key, responses = None, []
        for line in cdxj.sorted_lines(sidecars):
            line_key, timestamp, fields = line.split(" ", 2)
            if line_key != key:  # a URL's lines are together, oldest first
                key, responses = line_key, []
            if REVISIT_MIME not in fields:
                responses.append(fields)
                out.write(line)
                stats.lines += 1
                continue
            original = _original(json.loads(fields), responses)
            if original is None:
                stats.unresolved += 1
                continue
            out.write(f"{key} {timestamp} {original}")
            stats.lines += 1
            stats.revisits += 1
    os.replace(partial, out_path)
    return stats


def _original(revisit: dict, responses: list[str]) -> str | None:
    """The JSON part of the index line for a revisit: the latest earlier response of its URL
    it stands for, with the revisit's URL."""
    digest = revisit.get("digest")
    for fields in reversed(responses):
        response = json.loads(fields)
        if response.get("url") != revisit.get("url"):
            continue  # the same SURT key, another spelling (http/https, www.)
        if response.get("digest") == digest if digest else response.get("status", "").startswith("2"):
            return fields
    return None


@dataclass
class Refresher:
    """Keeps a collection's archive links and index current with CRAWLER_WARC_DIR."""

    collection: Collection
    warc_dir: Path
    merged: tuple | None = None  # the sidecars' (name, mtime, size) at the last merge
    rebuilt: dict = field(default_factory=dict)  # WARC path -> (its size, its sidecar's stat) when rebuilt here
    problems: list[str] = field(default_factory=list)  # what the last refresh could not do

    def refresh(self) -> IndexStats | None:
        """Bring links and index up to date; the new index's figures, or None when
        nothing changed since the last merge."""
        self.problems = []
        link_archive(self.collection, self.warc_dir)
        for path in cdxj.missing(self.warc_dir):
            # An empty file is one a writer has just opened and is about to open its sidecar
            # for (archive/warc.py): a sidecar made here now would take that one's place.
            if _size(path) > 0:
                self._rebuild(path)
        for path, (size, sidecar_stat) in list(self.rebuilt.items()):
            # A sidecar made here goes stale when its file grows and no writer keeps the
            # sidecar (a file still being written by a crawler that keeps none).
            now = _size(path)
            if now < 0:
                del self.rebuilt[path]  # the file went away
            elif now > size and _stat(cdxj.sidecar_path(path)) == sidecar_stat:
                self._rebuild(path)
        sidecars = cdxj.sidecars(self.warc_dir)
        state = tuple((path.name, *_stat(path)) for path in sidecars)
        if state == self.merged:
            return None
        stats = write_index(sidecars, self.collection.index)
        self.merged = state
        return stats

    def _rebuild(self, path: Path) -> None:
        size = _size(path)
        try:
            cdxj.rebuild(path)
        except Exception as exc:  # a file cut short mid-record: indexed again next time
            self.problems.append(f"{path.name} could not be indexed ({exc}); trying again at the next refresh")
            return
        self.rebuilt[path] = (size, _stat(cdxj.sidecar_path(path)))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return -1


def _stat(path: Path) -> tuple[int, int]:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return (0, -1)
    return (stat.st_mtime_ns, stat.st_size)


# --- pywb's process --------------------------------------------------------------------------

def port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def start(root: Path, port: int, log_path: Path) -> subprocess.Popen:
    """pywb's server for the collections under `root` on 127.0.0.1:`port`, its output
    (an access log line per request) going to `log_path`."""
    if not port_free(port):
        raise ReplayError(f"port {port} on 127.0.0.1 is in use: choose another with --port")
    with open(log_path, "wb") as log:
        return subprocess.Popen([str(wayback()), "--bind", "127.0.0.1", "--port", str(port), "--directory", str(root)],
                                cwd=root, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=_end_with_parent)


def wait_until_serving(process: subprocess.Popen, port: int, log_path: Path, timeout: float = 60.0) -> None:
    """Return once pywb accepts connections; ReplayError if it exits or takes too long."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ReplayError(f"pywb exited with status {process.returncode} at start: {_last_line(log_path)}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    stop(process)
    raise ReplayError(f"pywb did not answer on port {port} within {timeout:.0f} s (its log: {log_path})")


def stop(process: subprocess.Popen, grace: float = 5.0) -> int:
    """End pywb: SIGTERM, then SIGKILL after `grace` seconds. Returns its exit status."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def _end_with_parent() -> None:
    # In the child, before exec: SIGTERM when the process that started it dies (Linux's
    # PR_SET_PDEATHSIG), so a `replay` killed with SIGKILL leaves no server behind.
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def _last_line(log_path: Path) -> str:
    try:
        lines = [line.strip() for line in log_path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        lines = []
    return lines[-1] if lines else f"nothing in {log_path}"
