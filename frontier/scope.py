"""Where a crawl may go: a scope per seed, applied at admission to every link and redirect
discovered from it.

A scope is a kind plus optional patterns (docs/urls.md has the user's view):
- `host`: the seed's host name (any scheme and port; `www.` ignored on both sides, since
  `example.org` and `www.example.org` are one site to its readers);
- `domain`: the seed's registered domain and all its subdomains, from the Public Suffix
  List (publicsuffixlist, bundled: `a.example.co.uk` -> `example.co.uk`, and `a.github.io`
  stays itself, a private suffix); an IP address is its own domain;
- `prefix`: URLs that start like the seed up to the last `/` of its path, scheme ignored
  (Heritrix's SURT-prefix rule: `http://h/docs/index.html` -> everything under `h/docs/`);
- `web`: anywhere.
`include` patterns widen a scope (a URL matching one is in, whatever its host) and
`exclude` patterns narrow it (a URL matching one is out); both are regular expressions
searched in the canonical URL.

Provenance: each URL carries the ids of the scopes it was found under (`Url.scopes`, "3"
or "3,7"; "" means unscoped: the open web, as before scopes existed). A link is admitted
if any scope of the page it was found on allows it; a queued URL found again under another
scope that allows it gains that scope, so a URL reached from two seeds is judged by both.
A redirect answered to a seed (depth 0) that leaves its scope widens it: the target is
crawled as a seed of the same kind (Heritrix's "seed redirects are seeds"), because
`http://example.org/` -> `https://www.example.net/` is still the site the user asked for.
"""

import functools
import hashlib
import ipaddress
import re
import threading
from dataclasses import dataclass

from django.db.models import F
from publicsuffixlist import PublicSuffixList

from . import bulk
from .models import CrawlLimits, CrawlScope, ScopeKind, Seed
from .normalize import InvalidUrl, NormalUrl, normalize

MAX_PATTERNS = 50
MAX_PATTERN_CHARS = 500
# Url.scopes holds comma-separated ids up to this length; a URL reached under more scopes
# keeps those it has (it is in the frontier already; only its links see fewer scopes).
MAX_KEY_CHARS = 64


class InvalidScope(ValueError):
    """The message says what is wrong, for API answers and command errors."""


@dataclass(frozen=True)
class ScopeSpec:
    """A scope as a user asks for it, before it is anchored on a seed."""

    kind: str
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


def parse_spec(kind: str, include=(), exclude=()) -> ScopeSpec:
    """Validate a scope request; raises InvalidScope with a message a user can act on."""
    if kind not in ScopeKind.values:
        raise InvalidScope(f"unknown scope {kind!r}; one of {', '.join(ScopeKind.values)}")
    for name, patterns in (("include", include), ("exclude", exclude)):
        if len(patterns) > MAX_PATTERNS:
            raise InvalidScope(f"{len(patterns)} {name} patterns; at most {MAX_PATTERNS}")
        for index, pattern in enumerate(patterns):
            if not isinstance(pattern, str) or not pattern:
                raise InvalidScope(f"{name}[{index}] must be a non-empty string")
            if len(pattern) > MAX_PATTERN_CHARS or "\n" in pattern:
                raise InvalidScope(f"{name}[{index}] must be one line of at most {MAX_PATTERN_CHARS} characters")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise InvalidScope(f"{name}[{index}] is not a valid regular expression: {exc}") from None
    return ScopeSpec(kind, tuple(include), tuple(exclude))


_psl = PublicSuffixList()  # the list bundled with the package: no network at run time


@functools.lru_cache(maxsize=65536)
def registered_domain(host: str) -> str:
    """The part of a host name its owner registered (eTLD+1); an IP, or a name that is
    itself a public suffix, is its own domain."""
    if host.startswith("[") or _is_ipv4(host):
        return host
    return _psl.privatesuffix(host) or host


def _is_ipv4(host: str) -> bool:
    try:
        ipaddress.IPv4Address(host)
        return True
    except ValueError:
        return False


def _site(host: str) -> str:
    return host[4:] if host.startswith("www.") else host


def _scheme_less(url: NormalUrl) -> str:
    # "host[:port]/path?query" with "www." dropped: http and https, www or not, are one site.
    after_scheme = url.url[len(url.scheme) + 3:]
    return _site(after_scheme) if url.host.startswith("www.") else after_scheme


def anchor_for(kind: str, seed: NormalUrl) -> str:
    if kind == ScopeKind.HOST:
        return _site(seed.host)
    if kind == ScopeKind.DOMAIN:
        return registered_domain(seed.host)
    if kind == ScopeKind.PREFIX:
        text = _scheme_less(seed).split("?", 1)[0]
        return text[: text.rfind("/") + 1]
    return ""


