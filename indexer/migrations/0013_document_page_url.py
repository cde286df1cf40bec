"""Document.address is Document.page_url (issue 52: in the crawler an address is a server's
IP). In Django's state only: the column keeps its name (db_column), so nothing changes in
the database and the previous release's workers keep writing it while an upgrade rolls
out (STYLE.md 15)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("indexer", "0012_simhash_block")]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.RenameField("document", "address", "page_url"),
            migrations.AlterField("document", "page_url", models.TextField(
                "URL", db_column="address", help_text="the page URL, kept here so search needs no join")),
        ]),
    ]
