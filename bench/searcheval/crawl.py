"""Our crawler into a fresh database per backend, reused by later runs.

The crawl is the product's own path: `manage.py crawl --scope host` (the embedded runner)
with DATABASE_URL pointing at
- SQLite: a fresh file var/searcheval/sqlite.sqlite3;
- PostgreSQL: a fresh database crawlerweb_searcheval on 127.0.0.1:5432 (dropped and
  created, then `manage.py migrate`; another --workdir gets crawlerweb_searcheval_<hash>).

Settings the evaluation overrides (CRAWL_OVERRIDES; everything else is the default), and
why: this measures search, not politeness or the archive.
- CRAWLER_ALLOWED_NETWORKS=127.0.0.0/8: the sites are on loopback;
- CRAWLER_DEFAULT_DELAY=0: the sites are ours (the adaptive delay, 5x the response time,
  still applies);
- CRAWLER_DEPTH_LIMIT=100: release notes and API pages sit deep in the toctree;
- CRAWLER_MAX_LINKS_PER_PAGE=20000: an index page links to thousands of places;
- CRAWLER_WARC_ENABLED=0: the raw responses are not needed.

A finished crawl leaves var/searcheval/crawl-<backend>.json (the sites' base URLs, the
package versions, a hash of the indexer's code, the crawl's summary and time). A later run
reuses the database, unless --recrawl, when that file names the same packages and versions,
the indexer's code (indexer/**/*.py: parsing, analysis and the index layout decide what a
document's entry is) is unchanged, and `manage.py migrate --check` finds nothing to apply;
otherwise it says why and crawls again.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PG_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
PG_DATABASE = "crawlerweb_searcheval"
CRAWL_OVERRIDES = {
    "CRAWLER_ALLOWED_NETWORKS": "127.0.0.0/8",
    "CRAWLER_DEFAULT_DELAY": "0",
    "CRAWLER_DEPTH_LIMIT": "100",
    "CRAWLER_MAX_LINKS_PER_PAGE": "20000",
    "CRAWLER_WARC_ENABLED": "0",
}


def pg_database(workdir: Path) -> str:
    """crawlerweb_searcheval for var/searcheval; another --workdir gets a database of its own."""
    workdir = Path(workdir).resolve()
    if workdir == ROOT / "var" / "searcheval":
        return PG_DATABASE
    return f"{PG_DATABASE}_{hashlib.sha256(str(workdir).encode()).hexdigest()[:8]}"


def database_url(backend: str, workdir: Path) -> str:
    if backend == "sqlite":
        return f"sqlite:///{(workdir / 'sqlite.sqlite3').resolve()}"
    return f"postgres://postgres@127.0.0.1:5432/{pg_database(workdir)}"


def child_env(url: str, **extra) -> dict:
    """Our environment, the database and the crawl overrides; PYTHONPATH reaches the repo."""
    env = dict(os.environ) | CRAWL_OVERRIDES | {"DATABASE_URL": url} | extra
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return env


def manage(url: str, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=child_env(url), check=True,
                          **kwargs)


def fresh_database(backend: str, workdir: Path) -> str:
    """An empty, migrated database for this backend; its URL."""
    url = database_url(backend, workdir)
    if backend == "sqlite":
        workdir.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{workdir / 'sqlite.sqlite3'}{suffix}").unlink(missing_ok=True)
    else:
        import psycopg

        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{pg_database(workdir)}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{pg_database(workdir)}"')
    manage(url, "migrate", "-v0")
    return url


def marker_path(backend: str, workdir: Path) -> Path:
    return workdir / f"crawl-{backend}.json"


def code_fingerprint() -> str:
    """A hash of the indexer's source: documents indexed by other code are not reused."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "indexer").rglob("*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def reusable(backend: str, workdir: Path, versions: dict) -> tuple[dict | None, str]:
    """(the record of a finished crawl of these very packages on this backend, "") if it
    can be reused, else (None, why not)."""
    marker = marker_path(backend, workdir)
    if not marker.exists():
        return None, "no finished crawl"
    record = json.loads(marker.read_text())
    if record.get("versions") != versions:
        return None, "other packages or versions"
    if record.get("code") != code_fingerprint():
        return None, "the indexer's code changed since"
    if backend == "sqlite" and not (workdir / "sqlite.sqlite3").exists():
        return None, "the database is gone"
    check = subprocess.run([sys.executable, "manage.py", "migrate", "--check"], cwd=ROOT,
                           env=child_env(record["database_url"]), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    if check.returncode != 0:
        return None, "the database is gone or has migrations to apply"
    return record, ""


def crawl(backend: str, workdir: Path, sites: dict, versions: dict, timeout: float = 3600.0) -> dict:
    """Crawl the served sites (name -> base URL) into a fresh database; the crawl record."""
    code = code_fingerprint()  # before: the code may change while it crawls
    marker_path(backend, workdir).unlink(missing_ok=True)
    url = fresh_database(backend, workdir)
    log = workdir / f"crawl-{backend}.log"
    start = time.monotonic()
    with open(log, "w") as stderr:
        result = manage(url, "crawl", "--scope", "host", "--json", "--no-progress", "--max-seconds", str(timeout),
                        *sites.values(), stdout=subprocess.PIPE, stderr=stderr, text=True)
    seconds = time.monotonic() - start
    summary = json.loads(result.stdout)
    record = {"backend": backend, "database_url": url, "sites": sites, "versions": versions, "code": code,
              "seconds": round(seconds, 1), "overrides": CRAWL_OVERRIDES, "summary": summary,
              "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    marker_path(backend, workdir).write_text(json.dumps(record, indent=1) + "\n")
    return record
