"""Url.priority is named for what it holds, the importance score (issue 52: one name per
concept). In Django's state only: the column keeps its name (db_column), so nothing
changes in the database and the previous release's workers keep working while an upgrade
rolls out (STYLE.md 15)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("frontier", "0023_host_referrer_sketch")]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.RemoveIndex("url", "url_host_queue"),
            migrations.RenameField("url", "priority", "score"),
            migrations.AlterField("url", "score", models.SmallIntegerField(
                default=0, db_column="priority",
                help_text="the importance score: higher goes first (frontier/importance.py)")),
            migrations.AddIndex("url", models.Index(fields=["host", "-score", "id"], name="url_host_queue",
                                                    condition=models.Q(state="queued"))),
        ]),
    ]
