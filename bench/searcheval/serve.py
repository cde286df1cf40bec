"""The documentation sites as static web sites on loopback, one address per site.

The repo's own HTTP core (webs/httpserver.py: keep-alive, exact request log) answering
from files: site i is http://127.0.9.(i+1):PORT/ (clear of the sample web's 127.0.1.x and
the changing web's 127.0.3.x). It runs in a subprocess (httpserver.serving), as the other
loopback webs do, so the crawler under test shares nothing with it.

What a path gets:
- the file under the site's root (percent-escapes decoded); a directory with a trailing
  slash gets its index.html, one without gets a 301 to the slash form;
- 404 for anything else: no such file, "..", a NUL, and any path whose real location
  (symlinks resolved) is outside the root. Debian's doc packages replace _static/*.js by
  symlinks into /usr/share/javascript, which dangle here: they are 404s, never a crash;
- robots.txt: none (404, so everything is allowed).

    python -m bench.searcheval.serve serve --site NAME=DIR [--site ...] [--port 0] [--log FILE]
prints `READY {"port": P, "sites": {NAME: base URL}}` and serves until SIGTERM.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import mimetypes
import os
import sys
from email.utils import formatdate
from pathlib import Path
from urllib.parse import unquote

from webs import httpserver
from webs.httpserver import RequestLog, raise_fd_limit, reserve_port, response_head

NOT_FOUND = b"<!DOCTYPE html>\n<html><body>Not Found</body></html>\n"


def site_address(index: int) -> str:
    return f"127.0.9.{index + 1}"


class Site(httpserver.Host):
    __slots__ = ("name", "root")

    def __init__(self, index: int, netloc: str, name: str, root: Path):
        super().__init__(index, netloc)
        self.name = name
        self.root = Path(os.path.realpath(root))


def resolve(root: Path, path: str) -> tuple[str, Path | None]:
    """("file", path) | ("redirect", None) | ("missing", None) for a request path under a
    site whose root is `root` (already a real path)."""
    path = unquote(path.split("?", 1)[0])
    if "\x00" in path or not path.startswith("/"):
        return "missing", None
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        return "missing", None
    candidate = root.joinpath(*parts)
    try:
        if candidate.is_dir():
            if not path.endswith("/"):
                return "redirect", None
            candidate = candidate / "index.html"
        real = Path(os.path.realpath(candidate))
        if real != root and root not in real.parents:
            return "missing", None
        return ("file", real) if real.is_file() else ("missing", None)
    except OSError:
        return "missing", None


def content_type(path: Path) -> str:
    kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"{kind}; charset=utf-8" if kind.startswith("text/") or kind.endswith("javascript") else kind


class StaticServer(httpserver.HTTPServer):
    def head(self, status: int, headers) -> bytes:
        return response_head(status, headers, "searcheval") + f"Date: {formatdate(usegmt=True)}\r\n".encode()

    def answer(self, host: Site, method, path: str, headers):
        found, file = resolve(host.root, path)
        if found == "redirect":
            location = path.split("?", 1)[0] + "/"
            return 301, self.head(301, [("Location", location), ("Content-Length", "0")]), b"", ()
        if found == "file":
            try:
                body = file.read_bytes()
            except OSError:
                body = None
            if body is not None:
                return 200, self.head(200, [("Content-Type", content_type(file)),
                                            ("Content-Length", str(len(body)))]), body, ()
        return 404, self.head(404, [("Content-Type", "text/html; charset=utf-8"),
                                    ("Content-Length", str(len(NOT_FOUND)))]), NOT_FOUND, ()


async def serve(sites: list[tuple[str, Path]], port: int, log_path, exit_with_parent: bool) -> int:
    raise_fd_limit()
    addresses = [site_address(i) for i in range(len(sites))]
    sock = None
    if port == 0:
        sock = reserve_port(addresses[0])
        port = sock.getsockname()[1]
    hosts = [Site(i, f"{addresses[i]}:{port}", name, root) for i, (name, root) in enumerate(sites)]
    server = StaticServer(hosts, RequestLog(log_path))

    def ready():
        print("READY " + json.dumps({"port": port, "sites": {h.name: f"http://{h.netloc}/" for h in hosts}}),
              flush=True)

    return await server.serve_until_stopped(addresses, port, sock, exit_with_parent, ready)


@contextlib.contextmanager
def run_sites(sites: dict[str, Path], port: int = 0, log_path=None, ready_timeout: float = 20.0):
    """Serve these sites (name -> root directory) in a subprocess until the block exits;
    yields name -> base URL ("http://127.0.9.1:PORT/")."""
    argv = [arg for name, root in sites.items() for arg in ("--site", f"{name}={Path(root).resolve()}")]
    argv += ["--port", str(port)] + (["--log", str(log_path)] if log_path else [])
    with httpserver.serving("bench.searcheval.serve", argv, ready_timeout=ready_timeout) as (_, ready):
        yield ready["sites"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.searcheval.serve")
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("serve", help="serve static sites on loopback")
    command.add_argument("--site", action="append", required=True, metavar="NAME=DIR")
    command.add_argument("--port", type=int, default=0, help="0 = pick a free port")
    command.add_argument("--log", default=None, help="request log file (truncated)")
    command.add_argument("--exit-with-parent", action="store_true")
    args = parser.parse_args(argv)
    sites = []
    for spec in args.site:
        name, sep, root = spec.partition("=")
        if not sep or not Path(root).is_dir():
            parser.error(f"--site wants NAME=DIR with an existing directory: {spec!r}")
        sites.append((name, Path(root)))
    return asyncio.run(serve(sites, args.port, args.log, args.exit_with_parent))


if __name__ == "__main__":
    sys.exit(main())
