"""The crawler's outcome vocabulary, defined once: why a fetch failed, why a URL was not
admitted, what a revisit saw, what became of a fetched page.

They are StrEnums: each member is its own string, so the values stored in the database,
shown in the admin and counted in summaries stay exactly what they were, and code compares
against a name that a typo cannot silently miss.
"""

from enum import StrEnum


class FetchError(StrEnum):
    """A request that brought no usable response (fetch/http.py names them)."""

    TIMEOUT = "timeout"  # connect or read timed out
    DEADLINE = "deadline"  # headers + body took longer than CRAWLER_TOTAL_DEADLINE
    CONNECTION = "connection"  # refused, reset, broken off
    DNS = "dns"  # the name does not exist
    DNS_UNAVAILABLE = "dns_unavailable"  # the resolver failed: nothing is recorded, the URL waits
    BLOCKED_ADDRESS = "blocked_address"  # resolves to an address the SSRF guard refuses
    TOO_LARGE = "too_large"  # body over CRAWLER_MAX_BODY_BYTES
    PROTOCOL = "protocol"  # not HTTP we can parse
    REDIRECT_LIMIT = "redirect_limit"  # robots.txt: too many hops
    NO_RESPONSE = "no_response"
    ROBOTS_UNAVAILABLE = "robots_unavailable"  # robots.txt gave no verdict (5xx): RFC 9309 says wait


class RequestOutcome(StrEnum):
    """What a request brought, by the class of its status (crawl/observe.py outcome_of);
    a request with no usable response is named by its FetchError instead."""

    OK = "ok"
    NOT_MODIFIED = "not_modified"
    REDIRECT = "redirect"
    GONE = "gone"  # 404, 410
    DENIED = "denied"  # 401, 403
    THROTTLED = "throttled"  # 429, 503
    SERVER_ERROR = "server_error"
    HTTP_ERROR = "http_error"  # any other status


class RedirectOutcome(StrEnum):
    """What became of a redirect's target, sent back through the frontier (never followed
    inline). A refused target is REFUSED + ":" + its Rejection (redirect_refused:scheme)."""

    ADMITTED = "redirect"  # a new URL in the frontier
    KNOWN = "redirect_known"  # already there
    WITHOUT_LOCATION = "redirect_without_location"
    REFUSED = "redirect_refused"


class WaitReason(StrEnum):
    """Why a host's next request waits (frontier/pacing.py HostClock, kept in Host.wait_reason)."""

    CRAWL_DELAY = "crawl_delay"
    ADAPTIVE = "adaptive"
    DEFAULT_DELAY = "default_delay"
    RETRY_AFTER_429 = "retry_after_429"
    RETRY_AFTER_503 = "retry_after_503"
    BREAKER = "breaker"  # network failures in a row
    DNS = "dns"
    ROBOTS_UNAVAILABLE = "robots_unavailable"
    STORE_FAILED = "store_failed"  # its results could not be stored (crawl/writer.py)


class Rejection(StrEnum):
    """Why a candidate URL never entered the frontier (admission)."""

    EMPTY = "empty"
    UNPARSABLE = "unparsable"
    SCHEME = "scheme"
    CREDENTIALS = "credentials"
    HOST = "host"
    URL_TOO_LONG = "url_too_long"
    EXCLUDED_DOMAIN = "excluded_domain"
    DEPTH_LIMIT = "depth_limit"
    REDIRECT_LIMIT = "redirect_limit"
    TRAP_REPEATED_SEGMENTS = "trap_repeated_segments"
    TRAP_PATTERN = "trap_pattern"  # its pattern's pages stopped bringing new text (frontier/traps.py)
    MIRROR_HOST = "mirror_host"  # its host's pages are copies of other hosts' (frontier/traps.py)
    OUT_OF_SCOPE = "out_of_scope"
    HOST_QUOTA = "host_quota"
    DOMAIN_QUOTA = "domain_quota"  # its registered domain reached CRAWLER_MAX_URLS_PER_DOMAIN


class SeedWarning(StrEnum):
    """Why an accepted seed will not be fetched as things stand (frontier/seeding.py)."""

    REFUSED_ADDRESS = "refused_address"  # an address the SSRF guard refuses (CRAWLER_ALLOWED_NETWORKS)


class PageDetail(StrEnum):
    """What became of a 2xx response."""

    INDEXED = "indexed"
    DUPLICATE = "duplicate"
    NEAR_DUPLICATE = "near_duplicate"  # its text within CRAWLER_NEAR_DUPLICATE_BITS of an indexed page's
    CANONICAL_ELSEWHERE = "canonical_elsewhere"  # its <link rel=canonical> names another URL, admitted instead
    NOINDEX = "noindex"
    NOT_HTML = "not_html"
    PARSE_FAILED = "parse_failed"  # its analysis crashed or hung a parse process (crawl/parsepool.py)


class PdfOutcome(StrEnum):
    """What became of a 2xx PDF that was not indexed (indexer/pdf.py, crawl/parsepool.py)."""

    ENCRYPTED = "pdf:encrypted"  # a user password is needed to read it
    TRUNCATED = "pdf:truncated"  # cut short (no end of file) and unreadable
    MALFORMED = "pdf:malformed"  # not a PDF PDFium can open
    NO_TEXT = "pdf:no_text"  # pages without text (a scan, images)
    TIMEOUT = "pdf:timeout"  # its parse process gave no answer within CRAWLER_PARSE_TIMEOUT: replaced
    CRASHED = "pdf:crashed"  # its parse process died (out of CRAWLER_PARSE_MEMORY_LIMIT: a bomb): replaced


class Observation(StrEnum):
    """What a visit saw, for the change-rate estimate (frontier/recrawl.py).

    A 304 and an unchanged 200 are the same observation at different prices; noise is a
    text change below CRAWLER_CHANGE_SIMHASH_THRESHOLD (a timestamp, a rotating ad) and does
    not count as a change."""

    FIRST = "first"  # nothing to compare with: the first visit, or not a text page
    NOT_MODIFIED = "not_modified"  # 304
    UNCHANGED = "unchanged"  # 200, same text
    NOISE = "noise"  # 200, the text moved by at most the threshold
    CHANGED = "changed"  # 200, a real change

    @property
    def saw_change(self) -> bool:
        return self is Observation.CHANGED

    @property
    def comparable(self) -> bool:
        """Whether it is an observation of change at all (the first visit is not)."""
        return self is not Observation.FIRST
