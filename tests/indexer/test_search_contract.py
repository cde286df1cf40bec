"""One behaviour suite for every search backend: it runs against the database the suite
runs on (PostgreSQL tsvector in one run, SQLite FTS5 in the other, see the Makefile)."""

import dataclasses

import pytest
from django.db import connection

from frontier.models import Host, Url
from indexer.backends import SearchResults, get_search_backend
from indexer.models import Document

pytestmark = pytest.mark.django_db


def make_doc(n, title="", headings="", body="", page_url=None):
    page_url = page_url or f"http://h.test/{n}"
    host, _ = Host.objects.get_or_create(origin="/".join(page_url.split("/")[:3]))
    url = Url.objects.create(url_key=n, url=page_url, host=host)
    return Document.objects.create(url=url, page_url=url.url, title=title, headings=headings, body=body,
                                   content_hash=f"{n:064x}")


@pytest.fixture
def backend():
    return get_search_backend()


def test_it_uses_the_backend_of_the_database(backend):
    expected = {"postgresql": "PostgresSearchBackend", "sqlite": "SQLiteSearchBackend"}[connection.vendor]
    assert type(backend).__name__ == expected


def test_it_finds_a_word_on_exactly_one_page_first(backend):
    docs = [make_doc(i, f"Page {i}", "", f"common words about crawling number{i}") for i in range(5)]
    backend.add(docs)
    hits = backend.search("number3")
    assert [h.url for h in hits] == ["http://h.test/3"]
    assert hits[0].title == "Page 3" and "number3" in hits[0].snippet_text


def test_it_ranks_title_above_headings_above_body(backend):
    body = make_doc(1, "Alpha", "", "the zeppelin appears in the body only " + "filler " * 30)
    heading = make_doc(2, "Beta", "zeppelin history", "filler " * 30)
    title = make_doc(3, "Zeppelin", "", "filler " * 30)
    backend.add([body, heading, title])
    assert [h.document_id for h in backend.search("zeppelin")] == [title.id, heading.id, body.id]
    scores = [h.score for h in backend.search("zeppelin")]
    assert scores == sorted(scores, reverse=True)


def test_it_requires_every_query_word(backend):
    a = make_doc(1, "a", "", "apple banana")
    b = make_doc(2, "b", "", "apple cherry")
    backend.add([a, b])
    assert [h.document_id for h in backend.search("apple cherry")] == [b.id]
    assert {h.document_id for h in backend.search("apple")} == {a.id, b.id}


def test_it_stems_english_words(backend):
    doc = make_doc(1, "x", "", "the crawlers were crawling politely")
    backend.add([doc])
    assert [h.document_id for h in backend.search("crawler")] == [doc.id]


def test_it_marks_matches_in_snippets(backend):
    doc = make_doc(1, "x", "", "lorem ipsum " * 20 + "the quixotic term sits here " + "dolor " * 20)
    backend.add([doc])
    hit = backend.search("quixotic")[0]
    assert "<mark>quixotic</mark>" in hit.snippet_html
    assert "quixotic" in hit.snippet_text and "\x02" not in hit.snippet_text
    assert len(hit.snippet_text) < 400


def test_it_escapes_html_in_snippets(backend):
    doc = make_doc(1, "x", "", "<script>alert(1)</script> payloadword")
    backend.add([doc])
    assert "<script>" not in backend.search("payloadword")[0].snippet_html


def test_it_deletes_documents(backend):
    a, b = make_doc(1, "a", "", "shared word"), make_doc(2, "b", "", "shared word")
    backend.add([a, b])
    Document.objects.filter(id__in=[a.id, b.id]).update(indexed=True)
    backend.delete([a.id])
    assert [h.document_id for h in backend.search("shared")] == [b.id]


def test_it_pages_results(backend):
    docs = [make_doc(i, f"t{i}", "", "pagingword " * (i + 1)) for i in range(6)]
    backend.add(docs)
    first, second = backend.search("pagingword", limit=3), backend.search("pagingword", limit=3, offset=3)
    assert len(first) == 3 and len(second) == 3
    assert not {h.document_id for h in first} & {h.document_id for h in second}


