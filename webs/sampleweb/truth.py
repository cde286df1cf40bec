"""Ground truth: the exact set of URLs a correct crawler fetches.

Why a separate module: these are the crawler's rules, stated once as code,
and applied to the very Page objects (and link lists) the server renders.

Rules: BFS from the seeds (depth 0, hops 0).  A link on a page at depth d
gives depth d+1, hops 0; a redirect target keeps the depth, hops + 1.  A URL
is admitted if depth <= depth_limit, hops <= max_redirects, robots.txt
allows it and it was not admitted before.  Links are not followed from
non-200 answers, non-HTML bodies, pages with meta robots nofollow, or when
rel=nofollow; only http(s) links count; fragments are dropped; relative
links resolve against <base href> if present.  Flaky hosts count as normal
(a crawler retries 429/503).  Every admitted URL is in the set, whatever
its status.

Scope: "web" admits every host; "host" only the seeds' hosts, plus the host
a seed redirects to (a seed that moved is still the seed).  Exact for this
web's single seed.
"""
from __future__ import annotations

from urllib.parse import urldefrag, urljoin, urlsplit

REDIRECT_STATUSES = (301, 302, 303, 307, 308)


def canonical(url: str) -> str | None:
    """Canonical form used everywhere: fragment dropped, http(s) only."""
    url = urldefrag(url)[0]
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return url


def ground_truth(web, depth_limit: int = 20, max_redirects: int = 3, scope: str = "web") -> set[str]:
    """Level-by-level BFS over `web` (a SampleWeb).

    Redirect targets join the current level (same depth, hops + 1), so
    every URL is admitted at its smallest depth.
    """
    if scope not in ("web", "host"):
        raise ValueError(f"scope {scope!r}: the truth knows 'web' and 'host'")
    hosts = {urlsplit(url).hostname for url in web.seeds}
    admitted: set[str] = set()
    level = [(url, 0) for url in web.seeds]
    depth = 0
    while level and depth <= depth_limit:
        next_level = []
        pos = 0
        while pos < len(level):
            url, hops = level[pos]
            pos += 1
            if scope == "host" and urlsplit(url).hostname not in hosts:
                if depth > 0 or hops == 0:
                    continue
                hosts.add(urlsplit(url).hostname)  # a seed's redirect: the seed moved
            if url in admitted or hops > max_redirects or web.robots_disallowed(url):
                continue
            admitted.add(url)
            page = web.page(url)
            if page.status in REDIRECT_STATUSES and page.location:
                target = canonical(urljoin(url, page.location))
                if target:
                    level.append((target, hops + 1))
                continue
            if page.status != 200 or page.kind != "html" or "nofollow" in page.meta_robots:
                continue
            base = urljoin(url, page.base_href) if page.base_href else url
            for link in page.links:
                if "nofollow" in link.rel.split():
                    continue
                target = canonical(urljoin(base, link.href))
                if target:
                    next_level.append((target, 0))
        level = next_level
        depth += 1
    return admitted
