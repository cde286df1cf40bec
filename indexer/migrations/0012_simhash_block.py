"""SimhashBand is SimhashBlock, its `band` is `block` (issue 52: "band" is the frontier's
word for a score band). In Django's state only: the table and the column keep their names
(db_table, db_column), so nothing changes in the database and the previous release's
workers keep writing them while an upgrade rolls out (STYLE.md 15)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("indexer", "0011_document_encoding_language")]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.RenameModel("SimhashBand", "SimhashBlock"),
            migrations.AlterModelTable("SimhashBlock", "indexer_simhashband"),
            migrations.RenameField("SimhashBlock", "band", "block"),
            migrations.AlterField("SimhashBlock", "block", models.BigIntegerField(
                db_index=True, db_column="band", help_text="block number << 32 | the block's bits")),
        ]),
    ]
