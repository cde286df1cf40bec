"""Our search, timed, inside a Django process on one crawled database; and that database's
indexed documents exported for the baselines.

A subprocess per backend, because Django reads DATABASE_URL once at start-up: the
orchestrator (bench/searcheval/__main__.py) sets it and runs

    python -m bench.searcheval.oursearch --queries QUERIES.json --out RANKINGS.json [--export DOCS.jsonl]

QUERIES.json: a JSON list of query strings. RANKINGS.json: {"urls": [[url, ...] per query],
"seconds": [per query], "documents": indexed documents}. Each query is
indexer.service.search(query, limit=10), iterated (whatever object it returns), its hits'
URLs kept; timed per call after a warm-up pass (metrics.run_queries).

DOCS.jsonl: one {"address", "title", "headings", "body"} per indexed document
(indexer.Document with indexed=True), in id order: the same text the baselines index.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

LIMIT = 10


def search_urls(query: str, limit: int = LIMIT) -> list[str]:
    from indexer import service

    return [hit.url for hit in service.search(query, limit=limit)]


def export_documents(path: Path) -> int:
    """Write the indexed documents as JSONL; how many."""
    from indexer.models import Document

    rows = (Document.objects.filter(indexed=True).order_by("id")
            .values_list("page_url", "title", "headings", "body").iterator(chunk_size=200))
    count = 0
    with open(path, "w", encoding="utf-8") as out:
        for address, title, headings, body in rows:
            out.write(json.dumps({"address": address, "title": title, "headings": headings, "body": body},
                                 ensure_ascii=False) + "\n")
            count += 1
    return count


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.searcheval.oursearch")
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--export", type=Path, default=None)
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")
    import django

    django.setup()
    from indexer.models import Document

    from .metrics import Query, run_queries

    texts = json.loads(args.queries.read_text())
    outcomes = run_queries([Query(text, "") for text in texts], search_urls)
    result = {"urls": [list(o.urls) for o in outcomes], "seconds": [o.seconds for o in outcomes],
              "documents": Document.objects.filter(indexed=True).count()}
    if args.export is not None:
        result["exported"] = export_documents(args.export)
    args.out.write_text(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
