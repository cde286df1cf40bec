"""The canonical form of a URL, so that one page has one frontier row.

Two layers (the whole policy, with examples, is docs/urls.md):

1. **Parse and resolve as a browser does**: ada-url, a WHATWG URL Standard parser (the one
   Node.js uses). It resolves relative links against their base, lowercases scheme and
   host, converts IPv4 in any form (`http://0x7f.1/`, `http://2130706433/`) to dotted
   decimal and IDNA hosts to punycode (UTS-46, so `faß.example` is `xn--fa-hia.example`),
   rejects invalid hosts and ports (`http://192.168.0.257/`, IPv6 zone ids, a host that
   ends in a number but is no IPv4 address), treats `\\` as `/`, removes dot segments,
   drops the default port and percent-encodes what must be. One server is then one host,
   whatever form a page wrote its address in.
2. **Our canonical policy on top of its serialization**, each rule for a crawler's reason:
   http, https and gemini only; URLs with credentials refused (a crawler must not send them); the
   fragment dropped (never sent to a server); session ids dropped (`;jsessionid=…` path
   parameters, PHPSESSID/sid/… query parameters: one page would look like endless URLs);
   escapes of unreserved characters decoded and the others in upper-case hex (RFC 3986
   section 6.2.2.2: `%7e` and `~` are one URL), a `%` that starts no escape kept as written
   (as WHATWG keeps it; an escape that decoding would join to it into a new one is kept, so
   the form is idempotent); the host's
   trailing dot dropped; a host must be a DNS name (letters, digits, `-`, `_`) or an IP
   literal, since nothing else can be resolved. Query order and an empty query (`?`) are
   kept: servers may give both meaning.

**gemini://** (Geminispace): WHATWG treats it as a non-special scheme, so its parser keeps
the host as written (`gemini://Example.COM`), keeps an empty path empty and does not know
the default port. We give it the form a special URL would have, since a Gemini host is a
DNS name like a web host: the host goes through the same host parser as an https URL's
(lowercase, IDNA to punycode, IPv4 forms to dotted decimal), port 1965 is dropped, an empty
path is `/`; dot segments, escapes and the rest follow the rules above. So
`gemini://Example.COM:1965` is `gemini://example.com/`.

`normalize(normalize(x).url).url == normalize(x).url` for every input (a property test
checks it over generated URLs).
"""

import functools
import hashlib
import re
from typing import NamedTuple

import ada_url

from .vocabulary import Rejection

DEFAULT_PORTS = {"http": 80, "https": 443, "gemini": 1965}
_ESCAPE_OR_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})?")
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# ada has already lowercased and punycoded the host; what remains must be a DNS name.
_DNS_NAME = re.compile(r"^[a-z0-9_-]{1,63}(?:\.[a-z0-9_-]{1,63})*$")
_SESSION_PATH_PARAM = re.compile(r";(?:jsessionid|phpsessid|sid|sessionid)=[^/?;]*", re.I)
SESSION_QUERY_PARAMS = frozenset({"jsessionid", "phpsessid", "sid", "sessionid", "session_id", "aspsessionid",
                                  "cfid", "cftoken", "zenid", "oscsid"})
# A query that holds none of these holds none of the names above (most queries): not split.
_MAYBE_SESSION_ID = re.compile("sid|session|cf|zenid", re.I)
# What WHATWG strips from both ends of an input (C0 controls and space).
_STRIP = "".join(chr(c) for c in range(0x21))
# A scheme that is not http(s) makes a link absolute whatever its base (mailto:, tel:, …).
_OTHER_SCHEME = re.compile(r"(?!https?:|gemini:)[a-zA-Z][a-zA-Z0-9+.-]*:", re.I)


class InvalidUrl(ValueError):
    """The string cannot be a crawlable URL; args[0] is a short machine-readable reason."""


class NormalUrl(NamedTuple):  # a tuple: built for every link, 5x cheaper than a dataclass
    url: str
    scheme: str
    host: str  # lowercase, IDNA (punycode), no trailing dot, no port; IPv6 in brackets
    port: int | None  # None when it is the scheme's default
    key: int  # url_key(url): computed once, kept in the normalize cache with the rest

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{self.host}" + (f":{self.port}" if self.port else "")

    @property
    def url_hash(self) -> str:
        return url_hash(self.url)

    @property
    def url_key(self) -> int:
        return self.key


