"""crawlerweb settings: everything comes from the environment, read here and only here.

The typed helpers fail loudly on a malformed value (healthchecks' `envbool` idea): a typo in
a limit must stop the process at start, not crawl with a silently different policy.
Every crawler limit is a named `CRAWLER_*` setting with a safe default; README.md lists them.
"""

import os
import secrets
from pathlib import Path

import dj_database_url

from crawlerweb.netpolicy import endpoint, parse_allowed

BASE_DIR = Path(__file__).resolve().parent.parent


class SettingError(ValueError):
    pass


def envstr(name: str, default: str) -> str:
    return os.environ.get(name, default)


def envbool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise SettingError(f"{name}={raw!r} is not a boolean (use true/false)")


def _envnumber(name: str, default, minimum, cast, kind: str, maximum=None):
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = cast(raw)
    except ValueError:
        raise SettingError(f"{name}={raw!r} is not {kind}") from None
    if value < minimum:
        raise SettingError(f"{name}={value} is below its minimum {minimum}")
    if maximum is not None and value > maximum:
        raise SettingError(f"{name}={value} is above its maximum {maximum}")
    return value


def envint(name: str, default: int, minimum: int = 0, maximum: int | None = None) -> int:
    return _envnumber(name, default, minimum, int, "an integer", maximum)


def envfloat(name: str, default: float, minimum: float = 0.0) -> float:
    return _envnumber(name, default, minimum, float, "a number")


def envchoice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name) or default
    if value not in choices:
        raise SettingError(f"{name}={value!r} is not one of {', '.join(choices)}")
    return value


