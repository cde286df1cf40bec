"""The indexer's public interface: turn fetched responses into documents, and search.

Two steps, so the fetch path can keep the database out of its inner loop:
prepare_page() and prepare_index() are pure CPU (hash, decode, parse, fingerprint, the
search backend's analysis), store_pages() writes a whole batch of prepared pages in a
statement per table.

Exact duplicates: the SHA-256 of the body bytes. The first document to claim a hash in
ContentFingerprint is the original; later ones are stored as duplicates of it and are not
indexed, so a page served under several URLs is found once.
"""

import dataclasses
import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from datetime import timezone as dt_timezone
from typing import NamedTuple

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone

from common import stagetime
from archive import replay, warc
from fetch import robotstxt
from fetch.transport import charset_of
from frontier.service import url_key
from frontier.vocabulary import Observation, PageDetail

from . import bulk, canonicals, language, linksources, maincontent, neardup, pagelinks, paging, pdf, textstore
from .backends import SearchResults, get_search_backend
from .fingerprint import Fingerprint, compare, fingerprint, words_moved
from .gemtext import decode_text
from .gemtext import parse_gemtext
from .export import document_count, document_rows  # noqa: F401  (the indexer's public interface)
from .linksources import LinkSource
from .pages import indexed_page_count, indexed_pages  # noqa: F401  (for a WACZ package's pages)
from .models import Document
from .parse import ParsedPage, header_directives, parse_html
from .pdf import PdfProblem, is_pdf  # noqa: F401  (the indexer's public interface: what a PDF is, why one was not read)

HTML_TYPES = ("text/html", "application/xhtml+xml")
GEMTEXT_TYPE = "text/gemini"
PDF_TYPE = pdf.PDF_TYPES[0]
# What a page's response is downloaded as (the rest is not read: fetch.http.fetch's
# body_types), and the types whose body is downloaded only if its first bytes sniff as a
# PDF (sniff_types; indexer/pdf.py).
PAGE_BODY_TYPES = HTML_TYPES + pdf.PDF_TYPES
SNIFFED_TYPES = pdf.SNIFFED_TYPES
SNIFF_BYTES = pdf.SNIFF_BYTES
sniffs_as_pdf = pdf.sniffs_as_pdf


@dataclass
class PreparedPage:
    """A 2xx response, hashed and parsed, not yet stored."""

    url_id: int
    url: str
    status: int
    content_type: str
    content_hash: str
    size: int
    parsed: ParsedPage | None  # None when the body is not HTML
    archived: tuple[str, int, int] | None = None  # the raw response's WARC (file, offset, length)
    fingerprint: Fingerprint | None = None  # of the extracted text (None: not HTML)
    index: tuple | None = None  # the search backend's row for it (SearchBackend.prepare), if prepared
    stored_text: str | bytes | None = None  # its text as the database keeps it (indexer/textstore.py), if prepared
    source: LinkSource | None = None  # a sitemap or feed, read for its links only (not a document)
    canonical: str = ""  # the other URL its <link rel=canonical> names (frontier form): indexer/canonicals.py
    started_at: float | None = None  # when its response began, epoch seconds: its WARC-Date, the document's fetched_at

    @property
    def links(self) -> list[str]:
        """Links as written in the page (or listed by the sitemap or feed); they resolve
        against `base`."""
        if self.parsed is not None:
            return self.parsed.links
        return self.source.links if self.source is not None else []

    @property
    def sitemap_priorities(self) -> list[float | None] | None:
        """A sitemap's <priority> per link (None: not a sitemap of pages)."""
        if self.source is None or self.source.kind not in (linksources.SITEMAP, linksources.TEXT_SITEMAP):
            return None
        return self.source.priorities

    @property
    def sitemap_lastmods(self) -> list[float | None]:
        """A sitemap's <lastmod> per link, Unix seconds (None: not given); [] for anything
        but a sitemap of pages."""
        return self.source.lastmods if self.sitemap_priorities is not None else []

    @property
    def feeds(self) -> list[str]:
        """The RSS/Atom feeds the page announces, as written (CRAWLER_FEEDS)."""
        return self.parsed.feeds if self.parsed is not None and settings.CRAWLER_FEEDS else []

    @property
    def lists_sitemaps(self) -> bool:
        """A sitemap index: its links are sitemaps, not pages."""
        return self.source is not None and self.source.kind == linksources.SITEMAP_INDEX

    @property
    def base(self) -> str:
        return self.parsed.base if self.parsed is not None and self.parsed.base else self.url


