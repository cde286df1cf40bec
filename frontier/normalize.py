"""The canonical form of a URL, so that one page has one frontier row.

w3lib (Scrapy's URL helpers) makes the string safe ASCII: IDNA hosts, percent-encoding of
unsafe characters. On top we own the canonical form (RFC 3986 section 6.2.2):
lowercase scheme and host, no default port, no fragment, dot-segments removed, escapes in
uppercase hex, escapes of unreserved characters decoded, empty path -> "/".
Query strings keep their order: many sites give parameter order meaning. Session ids
(`;jsessionid=…` path parameters, PHPSESSID/sid/… query parameters) are dropped: they make
one page look like endless different URLs (a classic crawler trap).
"""

import functools
import hashlib
import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit, urlunsplit

from w3lib.url import safe_url_string

DEFAULT_PORTS = {"http": 80, "https": 443}
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_HOST_OK = re.compile(r"^[a-z0-9._-]+$")
_SESSION_PATH_PARAM = re.compile(r";(?:jsessionid|phpsessid|sid|sessionid)=[^/?;]*", re.I)
SESSION_QUERY_PARAMS = frozenset({"jsessionid", "phpsessid", "sid", "sessionid", "session_id", "aspsessionid",
                                  "cfid", "cftoken", "zenid", "oscsid"})


class InvalidUrl(ValueError):
    """The string cannot be a crawlable URL; args[0] is a short machine-readable reason."""


@dataclass(frozen=True)
class NormalUrl:
    url: str
    scheme: str
    host: str  # lowercase, IDNA, no port
    port: int | None  # None when it is the scheme's default

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{self.host}" + (f":{self.port}" if self.port else "")

    @property
    def url_hash(self) -> str:
        return url_hash(self.url)


def url_hash(url: str) -> str:
    return hashlib.blake2b(url.encode("utf-8"), digest_size=16).hexdigest()


def _fix_escapes(part: str) -> str:
    def fix(match):
        byte = int(match.group(1), 16)
        return chr(byte) if byte in _UNRESERVED else "%" + match.group(1).upper()

    return _ESCAPE.sub(fix, part)


def remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4."""
    output: list[str] = []
    segments = path.split("/")
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == ".":
            if last:
                output.append("")
        elif segment == "..":
            if len(output) > 1:
                output.pop()
            if last:
                output.append("")
        else:
            output.append(segment)
    result = "/".join(output)
    return result if result.startswith("/") else "/" + result


def normalize(url: str, base: str | None = None) -> NormalUrl:
    """Resolve `url` against `base` and return its canonical form, or raise InvalidUrl."""
    outcome = _normalize_cached(url, base)
    if isinstance(outcome, InvalidUrl):
        raise InvalidUrl(*outcome.args)
    return outcome


# A page links to the same URLs as its neighbours (menus, "next" chains), so most links
# seen by a worker were normalized before. Bounded: at most this many entries per process.
NORMALIZE_CACHE_SIZE = 32768


@functools.lru_cache(maxsize=NORMALIZE_CACHE_SIZE)
def _normalize_cached(url: str, base: str | None) -> "NormalUrl | InvalidUrl":
    try:
        return _normalize(url, base)
    except InvalidUrl as exc:
        return exc


def _normalize(url: str, base: str | None) -> NormalUrl:
    # WHATWG: browsers drop tabs/newlines anywhere and spaces at the ends.
    url = re.sub(r"[\t\r\n]", "", url).strip()
    if not url:
        raise InvalidUrl("empty")
    if base:
        try:
            url = urljoin(base, url)
        except ValueError:
            raise InvalidUrl("unparsable") from None
    try:
        parts = urlsplit(safe_url_string(url))
        port = parts.port
    except (ValueError, UnicodeError):
        raise InvalidUrl("unparsable") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise InvalidUrl("scheme")
    if parts.username is not None or parts.password is not None:
        raise InvalidUrl("credentials")
    host = (parts.hostname or "").rstrip(".")
    if ":" in host:  # IPv6 literal: urlsplit strips the brackets
        try:
            host = f"[{ipaddress.IPv6Address(host).compressed}]"
        except ValueError:
            raise InvalidUrl("host") from None
    elif not host or not _HOST_OK.match(host):
        raise InvalidUrl("host")
    if port == DEFAULT_PORTS[scheme]:
        port = None
    netloc = host + (f":{port}" if port else "")
    path = remove_dot_segments(_fix_escapes(_SESSION_PATH_PARAM.sub("", parts.path) or "/"))
    query = _fix_escapes(_without_session_ids(parts.query))
    return NormalUrl(urlunsplit((scheme, netloc, path, query, "")), scheme, host, port)


def _without_session_ids(query: str) -> str:
    if not query:
        return query
    kept = [p for p in query.split("&") if p.split("=", 1)[0].lower() not in SESSION_QUERY_PARAMS]
    return "&".join(kept)
