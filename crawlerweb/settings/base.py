"""Django's own settings: keys, apps, middleware, the database, static files, logging."""

import os
import secrets
from pathlib import Path

import dj_database_url

from .env import BASE_DIR, SettingError, envbool, envchoice, envfloat, envfloatlist, envint, envlist, envnetworks, envstr  # noqa: F401

DEBUG = envbool("DEBUG", False)
# Known keys (earlier defaults, the deployment example's placeholder) and weak ones, by
# Django's own test (security.W009): refused with DEBUG off, the process stops.
INSECURE_SECRET_KEYS = frozenset({"dev-only-insecure-key-set-SECRET_KEY-in-production", "CHANGE-ME-long-random"})


def weak_secret_key(value: str) -> bool:
    return (value in INSECURE_SECRET_KEYS or "CHANGE-ME" in value or value.startswith("django-insecure-")
            or len(value) < 50 or len(set(value)) < 5)


def secret_key(value: str, key_file: Path, debug: bool) -> str:
    """SECRET_KEY from the environment, refused when weak (unless DEBUG); without one, this
    installation's own random key, made once in `key_file` (mode 0600): a laptop needs no
    setup and never shares a key with another. Several web servers behind one name set the
    same SECRET_KEY instead (docs/deploy/env.example)."""
    if value:
        if weak_secret_key(value) and not debug:
            raise SettingError("SECRET_KEY is a known or weak key (under 50 characters, or a placeholder): set a "
                               "long random one, e.g. python -c 'import secrets; print(secrets.token_urlsafe(50))'")
        return value
    try:
        if not key_file.exists():
            _write_once(key_file, secrets.token_urlsafe(50))
        stored = key_file.read_text(encoding="ascii").strip()
    except OSError as exc:
        raise SettingError(f"no SECRET_KEY set and {key_file} cannot be written ({exc.strerror}): set SECRET_KEY "
                           "or CRAWLER_SECRET_KEY_FILE") from None
    if weak_secret_key(stored) and not debug:
        raise SettingError(f"{key_file} holds a weak key: delete it (a new one is made) or set SECRET_KEY")
    return stored


def _write_once(path: Path, text: str) -> None:
    """Make `path` hold `text` (mode 0600) unless another process made it first. The file
    appears whole or not at all (a hard link of a finished draft), so a process starting at
    the same instant never reads it half written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(text + "\n")
    try:
        os.link(draft, path)
    except FileExistsError:
        pass  # the other process's key is the installation's
    finally:
        draft.unlink()


SECRET_KEY = secret_key(os.environ.get("SECRET_KEY", ""),
                        Path(envstr("CRAWLER_SECRET_KEY_FILE", str(BASE_DIR / "var" / "secret_key"))), DEBUG)
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
# Behind a TLS-terminating proxy (docs/deploy): HTTPS only, secure cookies, HSTS; the proxy
# says the request came over HTTPS with X-Forwarded-Proto. `manage.py check --deploy` is
# clean with these on.
CRAWLER_HTTPS = envbool("CRAWLER_HTTPS", False)
if CRAWLER_HTTPS:
    SECURE_SSL_REDIRECT = SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", True)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_celery_beat",
    "frontier",
    "fetch",
    "archive",
    "indexer",
    "crawl",
    "console",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Serves static files (admin, dashboard) from gunicorn: no separate web server needed.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # A database that is not migrated gets one line saying so, before anything reads a table.
    "common.schema_check.RequireMigratedMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "crawlerweb.urls"
WSGI_APPLICATION = "crawlerweb.wsgi.application"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

# Embedded default: a SQLite file next to manage.py. Distributed: DATABASE_URL=postgres://…
DATABASE_URL = envstr("DATABASE_URL", f"sqlite:///{BASE_DIR / 'crawlerweb.sqlite3'}")
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=600)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers proceed while the crawler's threads write; IMMEDIATE transactions take
    # the write lock up front so two writers never deadlock upgrading a read lock.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 60,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # Tests need a file (not shared-cache memory) so the crawler's threads can share it; one
    # per database named, so two test runs on two DATABASE_URLs never share one.
    (BASE_DIR / "var").mkdir(exist_ok=True)
    _stem = Path(DATABASES["default"]["NAME"]).stem
    DATABASES["default"]["TEST"] = {"NAME": str(BASE_DIR / "var" / f"test-{_stem}.sqlite3")}
else:  # PostgreSQL
    # Persistent connections, checked before reuse. A Celery worker's session engine
    # (crawl/engine.py) keeps one per database thread (its intake, lease keeper and
    # writer) for the process's life; its task thread never touches the database.
    DATABASES["default"]["CONN_MAX_AGE"] = None
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    if envbool("CRAWLER_DB_POOL", False):
        # psycopg's pool, for web servers that want one. Not for Celery prefork workers:
        # Celery's Django fixup closes the whole process's pool around every task that
        # touched the database (celery/fixups/django.py), under the engine's threads.
        DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool keeps connections open, not Django
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1,
            "max_size": envint("CRAWLER_DB_POOL_SIZE", 20, minimum=1),
            "timeout": 30,
        }
    if envbool("CRAWLER_DB_SERVER_SIDE_BINDING", True):
        # Parameters travel apart from the SQL text, so a worker no longer escapes and quotes
        # every page's text into its INSERT (docs/benchmarks.md). psycopg then prepares
        # statements it runs often: turn this off behind PgBouncer's transaction pooling
        # older than 1.21, which cannot carry prepared statements.
        DATABASES["default"].setdefault("OPTIONS", {})["server_side_binding"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
# The admin writes times as the rest of the project does: "2026-11-26 18:08:02 UTC".
FORMAT_MODULE_PATH = ["crawlerweb.formats"]
USE_I18N = False
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise wants it, even when empty
# Chart.js for the dashboard comes from npm (package.json, pinned; `make setup` installs it).
CHARTJS_DIR = BASE_DIR / "node_modules" / "chart.js" / "dist"
STATICFILES_DIRS = [("vendor/chartjs", CHARTJS_DIR)] if CHARTJS_DIR.is_dir() else []
# Serve straight from the apps' static folders, so no collectstatic step can be forgotten.
WHITENOISE_USE_FINDERS = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "WARNING")},
}
