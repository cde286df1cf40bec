"""SQLite: the FTS5 index keeps no copy of the token text (content=''), merges segments
in larger steps (automerge 8), and remembers a checksum of each document's tokens so a
delete can check it is removing what was indexed (indexer/backends/sqlite.py). The index is
rebuilt from the stored documents. PostgreSQL: nothing changes here (its vectors now travel
in the binary format, which is the same tsvector)."""

from importlib import import_module

from django.db import migrations

from indexer.backends import sqlite

as_indexed = import_module("indexer.migrations.0005_analyzer_index").as_indexed

OLD = [
    """CREATE VIRTUAL TABLE IF NOT EXISTS indexer_fts USING fts5(
        title, url, headings, body,
        tokenize="unicode61 remove_diacritics 0 categories 'L* N* Co M* P* S*'")""",
    """CREATE TABLE IF NOT EXISTS indexer_fts_docs (
        rowid INTEGER PRIMARY KEY, title_len INTEGER NOT NULL, url_len INTEGER NOT NULL,
        long_len INTEGER NOT NULL)""",
]


def rebuild(create_sql):
    def apply(apps, schema_editor):
        if schema_editor.connection.vendor != "sqlite":
            return
        for statement in sqlite.DROP_SQL + create_sql:
            schema_editor.execute(statement)
        backend = sqlite.SQLiteSearchBackend(using=schema_editor.connection.alias)
        Document = apps.get_model("indexer", "Document")
        documents = Document.objects.using(schema_editor.connection.alias).filter(indexed=True)
        ids = list(documents.values_list("id", flat=True))
        for start in range(0, len(ids), 200):
            batch = [as_indexed(d) for d in
                     documents.filter(id__in=ids[start:start + 200]).only("id", "address", "title", "headings", "body")]
            if create_sql is OLD:  # going back: the old layout's rows (tokens, lengths)
                rows = [(doc.id, backend.prepare(doc)) for doc in batch]
                with schema_editor.connection.cursor() as cur:
                    cur.executemany("INSERT INTO indexer_fts (rowid, title, url, headings, body) "
                                    "VALUES (%s, %s, %s, %s, %s)", [(i, *row[:4]) for i, row in rows])
                    cur.executemany("INSERT INTO indexer_fts_docs (rowid, title_len, url_len, long_len) "
                                    "VALUES (%s, %s, %s, %s)", [(i, *row[4:7]) for i, row in rows])
            else:
                backend.add(batch)
    return apply


class Migration(migrations.Migration):
    dependencies = [("indexer", "0005_analyzer_index")]
    operations = [migrations.RunPython(rebuild(sqlite.CREATE_SQL), rebuild(OLD))]