@pytest.mark.parametrize("query", ["", "   ", "!!! ???", "\"unbalanced", "a AND OR NOT (", "'; DROP TABLE text; --"])
def test_it_accepts_any_query_string(backend, query):
    doc = make_doc(1, "x", "", "drop table text")
    backend.add([doc])
    hits = backend.search(query)
    assert isinstance(hits, SearchResults) and hits.total == len(hits.hits)
    if query.startswith("'"):
        assert [h.document_id for h in hits] == [doc.id]  # only its words count: drop table text


def test_it_forgets_a_document_deleted_with_its_url(backend):
    doc = make_doc(1, "x", "", "ephemeralword")
    backend.add([doc])
    Document.objects.filter(id=doc.id).update(indexed=True)
    Url.objects.filter(id=doc.url_id).delete()  # cascades to the document
    assert list(backend.search("ephemeralword")) == []


def test_it_clears_the_index(backend):
    doc = make_doc(1, "x", "", "clearword")
    backend.add([doc])
    backend.clear()
    assert list(backend.search("clearword")) == []


# -- identifiers, fields, fallback, snippets, site:, phrases, counts (issue 16) -----------------

def ids(results):
    return [h.document_id for h in results]


@pytest.mark.parametrize("query, expected", [
    ("os.path.join", "join"),
    ("zipfile.Path read_text", "zip"),
    ("read_text", "zip"),
    ("current_database", "funcs"),
    ("PL/Perl", "plperl"),
    ("pg_dump", "plperl"),
    ("--help-env", "plperl"),
    ("__setitem__", "plperl"),
])
def test_it_finds_identifiers_as_written(backend, query, expected):
    docs = {
        "join": make_doc(1, "os.path — pathname functions", "", "os.path.join(path, *paths) joins path components."),
        "zip": make_doc(2, "zipfile — ZIP archives", "", "zipfile.Path.read_text(encoding) reads the file as text."),
        "funcs": make_doc(3, "System information", "", "current_database() returns the name of the database."),
        "plperl": make_doc(4, "PL/Perl", "", "Run pg_dump --help-env first; __setitem__ is a hook."),
        "prose": make_doc(5, "Prose", "", "the current database path is read as text " * 5 + " join perl dump help env"),
    }
    backend.add(list(docs.values()))
    assert ids(backend.search(query))[0] == docs[expected].id


def test_an_identifier_is_a_token_not_a_phrase_of_prose(backend):
    definition = make_doc(1, "Functions", "", "current_database() is defined here. " + "filler " * 200)
    prose = [make_doc(i, f"Notes {i}", "", "connect to the current database first. " * 3) for i in range(2, 8)]
    backend.add([definition, *prose])
    assert ids(backend.search("current_database")) == [definition.id]
    assert set(ids(backend.search("current database"))) >= {p.id for p in prose}


def test_the_title_field_outranks_a_table_of_contents(backend):
    page = make_doc(1, "shutil.copytree — copy a directory tree", "Parameters",
                    "shutil.copytree(src, dst) copies recursively. " + "details about copying files " * 150)
    contents = make_doc(2, "shutil module contents", "", "shutil.copy shutil.copy2 shutil.copytree shutil.rmtree")
    backend.add([page, contents])
    assert ids(backend.search("shutil.copytree")) == [page.id, contents.id]


def test_it_falls_back_to_any_word_when_no_page_has_all(backend):
    a = make_doc(1, "Batch jobs", "", "run many jobs at once")
    b = make_doc(2, "Other", "", "nothing relevant")
    backend.add([a, b])
    strict = backend.search("jobs")
    assert not strict.any_word and ids(strict) == [a.id]
    loose = backend.search("batch mode")
    assert loose.any_word and ids(loose) == [a.id] and loose.total == 1


def test_it_counts_all_matches_not_only_the_page(backend):
    docs = [make_doc(i, f"t{i}", "", "countword here") for i in range(15)]
    backend.add(docs)
    results = backend.search("countword", limit=5)
    assert len(results) == 5 and results.total == 15 and not results.total_is_lower_bound