@stagetime.timed("fingerprint")
def content_hash(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


# WHATWG MIME Sniffing's "binary data bytes": no HTML page contains them, a JPEG or a
# zip served as text/html nearly always does within its first bytes.
_BINARY_BYTES = re.compile(rb"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")
_TEXT_BOMS = (b"\xfe\xff", b"\xff\xfe", b"\xef\xbb\xbf")


def looks_binary(body: bytes) -> bool:
    head = body[:1024]
    return not head.startswith(_TEXT_BOMS) and _BINARY_BYTES.search(head) is not None


def prepare_page(url_id: int, url: str, status: int, content_type: str, charset: str | None,
                 body: bytes, archived: tuple[str, int, int] | None = None,
                 body_hash: str | None = None, robots_header: str = "", robots_token: str = "",
                 content_language: str = "") -> PreparedPage:
    """Hash (unless the caller did: body_hash) and parse one response (parse_page), and say
    which other URL it names as canonical (the frontier's form); no database access. A PDF
    served as another type (sniffed) is stored as application/pdf. Raises PdfProblem for a
    PDF that cannot be read. content_language: the response's Content-Language header."""
    parsed = parse_page(url, content_type, charset, body, robots_header, robots_token, content_language)
    if content_type != PDF_TYPE and is_pdf(content_type, body):
        content_type = PDF_TYPE
    text = fingerprint(parsed.title, parsed.headings, parsed.text) if parsed is not None else None
    canonical = pagelinks.canonical_elsewhere(parsed, url) if parsed is not None else ""
    return PreparedPage(url_id, url, status, content_type, body_hash or content_hash(body), len(body), parsed,
                        archived, text, canonical=canonical)


def parse_page(url: str, content_type: str, charset: str | None, body: bytes, robots_header: str = "",
               robots_token: str = "", content_language: str = "") -> ParsedPage | None:
    """A response's page as the crawler reads it (HTML, gemtext, a capsule's other text, or a
    PDF: indexer/pdf.py, which raises PdfProblem for one it cannot read), or None when the
    body is none of those; no database access. robots_header: the response's X-Robots-Tag, honoured like the meta tag
    (for every crawler, or for `robots_token`). The crawl and the export's outlinks
    (archived_outlinks) both parse here, so they read the same links from the same bytes."""
    limits = {"max_links": settings.CRAWLER_MAX_LINKS_PER_PAGE, "max_chars": settings.CRAWLER_MAX_INDEX_CHARS}
    if is_pdf(content_type, body):
        parsed = pdf.parse_pdf(body, url, max_pages=settings.CRAWLER_PDF_MAX_PAGES,
                               max_links=settings.CRAWLER_MAX_LINKS_PER_PAGE, max_chars=settings.CRAWLER_PDF_MAX_CHARS)
    elif looks_binary(body):
        return None
    elif content_type in HTML_TYPES:
        parsed = parse_html(body, url, charset, **limits)
    elif content_type == GEMTEXT_TYPE:
        parsed = parse_gemtext(body, url, charset, **limits)
    elif url.startswith("gemini://") and content_type.startswith("text/"):
        # Geminispace's other text (text/plain, text/markdown …): indexed as it is.
        text, chosen = decode_text(body, charset)
        parsed = ParsedPage(text=text[:limits["max_chars"]], base=url, encoding=chosen.encoding,
                            encoding_source=chosen.source)
    else:
        return None
    # The title first: a page's own name is its most deliberate text.
    parsed.language = language.identify(language.content_sample(parsed.title, parsed.text, parsed.boilerplate),
                                        parsed.declared_language, content_language)
    noindex, nofollow = header_directives(robots_header, robots_token) if robots_header else (False, False)
    parsed.noindex |= noindex
    if nofollow:
        parsed.nofollow, parsed.links, parsed.feeds = True, [], []
    return parsed


def prepare_source(url_id: int, url: str, status: int, content_type: str, body: bytes, body_hash: str,
                   kind: str, nested: bool = False, charset: str | None = None) -> PreparedPage:
    """Read a sitemap (kind "sitemap") or a feed ("feed") for its links; no database access.
    `nested`: a sitemap a sitemap index listed, whose own index entries are not followed
    (sitemaps.org allows one level). `charset`: the response's Content-Type charset.
    """
    limits = {"max_urls": settings.CRAWLER_SITEMAP_MAX_URLS, "max_bytes": settings.CRAWLER_SITEMAP_MAX_BYTES,
              "charset": charset}
    source = linksources.read_feed(body, **limits) if kind == linksources.FEED else \
        linksources.read_sitemap(body, **limits)
    if nested and source.kind == linksources.SITEMAP_INDEX:
        source.links, source.kind = [], NESTED_INDEX
    return PreparedPage(url_id, url, status, content_type, body_hash, len(body), None, source=source)


NESTED_INDEX = "nested_index"  # a sitemap index listed by a sitemap index: not followed


def source_detail(source: LinkSource) -> str:
    """What became of a sitemap or feed: its kind (or not_a_link_source), and whether it was
    cut short (:truncated) or broke off (:malformed): the links before the fault are kept."""
    detail = source.kind or "not_a_link_source"
    if source.truncated:
        detail += ":truncated"
    if source.malformed:
        detail += ":malformed"
    return detail


def prepare_index(page: PreparedPage) -> None:
    """Prepare what the writer sends for a page that will be stored: its text as the
    database keeps it, and the search backend's analysis (none for a page marked noindex
    or one that is not HTML)."""
    if page.parsed is None:
        return
    page.stored_text = textstore.for_database(page.parsed.text, connection.vendor)
    if not page.parsed.noindex:
        page.index = get_search_backend().prepare(_as_document(page))


def compare_text(old_hash: str, old_simhash: int | None, new: Fingerprint | None) -> Observation:
    """What a revisit saw of the text (an Observation): first, unchanged, noise or changed.
    Noise is a text change of at most CRAWLER_CHANGE_SIMHASH_THRESHOLD SimHash bits."""
    if new is None:
        return Observation.FIRST
    return Observation(compare(old_hash, old_simhash, new, settings.CRAWLER_CHANGE_SIMHASH_THRESHOLD)[0])


def small_changes(pages: list[PreparedPage]) -> set[int]:
    """Of these revisited pages (their text hash differs from the stored copy's), the url ids
    whose text lost and gained at most CRAWLER_CHANGE_NOISE_WORDS words against the stored
    copy: noise, though their SimHash moved past the threshold. One query for the batch."""
    most = settings.CRAWLER_CHANGE_NOISE_WORDS
    parsed = {page.url_id: page.parsed for page in pages if page.parsed is not None}
    if most <= 0 or not parsed:
        return set()
    small = set()
    for url_id, title, headings, body in Document.objects.filter(url_id__in=list(parsed)).values_list(
            "url_id", "title", "headings", "body"):
        new = parsed[url_id]
        if words_moved((title, headings, textstore.from_database(body)), (new.title, new.headings, new.text),
                       most) <= most:
            small.add(url_id)
    return small


@stagetime.timed("documents")
def remove_pages(url_ids: list[int]) -> int:
    """Take the documents of these URLs out of the index (the pages are gone); the rows
    stay as the record of what was there. Returns how many left the index."""
    with transaction.atomic():
        indexed = list(Document.objects.filter(url_id__in=url_ids, indexed=True).values_list("id", flat=True))
        if indexed:
            get_search_backend().delete(indexed)
            neardup.forget(indexed)
            Document.objects.filter(id__in=indexed).update(indexed=False)
    return len(indexed)


def settle_canonical_targets(url_ids: list[int]) -> int:
    """After these URLs' visits are recorded: pages left out for one of them as their
    canonical are indexed if it no longer stands for them (indexer/canonicals.py).
    Returns how many were indexed."""
    return canonicals.settle_named(url_ids)


def originals_of(url_ids: list[int]) -> dict[int, str]:
    """url id -> the URL of the page its stored copy duplicates (one query; none when
    the list is empty)."""
    if not url_ids:
        return {}
    return dict(Document.objects.filter(url_id__in=url_ids, duplicate_of__isnull=False)
                .values_list("url_id", "duplicate_of__page_url"))


@stagetime.timed("documents")
def store_pages(pages: list[PreparedPage]) -> dict[int, str]:
    """Store, dedupe and index a batch of prepared pages in one transaction: a statement
    per table for the whole batch (indexer/bulk.py), the index rows as prepared.

    Returns url id -> detail: indexed | duplicate | near_duplicate | noindex |
    canonical_elsewhere | not_html, or a sitemap's or feed's (source_detail). A page naming
    another URL as canonical is left out while that URL stands for it, and pages indexed
    under URLs naming one of these give way to it (indexer/canonicals.py).
    """
    details = {p.url_id: source_detail(p.source) if p.source is not None else PageDetail.NOT_HTML
               for p in pages if p.parsed is None}
    html = [p for p in pages if p.parsed is not None]
    if not html:
        return details
    backend = get_search_backend()
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    with transaction.atomic():
        # A recrawl replaces a document: drop its index entry while the old text is there.
        previous = bulk.indexed_documents([p.url_id for p in html])
        if previous:
            backend.delete(previous)
        named = {p.url_id: url_key(p.canonical) for p in html if p.canonical}
        left_out = _left_for_canonical(html, named)
        ids = bulk.upsert_documents([
            (p.url_id, p.url, p.parsed.title, p.parsed.headings, _stored_text(p),
             maincontent.encode_spans(p.parsed.boilerplate), p.content_hash, p.content_type,
             p.parsed.encoding, p.parsed.encoding_source, p.status, p.size, p.parsed.noindex,
             not (p.parsed.noindex or p.url_id in left_out), _fetched_at(p, now), *_warc_fields(p.archived), None,
             p.parsed.language, named.get(p.url_id))
            for p in html])
        # The pages indexed under a URL naming one of these as canonical give way to it.
        takers = {url_key(p.url): p.content_hash for p in html if not p.parsed.noindex and p.url_id not in left_out}
        canonicals.retire_naming(takers, keep=set(ids.values()))
        claims = {}
        for p in html:  # within a batch the first document with a hash claims it
            if p.url_id not in left_out:  # a page left out for its canonical claims no text
                claims.setdefault(p.content_hash, ids[p.url_id])
        originals = bulk.claim_fingerprints(claims) if claims else {}
        duplicates, candidates = {}, []
        for p in html:
            document_id = ids[p.url_id]
            if p.url_id in left_out:
                details[p.url_id] = PageDetail.CANONICAL_ELSEWHERE
                continue
            original = originals[p.content_hash]
            if original != document_id:
                duplicates[document_id] = original
                details[p.url_id] = PageDetail.DUPLICATE
            elif p.parsed.noindex:
                details[p.url_id] = PageDetail.NOINDEX
            else:
                candidates.append((p, document_id))
        if previous:
            neardup.forget(previous)
        simhashes = {document_id: (p.fingerprint.simhash, p.fingerprint.text_hash) for p, document_id in candidates
                     if p.fingerprint is not None and p.fingerprint.words >= settings.CRAWLER_NEAR_DUPLICATE_MIN_WORDS}
        near = neardup.originals(simhashes)
        indexable = []
        for p, document_id in candidates:
            if document_id in near:
                duplicates[document_id] = near[document_id]
                details[p.url_id] = PageDetail.NEAR_DUPLICATE
            else:
                indexable.append((document_id, p.index if p.index is not None else backend.prepare(_as_document(p))))
                details[p.url_id] = PageDetail.INDEXED
        if duplicates:
            bulk.mark_duplicates(duplicates)
        backend.add_prepared(indexable)
        neardup.remember({document_id: simhashes[document_id] for document_id, _ in indexable
                          if document_id in simhashes})
    return details


def _left_for_canonical(pages: list[PreparedPage], named: dict[int, int]) -> set[int]:
    """Url ids of the pages stored but not indexed because the URL their <link
    rel=canonical> names stands for them (indexer/canonicals.py). Within the batch, in url id
    order, a page naming a page that is itself left out keeps its place (a loop ends at its
    second page)."""
    if not named:
        return set()
    stand = canonicals.standing(named.values())
    by_key = {url_key(p.url): p.url_id for p in pages}
    left_out = set()
    for url_id in sorted(named):
        key = named[url_id]
        if key in stand and by_key.get(key) not in left_out:
            left_out.add(url_id)
    return left_out


def _fetched_at(page: PreparedPage, now):
    """When the page's response began, as its WARC record's WARC-Date says (so the replay's
    capture timestamp is the document's fetch time), else when it is stored."""
    if page.started_at is None:
        return now
    return connection.ops.adapt_datetimefield_value(datetime.fromtimestamp(page.started_at, dt_timezone.utc))


def _stored_text(page: PreparedPage):
    """The page's text as this database keeps it (prepared in the parse pool, or now)."""
    if page.stored_text is not None:
        return page.stored_text
    return textstore.for_database(page.parsed.text, connection.vendor)


def _warc_fields(archived: tuple[str, int, int] | None) -> tuple:
    filename, offset, length = archived or ("", None, None)
    return filename, offset, length


class _DocumentView(NamedTuple):
    page_url: str
    title: str
    headings: str
    body: str
    language: str
    boilerplate: list  # (start, end) ranges of body: its furniture, which is not indexed
    content_type: str


def _as_document(page: PreparedPage) -> _DocumentView:
    """What the search backend indexes of a page."""
    return _DocumentView(page.url, page.parsed.title, page.parsed.headings, page.parsed.text, page.parsed.language,
                         page.parsed.boilerplate, page.content_type)


def search(query: str, limit: int = 10, offset: int = 0) -> SearchResults:
    """One page of ranked hits (iterable) with the total match count; see indexer.query
    for what a query may say."""
    return get_search_backend().search(query, limit=limit, offset=offset)


def search_page(query: str, page: int = 1, per_page: int = 10) -> tuple[SearchResults, paging.Paging]:
    """One page of results (numbered from 1) and where it sits among them. A page past the
    last one gets no hits, only the count (the backend ranks nothing for it)."""
    backend = get_search_backend()
    parsed = backend.parse(query)
    deepest = paging.deepest_result(parsed)
    offset = (page - 1) * per_page
    if offset >= deepest:
        results = backend.search(parsed, limit=0)
    else:
        results = backend.search(parsed, limit=min(per_page, deepest - offset), offset=offset)
    results.hits = _with_stored_facts(results.hits)
    return results, paging.Paging(page, per_page, results.total, deepest)


def _with_stored_facts(hits: list) -> list:
    """The hits with their content type (a PDF is marked as one in the results), those whose
    response is archived with the replay address of that capture (when
    CRAWLER_REPLAY_URL is set): one query for the page of hits."""
    if not hits:
        return hits
    stored = {document_id: (warc_file, content_type) for document_id, warc_file, content_type in
              Document.objects.filter(id__in=[hit.document_id for hit in hits])
              .values_list("id", "warc_file", "content_type")}
    shown = []
    for hit in hits:
        warc_file, content_type = stored.get(hit.document_id, ("", ""))
        cached = replay.capture_url(hit.url, hit.fetched_at) if settings.CRAWLER_REPLAY_URL and warc_file else None
        shown.append(dataclasses.replace(hit, cached_url=cached, content_type=content_type))
    return shown


@dataclass
class ReindexCounts:
    """What `manage.py reindex` did."""

    documents: int = 0  # every stored document, its language identified again
    reparsed: int = 0  # of them, parsed again from the archived response (text, language, declaration)
    from_stored_text: int = 0  # no archived response to read here: language from the stored text
    indexed: int = 0  # put back in the full-text index


def reindex(batch: int = 200, progress=None, reread=None) -> ReindexCounts:
    """Re-analyse every stored document and rebuild the whole full-text index with the
    current analyzer (after an upgrade that changed decoding, language identification,
    analysis or the index layout), and the near-duplicate blocks (indexer/neardup.py).

    reread(document) -> ParsedPage | None: the document's archived response parsed again
    through parse_page (archived_page), so the text is decoded and
    extracted by today's rules and the page's own `<html lang>` and Content-Language are
    read again; None where the archive does not have it, and then the language is
    identified from the stored text. One transaction: searches see the old index until it
    commits."""
    backend = get_search_backend()
    counts = ReindexCounts()
    total = Document.objects.count()
    with transaction.atomic():
        backend.clear()
        for rows in _batches(batch):
            changed, reparsed = [], []
            for document in rows:
                parsed = reread(document) if reread is not None and document.warc_file else None
                if parsed is not None:
                    counts.reparsed += 1
                    document.title, document.headings = parsed.title, parsed.headings
                    document.body = parsed.text
                    document.boilerplate = maincontent.encode_spans(parsed.boilerplate)
                    document.language = parsed.language
                    document.encoding, document.encoding_source = parsed.encoding, parsed.encoding_source
                    reparsed.append(document)
                else:
                    counts.from_stored_text += 1
                    document.language = language.identify(language.content_sample(
                        document.title, document.body, maincontent.decode_spans(document.boilerplate)))
                    changed.append(document)
            Document.objects.bulk_update(changed, ["language"])
            Document.objects.bulk_update(reparsed, ["language", "encoding", "encoding_source", "title", "headings",
                                                    "body", "boilerplate"])
            changed += reparsed
            indexable = [d for d in changed if d.indexed]
            backend.add(indexable)
            counts.documents += len(changed)
            counts.indexed += len(indexable)
            if progress:
                progress(counts.documents, total)
        neardup.rebuild()
    return counts


def _batches(batch: int):
    """Every document, in id order, a batch at a time (keyset paging)."""
    last = 0
    while True:
        rows = list(Document.objects.filter(id__gt=last).order_by("id")[:batch])
        if not rows:
            return
        yield rows
        last = rows[-1].id


def document_counts() -> dict:
    """Documents in all, indexed, duplicates, noindex; and indexed ones by content type
    (by_type: the types read for text, docs/content.md)."""
    by_type = Document.objects.filter(indexed=True).values_list("content_type").annotate(n=Count("id"))
    return {
        "documents": Document.objects.count(),
        "indexed": Document.objects.filter(indexed=True).count(),
        "duplicates": Document.objects.exclude(duplicate_of=None).count(),
        "noindex": Document.objects.filter(noindex=True).count(),
        "by_type": dict(sorted(by_type, key=lambda row: -row[1])),
    }


def archived_outlinks(url: str, warc_file: str, warc_offset: int | None, warc_length: int | None) -> list[str] | None:
    """The outlinks of the page `url` whose response is archived at (file, offset, length)
    (a PDF's: its link annotations): [] for a body that is neither HTML nor a readable PDF,
    None when the record cannot be read back here (archiving was off, or the file is on
    another machine or gone: archive/warc.py read_response)."""
    response = _archived_response(warc_file, warc_offset, warc_length)
    if response is None:
        return None
    parsed = _parsed_again(url, response)
    return pagelinks.outlinks(url, parsed) if parsed is not None else []


def archived_page(document) -> ParsedPage | None:
    """A stored document's archived response parsed again as the crawl parses a page
    (decoding, text, language: parse_page), or None when the record cannot be read back here
    or is no page (`manage.py reindex`)."""
    response = _archived_response(document.warc_file, document.warc_offset, document.warc_length)
    return _parsed_again(document.page_url, response) if response is not None else None


def _archived_response(warc_file: str, warc_offset: int | None, warc_length: int | None):
    """The archived response at (file, offset, length), or None when it cannot be read here."""
    if not warc_file or warc_offset is None or warc_length is None:
        return None
    try:
        return warc.read_response(warc.Location(warc_file, warc_offset, warc_length))
    except warc.ArchiveUnavailable:
        return None


def _parsed_again(url: str, response) -> ParsedPage | None:
    """An archived response read as the crawl read it (its headers as the HTTP client merged
    them), or None when it is no page (a PDF that cannot be read is none: no links, nothing
    to reindex)."""
    headers = _merged(response.http_headers)
    content_type = headers.get("content-type", "")
    try:
        return parse_page(url, content_type.split(";")[0].strip().lower(), charset_of(content_type), response.body,
                          headers.get("x-robots-tag", ""), robotstxt.crawler_token(),
                          headers.get("content-language", ""))
    except PdfProblem:
        return None


def _merged(headers: list[tuple[str, str]]) -> dict[str, str]:
    """Lower-case names, repeated headers joined by ", ": the form the HTTP client handed the
    crawl (urllib3's itermerged), so two X-Robots-Tag headers count as they did then."""
    merged = {}
    for name, value in headers:
        name = name.lower()
        merged[name] = f"{merged[name]}, {value}" if name in merged else value
    return merged
