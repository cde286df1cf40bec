"""An operator's steering of a running crawl: pause and resume (the whole crawl or hosts),
and the per-host and per-URL actions (fetch now, reset the breaker, refetch robots.txt,
recrawl now).

The admin's actions and the API's endpoints both call these functions, and each records
itself in the audit log (SteeringAction) with the actor it is given, so both surfaces are
validated, applied and audited the same way.

How a pause reaches the runners: the pause is a row change that bumps CrawlLimits.version.
Dispatchers stop leasing at their next round (lease_ready_hosts reads the row); every
session engine's lease keeper refreshes the limits snapshot every LIMITS_RECHECK_SECONDS, and
a session checks it before each request (crawl/session.py, not_paused), ends, and gives
its host back with its URLs still queued. Nothing is lost: a paused URL simply waits.
"""

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from . import idle, wakeups
from .limits import cached_limits, current_limits
from .models import CrawlLimits, DeadLetter, Host, SteeringAction, Url, UrlState
from .normalize import InvalidUrl, normalize
from .vocabulary import WaitReason

# URLs one recrawl-now may name, hosts one host action may name (the API's limits too).
MAX_URLS_PER_ACTION = 1000
MAX_HOSTS_PER_ACTION = 1000

HOST_ACTIONS = ("pause", "resume", "fetch_now", "reset_breaker", "refetch_robots")


@dataclass(frozen=True)
class ActionResult:
    action: str
    changed: int  # rows the action changed (hosts, or URLs for recrawl/fetch-now)
    detail: dict  # what an API answer reports beyond the count

    def summary(self) -> str:
        extra = ", ".join(f"{k}={v}" for k, v in self.detail.items() if not isinstance(v, (list, dict)))
        return f"{self.changed} changed" + (f" ({extra})" if extra else "")


def crawl_paused() -> bool:
    return current_limits().paused


def paused_for(host_id: int) -> bool:
    """For fetch threads between requests: the cached snapshot, no query (the lease keeper
    keeps it fresh)."""
    limits = cached_limits()
    return limits.paused or host_id in limits.paused_hosts


def _audit(actor: str, action: str, target: str, result: ActionResult) -> ActionResult:
    SteeringAction.objects.create(actor=actor[:120], action=action, target=target[:300],
                                  result=result.summary()[:300])
    return result


def _bump() -> None:
    CrawlLimits.bump_version()  # every runner sees the change within LIMITS_RECHECK_SECONDS
    wakeups.announce()  # an idle dispatcher looks at once (a resumed host, "fetch now")


# --- the whole crawl ---------------------------------------------------------------------

def pause_crawl(actor: str) -> ActionResult:
    with transaction.atomic():
        CrawlLimits.objects.get_or_create(pk=1)
        changed = CrawlLimits.objects.filter(pk=1, paused_at__isnull=True).update(paused_at=timezone.now())
        _bump()
        return _audit(actor, "pause_crawl", "crawl", ActionResult("pause_crawl", changed, {"paused": True}))


def resume_crawl(actor: str) -> ActionResult:
    with transaction.atomic():
        changed = CrawlLimits.objects.filter(pk=1, paused_at__isnull=False).update(paused_at=None)
        _bump()
        return _audit(actor, "resume_crawl", "crawl", ActionResult("resume_crawl", changed, {"paused": False}))


# --- hosts -------------------------------------------------------------------------------

def host_action(action: str, host_ids: list[int], actor: str) -> ActionResult:
    """One of HOST_ACTIONS on these hosts (ids that do not exist are reported, not fatal)."""
    if action not in HOST_ACTIONS:
        raise ValueError(f"unknown host action {action!r}; one of {', '.join(HOST_ACTIONS)}")
    ids = sorted(set(host_ids))
    with transaction.atomic():
        hosts = Host.objects.filter(id__in=ids)
        found = set(hosts.values_list("id", flat=True))
        result = _HOST_ACTIONS[action](hosts, timezone.now())
        missing = [i for i in ids if i not in found]
        if missing:
            result = ActionResult(result.action, result.changed, {**result.detail, "unknownHostIds": missing})
        return _audit(actor, action, _describe_hosts(ids), result)


def _pause_hosts(hosts, now) -> ActionResult:
    changed = hosts.filter(paused_at__isnull=True).update(paused_at=now)
    _bump()
    return ActionResult("pause", changed, {})


def _resume_hosts(hosts, now) -> ActionResult:
    changed = hosts.filter(paused_at__isnull=False).update(paused_at=None)
    _bump()
    return ActionResult("resume", changed, {})


def _fetch_now(hosts, now) -> ActionResult:
    """The hosts' queued URLs are due now and the hosts ready now (a Retry-After, a
    breaker's pause or a back-off is cut short; a paused host stays paused)."""
    active = hosts.filter(paused_at__isnull=True)
    changed = active.update(next_fetch_at=now, wait_reason="")
    urls = Url.objects.filter(host__in=active, state=UrlState.QUEUED, next_fetch_at__gt=now).update(
        next_fetch_at=now)
    skipped = hosts.filter(paused_at__isnull=False).count()
    return ActionResult("fetch_now", changed, {"urlsMadeDue": urls, "pausedHostsSkipped": skipped})


