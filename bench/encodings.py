"""Crawl the legacy web (webs/sampleweb/legacy.py) as `manage.py crawl` does by default and
judge what was stored: per script and per declaration, the pages whose stored text is
right (at least 90 % of the expected characters found in order), how each was decoded,
and what decoding and parsing cost per page (issue 53).

    python -m bench.encodings [--languages ru ja ...] [--real DIR] [--cost-only]

It crawls into a fresh SQLite database under var/bench-encodings/ and reads the documents
back through `manage.py export documents`; the cost is measured in this process on the
very bytes the sites serve (CPU time, the best of 5 passes).
"""

import argparse
import difflib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from webs.sampleweb import legacy

ROOT = Path(__file__).resolve().parent.parent
RIGHT = 0.9


def crawl(web, workdir: Path, timeout: float) -> list[dict]:
    db = workdir / "encodings.sqlite3"
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{db}", CRAWLER_ALLOWED_NETWORKS="127.0.0.0/8",
               CRAWLER_WARC_DIR=str(workdir / "warc"), CRAWLER_CRAWL_LOG_FILE=str(workdir / "crawl.jsonl"))
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    subprocess.run([sys.executable, "manage.py", "crawl", "--json", *web.seeds], cwd=ROOT, env=env, check=True,
                   timeout=timeout, stdout=subprocess.DEVNULL)
    out = subprocess.run([sys.executable, "manage.py", "export", "documents", "--no-progress"], cwd=ROOT, env=env,
                         check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def right_share(stored: str, expected: str) -> float:
    """The share of the expected characters found, in order, in the stored text."""
    matcher = difflib.SequenceMatcher(None, stored, expected, autojunk=False)
    return sum(block.size for block in matcher.get_matching_blocks()) / max(1, len(expected))


def cost_per_page(bodies: list[tuple[bytes, str | None, str]]) -> tuple[float, float]:
    """(decoding, parse_html) CPU ms per page, the best of 5 passes over every page."""
    from indexer.parse import parse_html
    try:
        from indexer import decoding

        def decode(body, charset, url):
            chosen = decoding.choose(body, charset, tld="")
            return chosen.decode(body)
    except ImportError:  # the code before issue 53
        from indexer.parse import choose_encoding

        def decode(body, charset, url):
            return body.decode(choose_encoding(body, charset), errors="replace")

    def best(function) -> float:
        times = []
        for _ in range(5):
            started = time.process_time()
            for body, charset, url in bodies:
                function(body, charset, url)
            times.append(time.process_time() - started)
        return min(times) * 1000 / len(bodies)

    return best(decode), best(lambda body, charset, url: parse_html(body, url, charset))


def print_cost(languages, real: str = "") -> None:
    """The cost table: per declaration, CPU ms per page of decoding and of parse_html; with
    `real`, a directory of real UTF-8 HTML pages (each with its <meta charset>), those too,
    served with and without the charset in HTTP (the typical page of today's web)."""
    groups = defaultdict(list)
    for path in sorted(Path(real).glob("*.html")) if real else ():
        body = path.read_bytes()
        groups["real UTF-8, meta"].append((body, None, f"http://real.test/{path.name}"))
        groups["real UTF-8, http + meta"].append((body, "utf-8", f"http://real.test/{path.name}"))
    for language in languages:
        for path in legacy.paths(language):
            body, content_type = legacy.render(language, path)
            groups[legacy.case_of(path)[1]].append((body, content_type.partition("charset=")[2] or None,
                                                    f"http://{language}.test{path}"))
    print("| declaration | pages | mean bytes | decoding ms/page | parse_html ms/page (decoding included) |\n"
          "|---|---|---|---|---|")
    for declaration, bodies in sorted(groups.items()):
        decode_ms, parse_ms = cost_per_page(bodies)
        print(f"| {declaration} | {len(bodies)} | {sum(len(b) for b, _, _ in bodies) // len(bodies)} | "
              f"{decode_ms:.3f} | {parse_ms:.3f} |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--languages", nargs="*", default=list(legacy.LANGUAGES))
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--cost-only", action="store_true", help="only the cost per page (no crawl)")
    parser.add_argument("--real", default="", help="a directory of real UTF-8 HTML pages to cost too")
    args = parser.parse_args(argv)
    if args.cost_only:
        print_cost(args.languages, args.real)
        return 0
    (ROOT / "var").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=ROOT / "var", prefix="bench-encodings-") as tmp, \
            legacy.legacy_web(languages=args.languages) as web:
        started = time.monotonic()
        documents = {d["url"]: d for d in crawl(web, Path(tmp), args.timeout)}
        elapsed = time.monotonic() - started
        pages = web.pages()
        by_script, by_declaration, sources, wrong = defaultdict(Counter), defaultdict(Counter), Counter(), []
        for language, url, path in pages:
            encoding, declaration, n = legacy.case_of(path)
            document = documents.get(url)
            ok = document is not None and right_share(document["text"], legacy.expected_text(language, n)) >= RIGHT
            script = legacy.LANGUAGES[language][0]
            for table, key in ((by_script, script), (by_declaration, declaration)):
                table[key]["pages"] += 1
                table[key]["right"] += ok
            if document is not None:
                sources[(document.get("encoding_source") or "?", declaration)] += 1
            if not ok:
                wrong.append(f"{language} {encoding}/{declaration}/{n}: "
                             f"{document.get('encoding', '?') if document else 'not stored'}")
    total = sum(c["right"] for c in by_script.values())
    print(f"{len(pages)} pages on {len(web.base)} sites, crawled in {elapsed:.1f} s; stored text right "
          f"(>= {RIGHT:.0%} of its characters): {total}/{len(pages)} ({100 * total / len(pages):.1f} %)\n")
    for title, table in (("script", by_script), ("declaration", by_declaration)):
        print(f"| {title} | pages | stored text right |\n|---|---|---|")
        for key, counts in sorted(table.items()):
            share = 100 * counts["right"] / counts["pages"]
            print(f"| {key} | {counts['pages']} | {counts['right']} ({share:.0f} %) |")
        print()
    print("how pages were decoded (encoding_source, declaration): "
          + ", ".join(f"{s}/{d} {n}" for (s, d), n in sorted(sources.items())))
    print()
    print_cost(args.languages, args.real)
    if wrong:
        print(f"\nwrong ({len(wrong)}): " + "; ".join(wrong[:40]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
