"""The analyzer's index: PostgreSQL stores worker-built tsvectors with field lengths, SQLite
an FTS5 table of analyzer tokens per field (title, URL, headings, body). The old structures
are dropped and every indexed document is re-analyzed (`manage.py reindex` does the same
later, when the analyzer changes again)."""

from importlib import import_module
from types import SimpleNamespace

from django.db import migrations

from indexer.backends import postgres, sqlite

LZ4 = import_module("indexer.migrations.0004_lz4_compression")
OLD_DROP = {
    "postgresql": ["DROP TABLE IF EXISTS indexer_pg_index"],
    "sqlite": ["DROP TABLE IF EXISTS indexer_fts"],
}
NEW = {"postgresql": (postgres.CREATE_SQL, postgres.DROP_SQL), "sqlite": (sqlite.CREATE_SQL, sqlite.DROP_SQL)}
OLD_CREATE = {
    "postgresql": [
        "CREATE TABLE IF NOT EXISTS indexer_pg_index (document_id bigint PRIMARY KEY, vector tsvector NOT NULL)",
        "CREATE INDEX IF NOT EXISTS indexer_pg_index_vector ON indexer_pg_index USING GIN (vector)",
    ],
    "sqlite": [
        """CREATE VIRTUAL TABLE IF NOT EXISTS indexer_fts USING fts5(title, headings, body,
           content='indexer_document', content_rowid='id', tokenize='porter unicode61')""",
    ],
}


def forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor not in NEW:
        return
    for statement in OLD_DROP[vendor] + NEW[vendor][0]:
        schema_editor.execute(statement)
    if vendor == "postgresql" and LZ4.lz4_available(schema_editor):  # the new table's vector, as 0004 set it
        schema_editor.execute("ALTER TABLE indexer_pg_index ALTER COLUMN vector SET COMPRESSION lz4")
    backend = (postgres.PostgresSearchBackend if vendor == "postgresql" else sqlite.SQLiteSearchBackend)(
        using=schema_editor.connection.alias)
    Document = apps.get_model("indexer", "Document")
    ids = list(Document.objects.using(schema_editor.connection.alias).filter(indexed=True).values_list("id", flat=True))
    for start in range(0, len(ids), 200):
        batch = Document.objects.using(schema_editor.connection.alias).filter(id__in=ids[start:start + 200])
        backend.add([as_indexed(d) for d in batch.only("id", "address", "title", "headings", "body")])


def as_indexed(document):
    """A document of this migration's time as today's indexing code reads one (the page URL
    is `page_url` since indexer 0013)."""
    return SimpleNamespace(id=document.id, page_url=document.address, title=document.title,
                           headings=document.headings, body=document.body)


def backward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor not in NEW:
        return
    for statement in NEW[vendor][1] + OLD_CREATE[vendor]:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("indexer", "0004_lz4_compression")]
    operations = [migrations.RunPython(forward, backward)]
