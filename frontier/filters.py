"""Admission rules for a candidate URL: the reasons a URL never enters the frontier.

Each rule returns a short reason string (it becomes a rejection count in the crawl summary
and in API answers) or None when the URL may enter.
"""

from .limits import Limits
from .normalize import NormalUrl


def rejection_reason(url: NormalUrl, depth: int, hops: int, limits: Limits) -> str | None:
    if len(url.url) > limits.url_length_limit:
        return "url_too_long"
    if limits.is_excluded(url.host):
        return "excluded_domain"
    if depth > limits.depth_limit:
        return "depth_limit"
    if hops > limits.max_redirects:
        return "redirect_limit"
    return None
