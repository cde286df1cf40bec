"""Main-content extractors side by side on real pages with a human-reviewed main content.

    nice -n 10 python -m bench.maincontent [--corpus DIR] [--only NAME,...] [--by-type] [--folds]

The corpus is WCXB's layout (../shared/corpora/wcxb-dev: html/ID.html.gz, ground-truth/ID.json).
Scores as WCXB does: a bag-of-words F1 of lower-cased \\w+ tokens of the extracted text
against those of the main content (precision = shared tokens / extracted tokens, recall =
shared / reference tokens, a token shared as often as both have it), averaged over pages;
beside it the share of the `with` snippets (main content) found in the extraction and of
the `without` snippets (boilerplate) found (lower is better), a snippet being found when its
token sequence occurs in the extraction's. Title: the share of pages whose title (as each
rule reads it) equals the ground truth's, compared on their tokens.

CPU ms/page is this process's CPU time for the extraction alone, the best of --repeat passes
over every page (the machine is shared: the best pass is the least disturbed one). The
libraries parse the HTML themselves, so their figure includes a parse; ours reads the lxml
tree the crawler parses anyway: "ours" rows show parse_html's whole cost and, in the last
column, what main content added to it (against parse_html with it switched off).

The libraries (trafilatura, resiliparse, readability-lxml, justext) are bench-only
dependencies: bench/maincontent-requirements.txt.
"""

import argparse
import gzip
import json
import os
import re
import time
from collections import Counter, defaultdict
from pathlib import Path

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "wcxb-dev"
_TOKEN = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def load(corpus: Path) -> list[dict]:
    pages = []
    for truth_file in sorted((corpus / "ground-truth").glob("*.json")):
        record = json.loads(truth_file.read_text())
        html = gzip.decompress((corpus / "html" / f"{truth_file.stem}.html.gz").read_bytes())
        truth = record["ground_truth"]
        pages.append({"id": truth_file.stem, "url": record["url"], "html": html,
                      "type": record["_internal"]["page_type"]["primary"], "title": truth.get("title") or "",
                      "main": truth.get("main_content") or "", "with": truth.get("with") or [],
                      "without": truth.get("without") or []})
    return pages


def score(extracted: str, page: dict) -> dict:
    got, want = Counter(tokens(extracted)), Counter(tokens(page["main"]))
    shared = sum((got & want).values())
    precision = shared / sum(got.values()) if got else 0.0
    recall = shared / sum(want.values()) if want else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    flat = " " + " ".join(tokens(extracted)) + " "

    def found(snippet):
        wanted = " ".join(tokens(snippet))
        return bool(wanted) and f" {wanted} " in flat

    with_found = [found(s) for s in page["with"]]
    without_found = [found(s) for s in page["without"]]
    return {"f1": f1, "p": precision, "r": recall, "with": with_found, "without": without_found}


# -- the extractors: html bytes -> main text ---------------------------------------------

def _trafilatura():
    import trafilatura

    return lambda page: trafilatura.extract(page["html"].decode("utf-8", "replace"), url=page["url"],
                                            include_comments=False, include_tables=True) or ""


def _resiliparse():
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    return lambda page: extract_plain_text(HTMLTree.parse(page["html"].decode("utf-8", "replace")),
                                           main_content=True)


def _readability():
    from lxml import html as lxml_html
    from readability import Document

    def run(page):
        summary = Document(page["html"].decode("utf-8", "replace")).summary(html_partial=True)
        return lxml_html.fromstring(summary).text_content() if summary.strip() else ""
    return run


def _justext():
    import justext

    stoplist = justext.get_stoplist("English")
    return lambda page: "\n".join(p.text for p in justext.justext(page["html"], stoplist, encoding="utf-8")
                                  if not p.is_boilerplate)


def _ours_body():
    from indexer.parse import parse_html

    return lambda page: parse_html(page["html"], page["url"], "utf-8").text


def _ours_stored():
    """What the crawler indexes as the page's main text: the body without its boilerplate ranges."""
    from indexer.maincontent import main_text
    from indexer.parse import parse_html

    def run(page):
        parsed = parse_html(page["html"], page["url"], "utf-8")
        return main_text(parsed.text, parsed.boilerplate)
    return run


EXTRACTORS = {
    "trafilatura": _trafilatura, "resiliparse": _resiliparse, "readability": _readability, "justext": _justext,
    "ours:body": _ours_body, "ours:main": _ours_stored,
}


def _parse_only():
    """parse_html with main content off: the cost every "ours" row is compared to."""
    from indexer import parse

    def run(page):
        return parse.parse_html(page["html"], page["url"], "utf-8", main_content=False).text
    try:
        run(_SAMPLE_PAGE)
    except TypeError:  # a parse_html from before main content (a before/after run)
        return lambda page: parse.parse_html(page["html"], page["url"], "utf-8").text
    return run


_SAMPLE_PAGE = {"html": b"<p>x", "url": "http://x.test/"}


def timed_pass(extract, pages) -> tuple[list[str], float]:
    out = []
    started = time.process_time()
    for page in pages:
        out.append(extract(page))
    return out, time.process_time() - started


def measure(name, extract, pages, repeat):
    texts, best = None, None
    for _ in range(repeat):
        texts, seconds = timed_pass(extract, pages)
        best = seconds if best is None else min(best, seconds)
    return texts, best * 1000 / len(pages)


