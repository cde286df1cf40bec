"""What indexing one page costs, worker side and PostgreSQL side: the analyzer-built tsvector
in PostgreSQL's binary format (what the crawler sends), the same in the text syntax, and
PostgreSQL's own to_tsvector over the same text.

    DATABASE_URL=postgres://…/db-with-documents python -m bench.index_cost [--pages N]

Reads up to N stored documents, then, in a scratch table in the same database, inserts each
one's vector each way in batches of 50 (the store batch size). Worker CPU is this process's
CPU time spent analyzing; PostgreSQL CPU is the backend process's own CPU time (/proc),
read before and after each pass. One run each way, same documents, same connection.
"""

import argparse
import os
import time

import django


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=2000)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")
    django.setup()
    from django.db import connection

    from bench.procstat import cpu_seconds
    from indexer.backends.postgres import tsvector_binary, tsvector_literal
    from indexer.fields import IndexedFields, index_fields
    from indexer.models import Document

    if connection.vendor != "postgresql":
        raise SystemExit("needs DATABASE_URL=postgres://…")
    docs = list(Document.objects.filter(indexed=True).only("id", "page_url", "title", "headings", "body")
                .order_by("id")[: args.pages])
    if not docs:
        raise SystemExit("no indexed documents in this database: crawl something first")
    chars = sum(len(d.body) for d in docs) / len(docs)
    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        backend_pid = cur.fetchone()[0]
        cur.execute("DROP TABLE IF EXISTS bench_index_cost")
        cur.execute("CREATE UNLOGGED TABLE bench_index_cost (document_id bigint PRIMARY KEY, vector tsvector, "
                    "key_vector tsvector)")
        cur.execute("CREATE INDEX ON bench_index_cost USING GIN (vector)")

        fields = [(d.id, index_fields(d)) for d in docs]

        def built(encode):  # the vector and the small key_vector, as PostgresSearchBackend.prepare does
            started = time.process_time()
            rows = [(i, encode(f), encode(IndexedFields(f.title, f.url, f.headings, [], []))) for i, f in fields]
            return rows, time.process_time() - started

        binaries, worker_binary = built(tsvector_binary)
        literals, worker_text = built(tsvector_literal)

        def timed(statement, rows):
            cur.execute("TRUNCATE bench_index_cost")
            before = cpu_seconds(backend_pid)
            for start in range(0, len(rows), 50):
                cur.executemany(statement, rows[start:start + 50])
            return cpu_seconds(backend_pid) - before

        old = timed("""INSERT INTO bench_index_cost (document_id, vector) SELECT id,
                         setweight(to_tsvector('english', coalesce(title, '')), 'A')
                         || setweight(to_tsvector('english', coalesce(headings, '')), 'B')
                         || setweight(to_tsvector('english', coalesce(body, '')), 'C')
                       FROM indexer_document WHERE id = %s""", [(d.id,) for d in docs])
        text = timed("INSERT INTO bench_index_cost VALUES (%s, %s::tsvector, %s::tsvector)", literals)
        binary = timed("INSERT INTO bench_index_cost VALUES (%s, %s, %s)", binaries)
        cur.execute("DROP TABLE bench_index_cost")
    n = len(docs)
    print(f"{n} pages, {chars:,.0f} characters of text each on average")
    print(f"PostgreSQL CPU per page (with the GIN index): to_tsvector {1000 * old / n:.2f} ms, analyzer text "
          f"literal {1000 * text / n:.2f} ms ({text / old:.2f}x), analyzer binary {1000 * binary / n:.2f} ms "
          f"({binary / old:.2f}x)")
    print(f"worker CPU per page to build the vectors from the tokens: text {1000 * worker_text / n:.2f} ms, "
          f"binary {1000 * worker_binary / n:.2f} ms")


if __name__ == "__main__":
    main()
