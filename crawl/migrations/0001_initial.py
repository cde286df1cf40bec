"""The crawl app takes two tables it did not create: the crawl log (from fetch) and the
process heartbeats (from console). State only: the tables, their rows and their indexes stay
as they are (SeparateDatabaseAndState); the admin's permissions follow the models."""

import django.utils.timezone
from django.db import migrations, models


MOVED = {"crawllogentry": "fetch", "processheartbeat": "console"}


def move_content_types(apps, schema_editor):
    content_type = apps.get_model("contenttypes", "ContentType")
    for model, old_app in MOVED.items():
        content_type.objects.filter(app_label=old_app, model=model).update(app_label="crawl")


def move_content_types_back(apps, schema_editor):
    content_type = apps.get_model("contenttypes", "ContentType")
    for model, old_app in MOVED.items():
        content_type.objects.filter(app_label="crawl", model=model).update(app_label=old_app)


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("fetch", "0001_initial"),
        ("console", "0004_beat_leader"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.RunPython(move_content_types, move_content_types_back),
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='CrawlLogEntry',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('at', models.DateTimeField(help_text='when the request started')),
                    ('kind', models.CharField(help_text='page or robots', max_length=8)),
                    ('url', models.TextField()),
                    ('url_id', models.BigIntegerField(blank=True, help_text='the frontier URL (none for robots.txt)', null=True)),
                    ('host_id', models.BigIntegerField(help_text='the frontier host')),
                    ('origin', models.TextField(help_text="the host's origin")),
                    ('status', models.PositiveSmallIntegerField(blank=True, help_text='none: no response', null=True)),
                    ('error', models.CharField(blank=True, help_text='why there was no usable response', max_length=40)),
                    ('outcome', models.CharField(help_text='what the request brought (crawl/observe.py outcome_of)', max_length=40)),
                    ('bytes', models.PositiveBigIntegerField(default=0, help_text='body bytes received, decompressed')),
                    ('ms', models.PositiveIntegerField(default=0, help_text='milliseconds from request start to end of body')),
                    ('attempt', models.PositiveSmallIntegerField(default=1, help_text="1: the URL's first try; 2+: a retry")),
                    ('retry_after', models.FloatField(blank=True, help_text='seconds the server asked to wait (capped)', null=True)),
                    ('address', models.CharField(blank=True, help_text='the server address connected to', max_length=64)),
                    ('content_type', models.CharField(blank=True, max_length=100)),
                    ('worker', models.CharField(blank=True, help_text='the process that sent the request', max_length=200)),
                    ('lease', models.CharField(blank=True, help_text="the host session's lease token", max_length=100)),
                ],
                options={
                    'verbose_name': 'crawl log entry',
                    'verbose_name_plural': 'crawl log',
                    'db_table': 'fetch_crawllogentry',
                    'indexes': [models.Index(fields=['at'], name='fetch_crawllog_at'), models.Index(fields=['host_id', 'at'], name='fetch_crawllog_host_at')],
                },
            ),
            migrations.CreateModel(
                name='ProcessHeartbeat',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('kind', models.CharField(choices=[('worker', "fetch worker (a Celery worker process's session engine)"), ('embedded', 'embedded crawler (manage.py crawl)'), ('dispatcher', 'dispatcher (manage.py dispatch)')], max_length=12)),
                    ('name', models.CharField(help_text="the engine's or dispatcher's name", max_length=120)),
                    ('hostname', models.CharField(max_length=120)),
                    ('pid', models.IntegerField()),
                    ('started_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('seen_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now, help_text='its last heartbeat')),
                    ('stopped_at', models.DateTimeField(blank=True, help_text='it stopped cleanly', null=True)),
                    ('sessions', models.IntegerField(default=0, help_text='host sessions open (workers)')),
                    ('requests', models.BigIntegerField(default=0, help_text='requests sent so far (workers)')),
                    ('last_request_at', models.DateTimeField(blank=True, help_text="when it last sent a request (to the heartbeat's precision)", null=True)),
                    ('leases', models.BigIntegerField(default=0, help_text='host sessions handed out so far (dispatchers)')),
                    ('last_lease_at', models.DateTimeField(blank=True, help_text='when it last handed one out', null=True)),
                    ('holder', models.CharField(blank=True, db_default='', default='', help_text="this run's id in the host leases it holds (Host.lease_holder)", max_length=32)),
                ],
                options={
                    'db_table': 'console_processheartbeat',
                    'constraints': [models.UniqueConstraint(fields=('kind', 'hostname', 'pid', 'name'), name='heartbeat_process')],
                },
            ),
        ]),
    ]
