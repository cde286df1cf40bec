"""A database that is not migrated gets one line saying what to do, from every management
command and from the web (common/schema_check.py) — not a traceback from deep in a query.

Each case runs in its own process against its own SQLite file, as a user would run it."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = [["search", "Gazette"], ["status"], ["crawl", "http://127.0.0.1:9/"], ["reindex"],
            ["seed", "http://127.0.0.1:9/"], ["createapikey", "someone"], ["dispatch"]]


def run(args: list[str], database: Path, *, code: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{database}", "CELERY_BROKER_URL": "memory://"}
    command = [sys.executable, "-c", code] if code else [sys.executable, "manage.py", *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args", COMMANDS, ids=lambda args: args[0])
def test_every_command_refuses_an_empty_database_in_one_line(tmp_path, args):
    database = tmp_path / "new.sqlite3"
    result = run(args, database)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"CommandError: the SQLite database {database} has no tables yet: "
        "run `python manage.py migrate` first"]


def test_a_database_one_migration_behind_is_named_with_the_missing_migration(tmp_path):
    database = tmp_path / "old.sqlite3"
    assert run(["migrate", "-v0"], database).returncode == 0
    # The frontier's last migration not applied (the release before), whichever it is now.
    last, before = sorted(p.stem for p in (ROOT / "frontier" / "migrations").glob("0*.py"))[-1:-3:-1]
    assert run(["migrate", "-v0", "frontier", before[:4]], database).returncode == 0
    result = run(["status"], database)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"CommandError: the SQLite database {database} is 1 migration behind "
        f"(frontier.{last} first): run `python manage.py migrate` first")
    assert run(["migrate", "-v0"], database).returncode == 0
    assert run(["status"], database).returncode == 0


WEB = textwrap.dedent("""
    import json, django
    django.setup()
    from django.core.management import call_command
    from django.test import Client
    client = Client(HTTP_HOST='127.0.0.1')
    seen = {}
    for path in ("/", "/search.json?q=x", "/dashboard/"):
        response = client.get(path)
        seen[path] = [response.status_code, response["Content-Type"], response.content.decode()]
    call_command("migrate", verbosity=0)
    seen["after migrate"] = client.get("/?q=x").status_code
    print(json.dumps(seen))
""")


def test_the_web_answers_503_with_the_fix_until_migrated_then_serves(tmp_path):
    database = tmp_path / "web.sqlite3"
    result = run([], database, code="import os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', "
                                    "'crawlerweb.settings')\n" + WEB)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    line = f"the SQLite database {database} has no tables yet: run `python manage.py migrate` first"
    status, kind, body = seen["/"]
    assert (status, kind) == (503, "text/html; charset=utf-8")
    assert "The" + line[3:] in body and "Traceback" not in body
    status, kind, body = seen["/search.json?q=x"]
    assert (status, kind, json.loads(body)) == (503, "application/json", {"error": line})
    assert seen["/dashboard/"][0] == 503
    # A running server needs no restart once `migrate` has run.
    assert seen["after migrate"] == 200
