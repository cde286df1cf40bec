"""Languages over real HTTP: pages in many scripts served as UTF-8 on loopback, some with
`<html lang>` or Content-Language (one of them lying), crawled by the embedded runner into
the archive, identified, found; then `manage.py reindex` re-analyses the stored documents
from their archived responses (or, where the archive is not here, from the stored text)."""

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils.html import escape

from crawl.runners import run_embedded
from frontier import service as frontier
from indexer import service
from indexer.models import Document

from ..loopback import QuietHandler, serving

pytestmark = [pytest.mark.crawl, pytest.mark.django_db(transaction=True)]
PAGES = json.loads((Path(__file__).parent / "data" / "multilingual_pages.json").read_text("utf-8"))
GERMAN = ("Die Installationen der Rechner in unserem Haus wurden gestern von den Technikern überprüft, "
          "und alle Programme laufen jetzt wieder zuverlässig und schnell.")


class Multilingual(QuietHandler):
    """/ links every page; /p/N is a fixture page (even N declare <html lang>, N divisible by
    3 send Content-Language); /lying says lang="en" over German text."""

    def do_GET(self):
        if self.path == "/":
            links = "".join(f'<a href="/p/{i}">{i}</a> ' for i in range(len(PAGES)))
            return self.page(f"<html><body>{links}<a href='/lying'>x</a></body></html>")
        if self.path == "/lying":
            return self.page(f'<html lang="en"><title>Bericht</title><body><p>{GERMAN}</p></body></html>')
        if not self.path.startswith("/p/"):
            return self.send(404)
        n = int(self.path.rsplit("/", 1)[1])
        page = PAGES[n]
        lang = f' lang="{page["language"]}"' if n % 2 == 0 else ""
        headers = [("Content-Language", page["language"])] if n % 3 == 0 else []
        self.page(f"<html{lang}><title>Page {n}</title><body><p>{escape(page['text'])}</p></body></html>", headers)

    def page(self, html: str, headers=()) -> None:
        self.send(200, html.encode("utf-8"), [("Content-Type", "text/html; charset=utf-8"), *headers])


def test_it_identifies_crawled_pages_and_reindex_reads_them_back_from_the_archive(settings):
    settings.CRAWLER_DEFAULT_DELAY = 0
    with serving(Multilingual) as origin:
        frontier.add_seeds([origin + "/"])
        run_embedded(threads=2, max_seconds=120)
    languages = dict(Document.objects.values_list("page_url", "language"))
    assert [languages[f"{origin}/p/{i}"] for i in range(len(PAGES))] == [p["language"] for p in PAGES]
    assert languages[f"{origin}/lying"] == "de"  # the text overrules a template's lang="en"
    assert f"{origin}/lying" in [h.url for h in service.search("Installationen")]

    # An index built before languages: every page unidentified, its text analysed as English.
    Document.objects.update(language="")
    out = io.StringIO()
    call_command("reindex", stdout=out)
    documents = Document.objects.count()
    assert f"({documents} re-analysed: {documents} parsed again from the archive, 0 from the stored text)" \
        in out.getvalue()
    assert dict(Document.objects.values_list("page_url", "language")) == languages
    japanese = next(i for i, p in enumerate(PAGES) if p["language"] == "ja")
    assert f"{origin}/p/{japanese}" in [h.url for h in service.search(f"lang:ja {PAGES[japanese]['text'][20:23]}")]

    # The archive is not on this machine: languages from the stored text.
    settings.CRAWLER_WARC_DIR = "/nonexistent"
    Document.objects.update(language="")
    out = io.StringIO()
    call_command("reindex", stdout=out)
    assert f"0 parsed again from the archive, {documents} from the stored text" in out.getvalue()
    relabelled = dict(Document.objects.values_list("page_url", "language"))
    assert [relabelled[f"{origin}/p/{i}"] for i in range(len(PAGES))] == [p["language"] for p in PAGES]