def summary_row(scores: list[dict]) -> dict:
    n = len(scores) or 1
    with_all = [f for s in scores for f in s["with"]]
    without_all = [f for s in scores for f in s["without"]]
    return {"f1": sum(s["f1"] for s in scores) / n, "p": sum(s["p"] for s in scores) / n,
            "r": sum(s["r"] for s in scores) / n,
            "with": sum(with_all) / len(with_all) if with_all else 0.0,
            "without": sum(without_all) / len(without_all) if without_all else 0.0}


def title_candidates(page: dict) -> dict:
    """The titles a page offers (<title>, og:title, first <h1>) and the one parse_html chose."""
    from lxml import etree

    from indexer import parse

    doc = etree.fromstring(page["html"], parse._parser("utf-8"))
    title = doc.find(".//title")
    og = next((el.get("content") or "" for el in doc.iter("meta")
               if (el.get("property") or "").strip().lower() == "og:title"), "")
    h1 = doc.find(".//h1")
    return {"<title>": parse._text(title) if title is not None else "", "og:title": og,
            "first <h1>": parse._text(h1) if h1 is not None else "",
            "ours": parse.parse_html(page["html"], page["url"], "utf-8").title}


def title_table(pages: list[dict]) -> None:
    judged = [p for p in pages if tokens(p["title"])]
    exact, f1 = Counter(), Counter()
    for page in judged:
        want = Counter(tokens(page["title"]))
        for name, title in title_candidates(page).items():
            got = Counter(tokens(title))
            exact[name] += got == want
            shared = sum((got & want).values())
            if shared:
                precision, recall = shared / sum(got.values()), shared / sum(want.values())
                f1[name] += 2 * precision * recall / (precision + recall)
    print(f"\ntitles against the ground truth's ({len(judged)} pages): same words / word F1")
    for name in exact:
        print(f"{name:16} {exact[name] / len(judged):6.1%} {f1[name] / len(judged):6.3f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--only", default="", help="comma-separated extractor names (default: all)")
    parser.add_argument("--repeat", type=int, default=2, help="timed passes per extractor (the best is shown)")
    parser.add_argument("--by-type", action="store_true", help="F1 by page type too")
    parser.add_argument("--folds", action="store_true", help="F1 on the two halves (odd/even page ids)")
    parser.add_argument("--worst", type=int, default=0, help="list the N worst pages of the last extractor")
    parser.add_argument("--titles", action="store_true", help="the title rules against the ground truth's titles")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")
    import django

    django.setup()
    pages = load(args.corpus)
    names = [n for n in (args.only.split(",") if args.only else EXTRACTORS) if n]
    parse_ms = None
    if any(n.startswith("ours") for n in names):
        _, parse_ms = measure("parse", _parse_only(), pages, args.repeat)
    print(f"{len(pages)} pages from {args.corpus}; CPU ms/page: best of {args.repeat} passes")
    header = (f"{'extractor':16} {'F1':>6} {'prec':>6} {'recall':>6} {'with':>6} {'w/out':>6} {'ms/page':>8} "
              f"{'+main':>7}")
    print(header)
    results = {}
    for name in names:
        texts, ms = measure(name, EXTRACTORS[name](), pages, args.repeat)
        scores = [score(text, page) for text, page in zip(texts, pages)]
        results[name] = scores
        row = summary_row(scores)
        extra = f"{ms - parse_ms:7.2f}" if name.startswith("ours") and parse_ms is not None else ""
        print(f"{name:16} {row['f1']:6.3f} {row['p']:6.3f} {row['r']:6.3f} {row['with']:6.1%} {row['without']:6.1%} "
              f"{ms:8.2f} {extra}")
    if parse_ms is not None:
        print(f"(parse_html with main content off: {parse_ms:.2f} ms/page)")
    if args.by_type:
        types = sorted({p["type"] for p in pages})
        print("\nF1 by page type: " + " ".join(f"{t[:9]:>9}" for t in types))
        counts = Counter(p["type"] for p in pages)
        print(f"{'(pages)':16} " + " ".join(f"{counts[t]:>9}" for t in types))
        for name, scores in results.items():
            by = defaultdict(list)
            for s, p in zip(scores, pages):
                by[p["type"]].append(s)
            print(f"{name:16} " + " ".join(f"{summary_row(by[t])['f1']:9.3f}" for t in types))
    if args.folds:
        print("\nF1 by fold (page id odd / even)")
        for name, scores in results.items():
            halves = [[s for s, p in zip(scores, pages) if int(p["id"]) % 2 == k] for k in (1, 0)]
            print(f"{name:16} " + " ".join(f"{summary_row(h)['f1']:6.3f}" for h in halves))
    if args.titles:
        title_table(pages)
    if args.worst and results:
        name = names[-1]
        ranked = sorted(zip(results[name], pages), key=lambda sp: sp[0]["f1"])[: args.worst]
        print(f"\nworst pages of {name}")
        for s, p in ranked:
            print(f"  {p['id']} {p['type']:13} F1 {s['f1']:.2f} P {s['p']:.2f} R {s['r']:.2f} {p['url'][:70]}")


if __name__ == "__main__":
    main()
