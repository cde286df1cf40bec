"""What a host's cached robots.txt answer means: the one definition the fetcher, the
metrics and the admin share.

RFC 9309 section 2.3.1, by what the last fetch of /robots.txt returned:
- 2xx: the file's rules apply (RULES);
- 3xx after the redirects we follow, and 4xx: "unavailable", crawl anything (ALLOW_ALL);
- 5xx, 429 and no answer at all (network error, refused address): "unreachable", crawl
  nothing until it is tried again (DISALLOW_ALL). The RFC names 5xx; 429 "Too Many
  Requests" is the server asking us to slow down, so it is treated like 5xx (as Google
  does), never as permission.
"""

from django.db import models
from django.db.models import Q


class RobotsVerdict(models.TextChoices):
    NOT_FETCHED = "not_fetched", "not fetched yet"
    RULES = "rules", "fetched (2xx): its rules apply"
    ALLOW_ALL = "allow_all", "unavailable (3xx/4xx): allow all"
    DISALLOW_ALL = "disallow_all", "unreachable (5xx, 429, network): disallow all for now"


def unreachable(status: int | None) -> bool:
    """A robots.txt fetch that gave no usable answer (status None: no response)."""
    return status is None or status >= 500 or status == 429


def classify(status: int | None, error: str, fetched: bool = True) -> RobotsVerdict:
    """The verdict for a host row's (robots_status, robots_error). A non-empty error is
    stored exactly when the answer was unreachable (crawl.robots.save)."""
    if not fetched:
        return RobotsVerdict.NOT_FETCHED
    if error:
        return RobotsVerdict.DISALLOW_ALL
    if status is not None and 200 <= status < 300:
        return RobotsVerdict.RULES
    return RobotsVerdict.ALLOW_ALL


_FETCHED = Q(robots_fetched_at__isnull=False)
_RULES_STATUS = Q(robots_status__gte=200, robots_status__lt=300)

# The same verdicts as filters on the Host table (metrics, admin): each host is in one.
VERDICT_FILTERS = {
    RobotsVerdict.NOT_FETCHED: Q(robots_fetched_at__isnull=True),
    RobotsVerdict.RULES: _FETCHED & Q(robots_error="") & _RULES_STATUS,
    RobotsVerdict.ALLOW_ALL: _FETCHED & Q(robots_error="") & ~_RULES_STATUS,
    RobotsVerdict.DISALLOW_ALL: _FETCHED & ~Q(robots_error=""),
}
