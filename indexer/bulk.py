"""Set-based statements of the indexer's write path: a writer's batch of pages in one
statement per table (common/bulksql.py says why and how per database)."""

from django.db import connection

from common.bulksql import in_chunks, marks

from .models import ContentFingerprint, Document

# What a page's row holds, by column (`address` is Document.page_url's); duplicate_of starts
# empty (set for the few duplicates after).
DOCUMENT_COLUMNS = ("url_id", "address", "title", "headings", "body", "boilerplate", "content_hash", "content_type",
                    "encoding", "encoding_source", "status", "size", "noindex", "indexed", "fetched_at", "warc_file",
                    "warc_offset", "warc_length", "duplicate_of_id", "language", "canonical_key")
_DOCUMENTS, _FINGERPRINTS = Document._meta.db_table, ContentFingerprint._meta.db_table


def indexed_documents(url_ids: list[int]) -> list[int]:
    """Ids of the indexed documents of these URLs (a recrawl replaces them)."""
    found = []
    with connection.cursor() as cursor:
        for chunk in in_chunks(url_ids):
            cursor.execute(f"SELECT id FROM {_DOCUMENTS} WHERE indexed AND url_id IN ({marks(len(chunk))})", chunk)
            found.extend(row[0] for row in cursor.fetchall())
    return found


def upsert_documents(rows: list[tuple]) -> dict[int, int]:
    """Insert or replace the documents of URLs, rows of DOCUMENT_COLUMNS; returns url id ->
    document id. One prepared statement for the batch (psycopg pipelines executemany into
    one round trip): with rows this wide (a page's text) PostgreSQL takes it for less CPU
    than an unnest() of arrays, 0.11 against 0.26 ms a page (docs/benchmarks.md)."""
    rows = sorted(rows)  # url_id order: concurrent batches never cross locks
    names = ", ".join(DOCUMENT_COLUMNS)
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in DOCUMENT_COLUMNS[1:])
    with connection.cursor() as cursor:
        cursor.executemany(f"INSERT INTO {_DOCUMENTS} ({names}) VALUES ({marks(len(DOCUMENT_COLUMNS))}) "
                           f"ON CONFLICT (url_id) DO UPDATE SET {updates}", rows)
        ids = {}
        for chunk in in_chunks([row[0] for row in rows]):
            cursor.execute(f"SELECT url_id, id FROM {_DOCUMENTS} WHERE url_id IN ({marks(len(chunk))})", chunk)
            ids.update(cursor.fetchall())
        return ids


def claim_fingerprints(claims: dict[str, int]) -> dict[str, int]:
    """content hash -> the original document's id, claiming the hashes not claimed yet for
    the given documents. The primary key decides races between workers."""
    items = sorted(claims.items())  # hash order: concurrent batches lock keys in one order
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"""WITH input AS (SELECT * FROM unnest(%b::varchar(64)[], %b::bigint[]) AS t(content_hash, document_id)),
                    added AS (INSERT INTO {_FINGERPRINTS} (content_hash, document_id) SELECT * FROM input
                              ON CONFLICT DO NOTHING RETURNING content_hash, document_id)
                    SELECT content_hash, document_id FROM added
                    UNION ALL SELECT f.content_hash, f.document_id FROM {_FINGERPRINTS} f JOIN input USING (content_hash)""",
                [[h for h, _ in items], [i for _, i in items]])
            return dict(cursor.fetchall())
        cursor.executemany(f"INSERT INTO {_FINGERPRINTS} (content_hash, document_id) VALUES (%s, %s) "
                           "ON CONFLICT DO NOTHING", items)
        found = {}
        for chunk in in_chunks([h for h, _ in items]):
            cursor.execute(f"SELECT content_hash, document_id FROM {_FINGERPRINTS} WHERE content_hash IN "
                           f"({marks(len(chunk))})", chunk)
            found.update(cursor.fetchall())
        return found


def mark_duplicates(duplicates: dict[int, int]) -> None:
    """document id -> the original's id: a duplicate is not indexed."""
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {_DOCUMENTS} SET duplicate_of_id = %s, indexed = %s WHERE id = %s",
                           [(original, False, document_id) for document_id, original in sorted(duplicates.items())])
