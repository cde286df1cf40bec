"""The statements that keep rel=canonical a hint (indexer/canonicals.py) run on every
writer batch, so they must find their few rows through the partial index of documents
naming another URL, whatever the planner knows: on 20,000 documents, with no statistics
and analyzed (tests/frontier/test_query_plans.py says why both)."""

import pytest
from django.db import connection

from frontier.models import Host, Url
from indexer import canonicals
from indexer.models import Document

from ..frontier.test_query_plans import SERIES, _copies, _plans_of, _statistics

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def documents():
    """20,000 URLs and their documents; every 100th document names the next URL as its
    canonical, whose document is not indexed: half of them are indexed, half left out."""
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {Host._meta.db_table}, {Url._meta.db_table}, {Document._meta.db_table} CASCADE")
    host = Host.objects.create(origin="http://a.test")
    first = Url.objects.create(url="http://a.test/0", url_key=1, host=host, state="fetched")
    _copies(first, {"url": "'http://a.test/' || n", "url_key": "n + 1", "url_hash": "NULL"}, SERIES)
    document = Document.objects.create(url=first, page_url=first.url, content_hash="0", indexed=True)
    _copies(document, {"url_id": f"(SELECT id FROM {Url._meta.db_table} WHERE url_key = n + 1)",
                       "address": "'http://a.test/' || n", "content_hash": "n::text",
                       "canonical_key": "CASE WHEN n %% 100 = 0 THEN n + 2 END",
                       "indexed": "n %% 200 <> 0 AND n %% 100 <> 1"}, SERIES)
    return Url.objects.filter(url_key__in=range(2, 20_002, 100)).values_list("id", flat=True)


@pytest.mark.parametrize("statistics", [False, True], ids=["no statistics", "analyzed"])
def test_the_pages_naming_a_batchs_urls_are_found_by_the_partial_index(documents, statistics):
    for table in ("frontier_url", "indexer_document"):
        _statistics(statistics, table)
    url_ids = list(Url.objects.filter(url_key__in=range(102, 4_102, 100)).values_list("id", flat=True))  # 40 named
    settled, plans = _plans_of(lambda: canonicals.settle_named(url_ids), table="indexer_document")
    # Their URLs are fetched, their documents not indexed: none stands, the 20 left out are indexed.
    assert settled == 20
    assert "document_canonical" in plans[0] and "Seq Scan on indexer_document" not in plans[0], plans[0]
    keys = {key: "x" for key in range(102, 4_102, 100)}
    _, plans = _plans_of(lambda: canonicals.retire_naming(keys, keep=set()), table="indexer_document")
    assert "document_canonical" in plans[0] and "Seq Scan on indexer_document" not in plans[0], plans[0]
