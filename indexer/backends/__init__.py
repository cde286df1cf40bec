"""Pick the search backend for a database: CRAWLER_SEARCH_BACKEND (a dotted class path) or,
when empty, the one matching the connection's vendor (Wagtail's get_search_backend idea)."""

from django.conf import settings
from django.db import connections
from django.utils.module_loading import import_string

from .base import SearchBackend, SearchHit, SearchResults

BY_VENDOR = {
    "postgresql": "indexer.backends.postgres.PostgresSearchBackend",
    "sqlite": "indexer.backends.sqlite.SQLiteSearchBackend",
}


def get_search_backend(using: str = "default") -> SearchBackend:
    path = settings.CRAWLER_SEARCH_BACKEND or BY_VENDOR.get(connections[using].vendor)
    if not path:
        raise LookupError(f"no search backend for database vendor {connections[using].vendor!r}")
    return import_string(path)(using=using)


__all__ = ["get_search_backend", "SearchBackend", "SearchHit", "SearchResults"]
