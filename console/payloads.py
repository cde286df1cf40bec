"""Reading and validating API request bodies. Everything is checked before anything is
applied, and every refusal says what is wrong (BadPayload carries the HTTP status)."""

import json
from dataclasses import dataclass

from django.conf import settings
from django.http import HttpRequest

from frontier import service as frontier

# The largest values an admin can set: far beyond any sane crawl, small enough for the
# columns and for the filters' arithmetic.
MAX_DEPTH_LIMIT = 1000
MIN_URL_LENGTH_LIMIT = 16
MAX_URL_LENGTH_LIMIT = 65536
MAX_URLS_PER_HOST = 2**31 - 1
MAX_SEED_CHARS = 65536


class BadPayload(Exception):
    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.message = message
        self.status = status


def read_json_object(request: HttpRequest) -> dict:
    """The body as a JSON object, read with a size cap."""
    content_type = request.content_type or ""
    if content_type != "application/json":
        raise BadPayload(f"send JSON with Content-Type: application/json (got {content_type or 'none'!r})", 415)
    limit = settings.CRAWLER_API_MAX_BODY_BYTES
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise BadPayload("invalid Content-Length") from None
    if declared > limit:
        raise BadPayload(f"body is {declared} bytes; the limit is {limit} (CRAWLER_API_MAX_BODY_BYTES)", 413)
    raw = _read_body(request, limit + 1)
    if len(raw) > limit:
        raise BadPayload(f"body is over the limit of {limit} bytes (CRAWLER_API_MAX_BODY_BYTES)", 413)
    try:
        data = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constants)
    except UnicodeDecodeError:
        raise BadPayload("body is not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise BadPayload(f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except ValueError as exc:  # from the hooks below
        raise BadPayload(str(exc)) from None
    except RecursionError:  # [[[[… : the decoder recurses once per level
        raise BadPayload("JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise BadPayload(f"expected a JSON object, got {_kind(data)}")
    return data


def _read_body(request: HttpRequest, at_most: int) -> bytes:
    """At most `at_most` bytes of the body. A chunked body has no Content-Length, so Django
    reads it as empty; a server that de-chunks it (gunicorn) says so with
    wsgi.input_terminated, and the body is then read from the input up to the cap."""
    if request.META.get("CONTENT_LENGTH"):
        return request.read(at_most)
    chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
    if not chunked:
        return b""
    if not request.META.get("wsgi.input_terminated"):
        raise BadPayload("this server cannot read a chunked body: send Content-Length", 411)
    return request.META["wsgi.input"].read(at_most)


def _no_duplicate_keys(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen[key] = value
    return seen


def _no_constants(name):
    raise ValueError(f"{name} is not valid JSON")


def _kind(value) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _only(data: dict, allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise BadPayload(f"unknown field(s): {', '.join(unknown)}; allowed: {', '.join(allowed)}")


def seed_urls(data: dict) -> tuple[list[str], frontier.ScopeSpec]:
    """{"urls": [string, …], "scope"?: kind | {"kind", "include"?, "exclude"?}} → the URLs,
    1 to CRAWLER_API_MAX_SEEDS of them, and their scope (default CRAWLER_DEFAULT_SCOPE)."""
    _only(data, ("urls", "scope"))
    if "urls" not in data:
        raise BadPayload("missing field: urls (an array of URL strings)")
    urls = data["urls"]
    if not isinstance(urls, list):
        raise BadPayload(f"urls must be an array of strings, got {_kind(urls)}")
    if not urls:
        raise BadPayload("urls is empty")
    if len(urls) > settings.CRAWLER_API_MAX_SEEDS:
        raise BadPayload(f"{len(urls)} urls; at most {settings.CRAWLER_API_MAX_SEEDS} per request "
                         "(CRAWLER_API_MAX_SEEDS)")
    for index, url in enumerate(urls):
        if not isinstance(url, str):
            raise BadPayload(f"urls[{index}] must be a string, got {_kind(url)}")
        if len(url) > MAX_SEED_CHARS:
            raise BadPayload(f"urls[{index}] is {len(url)} characters; at most {MAX_SEED_CHARS}")
    return urls, seed_scope(data.get("scope"))


def seed_scope(scope) -> frontier.ScopeSpec:
    """"host" | "domain" | "prefix" | "web", or {"kind": …, "include": [regex…], "exclude": [regex…]}."""
    if scope is None:
        return frontier.default_scope()
    if isinstance(scope, str):
        scope = {"kind": scope}
    if not isinstance(scope, dict):
        raise BadPayload(f"scope must be a string or an object, got {_kind(scope)}")
    unknown = sorted(set(scope) - {"kind", "include", "exclude"})
    if unknown:
        raise BadPayload(f"unknown scope field(s): {', '.join(unknown)}; allowed: kind, include, exclude")
    kind = scope.get("kind", frontier.default_scope().kind)
    if not isinstance(kind, str):
        raise BadPayload(f"scope.kind must be a string, got {_kind(kind)}")
    patterns = {}
    for name in ("include", "exclude"):
        value = scope.get(name, [])
        if not isinstance(value, list):
            raise BadPayload(f"scope.{name} must be an array of regular expressions, got {_kind(value)}")
        patterns[name] = value
    try:
        return frontier.parse_spec(kind, patterns["include"], patterns["exclude"])
    except frontier.InvalidScope as exc:
        raise BadPayload(f"scope: {exc}") from None


@dataclass(frozen=True)
class LimitsPayload:
    changes: dict  # update_limits() keyword arguments
    exclude_domains: list[str]


_LIMIT_FIELDS = {  # JSON name -> (update_limits argument, minimum, maximum)
    "depthLimit": ("depth_limit", 0, MAX_DEPTH_LIMIT),
    "urlLengthLimit": ("url_length_limit", MIN_URL_LENGTH_LIMIT, MAX_URL_LENGTH_LIMIT),
    "maxUrlsPerHost": ("max_urls_per_host", 1, MAX_URLS_PER_HOST),
}


def url_limits(data: dict) -> LimitsPayload:
    """{"excludedDomains"?: [domain, …], "depthLimit"?: n, "urlLengthLimit"?: n,
    "maxUrlsPerHost"?: n}; at least one field. null sets a limit back to its default."""
    _only(data, ("excludedDomains", *_LIMIT_FIELDS))
    if not data:
        raise BadPayload(f"nothing to change: give at least one of excludedDomains, {', '.join(_LIMIT_FIELDS)}")
    changes = {}
    for name, (argument, low, high) in _LIMIT_FIELDS.items():
        if name not in data:
            continue
        value = data[name]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise BadPayload(f"{name} must be an integer or null, got {_kind(value)}")
        if value is not None and not low <= value <= high:
            raise BadPayload(f"{name} must be between {low} and {high}, got {value}")
        changes[argument] = value
    domains = data.get("excludedDomains", [])
    if not isinstance(domains, list):
        raise BadPayload(f"excludedDomains must be an array of domain names, got {_kind(domains)}")
    if len(domains) > settings.CRAWLER_API_MAX_DOMAINS:
        raise BadPayload(f"{len(domains)} excludedDomains; at most {settings.CRAWLER_API_MAX_DOMAINS} per request "
                         "(CRAWLER_API_MAX_DOMAINS)")
    canonical = []
    for index, domain in enumerate(domains):
        if not isinstance(domain, str):
            raise BadPayload(f"excludedDomains[{index}] must be a string, got {_kind(domain)}")
        try:
            canonical.append(frontier.canonical_domain(domain))
        except frontier.InvalidDomain as exc:
            raise BadPayload(f"excludedDomains[{index}]: {exc}") from None
    return LimitsPayload(changes, list(dict.fromkeys(canonical)))


MAX_TRUST_WEIGHT = 10_000  # score points; the score itself is a smallint


def trusted_domains(data: dict) -> dict[str, int | None]:
    """{"trustedDomains": [{"domain": name, "weight": n or null}, …]}: 1 to
    CRAWLER_API_MAX_DOMAINS entries; null drops the domain. Returns domain -> weight."""
    _only(data, ("trustedDomains",))
    items = data.get("trustedDomains")
    if not isinstance(items, list) or not items:
        raise BadPayload("trustedDomains must be a non-empty array of {\"domain\": name, \"weight\": n or null}, "
                         f"got {_kind(items)}")
    if len(items) > settings.CRAWLER_API_MAX_DOMAINS:
        raise BadPayload(f"{len(items)} trustedDomains; at most {settings.CRAWLER_API_MAX_DOMAINS} per request "
                         "(CRAWLER_API_MAX_DOMAINS)")
    weights = {}
    for index, item in enumerate(items):
        if not isinstance(item, dict) or set(item) - {"domain", "weight"} or "domain" not in item:
            raise BadPayload(f"trustedDomains[{index}] must be {{\"domain\": name, \"weight\": n or null}}")
        domain, weight = item["domain"], item.get("weight", 50)
        if not isinstance(domain, str):
            raise BadPayload(f"trustedDomains[{index}].domain must be a string, got {_kind(domain)}")
        if weight is not None and (isinstance(weight, bool) or not isinstance(weight, int)
                                   or not -MAX_TRUST_WEIGHT <= weight <= MAX_TRUST_WEIGHT):
            raise BadPayload(f"trustedDomains[{index}].weight must be an integer between {-MAX_TRUST_WEIGHT} and "
                             f"{MAX_TRUST_WEIGHT}, or null to drop the domain")
        try:
            weights[frontier.canonical_domain(domain)] = weight
        except frontier.InvalidDomain as exc:
            raise BadPayload(f"trustedDomains[{index}]: {exc}") from None
    return weights


def references(data: dict, field: str, at_most: int, what: str) -> list[int | str]:
    """{field: [id or URL, …]}: 1 to at_most hosts or URLs, named by integer id or by URL
    (for hosts: the origin or any URL on it)."""
    _only(data, (field,))
    if field not in data:
        raise BadPayload(f"missing field: {field} (an array of {what} ids or URLs)")
    refs = data[field]
    if not isinstance(refs, list):
        raise BadPayload(f"{field} must be an array of {what} ids or URLs, got {_kind(refs)}")
    if not refs:
        raise BadPayload(f"{field} is empty")
    if len(refs) > at_most:
        raise BadPayload(f"{len(refs)} {field}; at most {at_most} per request")
    for index, ref in enumerate(refs):
        if isinstance(ref, bool) or not isinstance(ref, (int, str)):
            raise BadPayload(f"{field}[{index}] must be an integer id or a URL string, got {_kind(ref)}")
        if isinstance(ref, str) and not 0 < len(ref) <= MAX_SEED_CHARS:
            raise BadPayload(f"{field}[{index}] must be a URL of 1 to {MAX_SEED_CHARS} characters")
        if isinstance(ref, int) and not 0 < ref < 2**63:
            raise BadPayload(f"{field}[{index}] is not a valid id")
    return refs