def url_hash(url: str) -> str:
    """32 hex characters: blake2b-128 of the URL (the key of earlier releases)."""
    return hashlib.blake2b(url.encode("utf-8"), digest_size=16).hexdigest()


def origin_of(url: str) -> str:
    """scheme://host[:port] of a URL already in the frontier's form (normalize(...).url)."""
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}"


def url_key(url: str) -> int:
    """The URL's key in the frontier: the first 8 bytes of url_hash's digest as a signed
    64-bit integer (a BIGINT), so that PostgreSQL can derive it from a url_hash written by
    the previous release (frontier/migrations/0009). Half the index of the hex string and
    an integer compare. Two different URLs share a key with probability n²/2⁶⁵ among n URLs
    (about 3 in a million at 10M): the second would be taken for the first (docs/urls.md)."""
    return int.from_bytes(hashlib.blake2b(url.encode("utf-8"), digest_size=16).digest()[:8], "big", signed=True)


def normalize(url: str, base: str | None = None) -> NormalUrl:
    """Resolve `url` against `base` (WHATWG) and return its canonical form, or raise InvalidUrl."""
    if base is not None and not url.startswith(("http://", "https://", "gemini://")) and not _OTHER_SCHEME.match(url):
        outcome = _normalize_cached(url, base)
    else:
        # An absolute URL means the same whatever its base: one cache entry for the menu
        # link (or the mailto: link) every page of a site repeats.
        outcome = _normalize_cached(url, None)
    if isinstance(outcome, InvalidUrl):
        raise InvalidUrl(*outcome.args)
    return outcome


# Bounded: at most this many (url, base) results per process.
NORMALIZE_CACHE_SIZE = 32768


@functools.lru_cache(maxsize=NORMALIZE_CACHE_SIZE)
def _normalize_cached(url: str, base: str | None) -> "NormalUrl | InvalidUrl":
    try:
        return _normalize(url, base)
    except InvalidUrl as exc:
        # Kept without its traceback: that would hold the caller's frames, and with them a
        # whole batch of parsed pages, for as long as the entry stays cached.
        return InvalidUrl(*exc.args)


def _normalize(url: str, base: str | None) -> NormalUrl:
    if not base and not url.strip(_STRIP):
        raise InvalidUrl(Rejection.EMPTY)
    try:
        href = ada_url.join_url(base, url) if base else ada_url.normalize_url(url)
    except ValueError:  # also for strings that are no valid UTF-8 (lone surrogates)
        raise InvalidUrl(Rejection.UNPARSABLE) from None
    scheme, sep, rest = href.partition("://")
    if scheme not in DEFAULT_PORTS or not sep:
        raise InvalidUrl(Rejection.SCHEME)
    # A special URL's serialization: authority, then a path that starts with "/", then
    # ?query and #fragment. "#" and "?" inside path and query are always escaped (in a
    # gemini URL too: the parser escapes them the same way in any hierarchical URL).
    fragment = rest.find("#")
    if fragment >= 0:
        rest = rest[:fragment]
    if scheme == "gemini":
        slash = rest.find("/")
        query = rest.find("?")
        if query >= 0 and (slash < 0 or query < slash):
            slash = query
        authority, rest = (rest, "/") if slash < 0 else (rest[:slash], rest[slash:])
        if rest.startswith("?"):  # gemini://host?query: a non-special URL keeps the path empty
            rest = "/" + rest
        if "@" in authority:
            raise InvalidUrl(Rejection.CREDENTIALS)
        authority = _special_authority(authority)
    else:  # the parser wrote a special URL's path, "/" at least, after its authority
        slash = rest.find("/")
        authority, rest = (rest, "/") if slash < 0 else (rest[:slash], rest[slash:])
        if "@" in authority:
            raise InvalidUrl(Rejection.CREDENTIALS)
    host, port = _host_and_port(authority, DEFAULT_PORTS[scheme])
    if not isinstance(host, str):
        raise InvalidUrl(*host.args)
    path, has_query, query = rest.partition("?")
    clean_path = _SESSION_PATH_PARAM.sub("", path) if ";" in path else path
    if has_query and query and _MAYBE_SESSION_ID.search(query):
        query = _without_session_ids(query)
        has_query = bool(query)  # "?sid=1" alone: the whole query was a session id
    # The "%" tests here, not in _fix_escapes: most parts hold none, and a call costs.
    canonical = (f"{scheme}://{host}{':' + port if port else ''}"
                 f"{_fix_escapes(clean_path) if '%' in clean_path else clean_path}")
    if has_query:
        canonical += "?" + (_fix_escapes(query) if "%" in query else query)
    if clean_path != path:
        # Removing a path parameter can expose a dot segment (/..;jsessionid=1/): let the
        # parser resolve it, so that the result is a fixed point.
        return _normalize(canonical, None)
    # tuple.__new__: a NamedTuple's own __new__ is Python code, a third of this line's cost.
    return tuple.__new__(NormalUrl, (canonical, scheme, host, int(port) if port else None, url_key(canonical)))


