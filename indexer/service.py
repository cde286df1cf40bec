"""The indexer's public interface: turn a fetched response into a document, and search.

Exact duplicates: the SHA-256 of the body bytes. The first document to claim a hash in
ContentFingerprint is the original; later ones are stored as duplicates of it and are not
indexed, so a page served under several URLs is found once.
"""

import hashlib
from dataclasses import dataclass, field

from django.conf import settings
from django.db import IntegrityError, transaction

from .backends import get_search_backend
from .models import ContentFingerprint, Document
from .parse import parse_html

HTML_TYPES = ("text/html", "application/xhtml+xml")


@dataclass
class PageOutcome:
    detail: str  # indexed | duplicate | noindex | not_html
    content_hash: str = ""
    links: list[str] = field(default_factory=list)
    document_id: int | None = None


def content_hash(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def process_page(url_id: int, url: str, status: int, content_type: str, charset: str | None,
                 body: bytes) -> PageOutcome:
    """Parse, dedupe and index one 2xx response. Links come back for the frontier."""
    digest = content_hash(body)
    if content_type not in HTML_TYPES:
        return PageOutcome("not_html", digest)
    page = parse_html(
        body, url, charset,
        max_links=settings.CRAWLER_MAX_LINKS_PER_PAGE, max_chars=settings.CRAWLER_MAX_INDEX_CHARS,
    )
    with transaction.atomic():
        doc, created = Document.objects.update_or_create(
            url_id=url_id,
            defaults=dict(
                address=url, title=page.title, headings=page.headings, body=page.text,
                content_hash=digest, content_type=content_type, status=status,
                size=len(body), noindex=page.noindex,
            ),
        )
        original_id = _claim_fingerprint(digest, doc.id)
        if original_id != doc.id:
            Document.objects.filter(id=doc.id).update(duplicate_of_id=original_id)
            detail = "duplicate"
        elif page.noindex:
            detail = "noindex"
        else:
            get_search_backend().add([doc.id])
            Document.objects.filter(id=doc.id).update(indexed=True)
            detail = "indexed"
    return PageOutcome(detail, digest, page.links, doc.id)


def _claim_fingerprint(digest: str, document_id: int) -> int:
    try:
        with transaction.atomic():
            ContentFingerprint.objects.create(content_hash=digest, document_id=document_id)
        return document_id
    except IntegrityError:
        return ContentFingerprint.objects.get(content_hash=digest).document_id


def search(query: str, limit: int = 10, offset: int = 0):
    return get_search_backend().search(query, limit=limit, offset=offset)


def document_counts() -> dict:
    return {
        "documents": Document.objects.count(),
        "indexed": Document.objects.filter(indexed=True).count(),
        "duplicates": Document.objects.exclude(duplicate_of=None).count(),
        "noindex": Document.objects.filter(noindex=True).count(),
    }
