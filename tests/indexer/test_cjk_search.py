"""Pages in many scripts are found on both backends (issue 53): each real page
(tests/data/multilingual_pages.json) stored through the page pipeline's own functions
(parse, language, analysis, store), then searched for a word only it has: three
characters of a Chinese, Japanese, Korean or Thai page, a word of the others."""

import json
import re
from pathlib import Path

import pytest
from django.utils.html import escape

from frontier.models import Host, Url
from indexer import service
from indexer.analyzer import NO_SPACE_RUN
from indexer.models import Document

pytestmark = pytest.mark.django_db
PAGES = json.loads((Path(__file__).parent / "data" / "multilingual_pages.json").read_text("utf-8"))
_WORD = re.compile(r"[^\W\d_]{5,}")


def store(pages: list[tuple[str, str, str]]) -> None:
    """(address, title, text) pages served as UTF-8 HTML with no lang attribute."""
    host, _ = Host.objects.get_or_create(origin="http://pages.test")
    prepared = []
    for n, (address, title, text) in enumerate(pages):
        url = Url.objects.create(url_key=n + 1, url=address, host=host)
        body = f"<html><head><title>{escape(title)}</title></head><body><p>{escape(text)}</p></body></html>"
        page = service.prepare_page(url.id, address, 200, "text/html", "utf-8", body.encode())
        service.prepare_index(page)
        prepared.append(page)
    service.store_pages(prepared)


def unique_query(text: str, others: list[str]) -> str | None:
    """Three characters of a no-space run, or a word, that no other page has."""
    candidates = [run[i:i + 3] for run in NO_SPACE_RUN.findall(text) for i in range(len(run) - 2)]
    candidates += _WORD.findall(text)
    for candidate in candidates:
        if not any(candidate.lower() in other.lower() for other in others):
            return candidate
    return None


@pytest.fixture
def multilingual():
    store([(f"http://pages.test/{i}", f"Page {i}", p["text"]) for i, p in enumerate(PAGES)])


def test_it_stores_each_page_s_language(multilingual):
    stored = dict(Document.objects.values_list("page_url", "language"))
    assert [stored[f"http://pages.test/{i}"] for i in range(len(PAGES))] == [p["language"] for p in PAGES]


@pytest.mark.parametrize("index", range(len(PAGES)), ids=[f"{p['language']}-{i}" for i, p in enumerate(PAGES)])
def test_a_word_only_one_page_has_finds_it_in_the_top_10(multilingual, index):
    texts = [p["text"] for p in PAGES]
    query = unique_query(texts[index], texts[:index] + texts[index + 1:])
    assert query is not None
    hits = service.search(query, limit=10)
    assert f"http://pages.test/{index}" in [h.url for h in hits], query


def test_an_inflected_form_finds_the_page_where_its_stemmer_conflates_them():
    german = ("Die Installationen der Rechner in unserem Haus wurden gestern von den Technikern "
              "überprüft, und alle Programme laufen jetzt wieder zuverlässig und schnell.")
    store([("http://pages.test/de", "Bericht", german),
           ("http://pages.test/en", "Report", "The installer of these computers runs on every machine in the house.")])
    assert Document.objects.get(page_url="http://pages.test/de").language == "de"
    # "installation" is also English for "installer" (both "instal"): the German page is among them
    assert "http://pages.test/de" in [h.url for h in service.search("Installation")]
    assert [h.url for h in service.search("Installationen")] == ["http://pages.test/de"]  # as written
    assert "http://pages.test/de" in [h.url for h in service.search("Techniker")]


def test_cjk_phrases_and_the_lang_filter(multilingual):
    japanese = [i for i, p in enumerate(PAGES) if p["language"] == "ja"]
    first = PAGES[japanese[0]]["text"]
    run = max(NO_SPACE_RUN.findall(first), key=len)[:6]
    assert f"http://pages.test/{japanese[0]}" in [h.url for h in service.search(f'"{run}"')]
    only_ja = service.search("lang:ja", limit=50)
    assert sorted(h.url for h in only_ja) == sorted(f"http://pages.test/{i}" for i in japanese)
    assert [h.url for h in service.search(f"lang:de {run}")] == []
