"""What a WACZ package costs (`manage.py export wacz`): wall time and peak memory of the
command and of the `wacz` creator it runs, for the crawl that DATABASE_URL and
CRAWLER_WARC_DIR name, packaged whole and by each selection given.

    python -m bench.wacz_cost [--host H] [--since ISO] [--until ISO] [--scope S] [--keep DIR]

Each run is `manage.py export wacz` in its own process; every 50 ms the peak RSS (VmHWM) of
it and of its children is read from /proc, so the creator's figure is its own, not the
command's memory it was forked from. Prints one JSON line per run.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.procstat import peak_rss_mb, process_tree

ROOT = Path(__file__).resolve().parent.parent


def measure(args: list[str], output: Path) -> dict:
    command = [sys.executable, str(ROOT / "manage.py"), "export", "wacz", "-o", str(output), "--no-progress", *args]
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peaks: dict[int, float] = {}
    while process.poll() is None:
        for pid in process_tree(process.pid):
            peaks[pid] = max(peaks.get(pid, 0.0), peak_rss_mb(pid))
        time.sleep(0.05)
    wall = time.monotonic() - started
    out, err = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"export wacz {' '.join(args)} failed:\n{err}")
    command_mb = peaks.pop(process.pid, 0.0)
    return {"selection": " ".join(args) or "whole crawl", "seconds": round(wall, 2),
            "command_peak_rss_mb": command_mb, "creator_peak_rss_mb": max(peaks.values(), default=0.0),
            "package_mb": round(output.stat().st_size / 1e6, 1), "summary": err.strip().splitlines()[-1]}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.wacz_cost", description=__doc__.split("\n\n")[0])
    for option in ("--host", "--since", "--until", "--scope"):
        parser.add_argument(option, action="append", default=[], help=f"also package with {option} (repeatable)")
    parser.add_argument("--keep", help="write the packages into this directory (default: a temporary one, removed)")
    options = parser.parse_args()
    runs = [[]] + [[f"--{name}", value] for name in ("host", "since", "until", "scope")
                   for value in getattr(options, name)]
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(options.keep or scratch)
        directory.mkdir(parents=True, exist_ok=True)
        for n, args in enumerate(runs):
            print(json.dumps(measure(args, directory / f"package-{n}.wacz")), flush=True)


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")
    main()
