"""PostgreSQL full text: a tsvector per document in indexer_pg_index, GIN-indexed.

No foreign key to indexer_document: Django's flush must be able to TRUNCATE that table.
Entries are removed by delete() (called from a pre_delete signal), and search joins the
document table, so an orphan could never be shown anyway.

Weights: title A, headings B, body C; ranked with ts_rank_cd. Snippets come from
ts_headline, computed only for the page of results (it re-parses the body).
"""

from django.db import connections

from .base import MARK_END, MARK_START, SearchBackend, SearchHit, query_terms

CONFIG = "english"

CREATE_SQL = [
    """CREATE TABLE IF NOT EXISTS indexer_pg_index (
        document_id bigint PRIMARY KEY,
        vector tsvector NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS indexer_pg_index_vector ON indexer_pg_index USING GIN (vector)",
]
DROP_SQL = ["DROP TABLE IF EXISTS indexer_pg_index"]

# A document's weighted vector, from its indexer_document row (bench.run measures its cost).
VECTOR_SQL = f"""setweight(to_tsvector('{CONFIG}', coalesce(title, '')), 'A')
    || setweight(to_tsvector('{CONFIG}', coalesce(headings, '')), 'B')
    || setweight(to_tsvector('{CONFIG}', coalesce(body, '')), 'C')"""


class PostgresSearchBackend(SearchBackend):
    def add(self, document_ids):
        if not document_ids:
            return
        with connections[self.using].cursor() as cur:
            cur.execute(
                f"""INSERT INTO indexer_pg_index (document_id, vector)
                    SELECT id, {VECTOR_SQL} FROM indexer_document WHERE id = ANY(%s)
                    ON CONFLICT (document_id) DO UPDATE SET vector = EXCLUDED.vector""",
                [list(document_ids)],
            )

    def delete(self, document_ids):
        with connections[self.using].cursor() as cur:
            cur.execute("DELETE FROM indexer_pg_index WHERE document_id = ANY(%s)", [list(document_ids)])

    def clear(self):
        with connections[self.using].cursor() as cur:
            cur.execute("TRUNCATE indexer_pg_index")

    def search(self, query, limit=10, offset=0):
        terms = query_terms(query)
        if not terms:
            return []
        tsquery = " & ".join(f"'{t}'" for t in terms)  # words only: \w+ cannot break quoting
        options = f"StartSel={MARK_START}, StopSel={MARK_END}, MaxWords=30, MinWords=12, MaxFragments=2, FragmentDelimiter=\" … \""
        with connections[self.using].cursor() as cur:
            cur.execute(
                f"""WITH q AS (SELECT to_tsquery('{CONFIG}', %s) AS query),
                    top AS (
                        SELECT i.document_id, ts_rank_cd(i.vector, q.query, 1) AS score
                        FROM indexer_pg_index i, q WHERE i.vector @@ q.query
                        ORDER BY score DESC, i.document_id LIMIT %s OFFSET %s)
                    SELECT d.id, d.address, d.title,
                           ts_headline('{CONFIG}', d.body, q.query, %s), top.score
                    FROM top JOIN indexer_document d ON d.id = top.document_id, q
                    ORDER BY top.score DESC, d.id""",
                [tsquery, limit, offset, options],
            )
            return [SearchHit(r[0], r[1], r[2], r[3], float(r[4])) for r in cur.fetchall()]