def envlist(name: str, default: str = "") -> list[str]:
    raw = os.environ.get(name, default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def envfloatlist(name: str, default: str) -> list[float]:
    values = []
    for item in envlist(name, default):
        try:
            values.append(float(item))
        except ValueError:
            raise SettingError(f"{name}: {item!r} is not a number") from None
        if values[-1] < 0:
            raise SettingError(f"{name}: {item!r} must be >= 0")
    return values


def envnetworks(name: str) -> list:
    """CIDR networks, each optionally with :port or :low-high (crawlerweb.netpolicy)."""
    networks = []
    for item in envlist(name):
        try:
            networks.append(parse_allowed(item))
        except ValueError as exc:
            raise SettingError(f"{name}: {item!r} is not a CIDR network with an optional port: {exc}") from None
    return networks


# --- Django ---------------------------------------------------------------------------

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
    "crawlerweb.schema_check.RequireMigratedMiddleware",
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

# --- Celery (distributed mode) ----------------------------------------------------------

CELERY_BROKER_URL = envstr("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
# Every choice below is deliberate; docs/robustness.md explains each against failures.
# Messages are hints, the database is the truth: a fetch message names a host lease. If a
# worker dies holding one, the lease expires and a dispatcher hands the host out again, so a
# lost message costs nothing. Early ack therefore; late ack would only add redeliveries of
# stale leases (begin_lease refuses them, but each costs a round trip).
CELERY_TASK_ACKS_LATE = False
CELERY_TASK_REJECT_ON_WORKER_LOST = False  # meaningful only with late ack
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False  # idem
# One message reserved per pool slot: a dying worker strands as little as possible.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Redis: reserved-but-unacked messages of a dead worker come back after the visibility
# timeout; by then their leases (CRAWLER_LEASE_SECONDS, far shorter) have expired and the
# redelivered message is refused by its stale token. Short socket timeouts and a health
# check make workers notice a restarted Redis quickly and reconnect.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": 3600,
    "socket_timeout": 10,
    "socket_connect_timeout": 5,
    "health_check_interval": 10,
    "retry_on_timeout": True,
}
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None  # forever: a broker restart must not stop a worker
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery 5.7.0 can crash a worker while it reconnects to a restarted Redis: see the module.
CELERY_WORKER_CONSUMER = "crawlerweb.worker_consumer:Consumer"
# A task only hands a host session to its process's engine (crawl/engine.py), which holds
# CRAWLER_SESSIONS_PER_PROCESS of them on CRAWLER_FETCH_THREADS threads; the pool's job is
# to give each core an engine: prefork, one child per core (parsing needs the CPU, and one
# Python process uses one core).
CELERY_WORKER_POOL = envstr("CELERY_WORKER_POOL", "prefork")
CELERY_WORKER_CONCURRENCY = envint("CELERY_WORKER_CONCURRENCY", os.cpu_count() or 1, minimum=1)
# CELERY_TASK_TIME_LIMIT is set from CRAWLER_LEASE_SECONDS at the end of this file.
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_SEND_TASK_EVENTS = True
CELERY_TASK_SEND_SENT_EVENT = True
# django-celery-beat's DatabaseScheduler behind a leader lease: a second beat waits.
CELERY_BEAT_SCHEDULER = "console.beatleader:LeaderScheduler"

# --- Crawler limits (alphabetical; each documented in README.md) -------------------------

# Without a robots.txt Crawl-delay, the gap after a response is this many times the host's
# running average response time (Heritrix's delay factor), clamped between
# CRAWLER_DEFAULT_DELAY and CRAWLER_MAX_ADAPTIVE_DELAY. 0 turns adaptive delay off.
CRAWLER_ADAPTIVE_DELAY_FACTOR = envfloat("CRAWLER_ADAPTIVE_DELAY_FACTOR", 5.0)
# Largest REST API request body, bytes (413 beyond it).
CRAWLER_API_MAX_BODY_BYTES = envint("CRAWLER_API_MAX_BODY_BYTES", 1024 * 1024, minimum=1024)
# Most domains one POST /url/limit may exclude.
CRAWLER_API_MAX_DOMAINS = envint("CRAWLER_API_MAX_DOMAINS", 1000, minimum=1)
# Most URLs one POST /seed/urls may add.
CRAWLER_API_MAX_SEEDS = envint("CRAWLER_API_MAX_SEEDS", 10_000, minimum=1)
# Networks the crawler may connect to although they are private/loopback/reserved, each
# optionally limited to a port or port range (127.0.1.0/24:8300, [::1/128]:8300-8399).
# Empty by default: the crawler refuses them all (SSRF guard). Tests allow 127.0.0.0/8.
CRAWLER_ALLOWED_NETWORKS = envnetworks("CRAWLER_ALLOWED_NETWORKS")
# Extra host:port endpoints never fetched, even inside an allowed network. The crawler's own
# services are refused without being listed: the database and the broker (from their URLs),
# the web server (WEB_BIND), Flower (FLOWER_ADDRESS, FLOWER_PORT) and the metrics exporter
# (CRAWLER_METRICS_ADDRESS, CRAWLER_METRICS_PORT).
CRAWLER_REFUSED_ENDPOINTS = envlist("CRAWLER_REFUSED_ENDPOINTS")
# Computed: the crawler's own services as (host, port): fetch.http refuses them whatever is allowed.
CRAWLER_OWN_SERVICES = [e for e in (
    endpoint(DATABASE_URL, 5432), endpoint(CELERY_BROKER_URL, 6379),
    endpoint(envstr("WEB_BIND", "127.0.0.1:8000")),
    endpoint(f"{envstr('FLOWER_ADDRESS', '127.0.0.1')}:{envstr('FLOWER_PORT', '5555')}"),
    # the metrics exporter (CRAWLER_METRICS_ADDRESS/_PORT below; port 0 = off, nothing to refuse)
    endpoint(f"{envstr('CRAWLER_METRICS_ADDRESS', '127.0.0.1')}:{envstr('CRAWLER_METRICS_PORT', '0')}"),
    *(endpoint(item) for item in CRAWLER_REFUSED_ENDPOINTS),
) if e]
# Seconds to wait for a TCP connection.
CRAWLER_CONNECT_TIMEOUT = envfloat("CRAWLER_CONNECT_TIMEOUT", 5.0, minimum=0.1)
# Seconds between two refreshes of the dashboard page.
CRAWLER_DASHBOARD_REFRESH_SECONDS = envfloat("CRAWLER_DASHBOARD_REFRESH_SECONDS", 5.0, minimum=1.0)
# PostgreSQL: the writers commit without waiting for the WAL flush (synchronous_commit off for
# their connection): a database crash loses at most their last ~0.6 s of results, which are
# fetched again (crawl/writer.py). Leases and everything else stay synchronous.
CRAWLER_DB_ASYNC_COMMIT = envbool("CRAWLER_DB_ASYNC_COMMIT", True)
# Where links from a seed may lead unless the seed says otherwise (`crawl --scope`,
# `seed --scope`, the API's "scope"): "host" (the seed's host), "domain" (its registered
# domain and subdomains), "prefix" (URLs under the seed's path) or "web" (anywhere).
CRAWLER_DEFAULT_SCOPE = envchoice("CRAWLER_DEFAULT_SCOPE", "host", ("host", "domain", "prefix", "web"))
# Seconds between two requests to one host when its robots.txt names no Crawl-delay.
CRAWLER_DEFAULT_DELAY = envfloat("CRAWLER_DEFAULT_DELAY", 1.0)
# Seconds a resolved host name is reused (getaddrinfo reports no TTL).
CRAWLER_DNS_CACHE_SECONDS = envfloat("CRAWLER_DNS_CACHE_SECONDS", 300.0)
# Names kept in each process's DNS cache at most.
CRAWLER_DNS_CACHE_SIZE = envint("CRAWLER_DNS_CACHE_SIZE", 100_000, minimum=1)
# Seconds a failed lookup is remembered, and a host waits after its resolver failed.
CRAWLER_DNS_NEGATIVE_SECONDS = envfloat("CRAWLER_DNS_NEGATIVE_SECONDS", 60.0)
# Links deeper than this many hops from a seed are not admitted (traps, endless calendars).
CRAWLER_DEPTH_LIMIT = envint("CRAWLER_DEPTH_LIMIT", 20)
# Hosts one dispatcher round may lease at most.
CRAWLER_DISPATCH_BATCH = envint("CRAWLER_DISPATCH_BATCH", 64, minimum=1)
# Shares of a dispatch round's hosts drawn from the score bands 0, 1 and 2 (best first); a
# band's unused share goes to the others. Under load (the fetch queues or a crawler's
# sessions leave a fifth of a round or less, or leases past 80 % of their limit) the second
# set: the best pages first when not all can go.
CRAWLER_DISPATCH_SHARES = envfloatlist("CRAWLER_DISPATCH_SHARES", "60,30,10")
CRAWLER_DISPATCH_SHARES_LOADED = envfloatlist("CRAWLER_DISPATCH_SHARES_LOADED", "80,15,5")
for _name in ("CRAWLER_DISPATCH_SHARES", "CRAWLER_DISPATCH_SHARES_LOADED"):
    if len(globals()[_name]) != 3 or not sum(globals()[_name]):
        raise SettingError(f"{_name}: three shares (bands 0, 1, 2), not all zero")
# Seconds an idle dispatcher first waits before looking for ready hosts again.
CRAWLER_DISPATCH_IDLE_WAIT = envfloat("CRAWLER_DISPATCH_IDLE_WAIT", 0.05, minimum=0.001)
# Longest wait of an idle dispatcher (the wait doubles after each empty round).
CRAWLER_DISPATCH_IDLE_WAIT_MAX = envfloat("CRAWLER_DISPATCH_IDLE_WAIT_MAX", 0.4, minimum=0.001)
# RSS and Atom feeds a page announces (<link rel="alternate" type="application/rss+xml">) are
# read for their items' links, with the sitemap limits (CRAWLER_SITEMAP_MAX_*).
CRAWLER_FEEDS = envbool("CRAWLER_FEEDS", True)
# Threads per process that send requests and parse the answers, for all its host sessions
# (a waiting session holds none): enough to keep CRAWLER_SESSIONS_PER_PROCESS paced hosts
# busy with slow servers; parsing holds the GIL only while it runs.
CRAWLER_FETCH_THREADS = envint("CRAWLER_FETCH_THREADS", 32, minimum=1)
# Number of Celery fetch queues (fetch.0 … fetch.N-1); a host always maps to the same one.
CRAWLER_FETCH_QUEUES = envint("CRAWLER_FETCH_QUEUES", 4, minimum=1)
# The virtual user-agents of Gemini's robots.txt companion whose rules a gemini:// capsule's
# robots.txt applies to us as well as `*` and our product token: we index and archive.
CRAWLER_GEMINI_ROBOTS_AGENTS = envlist("CRAWLER_GEMINI_ROBOTS_AGENTS", "indexer,archiver")
# Network failures in a row (timeouts, refused or reset connections) after which a host is
# paused: its URLs wait untried instead of burning their attempts (circuit breaker).
CRAWLER_HOST_FAILURE_THRESHOLD = envint("CRAWLER_HOST_FAILURE_THRESHOLD", 5, minimum=1)
# First pause of a tripped host, seconds; it doubles with every further failure.
CRAWLER_HOST_PAUSE_SECONDS = envfloat("CRAWLER_HOST_PAUSE_SECONDS", 60.0)
# Longest pause of a tripped host, seconds.
CRAWLER_HOST_PAUSE_MAX = envfloat("CRAWLER_HOST_PAUSE_MAX", 6 * 3600.0)
# Group commit: what all sessions of a process fetch is written by one writer, in groups of
# at most this many pages (bounds what a write holds in memory; 1 = each URL alone) …
CRAWLER_COMMIT_GROUP_PAGES = envint("CRAWLER_COMMIT_GROUP_PAGES", 64, minimum=1)
# … gathered for at most this many seconds (what a crash can lose: those URLs stay queued
# and are fetched again after their lease expires) …
CRAWLER_COMMIT_INTERVAL = envfloat("CRAWLER_COMMIT_INTERVAL", 0.25, minimum=0.0)
# … with at most this many pages waiting for the writer; beyond it, sessions wait for it.
CRAWLER_COMMIT_MAX_PENDING_PAGES = envint("CRAWLER_COMMIT_MAX_PENDING_PAGES", 256, minimum=1)
# Each dispatching process, at its start and this often, wakes hosts set aside as
# having nothing waiting that a writer queued URLs for without waking them (the previous
# release's workers), and sets aside hosts left with nothing (frontier/idle.py); 0 = never.
CRAWLER_IDLE_SWEEP_SECONDS = envfloat("CRAWLER_IDLE_SWEEP_SECONDS", 300.0, minimum=0.0)
# Seconds a lease on a host lasts. A session's engine renews it every sixth of this; a
# lease nobody began (its message lost) comes back after this. Keep it above twice connect +
# deadline + read timeouts: a request then never outlives the lease it started under.
CRAWLER_LEASE_SECONDS = envfloat("CRAWLER_LEASE_SECONDS", 120.0, minimum=1.0)
# A crawling process whose heartbeat (CRAWLER_HEARTBEAT_SECONDS) is older than this is taken
# for dead: the other processes release the leases it runs (crawl/recovery.py), and its own
# sessions stop sending once its last heartbeat is older than this less one heartbeat.
# At least two heartbeats.
CRAWLER_LEASE_STALE_SECONDS = envfloat("CRAWLER_LEASE_STALE_SECONDS", 15.0, minimum=0.2)
# Seconds the running `celery beat` holds the lead (console/beatleader.py): another beat,
# started by mistake, waits; it takes over this long after the leader died.
CRAWLER_BEAT_LEASE_SECONDS = envfloat("CRAWLER_BEAT_LEASE_SECONDS", 30.0, minimum=1.0)
# Seconds between beat's sweeps that clear expired leases (housekeeping: they are free anyway).
CRAWLER_LEASE_SWEEP_SECONDS = envfloat("CRAWLER_LEASE_SWEEP_SECONDS", 60.0, minimum=1.0)
# Host sessions outstanding at once across all dispatchers and workers.
CRAWLER_MAX_ACTIVE_LEASES = envint("CRAWLER_MAX_ACTIVE_LEASES", 10_000, minimum=1)
# Longest gap, seconds, adaptive delay may impose (a Crawl-delay is capped separately).
CRAWLER_MAX_ADAPTIVE_DELAY = envfloat("CRAWLER_MAX_ADAPTIVE_DELAY", 30.0)
# Transient failures (5xx, timeouts, connection errors) retried this many times in a row
# (CRAWLER_RETRY_BASE_DELAY apart, doubling), then the URL backs off on the
# CRAWLER_FAILURE_BACKOFF ladder, and after it goes to the dead-letter table.
CRAWLER_MAX_ATTEMPTS = envint("CRAWLER_MAX_ATTEMPTS", 4, minimum=1)
# Response bodies are cut off past this many (decompressed) bytes.
CRAWLER_MAX_BODY_BYTES = envint("CRAWLER_MAX_BODY_BYTES", 5 * 1024 * 1024, minimum=1024)
# A robots.txt Crawl-delay above this is capped (a hostile value must not park a host).
CRAWLER_MAX_CRAWL_DELAY = envfloat("CRAWLER_MAX_CRAWL_DELAY", 60.0)
# Characters of visible text kept and indexed per page.
CRAWLER_MAX_INDEX_CHARS = envint("CRAWLER_MAX_INDEX_CHARS", 200_000, minimum=1000)
# Links taken from one page at most.
CRAWLER_MAX_LINKS_PER_PAGE = envint("CRAWLER_MAX_LINKS_PER_PAGE", 1000, minimum=1)
# Redirect hops followed (each through the frontier) before giving up.
CRAWLER_MAX_REDIRECTS = envint("CRAWLER_MAX_REDIRECTS", 3)
# Back-pressure: messages the fetch queues may hold. At 80% of it (the frontier design
# seed's rule) dispatchers stop sending until workers catch up.
CRAWLER_MAX_QUEUED_MESSAGES = envint("CRAWLER_MAX_QUEUED_MESSAGES", 1000, minimum=1)
# A Retry-After longer than this many seconds is capped.
CRAWLER_MAX_RETRY_AFTER = envfloat("CRAWLER_MAX_RETRY_AFTER", 3600.0)
# URLs longer than this many characters are not admitted.
CRAWLER_MAX_URL_LENGTH = envint("CRAWLER_MAX_URL_LENGTH", 2048, minimum=16)
# URLs admitted per registered domain at most, all its hosts together (a trap of endless
# subdomains, each under the per-host quota).
CRAWLER_MAX_URLS_PER_DOMAIN = envint("CRAWLER_MAX_URLS_PER_DOMAIN", 1_000_000, minimum=1)
# URLs admitted per host at most (bounds traps the depth limit does not catch).
CRAWLER_MAX_URLS_PER_HOST = envint("CRAWLER_MAX_URLS_PER_HOST", 100_000, minimum=1)
# Oldest metrics sample, seconds, /metrics serves; an older one is retaken (a table scan).
CRAWLER_METRICS_MAX_AGE = envfloat("CRAWLER_METRICS_MAX_AGE", 15.0)
# Hours of metrics samples kept (the dashboard's history).
CRAWLER_METRICS_RETENTION_HOURS = envfloat("CRAWLER_METRICS_RETENTION_HOURS", 24.0, minimum=0.1)
# Seconds between beat's metrics samples (the interval of its periodic task when created).
CRAWLER_METRICS_SAMPLE_SECONDS = envfloat("CRAWLER_METRICS_SAMPLE_SECONDS", 15.0, minimum=1.0)
# Mirrors (frontier/traps.py): a host with at least this many pages stored, of which at least
# CRAWLER_MIRROR_MIN_SHARE were shared with another host (copies either way), is stopped like
# a trap: no more of its URLs admitted, its queued ones set aside (outcome mirror_host); only
# ever the one of two hosts found later. 4 pages: a mirror costs about a tenth of a
# 50-page site after its first copy (make bench-harvest). 0 = off.
CRAWLER_MIRROR_MIN_PAGES = envint("CRAWLER_MIRROR_MIN_PAGES", 4)
CRAWLER_MIRROR_MIN_SHARE = envfloat("CRAWLER_MIRROR_MIN_SHARE", 0.8)
# Duplicates across URLs by text (indexer/neardup.py): a page whose normalized text is within
# this many SimHash bits of an indexed page's (3, about 1 % of its word pairs; Manku et al.'s
# choice for near-duplicate web pages) is stored as its duplicate and not indexed; 0 = the
# same normalized text only, -1 = off. At most 4.
CRAWLER_NEAR_DUPLICATE_BITS = envint("CRAWLER_NEAR_DUPLICATE_BITS", 3, minimum=-1, maximum=4)
# Texts shorter than this many words are not compared (too little to tell a copy).
CRAWLER_NEAR_DUPLICATE_MIN_WORDS = envint("CRAWLER_NEAR_DUPLICATE_MIN_WORDS", 50)
# Worker processes that parse and analyse pages for a crawling process (crawl/parsepool.py):
# -1 (default) = one per core but one for `manage.py crawl`, one per Celery worker child
# (its prefork pool is a process per core already); 0 = parse in the fetch threads.
CRAWLER_PARSE_PROCESSES = envint("CRAWLER_PARSE_PROCESSES", -1, minimum=-1)
# Seconds a page's analysis may take in a parse process; past it, or if the process dies,
# the process is replaced and the page is settled as "parse_failed".
CRAWLER_PARSE_TIMEOUT = envfloat("CRAWLER_PARSE_TIMEOUT", 30.0, minimum=0.1)
# Politeness scope: "host" (one request at a time and a delay per host name), "ip" (per
# server address, so many names on one server share one budget) or "both".
CRAWLER_POLITENESS_SCOPE = envchoice("CRAWLER_POLITENESS_SCOPE", "both", ("host", "ip", "both"))
# Seconds to wait for the next bytes of a response.
CRAWLER_READ_TIMEOUT = envfloat("CRAWLER_READ_TIMEOUT", 10.0, minimum=0.1)
# First retry waits this many seconds; each further one twice as long.
CRAWLER_RETRY_BASE_DELAY = envfloat("CRAWLER_RETRY_BASE_DELAY", 30.0)
# Seconds a fetched robots.txt is trusted (RFC 9309 suggests at most 24 hours).
CRAWLER_ROBOTS_CACHE_SECONDS = envfloat("CRAWLER_ROBOTS_CACHE_SECONDS", 86400.0)
# Seconds before robots.txt is tried again after a 5xx or a network error (disallow-all
# meanwhile, RFC 9309 section 2.3.1.4).
CRAWLER_ROBOTS_ERROR_SECONDS = envfloat("CRAWLER_ROBOTS_ERROR_SECONDS", 300.0)
# Bytes of robots.txt read at most (RFC 9309 requires at least 500 KiB be parsed).
CRAWLER_ROBOTS_MAX_BYTES = envint("CRAWLER_ROBOTS_MAX_BYTES", 512_000, minimum=1024)
# URLs a crawling process remembers being in the frontier, so that links to them never
# reach the database (frontier/seen.py); ~80 bytes each. Past it, the cache starts again.
CRAWLER_SEEN_CACHE_SIZE = envint("CRAWLER_SEEN_CACHE_SIZE", 1_000_000, minimum=0)
# Which pages first (frontier/importance.py): a URL's score is the sum of these points.
# Per link of depth from the seed (negative: near pages first).
CRAWLER_SCORE_DEPTH = envint("CRAWLER_SCORE_DEPTH", -10, minimum=-1000, maximum=1000)
# The home page (path "/"), and a section root (one path segment).
CRAWLER_SCORE_HOME = envint("CRAWLER_SCORE_HOME", 40, minimum=-1000, maximum=1000)
CRAWLER_SCORE_SECTION = envint("CRAWLER_SCORE_SECTION", 10, minimum=-1000, maximum=1000)
# Per distinct host linking to the URL (other than its own), up to CRAWLER_SCORE_INLINK_HOSTS_MAX hosts.
CRAWLER_SCORE_INLINK_HOST = envint("CRAWLER_SCORE_INLINK_HOST", 12, minimum=0, maximum=1000)
CRAWLER_SCORE_INLINK_HOSTS_MAX = envint("CRAWLER_SCORE_INLINK_HOSTS_MAX", 5, minimum=0, maximum=1000)
# Links from other hosts to known URLs (and hosts) are held in a crawling process and
# counted in one statement once the oldest has waited this long or this many are held
# (frontier/inlinks.py): a score rises up to that late. 0 s: counted with every batch.
CRAWLER_INLINK_FLUSH_SECONDS = envfloat("CRAWLER_INLINK_FLUSH_SECONDS", 2.0, minimum=0.0)
CRAWLER_INLINK_FLUSH_PAIRS = envint("CRAWLER_INLINK_FLUSH_PAIRS", 5000, minimum=1, maximum=1_000_000)
# Scores at or above the first go to band 0, at or above the second to band 1, the rest to 2.
# A host's standing: points × log2(1 + distinct other hosts linking to any of its pages),
# added to its next URL's score when sessions compete for a crawling process's fetch
# threads (a page of a site the web links to from many hosts before one of an obscure site).
CRAWLER_SCORE_SITE_INLINK_HOST = envint("CRAWLER_SCORE_SITE_INLINK_HOST", 6, minimum=0, maximum=1000)
CRAWLER_SCORE_BAND_HIGH = envint("CRAWLER_SCORE_BAND_HIGH", 20, minimum=-30000, maximum=30000)
CRAWLER_SCORE_BAND_LOW = envint("CRAWLER_SCORE_BAND_LOW", -30, minimum=-30000, maximum=30000)
CRAWLER_SCORE_BANDS = (CRAWLER_SCORE_BAND_HIGH, min(CRAWLER_SCORE_BAND_LOW, CRAWLER_SCORE_BAND_HIGH))
# Seconds a worker holds a host for one session, pacing it itself on one connection; the
# URLs left at the end wait for the host's next session (on any worker).
CRAWLER_SESSION_SECONDS = envfloat("CRAWLER_SESSION_SECONDS", 60.0, minimum=0.1)
# URLs one host session carries at most (fewer when the host's delay allows fewer).
CRAWLER_SESSION_MAX_URLS = envint("CRAWLER_SESSION_MAX_URLS", 100, minimum=1)
# When links stored by its process add (or raise) a URL of a session's host that would be
# among the next this many the session fetches, the session asks (without waiting) for its
# host's best this many and swaps them in: a page worth more, found while a session works
# through its list, does not wait for the list's end. 0 = a session keeps the list it was
# leased with (and asks for more only at its end).
CRAWLER_SESSION_REFRESH_URLS = envint("CRAWLER_SESSION_REFRESH_URLS", 10, minimum=0)
# Host sessions one process holds at once (each keeps one connection open).
CRAWLER_SESSIONS_PER_PROCESS = envint("CRAWLER_SESSIONS_PER_PROCESS", 1000, minimum=1)
# Hold only as many sessions as the process can pace at their hosts' delays (crawl/capacity.py:
# a cap found by measuring how late due sessions start, between a quarter of
# CRAWLER_FETCH_THREADS and CRAWLER_SESSIONS_PER_PROCESS); off, a process takes sessions up
# to CRAWLER_SESSIONS_PER_PROCESS and, when it cannot keep up, paces every host slower.
CRAWLER_SESSIONS_PACED = envbool("CRAWLER_SESSIONS_PACED", True)
# Sitemaps as link sources (indexer/linksources.py): the Sitemap: lines of robots.txt are
# admitted and read for their URLs (a sitemap index one level deep); the sitemaps.org limits
# per sitemap: URLs read, and bytes (the body cap for a sitemap, and for its gzip inflated).
CRAWLER_SITEMAPS = envbool("CRAWLER_SITEMAPS", True)
# When robots.txt names no sitemap, try /sitemap.xml (one request per host; a 404 is final).
CRAWLER_SITEMAP_GUESS = envbool("CRAWLER_SITEMAP_GUESS", True)
CRAWLER_SITEMAP_MAX_URLS = envint("CRAWLER_SITEMAP_MAX_URLS", 50_000, minimum=1)
CRAWLER_SITEMAP_MAX_BYTES = envint("CRAWLER_SITEMAP_MAX_BYTES", 50 * 1024 * 1024, minimum=1024)
# Links below its sitemap a URL the sitemap lists counts as (its depth, for the score and the
# depth limit, until a link finds it shallower). Most sitemaps list every page of a site
# without <priority>, most of them articles two links below the home (home, section, page);
# at one link a big site's articles outranked its own listing pages (docs/benchmarks.md,
# "What any order could reach, and sitemaps that list every page").
CRAWLER_SITEMAP_ENTRY_DEPTH = envint("CRAWLER_SITEMAP_ENTRY_DEPTH", 2, minimum=1, maximum=20)
# --- Prometheus: the crawling processes' counters (crawl/instruments.py, README
# "Prometheus and Grafana"); the frontier's figures are the web's GET /metrics.
# Port of this machine's metrics exporter, served by the Celery worker's main process,
# `manage.py dispatch` or `manage.py crawl` (the first to bind it; the others take over if
# it stops). 0 (default): no exporter, so no process opens a port it was not asked to.
CRAWLER_METRICS_PORT = envint("CRAWLER_METRICS_PORT", 0, maximum=65535)
# Address the exporter binds: loopback by default; a private address for a remote Prometheus.
CRAWLER_METRICS_ADDRESS = envstr("CRAWLER_METRICS_ADDRESS", "127.0.0.1")
# prometheus-client's multiprocess mode: the directory where every process of this machine
# writes its series for the one exporter to add up (one per machine, local disk or tmpfs,
# never shared between machines). With an exporter port and no directory given, var/prometheus.
# prometheus_client reads the environment variable when it is first imported, which is after
# the settings in every entry point (manage.py, celery, gunicorn): hence os.environ.
PROMETHEUS_MULTIPROC_DIR = envstr("PROMETHEUS_MULTIPROC_DIR", "") or (
    str(BASE_DIR / "var" / "prometheus") if CRAWLER_METRICS_PORT else "")
if PROMETHEUS_MULTIPROC_DIR:
    Path(PROMETHEUS_MULTIPROC_DIR).mkdir(parents=True, exist_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = PROMETHEUS_MULTIPROC_DIR
# Search backend: dotted path to a class, or empty to pick by database vendor.
CRAWLER_SEARCH_BACKEND = envstr("CRAWLER_SEARCH_BACKEND", "")
# Search ranking (indexer/ranking.py, docs/search.md): two-group BM25F. The title+URL
# group's weight against the headings+body group, the URL path's and the headings' weights
# inside their groups, BM25's saturation k1 and length normalisation b.
CRAWLER_SEARCH_TITLE_WEIGHT = envfloat("CRAWLER_SEARCH_TITLE_WEIGHT", 2.5)
CRAWLER_SEARCH_URL_WEIGHT = envfloat("CRAWLER_SEARCH_URL_WEIGHT", 0.25)
CRAWLER_SEARCH_HEADINGS_WEIGHT = envfloat("CRAWLER_SEARCH_HEADINGS_WEIGHT", 64.0)
CRAWLER_SEARCH_K1 = envfloat("CRAWLER_SEARCH_K1", 1.2)
CRAWLER_SEARCH_B = envfloat("CRAWLER_SEARCH_B", 0.75)
# Weight of each part of a queried identifier scored as a term of its own (os, path, join
# for os.path.join), against 1.0 for the whole.
CRAWLER_SEARCH_PART_WEIGHT = envfloat("CRAWLER_SEARCH_PART_WEIGHT", 0.5)
# Matching pages ranked exactly per query (the database pre-orders; pagination stops there).
CRAWLER_SEARCH_CANDIDATES = envint("CRAWLER_SEARCH_CANDIDATES", 100, minimum=10)
# Matches counted at most for "N results" (and for a term's document frequency).
CRAWLER_SEARCH_COUNT_LIMIT = envint("CRAWLER_SEARCH_COUNT_LIMIT", 10_000, minimum=100)
# Characters of a page's text searched for a snippet's first match.
CRAWLER_SEARCH_SNIPPET_SCAN_CHARS = envint("CRAWLER_SEARCH_SNIPPET_SCAN_CHARS", 50_000, minimum=1000)
# Characters of a query used (the rest is cut, and the answer says so).
CRAWLER_SEARCH_MAX_QUERY_CHARS = envint("CRAWLER_SEARCH_MAX_QUERY_CHARS", 500, minimum=10)
# Seconds a process reuses the corpus statistics (document count, average field lengths).
CRAWLER_SEARCH_STATS_SECONDS = envfloat("CRAWLER_SEARCH_STATS_SECONDS", 60.0)
# Wall-clock seconds one response (headers and body) may take in all.
CRAWLER_TOTAL_DEADLINE = envfloat("CRAWLER_TOTAL_DEADLINE", 30.0, minimum=0.5)
# Traps that stop themselves (frontier/traps.py): a URL pattern with at least this many pages
# stored, of which at most CRAWLER_TRAP_MAX_YIELD were new text (not duplicates), is stopped:
# no more of its URLs admitted, its queued ones set aside; on a host with a stopped pattern
# already, a quarter as many pages (at least 3) suffice. 0 = off.
CRAWLER_TRAP_MIN_PAGES = envint("CRAWLER_TRAP_MIN_PAGES", 10)
CRAWLER_TRAP_MAX_YIELD = envfloat("CRAWLER_TRAP_MAX_YIELD", 0.1)
# The User-Agent header sent with every request.
CRAWLER_USER_AGENT = envstr(
    "CRAWLER_USER_AGENT", "crawlerweb/0.1 (+https://github.com/crawlerweb/crawlerweb)"
)
# The product token robots.txt groups are matched against (RFC 9309 section 2.2.1: the
# crawler's name, not its whole User-Agent string, case-insensitively). Empty: the
# User-Agent's first token ("crawlerweb").
CRAWLER_ROBOTS_TOKEN = envstr("CRAWLER_ROBOTS_TOKEN", "")
# Liveness (crawl/liveness.py, the dashboard): every session engine and dispatcher writes
# a heartbeat row at most every CRAWLER_HEARTBEAT_SECONDS …
CRAWLER_HEARTBEAT_SECONDS = envfloat("CRAWLER_HEARTBEAT_SECONDS", 5.0, minimum=0.1)
# … a process not heard from for this many seconds shows as stale (dead or stuck) …
CRAWLER_HEARTBEAT_STALE_SECONDS = envfloat("CRAWLER_HEARTBEAT_STALE_SECONDS", 30.0, minimum=1.0)
# … and its row is deleted after this many hours.
CRAWLER_HEARTBEAT_RETENTION_HOURS = envfloat("CRAWLER_HEARTBEAT_RETENTION_HOURS", 24.0, minimum=0.1)
if CRAWLER_LEASE_STALE_SECONDS < 2 * CRAWLER_HEARTBEAT_SECONDS:
    raise SettingError(f"CRAWLER_LEASE_STALE_SECONDS={CRAWLER_LEASE_STALE_SECONDS} must be at least two "
                       f"heartbeats (CRAWLER_HEARTBEAT_SECONDS={CRAWLER_HEARTBEAT_SECONDS})")
# The crawl shows as stalled when URLs have been due for this many seconds on hosts free to
# be fetched and no process has sent a request for as long (keep it above
# CRAWLER_TOTAL_DEADLINE: one slow response is not a stall).
CRAWLER_STALLED_SECONDS = envfloat("CRAWLER_STALLED_SECONDS", 60.0, minimum=1.0)
# Beat saves each periodic task's last_run_at after every task it sends (Celery's default:
# every 3 minutes), so the dashboard's "last beat run" is current; a few writes a minute.
CELERY_BEAT_SYNC_EVERY = 1
# Directory of the WARC archive (archive.warc). Workers on several machines and the web
# server (which reads records back for the admin) should share it, e.g. over NFS.
CRAWLER_WARC_DIR = envstr("CRAWLER_WARC_DIR", str(BASE_DIR / "var" / "warc"))
# Write every response to the WARC archive. Off: nothing is archived, no raw-response links.
CRAWLER_WARC_ENABLED = envbool("CRAWLER_WARC_ENABLED", True)
# gzip level of WARC records, 1 (fastest) to 9 (smallest). On 26 KB pages level 1 costs
# 0.45 ms per page and level 6 1.2 ms, for 8% smaller files (docs/benchmarks.md).
CRAWLER_WARC_GZIP_LEVEL = envint("CRAWLER_WARC_GZIP_LEVEL", 1, minimum=1, maximum=9)
# Bytes after which a WARC file is closed and the next one started (1 GB is the usual size).
CRAWLER_WARC_MAX_FILE_BYTES = envint("CRAWLER_WARC_MAX_FILE_BYTES", 1_000_000_000, minimum=65536)
# Where the archive is replayed: the URL of `manage.py replay`'s collection, such as
# http://127.0.0.1:8090/crawl. Set, the search page, the search API and the admin link each
# document to its archived copy there (archive/replay.py::capture_url); empty: no such links.
CRAWLER_REPLAY_URL = envstr("CRAWLER_REPLAY_URL", "").rstrip("/")


# --- the crawl log (crawl/crawllog.py, docs: README "The crawl log") ------------------------
# File every process appends one JSON line per request to (a path relative to the project
# directory is taken from there); empty: no file.
CRAWLER_CRAWL_LOG_FILE = envstr("CRAWLER_CRAWL_LOG_FILE", "var/log/crawl.jsonl")
if CRAWLER_CRAWL_LOG_FILE:
    CRAWLER_CRAWL_LOG_FILE = str(BASE_DIR / CRAWLER_CRAWL_LOG_FILE)  # an absolute path stays as it is
# Bytes after which the file is rotated to crawl.jsonl.1 (…, up to CRAWLER_CRAWL_LOG_BACKUPS
# old files). 0: never rotated here (for logrotate; the file is reopened after a rename).
CRAWLER_CRAWL_LOG_MAX_BYTES = envint("CRAWLER_CRAWL_LOG_MAX_BYTES", 100_000_000)
CRAWLER_CRAWL_LOG_BACKUPS = envint("CRAWLER_CRAWL_LOG_BACKUPS", 10)
# Also keep the entries in the database (the admin's Crawl log, across machines).
CRAWLER_CRAWL_LOG_DB = envbool("CRAWLER_CRAWL_LOG_DB", True)
# Hours the database keeps an entry (the file keeps what its rotation keeps).
CRAWLER_CRAWL_LOG_RETENTION_HOURS = envfloat("CRAWLER_CRAWL_LOG_RETENTION_HOURS", 24.0, minimum=0.01)
# Entries a process holds for the file and for the database at most; beyond it new ones
# are dropped (and counted in the log) rather than slowing the fetch threads down.
CRAWLER_CRAWL_LOG_BUFFER = envint("CRAWLER_CRAWL_LOG_BUFFER", 20_000, minimum=1)

# --- continuous crawling (frontier/recrawl.py, docs: README "Continuous crawling") ---------
# Recrawl budget: revisits per day the scheduler plans for and beat releases at most
# (a hard cap, spent where it buys the most freshness; new URLs do not count against it).
CRAWLER_RECRAWL_BUDGET_PER_DAY = envfloat("CRAWLER_RECRAWL_BUDGET_PER_DAY", 10_000.0, minimum=0.0)
# Bounds of every revisit interval, seconds (1 hour and 60 days).
CRAWLER_RECRAWL_MIN_INTERVAL = envfloat("CRAWLER_RECRAWL_MIN_INTERVAL", 3600.0, minimum=0.001)
CRAWLER_RECRAWL_MAX_INTERVAL = envfloat("CRAWLER_RECRAWL_MAX_INTERVAL", 60 * 86400.0, minimum=0.001)
# A page with nothing known of its rate (no revisit yet, no Last-Modified) gets its first
# look as soon as the budget allows; when many wait for theirs, their looks are spread so that
# they take at most CRAWLER_RECRAWL_EXPLORE_SHARE of the budget (known pages keep the rest).
# Before the first plan with pages (a crawl's first minutes) a revisit is planned
# CRAWLER_RECRAWL_EXPLORE_INTERVAL seconds on (adaptive starts every page there too).
CRAWLER_RECRAWL_EXPLORE_SHARE = envfloat("CRAWLER_RECRAWL_EXPLORE_SHARE", 0.5, minimum=0.0)
CRAWLER_RECRAWL_EXPLORE_INTERVAL = envfloat("CRAWLER_RECRAWL_EXPLORE_INTERVAL", 86400.0, minimum=0.001)
# A first response's Last-Modified counts as time the page was seen unchanged, at most this
# many seconds (30 days; a date can lie). Most of the web changes rarely (Fetterly et al.
# 2003), and its dates say so before any revisit. 0: first dates count for nothing.
CRAWLER_RECRAWL_FIRST_LAST_MODIFIED_AGE = envfloat("CRAWLER_RECRAWL_FIRST_LAST_MODIFIED_AGE", 30 * 86400.0,
                                                   minimum=0.0)
# The plan fits the crawl's prior over change rates and solves the budget's price on a random
# sample of this many pages (frontier/planning.py): the spend is known to about 2 % at 2,000.
CRAWLER_RECRAWL_PLAN_SAMPLE = envint("CRAWLER_RECRAWL_PLAN_SAMPLE", 2000, minimum=1)
# The change-rate belief's memory: an observation this many visits old counts half as much
# as the latest, so a page that changes its habits is judged by its recent ones; a shorter
# memory forgets what a page that keeps its habits showed (a half-life of 20 visits reached 52 %
# of the oracle's gain on the simulator's webs, 55 % without fading: docs/benchmarks.md).
# 0: never forget.
CRAWLER_RECRAWL_MEMORY_VISITS = envfloat("CRAWLER_RECRAWL_MEMORY_VISITS", 100.0, minimum=0.0)
# A revisit that came late (release period, queue, session) schedules the next one from when
# it was due, making up a lag of up to half the interval: lags do not stretch every interval.
CRAWLER_RECRAWL_ON_SCHEDULE = envbool("CRAWLER_RECRAWL_ON_SCHEDULE", True)
# Budget a quiet moment leaves unspent is carried over, up to this many seconds' worth of it
# (the release task's token bucket; never less than two release periods): revisits that
# fall due in a bunch go out together instead of waiting, and each one making the next late.
CRAWLER_RECRAWL_CARRY_SECONDS = envfloat("CRAWLER_RECRAWL_CARRY_SECONDS", 600.0, minimum=0.0)
# Importance: a URL's freshness counts CRAWLER_RECRAWL_PRIORITY_WEIGHT per link of depth's
# worth of its score (frontier/importance.py: priority / |CRAWLER_SCORE_DEPTH|): 1.5 makes a
# page worth 1.5 times a page one link deeper, a home page (+40) five times one beside it.
CRAWLER_RECRAWL_PRIORITY_WEIGHT = envfloat("CRAWLER_RECRAWL_PRIORITY_WEIGHT", 1.5, minimum=1.0)
# How revisit intervals are chosen: "optimal" (freshness-optimal under the budget, Cho &
# Garcia-Molina 2003), or the benchmark's baselines "uniform", "adaptive" (Nutch's
# AdaptiveFetchSchedule) and "oracle" (optimal with the true rates read from
# CRAWLER_RECRAWL_ORACLE_RATES, a JSON-lines file of {"url", "rate_per_day"}).
CRAWLER_RECRAWL_POLICY = envchoice("CRAWLER_RECRAWL_POLICY", "optimal", ("optimal", "uniform", "adaptive", "oracle"))
CRAWLER_RECRAWL_ORACLE_RATES = envstr("CRAWLER_RECRAWL_ORACLE_RATES", "")
# Beat: every this many seconds, due revisits are moved back into the fetch queue …
CRAWLER_RECRAWL_RELEASE_SECONDS = envfloat("CRAWLER_RECRAWL_RELEASE_SECONDS", 60.0, minimum=0.01)
# … at most this many per run …
CRAWLER_RECRAWL_RELEASE_BATCH = envint("CRAWLER_RECRAWL_RELEASE_BATCH", 5000, minimum=1)
# … and every this many seconds the budget's price is solved again from all estimates.
CRAWLER_RECRAWL_PLAN_SECONDS = envfloat("CRAWLER_RECRAWL_PLAN_SECONDS", 600.0, minimum=0.01)
# A revisit whose text moved by at most this many bits of its 64-bit SimHash is noise (a
# rotating ad, a changed word in a footer), not a change (indexer/fingerprint.py).
CRAWLER_CHANGE_SIMHASH_THRESHOLD = envint("CRAWLER_CHANGE_SIMHASH_THRESHOLD", 4, maximum=64)
# A revisit whose text lost and gained at most this many words in all (counted against the
# stored copy's words) is noise too, whatever its SimHash distance: a rotating one-word
# sponsor line loses one word and gains one. 0: the distance alone decides.
CRAWLER_CHANGE_NOISE_WORDS = envint("CRAWLER_CHANGE_NOISE_WORDS", 4, minimum=0)
# Once the short retries are spent, a failing URL is tried again after each of these
# many seconds in turn (1, 2, 4, 8 weeks), then dead-lettered. Empty: dead-letter at once.
CRAWLER_FAILURE_BACKOFF = envfloatlist("CRAWLER_FAILURE_BACKOFF", "604800,1209600,2419200,4838400")
# Gone (404/410), denied (401/403) and other settled non-2xx pages are checked again after
# this many seconds; a page gone twice in a row leaves the index.
CRAWLER_GONE_RECHECK_SECONDS = envfloat("CRAWLER_GONE_RECHECK_SECONDS", 30 * 86400.0, minimum=0.001)
# `manage.py crawl` (one-shot) stops when everything left is due later than this many
# seconds (a robots.txt answering 5xx, a long Retry-After, a back-off) and lists it; a
# later `crawl` resumes it.
CRAWLER_CRAWL_DEFER_AFTER = envfloat("CRAWLER_CRAWL_DEFER_AFTER", 60.0)

# Hard task time limit. A task only hands a session over (waiting at most 30 s for room in
# its engine), so this never fires in practice; if it did, a prefork child and every
# session it holds would be killed (their leases expire and nothing is lost).
CELERY_TASK_TIME_LIMIT = int(CRAWLER_LEASE_SECONDS) + 60

# --- PDFs (issue 54) ---
# A PDF is read up to this many pages (its text, title and link annotations; the rest of
# the file is archived, not indexed). docs/pdf.md.
CRAWLER_PDF_MAX_PAGES = envint("CRAWLER_PDF_MAX_PAGES", 200, minimum=1)
# Characters of a PDF's text kept and indexed (CRAWLER_MAX_INDEX_CHARS for pages): 200
# pages of a dense manual are ~550,000 (docs/pdf.md).
CRAWLER_PDF_MAX_CHARS = envint("CRAWLER_PDF_MAX_CHARS", 1_000_000, minimum=1000)
# Each parse process's data memory (RLIMIT_DATA, bytes): a page needing more (a PDF
# decompression bomb) ends the process, which is replaced, and settles the URL. 0: no limit.
CRAWLER_PARSE_MEMORY_LIMIT = envint("CRAWLER_PARSE_MEMORY_LIMIT", 1024 * 1024 * 1024, minimum=0)
