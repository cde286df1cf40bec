"""Does a page's furniture still move its ranking? WCXB's pages indexed on each backend, twice:
with the whole visible text indexed (as before issue 54) and with the main text only (now).

    nice -n 10 python -m bench.mainrank [--backend sqlite|postgres|both] [--corpus DIR]

Two checks, on the same index:

* phrase: six words from the middle of one of the page's `with` snippets (human-chosen
  main content), typed as words (no quotes, as people search) and in quotes: is the page
  in the top 3?
* furniture words: a word that one page has only in its furniture (menus, footers, banners
  as the extractor marks them, which the ground truth's main content confirms by not having
  it) and another page has in its main content (as the ground truth says): does a
  furniture-only page rank above every page whose main content has it? Lower is better.

Each (backend, mode) gets a fresh database (bench/searcheval/crawl.py's fresh_database under
var/mainrank/); the pages are stored through indexer.service as a crawl stores them.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from bench.maincontent import DEFAULT_CORPUS, load, tokens

ROOT = Path(__file__).resolve().parents[1]
MODES = ("whole", "main")
PHRASE_WORDS = 6
MAX_FURNITURE_QUERIES = 300


def phrase_of(page: dict) -> str | None:
    """Six words as the snippet writes them (split at spaces, punctuation at their ends
    dropped: "we're" stays one word, as the analyzer reads it in the page)."""
    for snippet in page["with"]:
        words = [w.strip(".,;:!?\"'()[]{}«»“”‘’") for w in snippet.split()]
        words = [w for w in words if any(c.isalnum() for c in w)]
        if len(words) >= PHRASE_WORDS:
            start = (len(words) - PHRASE_WORDS) // 2
            return " ".join(words[start:start + PHRASE_WORDS])
    return None


def child(mode: str, corpus: Path) -> dict:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")
    import django

    django.setup()
    from frontier.models import Host, Url
    from indexer import service
    from indexer.maincontent import main_text

    pages = load(corpus)
    stored = {}  # address -> (page, main tokens by the extractor, furniture-only tokens)
    for n, page in enumerate(pages, start=1):
        address = page["url"] or f"http://wcxb.test/{page['id']}"
        if address in stored:
            address = f"{address}#{page['id']}"
        host, _ = Host.objects.get_or_create(origin="/".join(address.split("/")[:3]))
        url = Url.objects.create(url_key=n, url=address, host=host)
        prepared = service.prepare_page(url.id, address, 200, "text/html", "utf-8", page["html"])
        if prepared.parsed is None:
            continue
        main = main_text(prepared.parsed.text, prepared.parsed.boilerplate)
        furniture_only = set(tokens(prepared.parsed.text)) - set(tokens(main)) - set(tokens(page["main"]))
        if mode == "whole":
            prepared.parsed.boilerplate = []  # the whole text indexed, as before
        service.prepare_index(prepared)
        service.store_pages([prepared])
        stored[address] = (page, set(tokens(page["main"])), furniture_only)

    found = quoted = asked = 0
    for address, (page, _, _) in stored.items():
        phrase = phrase_of(page)
        if phrase is None:
            continue
        asked += 1
        found += address in [hit.url for hit in service.search(phrase, limit=3)]
        quoted += address in [hit.url for hit in service.search(f'"{phrase}"', limit=3)]

    # Words with a page that has them only in its furniture and one whose main content has them.
    holders: dict = {}
    for address, (_, in_main, furniture_only) in stored.items():
        for word in in_main:
            holders.setdefault(word, [set(), set()])[0].add(address)
        for word in furniture_only:
            holders.setdefault(word, [set(), set()])[1].add(address)
    words = sorted(w for w, (m, f) in holders.items() if m and f and len(m) + len(f) <= 20 and len(w) >= 4
                   and not w.isdigit())
    words = words[:: max(1, len(words) // MAX_FURNITURE_QUERIES)][:MAX_FURNITURE_QUERIES]
    lifted = 0
    for word in words:
        in_main, furniture = holders[word]
        ranked = [hit.url for hit in service.search(word, limit=40)]
        first_main = next((i for i, a in enumerate(ranked) if a in in_main), len(ranked))
        lifted += any(a in furniture for a in ranked[:first_main])
    return {"phrase_top3": found / asked if asked else 0.0, "phrases": asked,
            "quoted_top3": quoted / asked if asked else 0.0,
            "furniture_lifted": lifted / len(words) if words else 0.0, "furniture_words": len(words)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.corpus)))
        return
    from bench.searcheval.crawl import child_env, fresh_database

    backends = ("sqlite", "postgres") if args.backend == "both" else (args.backend,)
    print(f"{'backend':9} {'indexed':7} {'phrase in top 3':>16} {'quoted':>7} {'furniture word lifts a page':>28}")
    for backend in backends:
        for mode in MODES:
            url = fresh_database(backend, ROOT / "var" / "mainrank" / f"{backend}-{mode}")
            command = [sys.executable, "-m", "bench.mainrank", "--child", mode, "--corpus", str(args.corpus)]
            out = subprocess.run(command, cwd=ROOT, env=child_env(url), check=True, capture_output=True,
                                 text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            print(f"{backend:9} {mode:7} {r['phrase_top3']:10.1%} of {r['phrases']:3} {r['quoted_top3']:7.1%} "
                  f"{r['furniture_lifted']:16.1%} of {r['furniture_words']:3} words", flush=True)


if __name__ == "__main__":
    main()
