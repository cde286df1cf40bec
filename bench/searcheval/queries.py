"""Index entries -> known-item queries: what a user would type, and the one page it means.

Cleaning, the way a user types an index term: parenthesised qualifiers go ("(built-in
function)", "(django.db.models.Field attribute)", and the "()" after a function name),
whitespace collapses, stray separators at the ends go. Identifiers stay as written:
`os.path.join`, `current_database`, `--settings`, `PL/Perl`.

Dropped, with a count per reason:
- no_words: fewer than 2 letters or digits left ("$ (dollar)", "A (in module re)"): no
  engine can be asked for it;
- ambiguous: the entry, or all entries cleaned to the same query on any site, point to
  more than one distinct page (after "dir/" == "dir/index.html"); a known-item query has
  one right answer;
- missing_page: the target file is not on disk (a link into another package).

Sampling is deterministic (random.Random(seed)) and balanced across sites: each site gets
an equal share of --limit-queries, and a site with fewer candidates leaves its rest to the
others. The set is written to a JSON file beside the corpus, so later runs (and both
backends) are scored on the same queries.
"""
from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from .genindex import IndexEntry

_QUALIFIER = re.compile(r"\s*\([^()]*\)")
_WORD_CHAR = re.compile(r"[^\W_]", re.UNICODE)
_DOTTED = re.compile(r"\w\.\w")
KINDS = ("dotted", "snake_case", "option", "words")


def clean_query(term: str) -> str:
    """The index term as a user would type it (module docstring)."""
    text = " ".join(term.split())
    while True:
        shorter = _QUALIFIER.sub("", text)
        if shorter == text:
            break
        text = shorter
    return " ".join(text.split()).strip(" ,;:")


def query_kind(query: str) -> str:
    """dotted (os.path.join), snake_case (read_text), option (--settings) or words."""
    if query.startswith("-"):
        return "option"
    if _DOTTED.search(query):
        return "dotted"
    if "_" in query.strip("_"):
        return "snake_case"
    return "words"


def page_path(path: str) -> str:
    """A site-relative page path in one form: "dir/index.html" and "dir/" are "dir/"."""
    if path == "index.html":
        return ""
    if path.endswith("/index.html"):
        return path[: -len("index.html")]
    return path


def page_file(path: str) -> str:
    """The file behind a page_path: "dir/" is "dir/index.html"."""
    return path + "index.html" if path == "" or path.endswith("/") else path


@dataclass(frozen=True)
class KnownItem:
    query: str
    site: str  # the package name
    target: str  # the page, relative to the site's root (page_path form)
    kind: str
    entry: str  # the index term it came from


def candidates(site: str, entries: list[IndexEntry], exists=lambda path: True) -> tuple[dict, Counter]:
    """query -> (target page, first entry) for one site, and the drop counts. `exists(path)`
    says whether a page is on disk."""
    pages: dict[str, set] = {}
    first: dict[str, str] = {}
    dropped = Counter()
    for entry in entries:
        query = clean_query(entry.term)
        if len(_WORD_CHAR.findall(query)) < 2:
            dropped["no_words"] += 1
            continue
        pages.setdefault(query, set()).update(page_path(p) for p in entry.pages)
        first.setdefault(query, entry.term)
    found = {}
    for query, targets in pages.items():
        if len(targets) != 1:
            dropped["ambiguous"] += 1
            continue
        (target,) = targets
        if not exists(page_file(target)):
            dropped["missing_page"] += 1
            continue
        found[query] = (target, first[query])
    return found, dropped


def build(sites: dict[str, list[IndexEntry]], limit: int, seed: int = 1, exists=None) -> tuple[list[KnownItem], dict]:
    """Known-item queries over several sites (site name -> its index entries), at most
    `limit`, balanced per site; and a summary of what was kept and dropped. `exists(site,
    path)` says whether a page is on disk (default: all are). A query found on two sites
    is ambiguous on the whole corpus and dropped."""
    per_site, summary = {}, {}
    for site, entries in sites.items():
        found, dropped = candidates(site, entries, (lambda p, s=site: exists(s, p)) if exists else (lambda p: True))
        per_site[site] = found
        summary[site] = {"entries": len(entries), "dropped": dict(dropped)}
    counts = Counter(q for found in per_site.values() for q in found)
    for site, found in per_site.items():
        shared = [q for q in found if counts[q] > 1]
        for query in shared:
            del found[query]
        summary[site]["dropped"]["ambiguous_across_sites"] = len(shared)
        summary[site]["candidates"] = len(found)
    shares = _shares({site: len(found) for site, found in per_site.items()}, limit)
    items = []
    for site in sorted(per_site):
        found = per_site[site]
        chosen = random.Random(f"{seed}:{site}").sample(sorted(found), shares[site])
        for query in sorted(chosen):
            target, term = found[query]
            items.append(KnownItem(query, site, target, query_kind(query), term))
        summary[site]["sampled"] = shares[site]
    return items, summary


def _shares(available: dict[str, int], limit: int) -> dict[str, int]:
    """An equal share of `limit` per site; what a small site cannot use goes to the others."""
    shares, left = {}, limit
    pending = sorted(available, key=lambda site: (available[site], site))
    while pending:
        site = pending.pop(0)
        share = min(available[site], left // (len(pending) + 1))
        shares[site] = share
        left -= share
    return shares


def save(path: Path, items: list[KnownItem], meta: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(meta | {"queries": [asdict(item) for item in items]}, indent=1) + "\n")


def load(path: Path) -> tuple[list[KnownItem], dict]:
    data = json.loads(Path(path).read_text())
    items = [KnownItem(**item) for item in data.pop("queries")]
    return items, data