def test_site_restricts_to_a_host_and_its_subdomains(backend):
    a = make_doc(1, "a", "", "sitedword", page_url="http://docs.alpha.test/a")
    b = make_doc(2, "b", "", "sitedword", page_url="http://alpha.test/b")
    c = make_doc(3, "c", "", "sitedword", page_url="http://beta.test/c")
    backend.add([a, b, c])
    assert set(ids(backend.search("sitedword site:alpha.test"))) == {a.id, b.id}
    assert ids(backend.search("sitedword site:docs.alpha.test")) == [a.id]
    assert ids(backend.search("site:https://beta.test/ sitedword")) == [c.id]
    assert ids(backend.search("sitedword site:gamma.test")) == []


def test_page_text_cannot_forge_a_site(backend):
    a = make_doc(1, "a", "", "site=alpha.test forgedword", page_url="http://beta.test/a")
    backend.add([a])
    assert ids(backend.search("forgedword site:alpha.test")) == []


def test_quoted_phrases_need_the_words_in_order(backend):
    a = make_doc(1, "a", "", "the quick brown fox")
    b = make_doc(2, "b", "", "the brown quick fox")
    backend.add([a, b])
    assert ids(backend.search('"quick brown"')) == [a.id]
    assert set(ids(backend.search("quick brown"))) == {a.id, b.id}
    assert ids(backend.search('"brown quick" fox')) == [b.id]


def test_a_literal_script_tag_in_text_hides_nothing(backend):
    doc = make_doc(1, "x", "", "Write <script> in HTML. " + "words " * 50 + " afterscriptword")
    backend.add([doc])
    assert ids(backend.search("afterscriptword")) == [doc.id]


def test_a_long_page_is_searchable_to_its_end(backend):
    doc = make_doc(1, "Long", "", "filler text " * 12_000 + " autovacuum_multixact_freeze_table_age at the end")
    backend.add([doc])
    assert ids(backend.search("autovacuum_multixact_freeze_table_age")) == [doc.id]


def test_snippets_highlight_identifier_parts_in_a_bounded_window(backend):
    doc = make_doc(1, "x", "", "intro words " * 400 + "call os.path.join here and the join again " + "tail " * 400)
    backend.add([doc])
    hit = backend.search("join")[0]
    assert "<mark>os.path.join</mark>" in hit.snippet_html and "<mark>join</mark>" in hit.snippet_html
    assert len(hit.snippet_text) < 400


def test_a_match_beyond_the_snippet_scan_gives_the_text_start(backend, settings):
    settings.CRAWLER_SEARCH_SNIPPET_SCAN_CHARS = 1000
    doc = make_doc(1, "x", "", "opening sentence. " + "filler " * 500 + " farword")
    backend.add([doc])
    hit = backend.search("farword")[0]
    assert hit.snippet_text.startswith("opening sentence.") and "\x02" not in hit.snippet


@pytest.mark.parametrize("query", ["\x00nulword\x00", "nulword " + "x" * 10_000, "nulword " + "word " * 2000])
def test_hostile_queries_get_a_bounded_answer(backend, query):
    doc = make_doc(1, "x", "", "nulword")
    backend.add([doc])
    results = backend.search(query)
    assert ids(results) == [doc.id] or results.query.truncated
    assert len(results.query.text) <= 500 and len(results.query.terms) <= 32


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


def _prepared(url_id, url, title, body):
    from indexer import service as indexer

    html = f"<html><head><title>{title}</title></head><body><p>{body}</p></body></html>".encode()
    page = indexer.prepare_page(url_id, url, 200, "text/html", "utf-8", html)
    indexer.prepare_index(page)
    return page


