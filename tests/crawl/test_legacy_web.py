"""The legacy web (webs/sampleweb/legacy.py) crawled through real HTTP: every page in its
legacy encoding, declared or not, is stored as its text, with the encoding it was decoded
with and the rule that chose it (Document.encoding, .encoding_source), and exported so."""

import json
from io import StringIO

import pytest

from webs.sampleweb import legacy
from crawl.runners import run_embedded
from frontier import service
from frontier.normalize import normalize
from indexer.models import Document

# Decoding is the same on both databases: run once, on SQLite (tests/conftest.py).
pytestmark = [pytest.mark.crawl, pytest.mark.django_db, pytest.mark.backend_free]

LANGUAGES = ("ru", "ja", "zh-tw", "el", "th", "pl")
# declaration -> the rule that must have chosen the encoding
SOURCE_OF = {"none": "detected", "http": "http", "meta": "meta", "http-equiv": "meta", "bom": "bom"}


@pytest.fixture(scope="module")
def crawled(django_db_setup, django_db_blocker):
    from django.core.management import call_command
    from django.test import override_settings

    with django_db_blocker.unblock(), override_settings(CRAWLER_DEFAULT_DELAY=0.0):
        call_command("flush", "--no-input")
        with legacy.legacy_web(languages=LANGUAGES) as web:
            service.add_seeds(web.seeds, service.ScopeSpec("host"))
            stats = run_embedded(threads=4, max_seconds=120)
            documents = {d.page_url: d for d in Document.objects.all()}
            exported = StringIO()
            call_command("export", "documents", "--no-progress", stdout=exported)
            yield web, stats, documents, [json.loads(line) for line in exported.getvalue().splitlines()]
        call_command("flush", "--no-input")


def test_it_stores_every_page_as_its_text_with_how_it_was_decoded(crawled):
    web, stats, documents, _ = crawled
    assert stats.errors == 0
    found = {}
    for language, url, path in web.pages():
        encoding, declaration, n = legacy.case_of(path)
        document = documents[normalize(url).url]
        assert legacy.expected_text(language, n) in document.body, (language, path, document.encoding)
        found[path, language] = (document.encoding_source, document.encoding)
        expected = "UTF-16LE" if declaration == "bom" else encoding
        if declaration != "none":  # detection reads the text right; KOI8-R may be named KOI8-U
            assert document.encoding == expected, (language, path)
    assert {source for source, _ in found.values()} == set(SOURCE_OF.values())
    assert all(found[path, language][0] == SOURCE_OF[legacy.case_of(path)[1]]
               for path, language in found), found
    assert len(found) == sum(len(legacy.paths(language)) for language in LANGUAGES)


def test_the_export_carries_the_encoding_and_its_source(crawled):
    web, _, documents, rows = crawled
    by_url = {row["url"]: row for row in rows}
    language, url, path = next(page for page in web.pages() if page[2] == "/Shift_JIS/none/0.html")
    row = by_url[normalize(url).url]
    assert (row["encoding"], row["encoding_source"]) == ("Shift_JIS", "detected")
    home = by_url[normalize(web.base["ru"] + "/").url]
    assert (home["encoding"], home["encoding_source"]) == ("UTF-8", "http")
