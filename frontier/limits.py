"""The crawl limits in force: the admin-editable CrawlLimits row over the settings defaults.

Workers run for days, so they must see admin changes without a restart; reading the row on
every link would cost a query per page. We cache a snapshot and re-read it when the row's
version moves, checking the version at most every LIMITS_RECHECK_SECONDS.
"""

import threading
import time
from dataclasses import dataclass

from django.conf import settings
from django.dispatch import receiver

from .models import CrawlLimits, ExcludedDomain, Host, limits_changed

LIMITS_RECHECK_SECONDS = 2.0


@dataclass(frozen=True)
class Limits:
    depth_limit: int
    url_length_limit: int
    max_urls_per_host: int
    max_redirects: int
    excluded_domains: frozenset[str]
    version: int
    paused: bool = False  # the whole crawl (an operator's pause)
    paused_hosts: frozenset[int] = frozenset()  # hosts an operator paused

    def is_excluded(self, host: str) -> bool:
        return domain_excluded(host, self.excluded_domains)

    def excluded_by(self, host: str) -> str | None:
        """The excluded domain that covers host (itself or a parent), if any."""
        labels = host.split(".")
        return next((d for d in (".".join(labels[i:]) for i in range(len(labels))) if d in self.excluded_domains),
                    None)


def domain_excluded(host: str, domains: frozenset[str] | set[str]) -> bool:
    """True when host is one of the domains or a subdomain of one."""
    if not domains:
        return False
    labels = host.split(".")
    return any(".".join(labels[i:]) in domains for i in range(len(labels)))


# The limits an operator may set in CrawlLimits, and the setting an empty one falls back to.
LIMIT_SETTINGS = {"depth_limit": "CRAWLER_DEPTH_LIMIT", "url_length_limit": "CRAWLER_MAX_URL_LENGTH",
                  "max_urls_per_host": "CRAWLER_MAX_URLS_PER_HOST"}

_lock = threading.Lock()
_cached: Limits | None = None
_checked_at = 0.0


def _load() -> Limits:
    row = CrawlLimits.objects.filter(pk=1).first()
    return Limits(
        **{field: _pick(row, field, getattr(settings, setting)) for field, setting in LIMIT_SETTINGS.items()},
        max_redirects=settings.CRAWLER_MAX_REDIRECTS,
        excluded_domains=frozenset(ExcludedDomain.objects.values_list("domain", flat=True)),
        version=row.version if row else 0,
        paused=bool(row and row.paused_at),
        paused_hosts=frozenset(Host.objects.filter(paused_at__isnull=False).values_list("id", flat=True)),
    )


def _pick(row, field, default):
    value = getattr(row, field, None) if row else None
    return default if value is None else value


def current_limits() -> Limits:
    global _cached, _checked_at
    now = time.monotonic()
    with _lock:
        if _cached is not None and now - _checked_at < LIMITS_RECHECK_SECONDS:
            return _cached
    version = CrawlLimits.objects.filter(pk=1).values_list("version", flat=True).first() or 0
    with _lock:
        if _cached is None or _cached.version != version:
            _cached = _load()
        _checked_at = now
        return _cached


def cached_limits() -> Limits:
    """The last snapshot, without asking the database whether it changed (fetch threads,
    which touch no database; a session engine's lease keeper keeps it fresh with
    current_limits()). Loads it once if there is none yet."""
    with _lock:
        if _cached is not None:
            return _cached
    return current_limits()


def forget_cached_limits() -> None:
    """Drop the snapshot and the scopes loaded under it (tests, and right after an admin
    change or a rolled-back admission in this process)."""
    global _cached
    from .scope import forget_loaded_scopes

    with _lock:
        _cached = None
    forget_loaded_scopes()


@receiver(limits_changed)
def _limits_changed(sender, **kwargs) -> None:
    # This process sees its own change at once; others notice the version within seconds.
    forget_cached_limits()