def test_a_changed_page_is_found_by_its_new_words_only(backend):
    from indexer import service as indexer

    host = Host.objects.create(origin="http://h.test")
    url = Url.objects.create(url_key=7, url="http://h.test/page", host=host)
    assert indexer.store_pages([_prepared(url.id, url.url, "Page", "oldword shared")]) == {url.id: "indexed"}
    assert indexer.store_pages([_prepared(url.id, url.url, "Page", "newword shared")]) == {url.id: "indexed"}
    assert list(backend.search("oldword")) == []
    assert [h.url for h in backend.search("newword")] == [url.url]
    assert backend.search("shared").total == 1


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's contentless FTS5 only")
def test_it_keeps_no_copy_of_the_tokens_and_warns_when_the_analyzer_changed_under_it(backend, monkeypatch, caplog):
    from indexer.backends import sqlite

    with connection.cursor() as cur:
        cur.execute("SELECT sql FROM sqlite_master WHERE name = 'indexer_fts'")
        assert "content=''" in cur.fetchone()[0]
        cur.execute("SELECT count(*) FROM sqlite_master WHERE name = 'indexer_fts_content'")
        assert cur.fetchone()[0] == 0
    doc = make_doc(1, "x", "", "stableword")
    backend.add([doc])
    real = sqlite.index_fields
    monkeypatch.setattr(sqlite, "index_fields", lambda d: dataclasses.replace(real(d), body=["changed"]))
    backend.delete([doc.id])
    assert "run `python manage.py reindex`" in caplog.text
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM indexer_fts_docs WHERE rowid = %s", [doc.id])
        assert cur.fetchone()[0] == 0


def test_page_text_reads_back_whole_and_sqlite_keeps_it_compressed(backend):
    from indexer import textstore

    text = "Ünïcode and plain words, repeated. " * 400 + "東京 at the end"
    doc = make_doc(1, "t", "", text)
    assert Document.objects.get(id=doc.id).body == text
    assert backend.prefixes([doc.id], 40)[doc.id] == text[:40]
    with connection.cursor() as cur:
        cur.execute("SELECT body FROM indexer_document WHERE id = %s", [doc.id])
        stored = cur.fetchone()[0]
    if connection.vendor == "sqlite":
        assert isinstance(stored, bytes) and len(stored) < len(text.encode()) / 3
    else:
        assert stored == text  # PostgreSQL compresses it itself (TOAST)
    assert textstore.from_database(stored) == text
    assert textstore.prefix(textstore.for_database(text, "sqlite"), 10) == text[:10]  # a cut in a 2-byte character
    assert textstore.from_database("rows of earlier releases") == "rows of earlier releases"


# -- site: alone lists a site's pages (issue 25 item 7) ------------------------------------------

def test_site_alone_lists_exactly_that_sites_pages_by_url(backend):
    docs = [make_doc(1, "B page", "", "beta words", page_url="http://alpha.test/b"),
            make_doc(2, "Docs", "", "docs words", page_url="http://docs.alpha.test/index"),
            make_doc(3, "A page", "", "alpha words", page_url="http://alpha.test/a"),
            make_doc(4, "Other", "", "other words", page_url="http://beta.test/a"),
            make_doc(5, "Lookalike", "", "lookalike", page_url="http://notalpha.test/a"),
            make_doc(6, "Upper", "", "upper words", page_url="http://alpha.test/Z")]
    backend.add(docs)
    listed = backend.search("site:alpha.test")
    # A host and its subdomains, as with words; by URL in byte order (upper case first).
    assert [h.url for h in listed] == ["http://alpha.test/Z", "http://alpha.test/a", "http://alpha.test/b",
                                       "http://docs.alpha.test/index"]
    assert listed.total == 4 and listed.order == "url" and not listed.any_word
    assert listed[1].title == "A page" and listed[1].snippet_text == "alpha words" and listed[1].score == 0
    assert [h.url for h in backend.search("site:docs.alpha.test")] == ["http://docs.alpha.test/index"]
    assert {h.url for h in backend.search("site:alpha.test site:beta.test")} == {
        "http://alpha.test/Z", "http://alpha.test/a", "http://alpha.test/b", "http://docs.alpha.test/index",
        "http://beta.test/a"}
    assert list(backend.search("site:gamma.test")) == [] and backend.search("site:gamma.test").total == 0
    assert backend.search("words site:alpha.test").order == "relevance"


def test_a_site_listing_pages_through_every_page_once(backend):
    docs = [make_doc(i, f"p{i}", "", f"text {i}", page_url=f"http://list.test/p{i:02d}") for i in range(23)]
    docs += [make_doc(100 + i, "x", "", "text", page_url=f"http://elsewhere.test/p{i}") for i in range(5)]
    backend.add(docs)
    seen = []
    for offset in (0, 10, 20):
        page = backend.search("site:list.test", limit=10, offset=offset)
        assert page.total == 23
        seen += [h.url for h in page]
    assert seen == [f"http://list.test/p{i:02d}" for i in range(23)]
    assert list(backend.search("site:list.test", limit=10, offset=30)) == []
    assert list(backend.search("site:list.test", limit=0)) == [] and backend.search("site:list.test", limit=0).total == 23


