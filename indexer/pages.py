"""The pages of a WACZ package (archive/wacz.py): each document in the search index with
the text it was indexed from and where its response is archived, read in id order a batch
at a time (keyset paging), so a million pages cost one batch of memory."""

from datetime import datetime, timedelta

from common.paging import in_id_order

from .models import Document

PAGE_COLUMNS = ("id", "page_url", "title", "body", "url__depth", "warc_file", "warc_offset", "warc_length")
# A document is stored after its response began (its record's WARC-Date), later by the
# fetch's total deadline and the time its batch waits for the writer: seconds, minutes
# while the database is away. Rows stored up to this long after a time range ends are read
# for it (and judged by their record's time); a page stored later still is left out.
STORED_AFTER_CAPTURE = timedelta(hours=1)


def indexed_pages(origin: str | None = None, since: datetime | None = None, until: datetime | None = None,
                  batch: int = 500):
    """Dicts of PAGE_COLUMNS ("url", "text" and "depth" for page_url, body and url__depth)
    of the indexed documents that have an archived response: HTML pages in the search
    index (not duplicates, noindex or canonical-elsewhere pages, and never robots.txt,
    sitemaps or feeds, which are no documents). `origin`, `since` and `until` narrow the
    rows read; the caller decides on the response record's own time."""
    for row in in_id_order(_pages(origin, since, until), PAGE_COLUMNS, batch):
        row["url"], row["text"], row["depth"] = row.pop("page_url"), row.pop("body"), row.pop("url__depth")
        yield row


def indexed_page_count(origin: str | None = None, since: datetime | None = None, until: datetime | None = None) -> int:
    return _pages(origin, since, until).count()


def _pages(origin, since, until):
    documents = Document.objects.filter(indexed=True).exclude(warc_file="").exclude(warc_offset=None)
    if origin:
        documents = documents.filter(url__host__origin=origin)
    if since:
        documents = documents.filter(fetched_at__gte=since)
    if until:
        documents = documents.filter(fetched_at__lt=until + STORED_AFTER_CAPTURE)
    return documents
