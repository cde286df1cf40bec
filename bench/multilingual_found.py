"""Is every page findable in its own script? Pages of Debian's translations stored through
the page pipeline's own functions (parse, language, analysis, store) into the database of
DATABASE_URL (which it empties first), then, for each page, a string only it has searched
for: three characters of a Chinese, Japanese, Korean or Thai run, a word (5+ letters) of the
others. Prints, by script, how many pages came back in the top 10, and whose language was
identified as labelled.

    DATABASE_URL=... python -m bench.multilingual_found DIR     (DIR: as for bench.langid_eval)

Pages: debian-reference chapters and debian-faq pages (their whole text, up to 20,000
characters) and groups of 12 translated messages of apt, coreutils, grep, sed, tar (for the
scripts the manuals lack: Thai, Greek, Arabic, Cyrillic, Hebrew, Georgian, Devanagari ...).
"""

import os
import random
import re
import sys
import time
import unicodedata
from collections import defaultdict
from pathlib import Path

import django

_WORD = re.compile(r"[^\W\d_]{5,}")


def script_of(text: str) -> str:
    counts = defaultdict(int)
    for char in text[:2000]:
        if char.isalpha():
            name = unicodedata.name(char, "")
            script = name.split(" ")[0]
            if script in ("CJK", "HIRAGANA", "KATAKANA"):
                script = "Chinese/Japanese"
            elif script == "HANGUL":
                script = "Korean"
            counts[script] += 1
    return max(counts, key=counts.get) if counts else "?"


def main(argv):
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")
    django.setup()
    from django.core.management import call_command
    from django.utils.html import escape

    from frontier.models import Host, Url
    from indexer import service
    try:
        from indexer.analyzer import NO_SPACE_RUN
        from indexer.analyzer import _matches as iter_group_spans_raw
    except ImportError:  # the analyzer before issue 53 (the "before" figures): \w runs only
        from indexer.analyzer import _GROUP
        NO_SPACE_RUN = re.compile("[\u0e00-\u0e7f\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf"
                                  "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")

        def iter_group_spans_raw(text):
            return ((m.start(), m.end(), m.group()) for m in _GROUP.finditer(text))
    from indexer.backends import get_search_backend
    from indexer.models import Document

    sys.path.insert(0, str(Path(__file__).parent))
    import langid_eval

    root = Path(argv[1])
    langid_eval.PREFIX = 20_000
    pages = langid_eval.page_samples(root)
    rng = random.Random(1)
    for lang, messages in sorted(langid_eval.catalogue_messages(root).items()):
        if lang in {p[0] for p in pages} or len(messages) < 24:
            continue
        rng.shuffle(messages)
        pages += [(lang, " ".join(messages[i:i + 12])) for i in (0, 12)]
    call_command("migrate", verbosity=0)
    call_command("flush", interactive=False, verbosity=0)
    get_search_backend().clear()
    host = Host.objects.create(origin="http://found.test")
    prepared = []
    for n, (lang, text) in enumerate(pages):
        url = Url.objects.create(url_key=n + 1, url=f"http://found.test/{n}", host=host)
        body = f"<html><head><title>Page {n}</title></head><body><p>{escape(text)}</p></body></html>".encode()
        page = service.prepare_page(url.id, url.url, 200, "text/html", "utf-8", body)
        service.prepare_index(page)
        prepared.append(page)
    for start in range(0, len(prepared), 50):
        service.store_pages(prepared[start:start + 50])
    languages = dict(Document.objects.values_list("page_url", "language"))
    lowered = [text.lower() for _, text in pages]
    table = defaultdict(lambda: [0, 0, 0, 0])  # pages, with a unique string, found, language right
    latencies = []
    for n, (lang, text) in enumerate(pages):
        row = table[script_of(text)]
        row[0] += 1
        row[3] += languages[f"http://found.test/{n}"] == lang
        candidates = [run[i:i + 3] for run in NO_SPACE_RUN.findall(text) for i in range(0, len(run) - 2, 7)]
        # a word as the analyzer reads it (a plain group, not a part of "FAQInhaltsverzeichnis16.1")
        candidates += [raw for _, _, raw in iter_group_spans_raw(text) if _WORD.fullmatch(raw)]
        query = next((c for c in candidates[:400] if sum(c.lower() in other for other in lowered) == 1), None)
        if query is None:
            continue
        row[1] += 1
        started = time.perf_counter()
        hits = service.search(query, limit=10)
        latencies.append(time.perf_counter() - started)
        found = f"http://found.test/{n}" in [h.url for h in hits]
        row[2] += found
        if not found and os.environ.get("FOUND_VERBOSE"):
            print(f"not found: {query!r} on page {n} ({lang}, identified {languages[f'http://found.test/{n}']}), "
                  f"{hits.total} hits")
    from django.db import connection
    print(f"\n{connection.vendor}: {len(pages)} pages")
    print("| script | pages | with a string only they have | found in the top 10 | language identified as labelled |")
    print("|---|---:|---:|---:|---:|")
    for script, (n, unique, found, right) in sorted(table.items(), key=lambda kv: -kv[1][0]):
        print(f"| {script} | {n} | {unique} | {found} ({found / max(unique, 1):.0%}) | {right} |")
    latencies.sort()
    print(f"search latency median / p95: {latencies[len(latencies) // 2] * 1e3:.1f} / "
          f"{latencies[int(len(latencies) * 0.95)] * 1e3:.1f} ms")


if __name__ == "__main__":
    main(sys.argv)
