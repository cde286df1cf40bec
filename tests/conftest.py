"""Shared fixtures. Tests run against the database DATABASE_URL names (the Makefile runs the
suite on PostgreSQL and again on SQLite) and reach the sample web on loopback only."""

import ipaddress

import pytest
from django.db import connection

LOOPBACK = [ipaddress.ip_network("127.0.0.0/8")]


@pytest.fixture(autouse=True)
def crawler_test_settings(settings):
    """Fast, loopback-allowed defaults; a test that checks the SSRF default overrides it."""
    settings.CRAWLER_ALLOWED_NETWORKS = LOOPBACK
    settings.CRAWLER_DEFAULT_DELAY = 0.05
    settings.CRAWLER_RETRY_BASE_DELAY = 0.2
    settings.CRAWLER_DEPTH_LIMIT = 6
    settings.CRAWLER_CONNECT_TIMEOUT = 2.0
    settings.CRAWLER_READ_TIMEOUT = 5.0
    settings.CRAWLER_TOTAL_DEADLINE = 10.0
    from frontier.limits import forget_cached_limits

    forget_cached_limits()
    yield
    forget_cached_limits()


def pytest_collection_modifyitems(config, items):
    if connection.vendor == "postgresql":
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL (DATABASE_URL is not postgres://)")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)
