"""The crawl log moved to the crawl app (crawl 0001): state only, the table stays."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('crawl', '0001_initial'),
        ('fetch', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.DeleteModel(
                name='CrawlLogEntry',
            ),
        ]),
    ]
