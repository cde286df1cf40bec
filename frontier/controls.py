"""Steering a running crawl: crawl limits, excluded domains, lease housekeeping.

Called by the REST API, the admin and beat. Each change is one transaction, so an admin
never sees it half-applied, and bumps CrawlLimits.version so running workers pick it up
within LIMITS_RECHECK_SECONDS without a restart (see limits.py).
"""

import functools
import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

import idna
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from . import idle
from .limits import Limits, cached_limits, current_limits, domain_excluded
from .models import CrawlLimits, ExcludedDomain, Host, ServerAddress, Url, UrlState

_LABEL = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")
UNSET = object()  # "leave this limit as it is" (None means "back to the setting's default")


class InvalidDomain(ValueError):
    """The message says what is wrong, for API answers."""


def canonical_domain(raw: str) -> str:
    """A domain as the exclusion list keeps it: lower case, IDNA (punycode), no trailing
    dot. IP literals are kept as they are. Raises InvalidDomain with a reason."""
    text = raw.strip().lower().rstrip(".")
    if not text:
        raise InvalidDomain("empty domain")
    if "/" in text or (":" in text and not _is_ip(text)):
        raise InvalidDomain(f"{raw!r} is not a domain name (give 'example.com', not a URL)")
    if _is_ip(text):
        return text
    try:
        ascii_name = idna.encode(text, uts46=True).decode("ascii")
    except idna.IDNAError as exc:
        raise InvalidDomain(f"{raw!r} is not a valid domain name: {exc}") from None
    if len(ascii_name) > 253 or not all(_LABEL.match(label) for label in ascii_name.split(".")):
        raise InvalidDomain(f"{raw!r} is not a valid domain name")
    return ascii_name


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]"))
        return True
    except ValueError:
        return False


@dataclass(frozen=True)
class LimitsChange:
    limits: Limits  # what is in force now
    added_domains: list[str]  # newly excluded (already-excluded ones are not repeated)
    stopped_urls: int  # queued URLs of newly excluded domains, now state "excluded"


def update_limits(*, depth_limit=UNSET, url_length_limit=UNSET, max_urls_per_host=UNSET,
                  exclude_domains: list[str] = ()) -> LimitsChange:
    """Apply a validated change in one transaction. Domains must be canonical_domain()s.

    Limits take effect at admission (links found from now on); a newly excluded domain
    also stops its queued URLs at once, and fetch workers drop it mid-batch."""
    with transaction.atomic():
        row, _ = CrawlLimits.objects.select_for_update().get_or_create(pk=1)
        for field, value in (("depth_limit", depth_limit), ("url_length_limit", url_length_limit),
                             ("max_urls_per_host", max_urls_per_host)):
            if value is not UNSET:
                setattr(row, field, value)
        known = set(ExcludedDomain.objects.filter(domain__in=list(exclude_domains))
                    .values_list("domain", flat=True))
        added = sorted(set(exclude_domains) - known)
        ExcludedDomain.objects.bulk_create([ExcludedDomain(domain=d) for d in added])
        stopped = stop_queued_urls(added)
        row.save()  # bumps the version: workers re-read limits and the exclusion list
    return LimitsChange(current_limits(), added, stopped)


def stop_queued_urls(domains: list[str]) -> int:
    """Mark the queued URLs of these domains (and their subdomains) excluded."""
    host_ids = hosts_under(domains)
    if not host_ids:
        return 0
    return Url.objects.filter(host_id__in=host_ids, state=UrlState.QUEUED).update(
        state=UrlState.EXCLUDED, outcome="excluded_domain")


def resume_excluded_urls(domains: list[str]) -> int:
    """A domain taken off the list: its stopped URLs wait in the queue again (unless another
    excluded domain still covers their host)."""
    still = set(ExcludedDomain.objects.values_list("domain", flat=True))
    host_ids = [host_id for host_id, origin in _hosts_under(domains)
                if not domain_excluded(origin_hostname(origin), still)]
    if not host_ids:
        return 0
    with transaction.atomic():
        queued = Url.objects.filter(host_id__in=host_ids, state=UrlState.EXCLUDED, outcome="excluded_domain").update(
            state=UrlState.QUEUED, outcome="", next_fetch_at=timezone.now())
        if queued:
            idle.wake(host_ids=host_ids)
    return queued


def hosts_under(domains: list[str]) -> list[int]:
    """Ids of hosts whose name is one of these domains or a subdomain of one."""
    return [host_id for host_id, _ in _hosts_under(domains)]


def _hosts_under(domains: list[str]) -> list[tuple[int, str]]:
    # A substring scan of the host table narrows it down, Python decides: an admin action,
    # rare, and correct for ports, schemes and names that merely contain the domain.
    if not domains:
        return []
    narrowing = Q()
    for domain in domains:
        narrowing |= Q(origin__contains=domain)
    wanted = set(domains)
    candidates = Host.objects.filter(narrowing).values_list("id", "origin").iterator()
    return [(host_id, origin) for host_id, origin in candidates if domain_excluded(origin_hostname(origin), wanted)]


@functools.lru_cache(maxsize=4096)  # fetch workers ask once per request, for few origins
def origin_hostname(origin: str) -> str:
    host = urlsplit(origin).hostname or ""
    return f"[{host}]" if ":" in host else host


def origin_excluded(origin: str) -> bool:
    """For fetch threads, between requests: the cached limits (no database query; a
    session engine's lease keeper refreshes them every few seconds)."""
    return cached_limits().is_excluded(origin_hostname(origin))


def sweep_expired_leases() -> int:
    """Clear leases whose holder died (beat, every minute). Expired leases are already free
    for dispatchers; clearing them keeps the admin and the metrics honest."""
    now = timezone.now()
    cleared = Host.objects.filter(leased_until__lte=now).update(lease_owner="", leased_until=None)
    ServerAddress.objects.filter(leased_until__lte=now).update(lease_owner="", leased_until=None)
    return cleared


def set_trusted_domains(weights: dict[str, int | None]) -> list[tuple[str, int]]:
    """Trust domains with a weight (score points their URLs gain; frontier/importance.py),
    or drop them (None), in one transaction; domains must be canonical_domain()s. Returns
    the whole list, by domain. URLs admitted from now on are scored with it."""
    from .importance import forget_trusted
    from .models import TrustedDomain

    with transaction.atomic():
        for domain, weight in sorted(weights.items()):
            if weight is None:
                TrustedDomain.objects.filter(domain=domain).delete()
            else:
                TrustedDomain.objects.update_or_create(domain=domain, defaults={"weight": weight})
    forget_trusted()
    return trusted_domains()


def trusted_domains() -> list[tuple[str, int]]:
    from .models import TrustedDomain

    return list(TrustedDomain.objects.order_by("domain").values_list("domain", "weight"))
