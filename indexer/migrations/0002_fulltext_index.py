"""Create the full-text structure of whichever backend matches this database."""

from django.db import migrations

from indexer.backends import postgres, sqlite

SQL_BY_VENDOR = {
    "postgresql": (postgres.CREATE_SQL, postgres.DROP_SQL),
    "sqlite": (sqlite.CREATE_SQL, sqlite.DROP_SQL),
}


def create(apps, schema_editor):
    for statement in SQL_BY_VENDOR.get(schema_editor.connection.vendor, ([], []))[0]:
        schema_editor.execute(statement)


def drop(apps, schema_editor):
    for statement in SQL_BY_VENDOR.get(schema_editor.connection.vendor, ([], []))[1]:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("indexer", "0001_initial")]
    operations = [migrations.RunPython(create, drop)]