def test_a_site_listing_leaves_out_what_is_not_indexed(backend):
    kept = make_doc(1, "kept", "", "kept", page_url="http://gone.test/kept")
    gone = make_doc(2, "gone", "", "gone", page_url="http://gone.test/gone")
    backend.add([kept, gone])
    Document.objects.filter(id__in=[kept.id, gone.id]).update(indexed=True)
    backend.delete([gone.id])
    assert ids(backend.search("site:gone.test")) == [kept.id]


# -- snippets from the page's content, not its furniture (issue 25 item 7) ------------------------

MENU_PAGE = ("<html><head><title>Lighthouses — Coast guide</title></head><body>"
             "<header><a href='/'>Coast guide</a></header>"
             "<nav><a href='/'>Home</a> <a href='/ships'>Ships</a> <a href='/lights'>Lights</a></nav>"
             "<main><h1>Lighthouses</h1><p>A lighthouse guides ships at night. " + "Keepers tend the lamp. " * 5 +
             "</p><aside>See also: buoys</aside></main><footer>Coast guide, 2026</footer></body></html>")


def test_snippets_skip_the_pages_menu_and_its_repeated_title(backend):
    from indexer import service as indexer

    host = Host.objects.create(origin="http://coast.test")
    url = Url.objects.create(url_key=9, url="http://coast.test/lights", host=host)
    page = indexer.prepare_page(url.id, url.url, 200, "text/html", "utf-8", MENU_PAGE.encode())
    assert indexer.store_pages([page]) == {url.id: "indexed"}
    hit = backend.search("ships")[0]  # in the menu first, then in the text
    assert hit.title == "Lighthouses"  # the <h1> its <title> names (indexer/maincontent.py choose_title)
    assert hit.snippet_text.startswith("A lighthouse guides ships at night.") and "<mark>ships</mark>" in hit.snippet_html
    for furniture in ("Home", "Lights", "Coast guide", "See also", "2026"):
        assert furniture not in hit.snippet_text
    listed = backend.search("site:coast.test")[0]  # no words: the content's start
    assert listed.snippet_text.startswith("A lighthouse guides ships at night.")
    assert [h.url for h in backend.search("buoys")] == []  # furniture words are not indexed


def test_a_page_stored_before_furniture_was_marked_still_loses_its_repeated_title(backend):
    doc = make_doc(1, "Zeppelins | Air museum", "", "Zeppelins ¶ Rigid airships were built in Friedrichshafen.")
    backend.add([doc])
    assert backend.search("site:h.test")[0].snippet_text == "Rigid airships were built in Friedrichshafen."
    assert backend.search("zeppelins")[0].snippet_text == "Rigid airships were built in Friedrichshafen."


def test_words_typed_without_quotes_lift_the_page_that_holds_them_in_that_order(backend, settings):
    # BM25 alone puts the short page with the words scattered (twice each) above the long one
    # that holds them as typed.
    scattered = make_doc(1, "a", "", "fox brown quick; a brown fox, a quick one")
    held = make_doc(2, "b", "", "the quick brown fox jumps " + "filler words here " * 5)
    others = [make_doc(n, f"other {n}", "", "other pages about something else") for n in range(3, 13)]
    backend.add([scattered, held, *others])
    settings.CRAWLER_SEARCH_PHRASE_WEIGHT = 0
    assert ids(backend.search("quick brown fox")) == [scattered.id, held.id]
    settings.CRAWLER_SEARCH_PHRASE_WEIGHT = 1.0
    assert ids(backend.search("quick brown fox")) == [held.id, scattered.id]
    assert ids(backend.search("brown quick")) == [scattered.id, held.id]  # as typed: only the first holds it
    assert backend.matching(backend.parse('"brown fox jumps"'), [scattered.id, held.id]) == {held.id}
