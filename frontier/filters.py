"""Admission rules for a candidate URL: the reasons a URL never enters the frontier.

Each rule returns a Rejection (frontier/vocabulary.py) (it becomes a rejection count in the crawl summary
and in API answers) or None when the URL may enter.
"""

import re

from .limits import Limits
from .normalize import NormalUrl
from .vocabulary import Rejection


def rejection_reason(url: NormalUrl, depth: int, hops: int, limits: Limits) -> str | None:
    if len(url.url) > limits.url_length_limit:
        return Rejection.URL_TOO_LONG
    if limits.is_excluded(url.host):
        return Rejection.EXCLUDED_DOMAIN
    if depth > limits.depth_limit:
        return Rejection.DEPTH_LIMIT
    if hops > limits.max_redirects:
        return Rejection.REDIRECT_LIMIT
    if _REPEATED_SEGMENTS.search(url.url, len(url.origin)):
        return Rejection.TRAP_REPEATED_SEGMENTS
    return None


# The same run of path segments three times in a row (/a/b/a/b/a/b/): relative links
# that resolve one level deeper on every page (Nutch's regex-urlfilter has the same rule).
_REPEATED_SEGMENTS = re.compile(r"(/[^/?#]+(?:/[^/?#]+)?)\1\1(?:/|$|\?)")
