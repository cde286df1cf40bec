"""A session's links to its own host, taken at once (crawl/ownlinks.py is the session's side).

A small site is read page by page: its next URL is on the page just fetched. Waiting for
the writer to store that page's links and read them back made such a host wait for the
database between its requests, not for its delay (issue 50: 2.8x the allowed gap). So a
session judges the links its pages make to its own host here, in the fetch thread, with
no query, and fetches those the frontier would admit as new; the writer admits them
(admit_taken) before it stores what was fetched from them.

"New" must be exact, or a page fetched before would be fetched again: a session opens
with the keys of every URL its host has in the frontier (host_keys), read once, for hosts
of at most CRAWLER_SESSION_OWN_LINKS_HOST_URLS URLs (larger hosts have queued URLs to go
on with; their sessions take none). No one else can fetch a URL of the host meanwhile (the
session holds its lease), so a URL not among those keys has not been fetched: another
process may admit it meanwhile (a link from another host), and the fetch is then recorded
on that row.

What is judged here is what admission judges without the database (frontier/admission.py):
the URL's form, the limits' filters, the scopes, a stopped pattern; the session adds
robots.txt. The quotas are the database's: a link the writer's admission refuses after
all (a domain quota reached meanwhile) was fetched for nothing, and its result is dropped.
"""

from django.conf import settings
from django.db import connection

from common.bulksql import SQLITE_MAX_VARIABLES, in_chunks, marks

from . import importance, scope, traps
from .admission import Candidate, add_urls
from .filters import rejection_reason
from .limits import cached_limits
from .models import Host, Url
from .normalize import InvalidUrl, NormalUrl, normalize, url_key

_URLS, _HOSTS = Url._meta.db_table, Host._meta.db_table


def host_keys(host_ids: list[int]) -> dict[int, set[int]]:
    """The keys of every URL of these hosts, for those holding at most
    CRAWLER_SESSION_OWN_LINKS_HOST_URLS URLs (one statement); a host left out is too big,
    has no URL (a session always has some), or the setting is 0: its session takes no
    links of its own."""
    limit = settings.CRAWLER_SESSION_OWN_LINKS_HOST_URLS
    if not limit or not host_ids:
        return {}
    keys: dict[int, set[int]] = {}
    with connection.cursor() as cursor:
        for chunk in in_chunks(sorted(set(host_ids)), SQLITE_MAX_VARIABLES - 1):  # and the limit
            cursor.execute(f"SELECT u.host_id, u.url_key FROM {_HOSTS} h JOIN {_URLS} u ON u.host_id = h.id "
                           f"WHERE h.id IN ({marks(len(chunk))}) AND h.url_count <= %s", [*chunk, limit])
            for host_id, key in cursor.fetchall():
                keys.setdefault(host_id, set()).add(key)
    return keys


def judge_own_link(link: str, base: str | None, depth: int, scopes: str, origin: str,
                   hint: int = 0) -> tuple[NormalUrl, int] | None:
    """The link as the frontier would admit it, and its score; None if it is not on
    `origin` or admission would refuse it. No query: the limits, the scopes and the stopped
    patterns as this process last read them (a scope it has not loaded: None)."""
    try:
        norm = normalize(link, base)
    except InvalidUrl:
        return None
    if norm.origin != origin:
        return None
    limits = cached_limits()
    if rejection_reason(norm, depth, 0, limits) or traps.pattern_stopped(norm.url):
        return None
    if scopes:
        loaded = scope.loaded_scopes(scopes, limits.version)
        if loaded is None or not scope.allowed(norm, loaded):
            return None
    return norm, importance.score(norm.url, norm.host, depth, 0, hint)


def admit_taken(candidates: list[Candidate]) -> dict[str, int]:
    """Admit the links sessions took (a no-op for those admitted already) and return
    {URL: its id} for those the frontier holds; a URL missing was refused."""
    if not candidates:
        return {}
    add_urls(candidates)
    by_key = {url_key(candidate.url): candidate.url for candidate in candidates}
    found = {}
    with connection.cursor() as cursor:
        for chunk in in_chunks(list(by_key)):
            cursor.execute(f"SELECT url_key, id FROM {_URLS} WHERE url_key IN ({marks(len(chunk))})", chunk)
            found.update((by_key[key], url_id) for key, url_id in cursor.fetchall())
    return found


def own_links_room(known_urls: int) -> int:
    """How many more URLs a host holding `known_urls` may take before its quota."""
    return max(0, cached_limits().max_urls_per_host - known_urls)
