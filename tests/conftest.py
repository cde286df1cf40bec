"""Shared fixtures. Tests run against the database DATABASE_URL names (the Makefile runs the
suite on PostgreSQL and again on SQLite) and reach the sample web on loopback only."""

import ipaddress
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from django.conf import global_settings
from django.db import connection
from django.test import override_settings

# The WARC archive of every test crawl, in-process and in child processes; removed at the end.
TEST_WARC_DIR = tempfile.mkdtemp(prefix="crawlerweb-test-warc-")

# Fast, loopback-allowed settings for tests; a test that checks the SSRF default overrides
# CRAWLER_ALLOWED_NETWORKS back to empty.
TEST_SETTINGS = dict(
    CRAWLER_ALLOWED_NETWORKS=[ipaddress.ip_network("127.0.0.0/8")],
    CRAWLER_DEFAULT_DELAY=0.05,
    CRAWLER_RETRY_BASE_DELAY=0.2,
    CRAWLER_DEPTH_LIMIT=6,
    CRAWLER_CONNECT_TIMEOUT=2.0,
    CRAWLER_READ_TIMEOUT=5.0,
    CRAWLER_TOTAL_DEADLINE=10.0,
    CRAWLER_WARC_DIR=TEST_WARC_DIR,
    # Test crawls log their requests beside their archive, never into the project's var/log.
    CRAWLER_CRAWL_LOG_FILE=f"{TEST_WARC_DIR}/crawl.jsonl",
    # Pages are analysed in the fetch threads: starting parse processes for each of the
    # suite's many short crawls costs more than they parse. tests/crawl/test_parsepool.py and the
    # crawl test it names run the pool.
    CRAWLER_PARSE_PROCESSES=0,
    # No /sitemap.xml asked of every host: the suite's crawls count their requests exactly.
    # The sitemap tests (tests/crawl/test_hostile_web.py) turn it on.
    CRAWLER_SITEMAP_GUESS=False,
    # A test's users (admin_client, the screens' logins) hash their password with MD5, not
    # PBKDF2's million rounds: about a second of CPU a user, and ~100 tests make one. The
    # defaults stay after it; no test checks a password in another process.
    PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher", *global_settings.PASSWORD_HASHERS],
)


def forget_limits():
    from frontier import importance, service, traps
    from frontier.limits import forget_cached_limits

    forget_cached_limits()
    service.forget_caches()  # the seen-cache and host ids of URLs a rolled-back test inserted
    importance.forget_trusted()  # and what a rolled-back test trusted or stopped
    traps.forget_stopped()


@pytest.fixture(autouse=True)
def crawler_test_settings(settings):
    from fetch import dns

    for name, value in TEST_SETTINGS.items():
        setattr(settings, name, value)
    forget_limits()
    dns.clear()  # tests fake DNS answers; none may leak into the next test
    yield
    forget_limits()
    dns.clear()


@pytest.fixture(scope="module")
def module_test_settings():
    """TEST_SETTINGS for module-scoped fixtures (the `settings` fixture is per test)."""
    with override_settings(**TEST_SETTINGS):
        forget_limits()
        yield
    forget_limits()


@pytest.fixture(scope="session", autouse=True)
def flush_by_delete():
    """After each transaction=True test pytest-django empties every table with Django's
    flush; on PostgreSQL that is one TRUNCATE of the 36 tables, which gives each table and
    index a new file (1.3 s under load; a few hundred such tests on the PostgreSQL run). A
    DELETE of their few rows empties them as well in milliseconds: the foreign keys Django
    makes are deferred to the commit, by which every table is empty. A flush that resets
    sequences still truncates."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences:
            return truncate(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        return [f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};" for table in tables]

    DatabaseOperations.sql_flush = sql_flush
    yield
    DatabaseOperations.sql_flush = truncate


def pytest_sessionfinish(session, exitstatus):
    from archive import warc

    warc.close()
    shutil.rmtree(TEST_WARC_DIR, ignore_errors=True)


# Fixtures through which a test reaches the database in this process.
DATABASE_FIXTURES = frozenset({"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback",
                               "django_db_blocker", "live_server", "admin_client", "admin_user", "django_user_model"})
# What a test module names when it reaches the database from another process (a crawl, a
# worker, a dispatcher, a bench run started with the suite's DATABASE_URL).
OTHER_PROCESS_DATABASE = re.compile(r"DATABASE_URL|manage\.py|distributed_cluster|child_env|migrated_sqlite")


def touches_a_database(item) -> bool:
    if item.get_closest_marker("django_db") or DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    module = getattr(item, "module", None)
    return bool(module and OTHER_PROCESS_DATABASE.search(Path(module.__file__).read_text()))


def pytest_collection_modifyitems(config, items):
    # A test that touches no database runs once, on the SQLite run (the PostgreSQL run has
    # the distributed tests, and the suite's time is the longer run's). `backend_free` says
    # so of a test whose module also reaches a database elsewhere.
    once = pytest.mark.skip(reason="no database difference to test: run once, on the SQLite run")
    if connection.vendor == "postgresql":
        for item in items:
            if "postgres" in item.keywords:
                continue
            if "backend_free" in item.keywords or not touches_a_database(item):
                item.add_marker(once)
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL (DATABASE_URL is not postgres://)")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def fake_dns(monkeypatch):
    """DNS is the internet's part: see crawl_helpers.install_fake_dns."""
    from .crawl_helpers import install_fake_dns

    return install_fake_dns(monkeypatch)


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture
def browser(monkeypatch):
    """Debian's headless Chromium under Playwright (`make setup-browser`), for the screens'
    tests (tests/console/test_dashboard.py, tests/console/test_admin_screens.py)."""
    # Playwright's sync API keeps an event loop running in this thread, which makes Django
    # refuse ORM calls as "async"; they are not (the documented pytest-django workaround).
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} not found: run `make setup-browser` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()
        # Playwright runs the test inside a greenlet with its own context variables, so the
        # test's ORM calls opened a connection of their own: close it, or the test database
        # cannot be dropped at the end of the session.
        from django.db import connections

        connections.close_all()