def _special_authority(authority: str) -> str:
    """A non-special URL's host as written, through the host parser of a special URL (the
    port kept apart: the https parser would drop 443)."""
    if authority.startswith("["):
        end = authority.find("]") + 1
        host, port = authority[:end], authority[end + 1:]
    else:
        host, _, port = authority.partition(":")
    try:
        parsed = ada_url.URL(f"https://{host}/")
    except ValueError:
        raise InvalidUrl(Rejection.HOST) from None
    return parsed.hostname + (f":{port}" if port else "")


@functools.lru_cache(maxsize=4096)
def _host_and_port(authority: str, default_port: int) -> "tuple[str, str] | tuple[InvalidUrl, None]":
    """The host and the port (empty for the scheme's default) of an authority as the parser
    wrote it; an InvalidUrl for a host that is no DNS name. Cached: a page's links name a
    few hosts many times."""
    try:
        host, port = _split_authority(authority)
    except InvalidUrl as exc:
        return InvalidUrl(*exc.args), None  # without its traceback (see _normalize_cached)
    return host, "" if port and int(port) == default_port else port


def _split_authority(authority: str) -> tuple[str, str]:
    if authority.startswith("["):  # IPv6 literal, already compressed by the parser
        end = authority.find("]") + 1
        return authority[:end], authority[end + 1:]
    host, _, port = authority.partition(":")
    host = host[:-1] if host.endswith(".") else host
    if not host or len(host) > 253 or not _DNS_NAME.match(host):
        raise InvalidUrl(Rejection.HOST)
    if "xn--" in host and any(_bad_punycode(label) for label in host.split(".")):
        raise InvalidUrl(Rejection.HOST)
    return host, port


@functools.lru_cache(maxsize=4096)
def _bad_punycode(label: str) -> bool:
    # UTS-46 refuses an "xn--" label that does not decode to a valid name; ada (4.0) lets
    # some through (`xn--`, `xn--pokxncvks`). Its decoder returns such a label unchanged.
    return label.startswith("xn--") and ada_url.idna_to_unicode(label) == label


_HEX = frozenset("0123456789ABCDEFabcdef")
_LONE, _HEX_DIGIT, _OTHER = 0, 1, 2  # what the last characters written were


def _fix_escapes(part: str) -> str:
    """Escapes in upper-case hex, those of unreserved characters decoded; a "%" that starts
    no escape kept as written (WHATWG keeps it: the server is asked for what the link
    named). A decoded hex digit right after such a "%" (or after "%" and a hex digit) would
    form an escape that was not there, so that escape is kept: the form stays a fixed
    point (`%%36%31` is `%%361`, never `%61`)."""
    if "%" not in part:
        return part
    out, before_last, last = [], _OTHER, _OTHER
    position = 0
    for match in _ESCAPE_OR_PERCENT.finditer(part):
        literal = part[position:match.start()]
        if literal:
            out.append(literal)
            before_last = _kind(literal[-2]) if len(literal) > 1 else last
            last = _kind(literal[-1])
        position = match.end()
        hex_digits = match.group(1)
        if hex_digits is None:
            out.append("%")
            before_last, last = last, _LONE
            continue
        byte = int(hex_digits, 16)
        char = chr(byte)
        if byte not in _UNRESERVED or (char in _HEX and (last == _LONE or (before_last, last) == (_LONE, _HEX_DIGIT))):
            out.append("%" + hex_digits.upper())
            before_last, last = last, _OTHER
        else:
            out.append(char)
            before_last, last = last, _kind(char)
    out.append(part[position:])
    return "".join(out)


def _kind(char: str) -> int:
    return _HEX_DIGIT if char in _HEX else _OTHER


def _without_session_ids(query: str) -> str:
    kept = [p for p in query.split("&") if p.split("=", 1)[0].lower() not in SESSION_QUERY_PARAMS]
    return "&".join(kept)
