"""SQLite full text: an FTS5 table of the analyzer's tokens, one column per field.

FTS5's own tokenizer only splits on spaces here (every letter, digit, mark, punctuation and
symbol category is a token character), so the tokens stored and queried are exactly the
analyzer's. Field lengths for the ranking sit in indexer_fts_docs.

Contentless (content=''): the index keeps no copy of the token text, which was a third of
a crawl's database (a page's tokens are as long as its text) and a fifth of an insert's
cost. FTS5 then forgets a document only when told its tokens again ('delete' command; the
contentless_delete option needs SQLite 3.43): they are made again from the stored
document with the same analyzer, and checked against the checksum kept at indexing time
(indexer_fts_docs.tokens_crc). A document whose tokens no longer match (the analyzer
changed since and `manage.py reindex` was not run) cannot be taken out: a warning says to
run reindex, which rebuilds the whole index. 'automerge' 8: fewer, larger segment merges
(inserts 20% cheaper, measured in docs/benchmarks.md).
"""

import logging
import zlib
from typing import NamedTuple


from django.db import connections

from common import stagetime

from .. import ranking, textstore
from ..fields import index_fields
from ..query import Query, Term, analysis_token, language_token, site_token
from .base import Candidate, SearchBackend, as_datetime

CREATE_SQL = [
    """CREATE VIRTUAL TABLE IF NOT EXISTS indexer_fts USING fts5(
        title, url, headings, body, content='',
        tokenize="unicode61 remove_diacritics 0 categories 'L* N* Co M* P* S*'")""",
    "INSERT INTO indexer_fts(indexer_fts, rank) VALUES('automerge', 8)",
    """CREATE TABLE IF NOT EXISTS indexer_fts_docs (
        rowid INTEGER PRIMARY KEY, title_len INTEGER NOT NULL, url_len INTEGER NOT NULL,
        long_len INTEGER NOT NULL, tokens_crc INTEGER NOT NULL DEFAULT 0)""",
]
log = logging.getLogger(__name__)
DROP_SQL = ["DROP TABLE IF EXISTS indexer_fts", "DROP TABLE IF EXISTS indexer_fts_docs"]


@stagetime.timed("analysis")
def prepare_row(document) -> tuple:
    """(title, url, headings, body, title_len, url_len, long_len, tokens_crc): the four
    fields' tokens as FTS5 takes them (space-separated), the field lengths the ranking
    needs, and the checksum a later delete checks the tokens against."""
    f = index_fields(document)
    columns = (" ".join(f.title), " ".join(f.url + f.sites), " ".join(f.headings), " ".join(f.body))
    return (*columns, len(f.title), len(f.url), f.long_length, _crc(columns))


def _crc(columns) -> int:
    return zlib.crc32("\x1f".join(columns).encode("utf-8", "surrogatepass"))


class _Stored(NamedTuple):
    page_url: str
    title: str
    headings: str
    body: str
    language: str
    boilerplate: str
    content_type: str


def _quote(tokens: list[str]) -> str:
    return '"' + " ".join(tokens).replace('"', '""') + '"'


def _any_of(expressions: list[str]) -> str:
    return expressions[0] if len(expressions) == 1 else "(" + " OR ".join(expressions) + ")"


def _conditioned(expression: str, analyses: tuple[str, ...]) -> str:
    """expression, matched only in pages of these analyses (all pages: none given)."""
    if not analyses:
        return expression
    return f"({expression} AND {_any_of([_quote([analysis_token(a)]) for a in analyses])})"


def term_expression(term: Term) -> str:
    return _any_of([_conditioned(_quote([token]), analyses) for token, analyses in term.conditioned])


def phrase_expression(streams) -> str:
    return _any_of([_conditioned(_quote(stream), analyses) for stream, analyses in streams])


def match_expression(query: Query, any_word: bool) -> str:
    phrases = query.phrase_alternatives or [[(p, ())] for p in query.phrases]
    required = [term_expression(t) for t in query.terms] + [phrase_expression(p) for p in phrases]
    parts = [("(" + " OR ".join(required) + ")" if any_word else " AND ".join(required))] if required else []
    if query.sites:
        parts.append("(" + " OR ".join(_quote([site_token(s)]) for s in query.sites) + ")")
    if query.languages:
        parts.append("(" + " OR ".join(_quote([language_token(lang)]) for lang in query.languages) + ")")
    return " AND ".join(parts)


