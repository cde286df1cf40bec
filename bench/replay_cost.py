"""What the archive's replay costs (`manage.py replay`, archive/replay.py): building the
collection's index, and pywb's time to first byte for a replayed page.

    python -m bench.replay_cost [--warc-dir DIR] [--copies N] [--requests N]

On the WARC files of DIR (default CRAWLER_WARC_DIR; `make demo` leaves a sample-web crawl in
var/warc), in a scratch directory: the sidecars made by reading the files (cdxj.rebuild,
what an old file costs once), the merge of the sidecars into the sorted index with the
revisits resolved (what every refresh that found new records costs), the same merge for an
archive N times as large (the sidecars copied under other names and times), then pywb from
.venv-replay on a free port: the time to first byte of N requests for captures drawn from
the index, framed (the top page), rewritten (mp_, the page in the frame) and as archived
(id_). Best and median of each; the WARC files are only read.
"""

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import tempfile
import time
from pathlib import Path
from urllib.request import urlopen

import django


def timed(action, runs: int):
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - started)
    return min(times), statistics.median(times), result


def copy_sidecars(sidecars: list[Path], into: Path, copies: int) -> list[Path]:
    """The sidecars `copies` times over, each copy under its own file name and 1,000 s later."""
    made = []
    for n in range(copies):
        for sidecar in sidecars:
            target = into / f"{sidecar.stem}-copy{n:04d}.cdxj"
            with open(sidecar, encoding="ascii") as lines, open(target, "w", encoding="ascii") as out:
                for line in lines:
                    key, timestamp, fields = line.split(" ", 2)
                    out.write(f"{key} {int(timestamp) + n * 1000} {fields}")
            made.append(target)
    return made


def first_byte(url: str) -> float:
    started = time.perf_counter()
    with urlopen(url, timeout=30) as answer:
        answer.read(1)
        elapsed = time.perf_counter() - started
        answer.read()
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warc-dir", help="the archive (default CRAWLER_WARC_DIR)")
    parser.add_argument("--copies", type=int, default=400, help="the large archive: this many copies of the sidecars")
    parser.add_argument("--requests", type=int, default=50, help="requests per replay mode")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")
    django.setup()
    from django.conf import settings

    from archive import cdxj, replay

    warc_dir = Path(args.warc_dir or settings.CRAWLER_WARC_DIR)
    files = cdxj.warc_files(warc_dir)
    if not files:
        raise SystemExit(f"no WARC files in {warc_dir}: crawl something first (make demo)")
    figures = {"warc_files": len(files), "warc_bytes": sum(p.stat().st_size for p in files)}
    scratch = Path(tempfile.mkdtemp(prefix="replay-cost-"))
    try:
        archive = scratch / "warc"  # the files linked, so that the sidecars made here stay here
        archive.mkdir()
        for path in files:
            (archive / path.name).symlink_to(path.resolve())
        copies = sorted(archive.glob("*" + cdxj.WARC_SUFFIX))

        def rebuild_all():
            for sidecar in cdxj.sidecars(archive):
                sidecar.unlink()
            return sum(cdxj.rebuild(path) for path in copies)

        best, median, records = timed(rebuild_all, 3)
        figures["rebuild"] = {"records": records, "best_s": best, "median_s": median,
                              "ms_per_1000": median / records * 1e6}
        collection = replay.Collection(scratch / "replay", "crawl")
        collection.create()
        replay.link_archive(collection, archive)
        best, median, stats = timed(lambda: replay.write_index(cdxj.sidecars(archive), collection.index), 9)
        figures["merge"] = {"lines": stats.lines, "revisits": stats.revisits, "best_s": best, "median_s": median,
                            "ms_per_1000": median / max(stats.lines, 1) * 1e6}
        big = scratch / "big"
        big.mkdir()
        sidecars = copy_sidecars(cdxj.sidecars(archive), big, args.copies)
        best, median, big_stats = timed(lambda: replay.write_index(sidecars, scratch / "big.cdxj"), 3)
        figures["merge_large"] = {"lines": big_stats.lines, "sidecars": len(sidecars), "best_s": best,
                                  "median_s": median, "ms_per_1000": median / big_stats.lines * 1e6,
                                  "index_bytes": (scratch / "big.cdxj").stat().st_size}
        best, median, plain = timed(lambda: cdxj.write_sorted(sidecars, scratch / "plain.cdxj"), 3)
        figures["write_sorted_large"] = {"lines": plain, "median_s": median, "ms_per_1000": median / plain * 1e6}
        figures["ttfb_ms"] = replay_ttfb(replay, collection, args.requests)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(json.dumps(figures, indent=2))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def replay_ttfb(replay, collection, requests: int) -> dict:
    captures = []
    with open(collection.index, encoding="ascii") as index:
        for line in index:
            _key, timestamp, fields = line.split(" ", 2)
            fields = json.loads(fields)
            if fields["mime"] == "text/html" and fields["status"] == "200":
                captures.append((timestamp, fields["url"]))
    port = free_port()
    log = collection.root / "wayback.log"
    process = replay.start(collection.root, port, log)
    try:
        replay.wait_until_serving(process, port, log)
        base = f"http://127.0.0.1:{port}/{collection.name}"
        first_byte(f"{base}/{captures[0][0]}mp_/{captures[0][1]}")  # pywb loads its templates on the first
        draw = random.Random(1)
        found = {}
        for mode in ("", "mp_", "id_"):
            times = [first_byte(f"{base}/{timestamp}{mode}/{url}")
                     for timestamp, url in (draw.choice(captures) for _ in range(requests))]
            found[mode or "framed"] = {"best": min(times) * 1000, "median": statistics.median(times) * 1000,
                                       "max": max(times) * 1000}
        return found
    finally:
        replay.stop(process)


if __name__ == "__main__":
    main()
