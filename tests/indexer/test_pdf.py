"""PDFs (indexer/pdf.py, docs/pdf.md): read, indexed and found like pages, however served;
their link annotations followed through admission; every bad kind a recorded outcome.

One embedded crawl of the PDF web (webs/sampleweb/pdfweb.py: PDFs the tests make, served
over real HTTP on loopback) with a parse process, as the crawler runs by default: the bomb
and the slow PDF need its memory limit and its timeout. Then one test per behaviour,
reading what the frontier, the documents and the search answer recorded. Runs on SQLite
and on PostgreSQL.
"""

import pytest

from webs.sampleweb.pdfweb import (
    BAD_CASES,
    NOT_A_PDF,
    OTHER_ORIGIN,
    REPORT_TITLE,
    ROBOTS_DISALLOWED,
    UNIQUE_WORDS,
    documents,
    pdf_web,
    write_pdf,
)
from archive import warc
from crawl.runners import run_embedded
from frontier import service
from frontier.models import Url
from frontier.normalize import normalize
from indexer import pdf
from indexer import service as indexer
from indexer.models import Document

from ..conftest import TEST_WARC_DIR
from ..crawl_helpers import warc_records

# Reading PDFs is the same on both databases (search itself is held to both by
# test_search_contract): run once, on SQLite; the Celery worker's run is test_pdf_distributed.
pytestmark = [pytest.mark.crawl, pytest.mark.django_db, pytest.mark.backend_free]

PARSE_TIMEOUT = 4.0  # seconds: the slow PDF takes minutes, every other page well under one
MEMORY_LIMIT = 384 << 20  # the bomb inflates to 1 GiB; a parse process with a PDF uses ~150 MiB


@pytest.fixture(scope="module")
def crawled(django_db_setup, django_db_blocker, module_test_settings):
    from django.core.management import call_command
    from django.test import override_settings

    overrides = dict(CRAWLER_PARSE_PROCESSES=1, CRAWLER_PARSE_TIMEOUT=PARSE_TIMEOUT,
                     CRAWLER_PARSE_MEMORY_LIMIT=MEMORY_LIMIT, CRAWLER_DEFAULT_DELAY=0.0)
    from indexer.backends import get_search_backend

    with django_db_blocker.unblock(), override_settings(**overrides):
        call_command("flush", "--no-input")
        get_search_backend().clear()  # flush leaves the backend's raw index behind
        with pdf_web() as web:
            service.add_seeds([web.url("/")], service.ScopeSpec("host"))
            stats = run_embedded(threads=2, max_seconds=240)
            yield web, stats
        call_command("flush", "--no-input")
        get_search_backend().clear()


def row(url):
    return Url.objects.get(url=normalize(url).url)


def search(client, word):
    return client.get("/search.json", {"q": word}).json()["results"]


def test_it_finds_each_pdf_by_a_word_only_it_has_however_it_was_served(crawled, client):
    web, _ = crawled
    for path, word in UNIQUE_WORDS.items():
        hits = search(client, word)
        assert [hit["url"] for hit in hits] == [normalize(web.url(path)).url], word
    for path in ("/papers/report.pdf", "/download?id=7", "/untyped"):
        document = Document.objects.get(url=row(web.url(path)))
        # served as application/pdf, application/octet-stream and with no type: all stored as PDFs
        assert (document.content_type, document.indexed, row(web.url(path)).outcome) == \
            ("application/pdf", True, "indexed"), path


def test_its_title_comes_from_the_metadata_else_the_first_line(crawled):
    web, _ = crawled
    titles = {path: Document.objects.get(url=row(web.url(path))).title
              for path in ("/papers/report.pdf", "/download?id=7", "/untyped")}
    assert titles == {"/papers/report.pdf": REPORT_TITLE, "/download?id=7": "Field notes",
                      "/untyped": "Seed catalogue"}


def test_search_results_mark_a_pdf_as_one(crawled, client):
    hit = search(client, "quillwort")[0]
    assert hit["content_type"] == "application/pdf" and hit["title"] == REPORT_TITLE
    assert "quillwort" in hit["snippet"].lower()
    assert search(client, "pdflinkedpage")[0]["content_type"] == "text/html"
    page = client.get("/", {"q": "quillwort"}).content.decode()
    assert '<span class="type" title="a PDF document">PDF</span>' in page
    page = client.get("/", {"q": "pdflinkedpage"}).content.decode()
    assert 'class="type"' not in page


def test_link_annotations_are_followed_through_admission(crawled):
    web, _ = crawled
    # a page only the report's link annotation names: fetched and indexed
    assert web.requests_for("/from-pdf.html") == 1
    linked = row(web.url("/from-pdf.html"))
    assert (linked.state, linked.outcome, linked.depth) == ("fetched", "indexed", 2)
    # robots.txt applies to links from PDFs: admitted, never fetched
    assert web.requests_for(ROBOTS_DISALLOWED) == 0
    assert row(web.url(ROBOTS_DISALLOWED)).state == "robots_blocked"
    # and the scope: another origin's link never enters the frontier
    assert not Url.objects.filter(url=normalize(OTHER_ORIGIN).url).exists()


