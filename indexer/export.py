"""Stored documents as rows for an export (console's `manage.py export documents`): the
text the index was built from with the page's fields, read in id order a batch at a time
(keyset paging), so a million documents cost one batch of memory."""

from common.paging import in_id_order

from .maincontent import indexed_text
from .models import Document

DOCUMENT_COLUMNS = ("id", "url_id", "page_url", "title", "headings", "body", "boilerplate", "status", "content_type",
                    "size", "encoding", "encoding_source", "fetched_at", "content_hash", "url__text_hash",
                    "url__simhash", "indexed", "noindex", "duplicate_of_id", "warc_file", "warc_offset", "warc_length",
                    "language")
_RENAMED = {"page_url": "url", "body": "text", "url__text_hash": "text_hash", "url__simhash": "simhash",
            "url_id": "frontier_url_id"}


def document_rows(origin: str | None = None, batch: int = 500):
    """Every document (of one site's origin, if given) as a dict, in id order: url, title,
    headings, text (all its visible text), main_text (the text without the site's furniture:
    what is indexed), status, content type, size, how it was decoded (encoding and the rule
    that chose it), fetch time, content hash, text hash, SimHash, whether indexed or noindex,
    what it duplicates, where its response is archived, its language."""
    for row in in_id_order(_documents(origin), DOCUMENT_COLUMNS, batch):
        out = {}
        for key, value in row.items():
            if key == "boilerplate":
                out["main_text"] = indexed_text(row["body"] or "", value or "", row["content_type"])
            else:
                out[_RENAMED.get(key, key)] = value
        yield out


def document_count(origin: str | None = None) -> int:
    return _documents(origin).count()


def _documents(origin: str | None):
    return Document.objects.filter(url__host__origin=origin) if origin else Document.objects.all()