class Scope:
    """A scope ready to judge URLs: its anchor and compiled patterns."""

    __slots__ = ("id", "kind", "anchor", "include", "exclude")

    def __init__(self, id: int, kind: str, anchor: str, include: str, exclude: str):
        self.id, self.kind, self.anchor = id, kind, anchor
        self.include = [re.compile(p) for p in include.splitlines() if p]
        self.exclude = [re.compile(p) for p in exclude.splitlines() if p]

    def allows(self, url: NormalUrl) -> bool:
        if any(p.search(url.url) for p in self.exclude):
            return False
        return self._base_allows(url) or any(p.search(url.url) for p in self.include)

    def _base_allows(self, url: NormalUrl) -> bool:
        kind = self.kind
        if kind == ScopeKind.WEB:
            return True
        if kind == ScopeKind.HOST:
            return _site(url.host) == self.anchor
        if kind == ScopeKind.DOMAIN:
            host = url.host
            return host == self.anchor or host.endswith("." + self.anchor)
        return _scheme_less(url).startswith(self.anchor)


# Scopes by id, for admission in every worker. Rows change only through an admin edit,
# which bumps CrawlLimits.version (limits.py notices within seconds; then this is cleared).
_lock = threading.Lock()
_loaded: dict[int, Scope] = {}
MAX_LOADED_SCOPES = 100_000
_loaded_version = [None]


def scopes_for(key: str, version: int) -> list[Scope]:
    """The scopes a Url.scopes key names ("" = none: the open web)."""
    if not key:
        return []
    ids = [int(i) for i in key.split(",")]
    load_scopes(ids, version)
    with _lock:
        return [_loaded[i] for i in ids if i in _loaded]


def loaded_scopes(key: str, version: int) -> list[Scope] | None:
    """scopes_for() without a query, for fetch threads: None if this process has not
    loaded them all under this version of the limits."""
    ids = [int(i) for i in key.split(",")] if key else []
    with _lock:
        if _loaded_version[0] != version or any(i not in _loaded for i in ids):
            return None
        return [_loaded[i] for i in ids]


def load_scopes(ids, version: int) -> None:
    """Load the scopes of these ids this process has not loaded, in one query: a batch of
    links (or 10,000 seeds with 10,000 scopes) costs one query, not one per scope."""
    with _lock:
        if _loaded_version[0] != version:
            _loaded.clear()
            _loaded_version[0] = version
        missing = sorted({i for i in ids if i not in _loaded})
    if missing:
        _remember(bulk.find(CrawlScope, "id", ("kind", "anchor", "include", "exclude"), missing), version)


def _remember(rows, version: int) -> None:
    """Scopes (id, kind, anchor, include, exclude) just read, when the limits' version is
    `version` (rows loaded under an older one are dropped first)."""
    fresh = {row[0]: Scope(*row) for row in rows}
    with _lock:
        # Bounded: seeding 10,000 sites brings 10,000 host scopes; past the bound, start again.
        if _loaded_version[0] != version or len(_loaded) + len(fresh) > MAX_LOADED_SCOPES:
            _loaded.clear()
            _loaded_version[0] = version
        _loaded.update(fresh)


def forget_loaded_scopes() -> None:
    with _lock:
        _loaded.clear()
        _loaded_version[0] = None


def allowed(url: NormalUrl, scopes: list[Scope]) -> bool:
    return not scopes or any(scope.allows(url) for scope in scopes)


def merge_keys(known: str, found: str) -> str:
    """The scopes of a URL known under `known` and found again under `found`."""
    if not known or not found:
        return ""  # unscoped (the open web) allows everything already
    ids = known.split(",")
    extra = [i for i in found.split(",") if i not in ids]
    merged = ",".join(ids + extra)
    return merged if len(merged) <= MAX_KEY_CHARS else known


def definition_key(kind: str, anchor: str, include: str, exclude: str) -> str:
    return hashlib.sha256("\x00".join((kind, anchor, include, exclude)).encode()).hexdigest()


def scope_for(spec: ScopeSpec, seed: NormalUrl) -> CrawlScope:
    """The scope row for a seed: one per distinct definition, shared by every seed that
    asks for the same thing (a hundred seeds on one site are one host scope)."""
    anchor = anchor_for(spec.kind, seed)
    include, exclude = "\n".join(spec.include), "\n".join(spec.exclude)
    row, _ = CrawlScope.objects.get_or_create(
        key=definition_key(spec.kind, anchor, include, exclude),
        defaults=dict(kind=spec.kind, anchor=anchor, include=include, exclude=exclude))
    return row