def test_each_bad_pdf_ends_in_its_recorded_outcome_fetched_once(crawled):
    web, _ = crawled
    recorded = {path: (row(web.url(path)).state, row(web.url(path)).outcome) for path in BAD_CASES}
    assert recorded == {path: ("fetched", outcome) for path, outcome in BAD_CASES.items()}
    for path in BAD_CASES:
        assert web.requests_for(path) == 1, path  # settled, not retried
        assert not Document.objects.filter(url=row(web.url(path))).exists(), path


def test_the_crawl_ends_with_nothing_waiting_and_no_worker_error(crawled):
    web, stats = crawled
    assert stats.errors == 0
    assert not Url.objects.filter(state="queued").exists()
    # every URL the home page and the report name was settled: home, the PDFs, the zip, the linked page
    assert Url.objects.filter(state="fetched").count() == 1 + len(documents(web.origin)) + 1 + 1


def test_an_octet_stream_that_is_not_a_pdf_is_not_downloaded_or_stored(crawled):
    web, _ = crawled
    assert (row(web.url(NOT_A_PDF)).state, row(web.url(NOT_A_PDF)).outcome) == ("fetched", "not_html")
    assert not Document.objects.filter(url=row(web.url(NOT_A_PDF))).exists()
    # archived as a response whose body was not kept (WARC-Truncated: unspecified)
    (record,) = [r for r in warc_records(TEST_WARC_DIR, check_digests=False)
                 if r["type"] == "response" and r["uri"] == web.url(NOT_A_PDF)]
    assert record["body"] == b""


def test_a_pdf_is_archived_as_fetched(crawled):
    web, _ = crawled
    for path in ("/papers/report.pdf", "/download?id=7"):
        document = Document.objects.get(url=row(web.url(path)))
        back = warc.read_response(warc.Location(document.warc_file, document.warc_offset,
                                                      document.warc_length))
        assert back.body == documents(web.origin)[path][1]


def test_the_export_reads_a_pdfs_outlinks_back_from_the_archive(crawled):
    from indexer.service import archived_outlinks

    web, _ = crawled
    document = Document.objects.get(url=row(web.url("/papers/report.pdf")))
    links = archived_outlinks(document.page_url, document.warc_file, document.warc_offset, document.warc_length)
    assert links == [normalize(web.url("/from-pdf.html")).url, normalize(web.url(ROBOTS_DISALLOWED)).url,
                     normalize(OTHER_ORIGIN).url]


# --- the reader on its own (no crawl) --------------------------------------------------

def parse(body, **limits):
    return pdf.parse_pdf(body, "http://example.test/a.pdf", **({"max_pages": 200, "max_links": 100,
                                                                  "max_chars": 200_000} | limits))


@pytest.mark.parametrize("content_type, head, expected", [
    ("application/pdf", b"anything", True),
    ("application/x-pdf", b"anything", True),
    ("application/octet-stream", b"%PDF-1.7\n", True),
    ("", b"%PDF-1.4\n", True),
    ("", b"\n" * 1000 + b"%PDF-1.4", True),  # leading junk, within the 1024 bytes browsers look at
    ("", b"\n" * 1024 + b"%PDF-1.4", False),
    ("application/octet-stream", b"PK\x03\x04 a zip", False),
    ("text/html", b"%PDF-1.4", False),  # a declared text type is never sniffed
    ("image/png", b"%PDF-1.4", False),
])
def test_it_recognizes_a_pdf_by_its_type_or_its_first_bytes(content_type, head, expected):
    assert pdf.is_pdf(content_type, head) is expected


def test_it_reads_at_most_the_page_limit_and_the_character_cap():
    body = write_pdf([[f"page{i} words here"] for i in range(5)])
    assert parse(body, max_pages=2).text.split() == ["page0", "words", "here", "page1", "words", "here"]
    assert len(parse(body, max_chars=10).text) == 10


def test_it_keeps_link_annotation_uris_up_to_the_link_cap():
    body = write_pdf([["see the links"]], links=["http://a.test/1", "/relative", "http://a.test/3"])
    assert parse(body).links == ["http://a.test/1", "/relative", "http://a.test/3"]
    assert parse(body, max_links=2).links == ["http://a.test/1", "/relative"]


def test_the_catalogs_lang_is_read_as_the_declared_language_and_guides_identification():
    assert parse(write_pdf([["some words"]], lang="de-AT")).declared_language == "de-AT"
    assert parse(write_pdf([["some words"]])).declared_language == ""
    # Too little text to tell: the declaration decides, as <html lang> does for a page.
    def language(**declared):
        return indexer.prepare_page(1, "http://example.test/k.pdf", 200, "application/pdf", None,
                                    write_pdf([["Katalog 2026"]], **declared)).parsed.language

    assert (language(lang="de"), language()) == ("de", "")


def test_a_placeholder_title_gives_way_to_the_first_line():
    body = write_pdf([["", "Annual Minutes", "of the club"]], title="Microsoft Word - minutes.docx")
    assert parse(body).title == "Annual Minutes"
