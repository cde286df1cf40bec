"""The URLs the crawler takes from a page, and a stored page's found again from its archived
response (`manage.py export documents --outlinks`).

The crawler keeps no link graph: a URL row remembers only the first page that linked to it
(Url.referrer). A page's outlinks are therefore read again from the bytes it was indexed
from, the response archived in the WARC files, by the crawler's own parser and rules
(indexer.parse_page: rel=nofollow, meta robots and X-Robots-Tag nofollow, <base>, the
CRAWLER_MAX_LINKS_PER_PAGE cap) and put in the frontier's form (frontier.canonical_url), so
each outlink is spelt exactly as the frontier row it became, if it became one.
"""

from django.conf import settings

from frontier import service as frontier
from indexer import service as indexer

from archive import warc
from fetch import http
from . import robots


def canonical_elsewhere(parsed, url: str) -> str:
    """The other URL a page's <link rel=canonical> names, in the frontier's form; "" when it
    names none, the page itself or no valid URL, or the page is noindex (whose canonical
    the crawler does not follow: its text is not indexed anywhere)."""
    if not parsed.canonical or parsed.noindex:
        return ""
    canonical = frontier.canonical_url(parsed.canonical)
    return canonical if canonical and canonical != url else ""


def outlinks(url: str, parsed) -> list[str]:
    """The URLs the crawler sends to the frontier from a parsed page, each once, in the order
    it sends them (crawl/pipeline.py's store and _admit_canonicals): its links in page order,
    the feeds it announces (CRAWLER_FEEDS), then the canonical URL it names elsewhere.

    These are the page's links whatever the frontier then decided about them: one it left
    out (out of scope, a filter, a quota) is still an outlink. A link that is no crawlable
    URL (mailto:, javascript:, an invalid host) has no frontier form and is not one."""
    base = parsed.base or url
    written = parsed.links + (parsed.feeds if settings.CRAWLER_FEEDS else [])
    found = dict.fromkeys(link for link in (frontier.canonical_url(href, base) for href in written) if link)
    canonical = canonical_elsewhere(parsed, url)
    if canonical:
        found.setdefault(canonical)
    return list(found)


def archived_outlinks(url: str, warc_file: str, warc_offset: int | None, warc_length: int | None) -> list[str] | None:
    """The outlinks of the page `url` whose response is archived at (file, offset, length)
    (a PDF's: its link annotations): [] for a body that is neither HTML nor a readable PDF,
    None when the record cannot be read back here (archiving was off, or the file is on
    another machine or gone: archive/warc.read_response)."""
    if not warc_file or warc_offset is None or warc_length is None:
        return None
    try:
        response = warc.read_response(warc.Location(warc_file, warc_offset, warc_length))
    except warc.ArchiveUnavailable:
        return None
    headers = _merged(response.http_headers)
    content_type = headers.get("content-type", "")
    try:
        parsed = indexer.parse_page(url, content_type.split(";")[0].strip().lower(), http.charset_of(content_type),
                                    response.body, headers.get("x-robots-tag", ""), robots.product_token())
    except indexer.PdfProblem:  # a PDF that cannot be read has no links to give
        return []
    return outlinks(url, parsed) if parsed is not None else []


def _merged(headers: list[tuple[str, str]]) -> dict[str, str]:
    """Lower-case names, repeated headers joined by ", ": the form the HTTP client handed the
    crawl (urllib3's itermerged), so two X-Robots-Tag headers count as they did then."""
    merged = {}
    for name, value in headers:
        name = name.lower()
        merged[name] = f"{merged[name]}, {value}" if name in merged else value
    return merged
