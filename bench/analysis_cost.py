"""CPU per page of the analysis before and after issue 53, side by side in one process:
language identification (indexer/language.py) and the analyzer's tokens of title, headings
and body (indexer/analyzer.py as of a git revision, and as it is now).

    python -m bench.analysis_cost DOCS.jsonl [--debian DIR] [--before REV] [--pages N]

DOCS.jsonl: documents as bench.searcheval exports them (var/searcheval/docs-sqlite.jsonl:
English documentation pages); --debian: Debian packages extracted with dpkg-deb -x (as for
bench/langid_eval.py): their debian-reference and FAQ translations are the other pages.
Each analyzer runs twice over the pages: a cold pass (empty caches: a process's first
pages) and a warm one (the chunk cache full of the site's words: a crawl's steady state).
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import django


def load_revision(rev: str):
    """indexer/analyzer.py as of a git revision, as a module of its own."""
    source = subprocess.run(["git", "show", f"{rev}:indexer/analyzer.py"], capture_output=True, text=True,
                            check=True).stdout
    spec = importlib.util.spec_from_loader(f"analyzer_{rev}", loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, f"analyzer@{rev}", "exec"), module.__dict__)
    return module


def cpu_per_page(function, pages) -> float:
    started = time.process_time()
    for page in pages:
        function(page)
    return (time.process_time() - started) / len(pages) * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("docs", type=Path)
    parser.add_argument("--debian", type=Path)
    parser.add_argument("--before", default="5e771a8")
    parser.add_argument("--pages", type=int, default=600)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")
    django.setup()
    from indexer import analyzer
    from indexer.language import identify

    english = []
    with args.docs.open() as f:
        for line in f:
            doc = json.loads(line)
            english.append(("en", doc["title"], doc["headings"], doc["body"]))
            if len(english) >= args.pages:
                break
    sets = [("English documentation (searcheval)", english)]
    if args.debian:
        sys.path.insert(0, str(Path(__file__).parent))
        import langid_eval
        langid_eval.PREFIX = 10 ** 9
        others = [(lang, "", "", text) for lang, text in langid_eval.page_samples(args.debian)]
        sets.append(("Debian reference + FAQ, 12 languages", others))
        sets.append(("  of them Chinese + Japanese + Korean", [p for p in others if p[0] in ("zh", "ja", "ko")]))
    old = load_revision(args.before)
    print("| pages | n | chars/page | language ID ms | analyzer before cold / warm ms | after cold / warm ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, pages in sets:
        chars = sum(len(p[3]) for p in pages) / len(pages)
        langid = cpu_per_page(lambda p: identify(f"{p[1]}. {p[3]}"), pages)
        languages = {id(p): identify(f"{p[1]}. {p[3]}") for p in pages}

        def before(p):
            old.tokens(p[1]), old.tokens(p[2]), old.tokens(p[3])

        def after(p):
            language = languages[id(p)]
            analyzer.tokens(p[1], language), analyzer.tokens(p[2], language), analyzer.tokens(p[3], language)
        figures = []
        for module, function in ((old, before), (analyzer, after)):
            if module is old:
                module._chunk_tokens = module._ChunkTokens()
            else:
                module._chunk_caches.clear()
            figures.append((cpu_per_page(function, pages), cpu_per_page(function, pages)))
        (b_cold, b_warm), (a_cold, a_warm) = figures
        print(f"| {name} | {len(pages)} | {chars:.0f} | {langid:.3f} | {b_cold:.2f} / {b_warm:.2f} | "
              f"{a_cold:.2f} / {a_warm:.2f} |", flush=True)


if __name__ == "__main__":
    main()