def _reset_breaker(hosts, now) -> ActionResult:
    """Forget the network failures in a row; a host the breaker holds back is ready now."""
    held = hosts.filter(wait_reason=WaitReason.BREAKER).update(next_fetch_at=now, wait_reason="")
    changed = hosts.filter(failures__gt=0).update(failures=0)
    return ActionResult("reset_breaker", changed, {"released": held})


def _refetch_robots(hosts, now) -> ActionResult:
    """The cached robots.txt expires now: the host's next session fetches it first. A host
    that waits because robots.txt was unavailable is ready now."""
    changed = hosts.update(robots_expires_at=now)
    released = hosts.filter(wait_reason=WaitReason.ROBOTS_UNAVAILABLE).update(next_fetch_at=now, wait_reason="")
    return ActionResult("refetch_robots", changed, {"released": released})


_HOST_ACTIONS = {"pause": _pause_hosts, "resume": _resume_hosts, "fetch_now": _fetch_now,
                 "reset_breaker": _reset_breaker, "refetch_robots": _refetch_robots}


def _describe_hosts(ids: list[int]) -> str:
    origins = list(Host.objects.filter(id__in=ids[:5]).order_by("id").values_list("origin", flat=True))
    more = f" and {len(ids) - 5} more" if len(ids) > 5 else ""
    return ", ".join(origins) + more if origins else f"host ids {ids[:5]}"


# --- URLs --------------------------------------------------------------------------------

def recrawl_now(url_ids: list[int], actor: str) -> ActionResult:
    """Fetch these URLs as soon as their hosts' politeness allows: queued, due now, their retries and
    back-off forgotten, out of the dead-letter table. URLs of an excluded domain stay
    excluded (take the domain off the list first)."""
    ids = sorted(set(url_ids))
    now = timezone.now()
    with transaction.atomic():
        urls = Url.objects.filter(id__in=ids)
        found = dict(urls.values_list("id", "state"))
        excluded = [i for i, state in found.items() if state == UrlState.EXCLUDED]
        wanted = urls.exclude(state=UrlState.EXCLUDED)
        DeadLetter.objects.filter(url__in=wanted).delete()
        changed = wanted.update(state=UrlState.QUEUED, outcome="recrawl_now", next_fetch_at=now, attempts=0,
                                backoff_level=0)
        idle.wake(url_ids=ids)
        detail = {"excludedUrlIds": excluded, "unknownUrlIds": [i for i in ids if i not in found]}
        target = ", ".join(Url.objects.filter(id__in=ids[:3]).order_by("id").values_list("url", flat=True))
        if len(ids) > 3:
            target += f" and {len(ids) - 3} more"
        return _audit(actor, "recrawl_now", target, ActionResult("recrawl_now", changed, detail))


# --- naming hosts and URLs the way operators do ----------------------------------------------

def host_ids_for(refs: list[int | str]) -> tuple[list[int], list[int | str]]:
    """Host ids for references that are ids, origins or any URL on the host
    ("http://a.test:8000", "http://a.test:8000/page"), in order; with the references that
    name no known host."""
    keys = [ref if isinstance(ref, int) else _origin_or_none(ref) for ref in refs]
    found = set(Host.objects.filter(id__in=[k for k in keys if isinstance(k, int)]).values_list("id", flat=True))
    found_origins = dict(Host.objects.filter(origin__in=[k for k in keys if isinstance(k, str)])
                         .values_list("origin", "id"))
    return _resolved(refs, keys, found, found_origins)


def url_ids_for(refs: list[int | str]) -> tuple[list[int], list[int | str]]:
    """URL ids for references that are ids or URLs (normalized the way the frontier stores
    them), in order; with the references that name no known URL."""
    keys = [ref if isinstance(ref, int) else _url_key_or_none(ref) for ref in refs]
    found = set(Url.objects.filter(id__in=[k for k in keys if isinstance(k, int)]).values_list("id", flat=True))
    found_keys = {str(key): url_id for key, url_id in Url.objects.filter(
        url_key__in=[int(k) for k in keys if isinstance(k, str)]).values_list("url_key", "id")}
    return _resolved(refs, keys, found, found_keys)


def _resolved(refs, keys, found_ids: set, found_keys: dict) -> tuple[list[int], list]:
    ids, unknown = [], []
    for ref, key in zip(refs, keys):
        if isinstance(key, int) and key in found_ids:
            ids.append(key)
        elif isinstance(key, str) and key in found_keys:
            ids.append(found_keys[key])
        else:
            unknown.append(ref)
    return ids, unknown


def _origin_or_none(ref: str) -> str | None:
    try:
        return normalize(ref).origin
    except InvalidUrl:
        return None


def _url_key_or_none(ref: str) -> str | None:
    """The URL's key, as a string: an int here is a URL id."""
    try:
        return str(normalize(ref).url_key)
    except InvalidUrl:
        return None
