"""The baselines, run in their own virtualenv (var/searcheval-venv): tantivy and bm25s over
the documents our crawler indexed, exported as JSONL. Imports only the standard library
and the baseline libraries (bench/searcheval-requirements.txt), never our code.

    python baselines.py --docs DOCS.jsonl --queries QUERIES.json --out OUT.json [--systems tantivy,bm25s]

QUERIES.json: a JSON list of query strings. OUT.json: {system: {"urls": [[url, ...] per
query], "seconds": [per query], "index_seconds": s, "setup": "..."}}; the parent scores
them the same way as ours (bench/searcheval/metrics.py).

- tantivy: fields title (boost 2), headings, body, all with the "en_stem" tokenizer
  (split on non-alphanumerics, lower-case, English Snowball stemmer), in RAM. A query is
  its whitespace-separated pieces, each quoted (so punctuation cannot make a syntax error),
  which is what tantivy's query parser does with a piece its tokenizer splits anyway:
  "os.path.join" and "--no-use-make-mode" become phrases ("os path join"), "read_text" the
  phrase "read text". Searched over the three fields, ALL pieces required
  (conjunction_by_default), with no fallback to any word: the same AND semantics as our
  backends, so "no result" means the same thing in both rows.
- bm25s: BM25 (Lucene variant, k1=1.5, b=0.75) over title + title + body (the title
  prepended twice: bm25s has no fields; the body already holds the headings), tokenized by
  bm25s (\\w\\w+ words, English stopwords removed) and stemmed by PyStemmer's English
  stemmer. Any word may match (that is what BM25 ranks), hits with score 0 are dropped.

Each system is timed per query (wall time of the search and reading the URLs of the top
10; no snippets) in a second pass after a warm-up pass, as ours is.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

K = 10
_WORD = re.compile(r"\w+", re.UNICODE)


def read_documents(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def timed(queries: list[str], search) -> dict:
    """A warm-up pass, then each query timed: {"urls", "seconds"}."""
    for query in queries:
        search(query)
    urls, seconds = [], []
    for query in queries:
        start = time.perf_counter()
        found = search(query)
        seconds.append(time.perf_counter() - start)
        urls.append(found)
    return {"urls": urls, "seconds": seconds}


def run_tantivy(documents: list[dict], queries: list[str]) -> dict:
    import tantivy

    start = time.perf_counter()
    builder = tantivy.SchemaBuilder()
    for name in ("title", "headings", "body"):
        builder.add_text_field(name, stored=False, tokenizer_name="en_stem")
    builder.add_text_field("address", stored=True, tokenizer_name="raw")
    index = tantivy.Index(builder.build())
    writer = index.writer(heap_size=256_000_000, num_threads=1)
    for doc in documents:
        writer.add_document(tantivy.Document(address=doc["address"], title=doc["title"],
                                             headings=doc["headings"], body=doc["body"]))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()
    index_seconds = time.perf_counter() - start

    def search(query: str) -> list[str]:
        pieces = [p.replace('"', " ").replace("\\", " ") for p in query.split()]
        pieces = [p for p in pieces if _WORD.search(p)]
        if not pieces:
            return []
        parsed = index.parse_query(" ".join(f'"{p}"' for p in pieces), ["title", "headings", "body"],
                                   field_boosts={"title": 2.0}, conjunction_by_default=True)
        return [searcher.doc(address)["address"][0] for _, address in searcher.search(parsed, K).hits]

    return timed(queries, search) | {
        "index_seconds": round(index_seconds, 2),
        "setup": "tantivy: title^2, headings, body; en_stem; each piece a phrase, all required, no fallback"}


def run_bm25s(documents: list[dict], queries: list[str]) -> dict:
    import bm25s
    import Stemmer

    start = time.perf_counter()
    stem = Stemmer.Stemmer("english").stemWords
    texts = [f"{doc['title']} {doc['title']} {doc['body']}" for doc in documents]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stem, show_progress=False), show_progress=False)
    addresses = [doc["address"] for doc in documents]
    k = min(K, len(documents))
    index_seconds = time.perf_counter() - start

    def search(query: str) -> list[str]:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stem, show_progress=False, return_ids=False)
        if not tokens[0]:
            return []
        ids, scores = retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        return [addresses[i] for i, s in zip(ids[0], scores[0], strict=True) if s > 0]

    return timed(queries, search) | {
        "index_seconds": round(index_seconds, 2),
        "setup": "bm25s: BM25 lucene k1=1.5 b=0.75 on title x2 + body; English stopwords; PyStemmer english; any word"}


SYSTEMS = {"tantivy": run_tantivy, "bm25s": run_bm25s}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="the search evaluation's baselines")
    parser.add_argument("--docs", type=Path, required=True)
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    args = parser.parse_args(argv)
    documents = read_documents(args.docs)
    queries = json.loads(args.queries.read_text())
    results = {name: SYSTEMS[name](documents, queries) for name in args.systems.split(",") if name}
    args.out.write_text(json.dumps(results) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
