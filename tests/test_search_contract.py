"""One behaviour suite for every search backend: it runs against the database the suite
runs on (PostgreSQL tsvector in one run, SQLite FTS5 in the other, see the Makefile)."""

import pytest
from django.db import connection

from frontier.models import Host, Url
from indexer.backends import get_search_backend
from indexer.models import Document

pytestmark = pytest.mark.django_db


def make_doc(n, title="", headings="", body=""):
    host, _ = Host.objects.get_or_create(origin="http://h.test")
    url = Url.objects.create(url_hash=f"{n:032x}", url=f"http://h.test/{n}", host=host)
    return Document.objects.create(url=url, address=url.url, title=title, headings=headings, body=body,
                                   content_hash=f"{n:064x}")


@pytest.fixture
def backend():
    return get_search_backend()


def test_it_uses_the_backend_of_the_database(backend):
    expected = {"postgresql": "PostgresSearchBackend", "sqlite": "SQLiteSearchBackend"}[connection.vendor]
    assert type(backend).__name__ == expected


def test_it_finds_a_word_on_exactly_one_page_first(backend):
    docs = [make_doc(i, f"Page {i}", "", f"common words about crawling number{i}") for i in range(5)]
    backend.add([d.id for d in docs])
    hits = backend.search("number3")
    assert [h.url for h in hits] == ["http://h.test/3"]
    assert hits[0].title == "Page 3" and "number3" in hits[0].snippet_text


def test_it_ranks_title_above_headings_above_body(backend):
    body = make_doc(1, "Alpha", "", "the zeppelin appears in the body only " + "filler " * 30)
    heading = make_doc(2, "Beta", "zeppelin history", "filler " * 30)
    title = make_doc(3, "Zeppelin", "", "filler " * 30)
    backend.add([body.id, heading.id, title.id])
    assert [h.document_id for h in backend.search("zeppelin")] == [title.id, heading.id, body.id]
    scores = [h.score for h in backend.search("zeppelin")]
    assert scores == sorted(scores, reverse=True)


def test_it_requires_every_query_word(backend):
    a = make_doc(1, "a", "", "apple banana")
    b = make_doc(2, "b", "", "apple cherry")
    backend.add([a.id, b.id])
    assert [h.document_id for h in backend.search("apple cherry")] == [b.id]
    assert {h.document_id for h in backend.search("apple")} == {a.id, b.id}


def test_it_stems_english_words(backend):
    doc = make_doc(1, "x", "", "the crawlers were crawling politely")
    backend.add([doc.id])
    assert [h.document_id for h in backend.search("crawler")] == [doc.id]


def test_it_marks_matches_in_snippets(backend):
    doc = make_doc(1, "x", "", "lorem ipsum " * 20 + "the quixotic term sits here " + "dolor " * 20)
    backend.add([doc.id])
    hit = backend.search("quixotic")[0]
    assert "<mark>quixotic</mark>" in hit.snippet_html
    assert "quixotic" in hit.snippet_text and "\x02" not in hit.snippet_text
    assert len(hit.snippet_text) < 400


def test_it_escapes_html_in_snippets(backend):
    doc = make_doc(1, "x", "", "<script>alert(1)</script> payloadword")
    backend.add([doc.id])
    assert "<script>" not in backend.search("payloadword")[0].snippet_html


def test_it_deletes_documents(backend):
    a, b = make_doc(1, "a", "", "shared word"), make_doc(2, "b", "", "shared word")
    backend.add([a.id, b.id])
    Document.objects.filter(id__in=[a.id, b.id]).update(indexed=True)
    backend.delete([a.id])
    assert [h.document_id for h in backend.search("shared")] == [b.id]


def test_it_pages_results(backend):
    docs = [make_doc(i, f"t{i}", "", "pagingword " * (i + 1)) for i in range(6)]
    backend.add([d.id for d in docs])
    first, second = backend.search("pagingword", limit=3), backend.search("pagingword", limit=3, offset=3)
    assert len(first) == 3 and len(second) == 3
    assert not {h.document_id for h in first} & {h.document_id for h in second}


@pytest.mark.parametrize("query", ["", "   ", "!!! ???", "\"unbalanced", "a AND OR NOT (", "'; DROP TABLE text; --"])
def test_it_accepts_any_query_string(backend, query):
    doc = make_doc(1, "x", "", "drop table text")
    backend.add([doc.id])
    hits = backend.search(query)
    assert isinstance(hits, list)
    if query.startswith("'"):
        assert [h.document_id for h in hits] == [doc.id]  # only its words count: drop table text


def test_it_forgets_a_document_deleted_with_its_url(backend):
    doc = make_doc(1, "x", "", "ephemeralword")
    backend.add([doc.id])
    Document.objects.filter(id=doc.id).update(indexed=True)
    Url.objects.filter(id=doc.url_id).delete()  # cascades to the document
    assert backend.search("ephemeralword") == []


def test_it_clears_the_index(backend):
    doc = make_doc(1, "x", "", "clearword")
    backend.add([doc.id])
    backend.clear()
    assert backend.search("clearword") == []


@pytest.mark.postgres
def test_postgres_compresses_page_text_and_vectors_with_lz4_when_it_can():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
        lz4 = cursor.fetchone()[0]
        cursor.execute("""SELECT attrelid::regclass::text || '.' || attname, attcompression FROM pg_attribute
                          WHERE attrelid IN ('indexer_document'::regclass, 'indexer_pg_index'::regclass)
                            AND attname IN ('body', 'headings', 'vector')""")
        methods = dict(cursor.fetchall())
    expected = "l" if lz4 else ""
    assert methods == {"indexer_document.body": expected, "indexer_document.headings": expected,
                       "indexer_pg_index.vector": expected}
