"""Document.body is a CompressedTextField (indexer/textstore.py): zlib on SQLite, where new
and re-crawled pages are now written compressed; text on PostgreSQL, unchanged. The column
itself does not change on either database (an SQLite column takes a BLOB as it is), so
this touches the migration state only: no table is rewritten."""

from django.db import migrations

import indexer.textstore


class Migration(migrations.Migration):
    dependencies = [("indexer", "0006_contentless_fts")]
    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(
                model_name="document", name="body",
                field=indexer.textstore.CompressedTextField(
                    blank=True, default="",
                    help_text="visible text (capped; compressed on SQLite: indexer/textstore.py)"),
            ),
        ]),
    ]
