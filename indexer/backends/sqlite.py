"""SQLite full text: an FTS5 table over indexer_document (external content, so the text is
stored once), ranked with bm25 weighted title 10 : headings 4 : body 1."""

from django.db import connections

from .base import MARK_END, MARK_START, SearchBackend, SearchHit, query_terms

CREATE_SQL = [
    """CREATE VIRTUAL TABLE IF NOT EXISTS indexer_fts USING fts5(
        title, headings, body, content='indexer_document', content_rowid='id',
        tokenize='porter unicode61')"""
]
DROP_SQL = ["DROP TABLE IF EXISTS indexer_fts"]


class SQLiteSearchBackend(SearchBackend):
    def add(self, document_ids):
        if not document_ids:
            return
        self.delete(document_ids)
        marks = ",".join("?" * len(document_ids))
        with connections[self.using].cursor() as cur:
            cur.execute(
                f"""INSERT INTO indexer_fts (rowid, title, headings, body)
                    SELECT id, title, headings, body FROM indexer_document WHERE id IN ({marks})""".replace("?", "%s"),
                list(document_ids),
            )

    def delete(self, document_ids):
        # External-content FTS5 deletes need the indexed values: the 'delete' command.
        # Only rows that are in the index may be deleted, hence the join on indexer_fts.
        if not document_ids:
            return
        marks = ",".join(["%s"] * len(document_ids))
        with connections[self.using].cursor() as cur:
            cur.execute(
                f"""INSERT INTO indexer_fts (indexer_fts, rowid, title, headings, body)
                    SELECT 'delete', d.id, d.title, d.headings, d.body FROM indexer_document d
                    WHERE d.id IN ({marks}) AND d.indexed""",
                list(document_ids),
            )

    def clear(self):
        with connections[self.using].cursor() as cur:
            cur.execute("INSERT INTO indexer_fts (indexer_fts) VALUES ('delete-all')")

    def search(self, query, limit=10, offset=0):
        terms = query_terms(query)
        if not terms:
            return []
        match = " ".join('"' + t.replace('"', "") + '"' for t in terms)
        with connections[self.using].cursor() as cur:
            cur.execute(
                f"""SELECT f.rowid, d.address, d.title,
                           snippet(indexer_fts, 2, '{MARK_START}', '{MARK_END}', ' … ', 24),
                           bm25(indexer_fts, 10.0, 4.0, 1.0) AS rank
                    FROM indexer_fts f JOIN indexer_document d ON d.id = f.rowid
                    WHERE indexer_fts MATCH %s ORDER BY rank, f.rowid LIMIT %s OFFSET %s""",
                [match, limit, offset],
            )
            # bm25 is lower-is-better and negative; flip it so every backend sorts descending.
            return [SearchHit(r[0], r[1], r[2], r[3], -float(r[4])) for r in cur.fetchall()]
