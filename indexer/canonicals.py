"""<link rel=canonical> is a hint, taken only while the URL it names can stand for the page.

A page naming another URL as its canonical is stored, but left out of the index while
that URL *stands* for it: its document is indexed or a copy of an indexed one, or it has
not been visited yet (queued). When the named URL settles any other way (gone, denied,
refused by robots.txt, failed, redirected, noindex, naming yet another URL), the page is
indexed after all, as search engines do with a broken canonical: a page is never lost
for a hint that led nowhere. When the named URL is indexed later, the pages naming it
leave the index again, so the text is one search result, under the URL the site chose.

The pages left out are found by `Document.canonical_key` (the named URL's
frontier.normalize.url_key, a small partial index): one indexed statement per batch of
fetches settles them (settle_named), none when no page of the crawl names another.

Left as it was: a named URL that is refused at admission (out of scope, filtered) never
stands, so its page is indexed at once (crawl/pipeline.py); a chain A -> B -> C stops at
B's own verdict (B names C, so B is not indexed and A is); within one batch a loop is
broken at its second page. The frontier's outcome of a page indexed later stays
`canonical_elsewhere` until its next visit; its document says `indexed`.
"""

from django.conf import settings
from django.db import connection

from common.bulksql import in_chunks, marks
from frontier.models import Url, UrlState

from . import bulk, neardup
from .backends import get_search_backend
from .fingerprint import fingerprint
from .models import ContentFingerprint, Document

_DOCUMENTS, _URLS = Document._meta.db_table, Url._meta.db_table


def _among(keys: list[int]) -> tuple[str, list]:
    """`canonical_key` among these keys: (SQL, params). On PostgreSQL the keys are an
    InitPlan's array, so the planner costs the statement for a few values found through the
    partial index `document_canonical`; as constants, before the documents are analyzed, it
    takes the default selectivity of 40 keys for a fifth of the table and reads all of it
    (tests/indexer/test_canonical_plans.py)."""
    if connection.vendor == "postgresql":
        return "canonical_key = ANY(ARRAY(SELECT unnest(%s::bigint[])))", [keys]
    return f"canonical_key IN ({marks(len(keys))})", keys


def _among_keys_of(url_ids: list[int]) -> tuple[str, list]:
    """`canonical_key` among the keys of these URLs: (SQL, params), as _among."""
    if connection.vendor == "postgresql":
        return f"canonical_key = ANY(ARRAY(SELECT url_key FROM {_URLS} WHERE id = ANY(%s)))", [url_ids]
    return f"canonical_key IN (SELECT url_key FROM {_URLS} WHERE id IN ({marks(len(url_ids))}))", url_ids


def standing(keys) -> set[int]:
    """Those of these URL keys whose URL stands for the pages naming it (one query)."""
    keys = list(set(keys))
    stand = set()
    for chunk in in_chunks(keys):
        rows = Url.objects.filter(url_key__in=chunk).values_list(
            "url_key", "state", "document__id", "document__indexed", "document__duplicate_of_id")
        for key, state, document, indexed, duplicate_of in rows:
            if (document is None and state == UrlState.QUEUED) or indexed or duplicate_of is not None:
                stand.add(key)
    return stand


def retire_naming(keys: dict[int, str], keep: set[int]) -> list[int]:
    """The indexed documents (other than `keep`) naming these URL keys leave the index, and
    release their claim on the content hash the named page carries ({key: content hash}),
    so the named page, stored now, is the original of that text. Returns their ids."""
    if not keys:
        return []
    retired = []
    with connection.cursor() as cursor:
        for chunk in in_chunks(sorted(keys)):
            among, params = _among(chunk)
            cursor.execute(f"SELECT id, canonical_key FROM {_DOCUMENTS} WHERE indexed AND {among}", params)
            retired += [(document_id, key) for document_id, key in cursor.fetchall() if document_id not in keep]
    if not retired:
        return []
    ids = sorted(document_id for document_id, _ in retired)
    get_search_backend().delete(ids)
    neardup.forget(ids)
    Document.objects.filter(id__in=ids).update(indexed=False)
    for document_id, key in retired:
        ContentFingerprint.objects.filter(document_id=document_id, content_hash=keys[key]).delete()
    return ids


def settle_named(url_ids: list[int]) -> int:
    """After these URLs' visits are recorded: the documents left out for one of them that
    no longer stands are indexed (or recorded as the copy of an indexed text, as a page
    stored now would be). Returns how many were indexed."""
    waiting = []
    with connection.cursor() as cursor:
        for chunk in in_chunks(sorted(set(url_ids))):
            among, params = _among_keys_of(chunk)
            cursor.execute(f"SELECT id, canonical_key FROM {_DOCUMENTS} WHERE {among} "
                           "AND NOT indexed AND NOT noindex AND duplicate_of_id IS NULL", params)
            waiting += cursor.fetchall()
    if not waiting:
        return 0
    stand = standing(key for _, key in waiting)
    return index_stored([document_id for document_id, key in waiting if key not in stand])


def index_stored(document_ids: list[int]) -> int:
    """Index stored documents that were left out: exact and near duplicates checked as at
    store time (indexer/service.py's store_pages). Returns how many were indexed."""
    documents = list(Document.objects.filter(id__in=document_ids).order_by("id"))
    if not documents:
        return 0
    claims = {}
    for document in documents:
        claims.setdefault(document.content_hash, document.id)
    originals = bulk.claim_fingerprints(claims)
    duplicates, candidates = {}, []
    for document in documents:
        original = originals[document.content_hash]
        if original != document.id:
            duplicates[document.id] = original
        else:
            candidates.append(document)
    simhashes = {}
    for document in candidates:
        text_print = fingerprint(document.title, document.headings, document.body)
        if text_print.words >= settings.CRAWLER_NEAR_DUPLICATE_MIN_WORDS:
            simhashes[document.id] = (text_print.simhash, text_print.text_hash)
    near = neardup.originals(simhashes)
    duplicates.update({d.id: near[d.id] for d in candidates if d.id in near})
    indexable = [d for d in candidates if d.id not in near]
    if duplicates:
        bulk.mark_duplicates(duplicates)
    Document.objects.filter(id__in=[d.id for d in indexable]).update(indexed=True)
    get_search_backend().add(indexable)
    neardup.remember({d.id: simhashes[d.id] for d in indexable if d.id in simhashes})
    return len(indexable)
