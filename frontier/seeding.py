"""Seeds: the URLs a user asks the crawler to start from (the API, `manage.py seed` and
`crawl`, the admin), admitted as links are (frontier/admission.py) but all or nothing, with
their scope, and with an answer a user can act on:

- a seed may be written as a bare origin (`example.org`, `127.0.1.3:8300`, `[::1]:8300`,
  optionally with a path): it means `http://` + that, as a browser's address bar reads it;
- a refusal names the limit it breaks (the URL length limit and the URL's length, the
  excluded domain, the per-host or per-domain quota, the exclude pattern);
- an accepted seed whose host is an address the crawler will refuse to connect to (private,
  loopback, link-local… outside CRAWLER_ALLOWED_NETWORKS, or one of the crawler's own
  services) carries a warning: it waits in the frontier, and is fetched only once the
  settings allow it. Only addresses and `localhost` names are judged: nothing is resolved
  at seed time (a name's address may change before it is fetched, and fetch.http checks it
  then).
"""

import re

from django.conf import settings
from django.db import transaction

from common import netpolicy

from . import bulk, scope
from .admission import AdmitResult, Candidate, add_urls, default_scope
from .filters import rejection_reason
from .limits import Limits, current_limits
from .normalize import DEFAULT_PORTS, InvalidUrl, NormalUrl, normalize
from .scope import ScopeSpec
from .vocabulary import Rejection, SeedWarning

# host, [IPv6], host:port, each optionally followed by a path, query or fragment; no scheme.
_BARE_ORIGIN = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[^\s/\\:?#@\[\]]+)(?::[0-9]{1,5})?(?:[/?#]\S*)?")


def seed_url(text: str) -> str:
    """The URL a seed means: `http://` before a bare origin (docs/urls.md), else as written."""
    bare = text.strip()
    return "http://" + bare if "://" not in bare and _BARE_ORIGIN.fullmatch(bare) else text


def add_seeds(urls: list[str], spec: ScopeSpec | None = None) -> AdmitResult:
    """Admit seeds (depth 0) under a scope each (`spec` anchored on the seed; default
    CRAWLER_DEFAULT_SCOPE) and log them, all or nothing: one transaction, so an API call
    that fails midway leaves no trace. Set-based: 10,000 seeds cost about twenty
    statements (scopes, hosts, URLs and the seed log one INSERT each).

    A seed already in the frontier keeps its state; a new scope then applies to the
    links found from now on (while it waits, it gains the scope). The result's verdicts,
    details and warnings are by input position."""
    spec = spec or default_scope()
    try:
        return _add_seeds([seed_url(url) for url in urls], spec)
    except BaseException:
        scope.forget_loaded_scopes()  # rows loaded inside the rolled-back transaction
        raise


def _add_seeds(urls: list[str], spec: ScopeSpec) -> AdmitResult:
    with transaction.atomic():
        limits = current_limits()
        norms = []
        for url in urls:
            try:
                norms.append(normalize(url))
            except InvalidUrl:
                norms.append(None)  # add_urls rejects it, with the reason
        # A seed the filters refuse gets no scope row (add_urls says why it is refused).
        scoped = [norm if norm and not rejection_reason(norm, 0, 0, limits) else None for norm in norms]
        kept = [norm for norm in scoped if norm]
        ids = iter(scope.scope_ids_for_seeds(spec, kept, limits.version) if kept else ())
        scope_ids = [next(ids) if norm else None for norm in scoped]
        result = add_urls([Candidate(url=url, scopes=str(scope_id or "")) for url, scope_id in zip(urls, scope_ids)])
        bulk.log_seeds(list({(verdict, scope_id): None for verdict, scope_id in zip(result.verdicts, scope_ids)
                             if not verdict.startswith("rejected:")}))
    _explain(result, norms, limits, spec)
    return result


def _explain(result: AdmitResult, norms: list[NormalUrl | None], limits: Limits, spec: ScopeSpec) -> None:
    refusals = {}  # (host, port) -> why, once per host in a list of 10,000
    for index, (verdict, norm) in enumerate(zip(result.verdicts, norms)):
        if norm is None:
            continue
        if verdict.startswith("rejected:"):
            detail = rejection_detail(verdict.removeprefix("rejected:"), norm, limits, spec)
            if detail:
                result.details[index] = detail
            continue
        where = (norm.host, norm.port or DEFAULT_PORTS[norm.scheme])
        if where not in refusals:
            refusals[where] = netpolicy.refusal_without_dns(*where, settings.CRAWLER_ALLOWED_NETWORKS,
                                                            settings.CRAWLER_OWN_SERVICES)
        if refusals[where]:
            result.warnings[index] = (SeedWarning.REFUSED_ADDRESS,
                                      f"accepted, but it will not be fetched: {refusals[where]}")


def rejection_detail(reason: str, norm: NormalUrl, limits: Limits, spec: ScopeSpec | None = None) -> str | None:
    """The limit a refused URL breaks, with its value and where it is set (None for
    reasons that are no limit: a bad scheme, a trap)."""
    if reason == Rejection.URL_TOO_LONG:
        return (f"{len(norm.url)} characters in canonical form; the limit is {limits.url_length_limit}, "
                "set by urlLengthLimit or CRAWLER_MAX_URL_LENGTH")
    if reason == Rejection.EXCLUDED_DOMAIN:
        return f"{limits.excluded_by(norm.host)} is in excludedDomains, with its subdomains"
    if reason == Rejection.DEPTH_LIMIT:
        return f"the depth limit is {limits.depth_limit}, set by depthLimit or CRAWLER_DEPTH_LIMIT"
    if reason == Rejection.REDIRECT_LIMIT:
        return f"the limit is {limits.max_redirects} redirects, set by CRAWLER_MAX_REDIRECTS"
    if reason == Rejection.HOST_QUOTA:
        return (f"{norm.origin} has its {limits.max_urls_per_host} URLs, the quota set by maxUrlsPerHost or "
                "CRAWLER_MAX_URLS_PER_HOST")
    if reason == Rejection.DOMAIN_QUOTA:
        return (f"{scope.registered_domain(norm.host)} has its {settings.CRAWLER_MAX_URLS_PER_DOMAIN} URLs, "
                "the quota set by CRAWLER_MAX_URLS_PER_DOMAIN")
    if reason == Rejection.OUT_OF_SCOPE and spec:
        matching = [p for p in spec.exclude if re.search(p, norm.url)]
        return f"exclude pattern {matching[0]!r} matches it" if matching else None
    return None


def seed_rejection(url: str) -> str | None:
    """Why a seed would not be admitted under the limits in force (None: it would be):
    the reason, and the limit it breaks after a colon where there is one."""
    try:
        norm = normalize(seed_url(url))
    except InvalidUrl as exc:
        return exc.args[0]
    limits = current_limits()
    reason = rejection_reason(norm, 0, 0, limits)
    detail = reason and rejection_detail(reason, norm, limits)
    return f"{reason}: {detail}" if detail else reason