class SQLiteSearchBackend(SearchBackend):
    def prepare(self, document):
        return prepare_row(document)

    def add_prepared(self, rows):
        if not rows:
            return
        self.delete([document_id for document_id, _ in rows])  # re-indexed ones: their old entries
        with connections[self.using].cursor() as cur:
            cur.executemany("INSERT INTO indexer_fts (rowid, title, url, headings, body) VALUES (%s, %s, %s, %s, %s)",
                            [(document_id, *row[:4]) for document_id, row in rows])
            cur.executemany("INSERT INTO indexer_fts_docs (rowid, title_len, url_len, long_len, tokens_crc) "
                            "VALUES (%s, %s, %s, %s, %s)", [(document_id, *row[4:]) for document_id, row in rows])
        self.forget_corpus_stats()

    def delete(self, document_ids):
        """Take documents out: their tokens made again from the stored documents (which
        must still be there: callers delete before they replace or remove one)."""
        if not document_ids:
            return
        marks = ",".join(["%s"] * len(document_ids))
        with connections[self.using].cursor() as cur:
            cur.execute(f"SELECT rowid, tokens_crc FROM indexer_fts_docs WHERE rowid IN ({marks})", list(document_ids))
            indexed = dict(cur.fetchall())
            if not indexed:
                return
            cur.execute(f"SELECT id, address, title, headings, body, boilerplate, content_type, language "
                        f"FROM indexer_document WHERE id IN ({','.join(['%s'] * len(indexed))})", list(indexed))
            deletes, stale = [], []
            for document_id, page_url, title, headings, body, boilerplate, content_type, language in cur.fetchall():
                row = prepare_row(_Stored(page_url, title, headings, textstore.from_database(body), language,
                                          boilerplate or "", content_type or ""))
                if row[7] == indexed[document_id]:
                    deletes.append(("delete", document_id, *row[:4]))
                else:
                    stale.append(document_id)
            cur.executemany("INSERT INTO indexer_fts (indexer_fts, rowid, title, url, headings, body) "
                            "VALUES (%s, %s, %s, %s, %s, %s)", deletes)
            cur.execute(f"DELETE FROM indexer_fts_docs WHERE rowid IN ({marks})", list(document_ids))
        if stale:
            log.warning("%d documents could not be taken out of the full-text index: the analyzer changed since they "
                        "were indexed; run `python manage.py reindex`", len(stale))
        self.forget_corpus_stats()

    def clear(self):
        with connections[self.using].cursor() as cur:
            cur.execute("INSERT INTO indexer_fts(indexer_fts) VALUES('delete-all')")
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
                """SELECT f.rowid, d.address, d.title, d.fetched_at, bm25(indexer_fts, 0, 0, %s, 1), d.language
                   FROM indexer_fts f JOIN indexer_document d ON d.id = f.rowid
                   WHERE indexer_fts MATCH %s
                   ORDER BY bm25(indexer_fts, %s, %s, %s, 1), f.rowid LIMIT %s""",
                [weights.headings, match_expression(query, any_word), 5 * weights.title, 5 * weights.title * weights.url,
                 weights.headings, limit],
            )
            # bm25() is lower-is-better and negative: flip it.
            return [Candidate(r[0], r[1], r[2], as_datetime(r[3]), -float(r[4]), language=r[5])
                    for r in cur.fetchall()]

    def matching(self, query, document_ids):
        if not document_ids:
            return set()
        with connections[self.using].cursor() as cur:
            cur.execute(f"SELECT rowid FROM indexer_fts WHERE indexer_fts MATCH %s "
                        f"AND rowid IN ({', '.join(['%s'] * len(document_ids))})",
                        [match_expression(query, False), *document_ids])
            return {row[0] for row in cur.fetchall()}

    def listed(self, query, limit, offset):
        with connections[self.using].cursor() as cur:
            cur.execute(
                """SELECT d.id, d.address, d.title, d.fetched_at
                   FROM indexer_fts f JOIN indexer_document d ON d.id = f.rowid
                   WHERE indexer_fts MATCH %s ORDER BY d.address, d.id LIMIT %s OFFSET %s""",
                [match_expression(query, False), limit, offset])
            return [Candidate(r[0], r[1], r[2], as_datetime(r[3]), 0.0) for r in cur.fetchall()]

    def snippet_sources(self, document_ids, chars):
        if not document_ids:
            return {}
        marks = ",".join(["%s"] * len(document_ids))
        with connections[self.using].cursor() as cur:
            cur.execute(f"SELECT id, body, boilerplate FROM indexer_document WHERE id IN ({marks})",
                        list(document_ids))
            return {document_id: (textstore.prefix(body, chars), boilerplate or "")
                    for document_id, body, boilerplate in cur.fetchall()}

    def read_corpus_stats(self):
        with connections[self.using].cursor() as cur:
            cur.execute("SELECT count(*), avg(title_len), avg(url_len), avg(long_len) FROM indexer_fts_docs")
            n, title, url, long = cur.fetchone()
        return ranking.CorpusStats(n or 0, float(title or 0), float(url or 0), float(long or 0))
