"""SQLite full text: an FTS5 table of the analyzer's tokens, one column per field.

FTS5's own tokenizer only splits on spaces here (every letter, digit, mark, punctuation and
symbol category is a token character), so the tokens stored and queried are exactly the
analyzer's. The table keeps its own copy of the token text (SQLite 3.40 has no
contentless deletes). Field lengths for the ranking sit in indexer_fts_docs.
"""

from django.db import connections

from .. import ranking
from ..fields import index_fields
from ..query import Query, Term, site_token
from .base import Candidate, SearchBackend, as_datetime

CREATE_SQL = [
    """CREATE VIRTUAL TABLE IF NOT EXISTS indexer_fts USING fts5(
        title, url, headings, body,
        tokenize="unicode61 remove_diacritics 0 categories 'L* N* Co M* P* S*'")""",
    """CREATE TABLE IF NOT EXISTS indexer_fts_docs (
        rowid INTEGER PRIMARY KEY, title_len INTEGER NOT NULL, url_len INTEGER NOT NULL,
        long_len INTEGER NOT NULL)""",
]
DROP_SQL = ["DROP TABLE IF EXISTS indexer_fts", "DROP TABLE IF EXISTS indexer_fts_docs"]


def _quote(tokens: list[str]) -> str:
    return '"' + " ".join(tokens).replace('"', '""') + '"'


def term_expression(term: Term) -> str:
    return _quote([term.token])


def match_expression(query: Query, any_word: bool) -> str:
    required = [term_expression(t) for t in query.terms] + [_quote(p) for p in query.phrases]
    words = "(" + " OR ".join(required) + ")" if any_word else " AND ".join(required)
    if query.sites:
        words += " AND (" + " OR ".join(_quote([site_token(s)]) for s in query.sites) + ")"
    return words


class SQLiteSearchBackend(SearchBackend):
    def add(self, documents):
        if not documents:
            return
        self.delete([d.id for d in documents])
        rows, lengths = [], []
        for doc in documents:
            f = index_fields(doc)
            rows.append((doc.id, " ".join(f.title), " ".join(f.url + f.sites), " ".join(f.headings), " ".join(f.body)))
            lengths.append((doc.id, len(f.title), len(f.url), f.long_length))
        with connections[self.using].cursor() as cur:
            cur.executemany("INSERT INTO indexer_fts (rowid, title, url, headings, body) VALUES (%s, %s, %s, %s, %s)", rows)
            cur.executemany("INSERT INTO indexer_fts_docs (rowid, title_len, url_len, long_len) VALUES (%s, %s, %s, %s)",
                            lengths)
        self.forget_corpus_stats()

    def delete(self, document_ids):
        if not document_ids:
            return
        marks = ",".join(["%s"] * len(document_ids))
        with connections[self.using].cursor() as cur:
            cur.execute(f"DELETE FROM indexer_fts WHERE rowid IN ({marks})", list(document_ids))
            cur.execute(f"DELETE FROM indexer_fts_docs WHERE rowid IN ({marks})", list(document_ids))
        self.forget_corpus_stats()

    def clear(self):
        with connections[self.using].cursor() as cur:
            cur.execute("DELETE FROM indexer_fts")
            cur.execute("DELETE FROM indexer_fts_docs")
        self.forget_corpus_stats()

    def _count(self, expression: str, cap: int) -> int:
        with connections[self.using].cursor() as cur:
            cur.execute("SELECT count(*) FROM (SELECT 1 FROM indexer_fts WHERE indexer_fts MATCH %s LIMIT %s)",
                        [expression, cap])
            return cur.fetchone()[0]

    def count(self, query, any_word, cap):
        return self._count(match_expression(query, any_word), cap)

    def document_frequencies(self, terms, cap):
        return [self._count(term_expression(t), cap) for t in terms]

    def candidates(self, query, any_word, limit, exhaustive, terms, idfs, stats, weights):
        # The long group is FTS5's bm25 over headings and body (title and URL weigh 0 there,
        # they are the short group, scored in Python). Candidates are ordered by a bm25 that
        # counts the title heavily, so pages titled with the terms are never cut off.
        with connections[self.using].cursor() as cur:
            cur.execute(
                """SELECT f.rowid, d.address, d.title, d.fetched_at, bm25(indexer_fts, 0, 0, %s, 1)
                   FROM indexer_fts f JOIN indexer_document d ON d.id = f.rowid
                   WHERE indexer_fts MATCH %s
                   ORDER BY bm25(indexer_fts, %s, %s, %s, 1), f.rowid LIMIT %s""",
                [weights.headings, match_expression(query, any_word), 5 * weights.title, 5 * weights.title * weights.url,
                 weights.headings, limit],
            )
            # bm25() is lower-is-better and negative: flip it.
            return [Candidate(r[0], r[1], r[2], as_datetime(r[3]), -float(r[4])) for r in cur.fetchall()]

    def prefixes(self, document_ids, chars):
        if not document_ids:
            return {}
        marks = ",".join(["%s"] * len(document_ids))
        with connections[self.using].cursor() as cur:
            cur.execute(f"SELECT id, substr(body, 1, %s) FROM indexer_document WHERE id IN ({marks})",
                        [chars, *document_ids])
            return dict(cur.fetchall())

    def read_corpus_stats(self):
        with connections[self.using].cursor() as cur:
            cur.execute("SELECT count(*), avg(title_len), avg(url_len), avg(long_len) FROM indexer_fts_docs")
            n, title, url, long = cur.fetchone()
        return ranking.CorpusStats(n or 0, float(title or 0), float(url or 0), float(long or 0))
