"""The heartbeats moved to the crawl app (crawl 0001): state only, the table stays."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('crawl', '0001_initial'),
        ('console', '0004_beat_leader'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.DeleteModel(
                name='ProcessHeartbeat',
            ),
        ]),
    ]
