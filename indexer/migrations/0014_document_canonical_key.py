"""Document.canonical_key: the URL a page's <link rel=canonical> names, so the page can be
indexed after all when that URL cannot stand for it, and leave the index when it can
(indexer/canonicals.py). Expand only: a nullable column the previous release's inserts
leave empty, and a partial index that holds only the pages naming another URL."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('indexer', '0013_document_page_url'),
    ]

    operations = [
        migrations.AddField(
            model_name='document',
            name='canonical_key',
            field=models.BigIntegerField(blank=True, help_text='url_key of the other URL its <link rel=canonical> names (frontier.normalize.url_key)', null=True),
        ),
        migrations.AddIndex(
            model_name='document',
            index=models.Index(condition=models.Q(('canonical_key__isnull', False)), fields=['canonical_key'], name='document_canonical'),
        ),
    ]
