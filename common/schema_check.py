"""Refuse to run against a database that is not migrated, with one line that says what to do.

Without this, a command or page run against a new or out-of-date database dies deep inside a
query with "no such table: indexer_fts" (or a missing column after an upgrade). Management
commands inherit `MigratedCommand`; the web goes through `RequireMigratedMiddleware`.

The check reads the migration graph (tens of milliseconds), so the middleware remembers a
database found up to date for the life of the process; while one is not, every request
checks again, so running `migrate` fixes a running server without a restart.
"""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.recorder import MigrationRecorder
from django.http import HttpResponse, JsonResponse
from django.urls import Resolver404, resolve
from django.utils.html import format_html


def unapplied_migrations(alias: str = DEFAULT_DB_ALIAS) -> list[str]:
    """The migrations not applied to the database, as "app.name"; [] when it is up to date."""
    connection = connections[alias]
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _backwards in plan]


def database_label(alias: str = DEFAULT_DB_ALIAS) -> str:
    db = settings.DATABASES[alias]
    if db["ENGINE"].endswith("sqlite3"):
        return f"the SQLite database {db['NAME']}"
    host = db.get("HOST") or "localhost"
    return f"the PostgreSQL database {db['NAME']} on {host}"


def not_migrated_message(alias: str = DEFAULT_DB_ALIAS) -> str | None:
    """One line naming the database and the fix, or None when the schema is current."""
    try:
        missing = unapplied_migrations(alias)
    except DatabaseError as exc:  # unreachable server, unreadable file
        return f"cannot read {database_label(alias)}: {str(exc).strip()}"
    if not missing:
        return None
    if not MigrationRecorder(connections[alias]).has_table():
        state = "has no tables yet"
    else:
        state = f"is {len(missing)} migration{'s' if len(missing) != 1 else ''} behind ({missing[0]} first)"
    return f"{database_label(alias)} {state}: run `python manage.py migrate` first"


class MigratedCommand(BaseCommand):
    """A management command that stops with one line when the database is not migrated."""

    requires_migrations_checks = True

    def check_migrations(self):  # called by BaseCommand.execute before handle()
        message = not_migrated_message()
        if message:
            raise CommandError(message)


class RequireMigratedMiddleware:
    """Answers 503 with the fix while the database is not migrated (JSON for the API)."""

    _migrated = False  # per process: once current, it stays current until the code changes

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not RequireMigratedMiddleware._migrated:
            message = not_migrated_message()
            if message:
                return _refusal(request, message)
            RequireMigratedMiddleware._migrated = True
        return self.get_response(request)


def _refusal(request, message: str):
    if _answers_json(request):
        return JsonResponse({"error": message}, status=503)
    body = format_html("<!doctype html><title>crawlerweb: database not migrated</title><p>{}</p>",
                       message[0].upper() + message[1:])
    return HttpResponse(body, status=503, content_type="text/html; charset=utf-8")


def _answers_json(request) -> bool:
    """The REST API, search.json and the dashboard's data answer JSON (crawlerweb/urls.py's
    names); so does a request that asks for it."""
    if "json" in request.headers.get("Accept", ""):
        return True
    try:
        name = resolve(request.path_info).url_name or ""
    except Resolver404:
        return False
    return name.startswith("api-") or name in ("search-json", "dashboard-data")
