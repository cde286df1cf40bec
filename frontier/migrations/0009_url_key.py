"""URLs are keyed by an 8-byte integer (url_key) instead of a 32-character hex string.

url_key is the first 8 bytes of the same blake2b-128 digest url_hash spells out, so it is
derived from url_hash for the rows there are (PostgreSQL: in SQL; SQLite: in Python).

A rolling upgrade (STYLE.md 15): workers of the previous release keep inserting rows with
url_hash and without url_key while this one runs. On PostgreSQL a trigger fills url_key
from url_hash for them, so the unique url_key index sees their rows too (their
`ON CONFLICT DO NOTHING` then skips a URL this release inserted). url_hash becomes
nullable and unique only where present (a partial index: this release no longer writes it,
and its rows cost that index nothing). The next release drops the trigger and the column
(expand, then contract). The host's own index goes: url_host_due starts with the host, and
every row written costs one index fewer.
"""

import django.db.models.deletion
from django.db import migrations, models

KEY_FROM_HASH = "('x' || substr({hash}, 1, 16))::bit(64)::bigint"

TRIGGER_SQL = f"""
CREATE OR REPLACE FUNCTION frontier_url_key_from_hash() RETURNS trigger AS $$
BEGIN
    NEW.url_key := {KEY_FROM_HASH.format(hash="NEW.url_hash")};
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER frontier_url_key_from_hash BEFORE INSERT ON frontier_url
    FOR EACH ROW WHEN (NEW.url_key IS NULL AND NEW.url_hash IS NOT NULL)
    EXECUTE FUNCTION frontier_url_key_from_hash();
"""
DROP_TRIGGER_SQL = """
DROP TRIGGER IF EXISTS frontier_url_key_from_hash ON frontier_url;
DROP FUNCTION IF EXISTS frontier_url_key_from_hash();
"""


def fill_keys(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"UPDATE frontier_url SET url_key = {KEY_FROM_HASH.format(hash='url_hash')} "
                              "WHERE url_key IS NULL")
        schema_editor.execute(TRIGGER_SQL)
        return
    Url = apps.get_model("frontier", "Url")
    db = schema_editor.connection.alias
    while True:
        rows = list(Url.objects.using(db).filter(url_key__isnull=True).values_list("id", "url_hash")[:5000])
        if not rows:
            return
        for url_id, url_hash in rows:
            key = int.from_bytes(bytes.fromhex(url_hash[:16]), "big", signed=True)
            Url.objects.using(db).filter(id=url_id).update(url_key=key)


def drop_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP_TRIGGER_SQL)


class Migration(migrations.Migration):
    dependencies = [("frontier", "0008_wait_reason_db_default")]

    operations = [
        migrations.AddField(
            model_name="url", name="url_key",
            field=models.BigIntegerField(null=True, help_text="the first 8 bytes of the URL's blake2b-128"),
        ),
        migrations.RunPython(fill_keys, drop_trigger),
        migrations.AlterField(
            model_name="url", name="url_key",
            field=models.BigIntegerField(unique=True, help_text="the first 8 bytes of the URL's blake2b-128"),
        ),
        migrations.AlterField(
            model_name="url", name="url_hash",
            field=models.CharField(blank=True, editable=False, max_length=32, null=True),
        ),
        migrations.AddConstraint(
            model_name="url",
            constraint=models.UniqueConstraint(condition=models.Q(url_hash__isnull=False), fields=["url_hash"],
                                               name="url_hash_unique"),
        ),
        migrations.AlterField(
            model_name="url", name="host",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="urls",
                                    to="frontier.host"),
        ),
    ]