def scope_ids_for_seeds(spec: ScopeSpec, seeds: list[NormalUrl], version: int) -> list[int]:
    """scope_for's row ids for many seeds at once, in their order: the distinct definitions
    they ask for are looked up in one query and the missing ones inserted in one statement
    (a row a concurrent seeding inserted first is skipped and read back after), so 10,000
    seeds cost two statements whatever the number of scopes. `version`: the limits'
    version in force (the scopes are kept loaded under it)."""
    include, exclude = "\n".join(spec.include), "\n".join(spec.exclude)
    seed_anchors = [anchor_for(spec.kind, seed) for seed in seeds]
    anchors = {definition_key(spec.kind, anchor, include, exclude): anchor for anchor in set(seed_anchors)}
    key_of = {anchor: key for key, anchor in anchors.items()}
    columns = ("id", "kind", "anchor", "include", "exclude")  # find() puts the key first
    rows = bulk.find(CrawlScope, "key", columns, list(anchors))
    missing = sorted(anchors.keys() - {row[0] for row in rows})
    if missing:
        added = bulk.insert_new(CrawlScope, ("key", "kind", "anchor", "include", "exclude"),
                                [(key, spec.kind, anchors[key], include, exclude) for key in missing],
                                returning=("key", *columns))
        rows += added
        if len(added) < len(missing):  # SQLite, or rows a concurrent seeding inserted first
            rows += bulk.find(CrawlScope, "key", columns, sorted(set(missing) - {row[0] for row in added}))
    # Admission judges the seeds by these scopes next: it finds them loaded (no query). Rows
    # of a seeding that rolls back are forgotten (seeding.add_seeds).
    _remember([row[1:] for row in rows], version)
    ids = {row[0]: row[1] for row in rows}
    return [ids[key_of[anchor]] for anchor in seed_anchors]


def scope_key_taken(row: CrawlScope, include: str, exclude: str) -> bool:
    """Would these patterns make `row` a copy of another scope?"""
    key = definition_key(row.kind, row.anchor, include, exclude)
    return CrawlScope.objects.filter(key=key).exclude(pk=row.pk).exists()


def save_scope_patterns(row: CrawlScope) -> None:
    """Store an admin's new patterns; every worker reloads its scopes within seconds."""
    row.key = definition_key(row.kind, row.anchor, row.include, row.exclude)
    row.save(update_fields=["key", "include", "exclude"])
    CrawlLimits.bump_version()


def widened_for_redirect(key: str, target: NormalUrl, version: int) -> str:
    """A seed's redirect left its scopes: the same scopes anchored on the target, added."""
    for scope in scopes_for(key, version):
        spec = ScopeSpec(scope.kind, tuple(p.pattern for p in scope.include),
                         tuple(p.pattern for p in scope.exclude))
        key = merge_keys(key, str(scope_for(spec, target).id))
    return key


def count_out_of_scope(counts: dict[int, int]) -> None:
    for scope_id, n in sorted(counts.items()):  # one order: concurrent workers never deadlock
        CrawlScope.objects.filter(id=scope_id).update(out_of_scope=F("out_of_scope") + n)


def scopes_named(reference: str) -> list[CrawlScope]:
    """The scopes a user names on a command line: a scope's id (the admin's crawl scopes
    list shows them), or a seed URL, meaning the scope(s) it was seeded with. Raises
    InvalidScope with a message a user can act on."""
    reference = reference.strip()
    if reference.isdigit():
        row = CrawlScope.objects.filter(id=int(reference)).first()
        if row is None:
            raise InvalidScope(f"no crawl scope has id {reference}")
        return [row]
    try:
        url = normalize(reference if "://" in reference else "http://" + reference).url
    except InvalidUrl:
        url = None
    seeds = Seed.objects.filter(url=url)
    if url is None or not seeds.exists():
        raise InvalidScope(f"{reference!r} is neither a crawl scope's id nor a seed URL")
    rows = list(CrawlScope.objects.filter(seeds__in=seeds).distinct().order_by("id"))
    if not rows:
        raise InvalidScope(f"the seed {url} has no scope (it was added before scopes existed: the open web)")
    return rows


def scope_url_test(rows: list[CrawlScope]):
    """A test of URLs (in the frontier's form, as archived) against these scopes: true when
    any of them allows the URL, as admission judges a link found under them."""
    scopes = [Scope(row.id, row.kind, row.anchor, row.include, row.exclude) for row in rows]

    def allowed_url(url: str) -> bool:
        try:
            normal = normalize(url)
        except InvalidUrl:
            return False
        return any(scope.allows(normal) for scope in scopes)

    return allowed_url
