"""What the archive's CDXJ index costs per record, two ways (issue 26): the line the writer
appends beside each record (archive/cdxj.py: a SURT key and a JSON object from what the
writer already knows) against webrecorder's cdxj-indexer reading the finished file (which
decompresses and parses every record again). Process CPU time, on the WARC files of a
directory (by default the demo crawl's, var/warc: run `make demo` first).

    python -m bench.cdxj_cost [--dir var/warc] [--repeat 5]
"""

import argparse
import os
import time
from io import StringIO
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default="var/warc")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from cdxj_indexer.main import CDXJIndexer
    from warcio.archiveiterator import ArchiveIterator

    from archive import cdxj

    files = cdxj.warc_files(Path(args.dir))
    if not files:
        raise SystemExit(f"no WARC files in {args.dir}: run `make demo` first")
    size = sum(p.stat().st_size for p in files)

    # What the writer knows when it appends a record (gathered untimed).
    known = []
    for path in files:
        with open(path, "rb") as f:
            iterator = ArchiveIterator(f)
            for rec in iterator:
                if rec.rec_type not in cdxj.INDEXED_TYPES or rec.rec_headers.get_header("Content-Type") == \
                        "application/warc-fields":
                    continue
                rec.content_stream().read()
                h = rec.rec_headers
                known.append((h.get_header("WARC-Target-URI"), h.get_header("WARC-Date"), rec.rec_type,
                              rec.http_headers.get_statuscode(), rec.http_headers.get_header("Content-Type") or "",
                              h.get_header("WARC-Payload-Digest") or "", path.name, iterator.get_record_offset(),
                              iterator.get_record_length()))

    def ours() -> int:
        out = StringIO()
        for url, date, kind, status, ctype, digest, name, offset, length in known:
            out.write(cdxj.entry(url, date, kind, status, ctype, digest).line(name, offset, length))
        return len(out.getvalue())

    def theirs() -> int:
        out = StringIO()
        CDXJIndexer(output=out, inputs=[str(p) for p in files]).process_all()
        return len(out.getvalue())

    print(f"{len(files)} WARC files, {size / 1e6:.1f} MB, {len(known)} indexed records")
    results = {}
    for name, fn in (("written with each record (archive/cdxj.py)", ours), ("cdxj-indexer reading the files", theirs)):
        best = float("inf")
        for _ in range(args.repeat):
            started = time.process_time()
            fn()
            best = min(best, time.process_time() - started)
        results[name] = best / len(known) * 1e6
        print(f"{name:45s} {results[name]:8.1f} µs CPU per record (best of {args.repeat})")
    a, b = results.values()
    print(f"ratio: cdxj-indexer costs {b / a:.1f}x the line written with the record")


if __name__ == "__main__":
    import django

    django.setup()
    main()
