"""run_server: start the changing web in a subprocess (webs/httpserver.py's `serving`)."""
from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path
from typing import NamedTuple

from ..httpserver import serving
from .server import read_info
from .truth import Truth


class Served(NamedTuple):
    truth: Truth  # the config (with the real port) and epoch the server runs
    proc: subprocess.Popen
    log: Path  # its request log
    info: Path  # its info file


@contextlib.contextmanager
def run_server(directory: Path, *argv: str, ready_timeout: float = 20.0):
    """Serve the changing web (`serve` flags in argv; port 0 unless given) until the block
    exits, its log and info file in `directory`."""
    info, log = Path(directory) / "server-info.json", Path(directory) / "requests.log"
    flags = ["--port", "0", *argv, "--info", str(info), "--log", str(log)]
    with serving("webs.changeweb", flags, ready_timeout=ready_timeout) as (proc, _):
        yield Served(Truth(*read_info(info)), proc, log, info)
