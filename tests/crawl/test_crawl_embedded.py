"""The embedded crawler against the sample web, through real HTTP on loopback."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from frontier.models import Host, Url
from indexer import service as indexer
from indexer.backends import get_search_backend
from indexer.models import Document

from ..conftest import TEST_WARC_DIR
from ..crawl_helpers import DEPTH_LIMIT, assert_complete_and_polite, assert_every_response_archived, audit, sample_web

pytestmark = [pytest.mark.crawl, pytest.mark.django_db]


@pytest.fixture(scope="module")
def crawled(django_db_setup, django_db_blocker, tmp_path_factory, module_test_settings):
    """One full embedded crawl per module, committed for real (the crawler's threads have
    their own connections); the tests only read it. Yields (web, audit report, summary)."""
    with django_db_blocker.unblock():
        call_command("flush", "--no-input")
        get_search_backend().clear()  # flush leaves the backend's raw index behind
        with sample_web(tmp_path_factory.mktemp("embedded")) as web:
            out = StringIO()
            call_command("crawl", *web.seeds, "--scope", "web", "--no-progress", "--json", "--threads", "6",
                         stdout=out)
            summary = json.loads(out.getvalue())
        yield web, audit(web), summary
        call_command("flush", "--no-input")
        get_search_backend().clear()


def test_it_fetches_every_ground_truth_url_exactly_once_and_politely(crawled):
    web, report, summary = crawled
    assert_complete_and_polite(web, report)
    assert summary["by_state"].get("queued", 0) == 0
    assert summary["fetched"] == len(web.ground_truth(depth_limit=DEPTH_LIMIT))


def test_it_archives_every_response_and_each_document_reads_back_from_the_archive(crawled):
    web, report, summary = crawled
    assert_every_response_archived(web)
    assert summary["archive"]["dir"] == TEST_WARC_DIR and summary["archive"]["files"] >= 1
    assert summary["archive"]["bytes"] > 1000 * len(web.ground_truth(depth_limit=DEPTH_LIMIT))


def test_it_never_fetches_what_robots_txt_disallows(crawled):
    web, report, summary = crawled
    blocked = set(Url.objects.filter(state="robots_blocked").values_list("url", flat=True))
    assert blocked and all(web.robots_disallowed(u) for u in blocked)
    assert not set(report["fetched"]) & blocked
    assert Host.objects.filter(robots_status=200).count() == len(web.hosts) - 1  # one host has none
    assert Host.objects.get(robots_status=404)


def test_it_sends_redirect_targets_through_the_frontier(crawled):
    web, report, summary = crawled
    home = web.hosts[0]
    state = dict(Url.objects.values_list("url", "outcome"))
    assert state[f"http://{home}/redirect/a"] == "redirect"
    assert Url.objects.get(url=f"http://{web.hosts[2]}/p/5.html").redirect_hops in (0, 3)
    # the chain longer than the cap ends at hop 3: /long/4's target is refused
    assert state[f"http://{home}/long/4"] == "redirect_refused:redirect_limit"
    assert f"http://{home}/long/5" not in state
    # the loop ends: each side fetched once, the second points back at a known URL
    assert {state[f"http://{home}/loop/a"], state[f"http://{home}/loop/b"]} == {"redirect", "redirect_known"}


def test_it_does_not_retry_404_and_retries_429_503_after_retry_after(crawled):
    web, report, summary = crawled
    home = web.hosts[0]
    gone = Url.objects.get(url=f"http://{home}/missing/1.html")
    assert (gone.state, gone.last_status, gone.attempts) == ("gone", 404, 1)
    assert Url.objects.filter(last_status=404).count() == 2  # (+ one robots.txt 404 in the log)
    assert Url.objects.filter(last_status=410).count() == 1
    assert report["duplicate_fetches"] == {}  # so no 404/410 was asked for twice
    flaky = web.hosts[web.flaky_index]
    retried = Url.objects.filter(url__startswith=f"http://{flaky}/", state="fetched")
    assert retried.count() > 5 and {u.attempts for u in retried} == {2}  # one 429/503, then 200
    assert report["retry_after_violations"] == []


def test_it_detects_exact_duplicates(crawled):
    web, report, summary = crawled
    home = web.hosts[0]
    copies = Document.objects.filter(page_url__in=[f"http://{home}/p/3.html", f"http://{home}/dup/3.html",
                                                  f"http://{home}/copy/3.html"])
    assert copies.count() == 3
    assert copies.filter(duplicate_of=None).count() == 1
    original = copies.get(duplicate_of=None)
    assert original.indexed and not copies.exclude(id=original.id).filter(indexed=True).exists()
    assert summary["documents"]["duplicates"] == 2


def test_it_finds_the_one_page_with_a_unique_word_first(crawled):
    web, report, summary = crawled
    url = f"http://{web.hosts[3]}/p/4.html"
    hits = indexer.search(web.unique_word(url))
    assert hits[0].url == url and len(hits) == 1
    # The word is in the page's <title> only ("Page - Site (word)"); the title shown is the
    # page's <h1>, which the <title> names (docs/content.md), and the <title> is indexed.
    assert hits[0].title == web.page(url).heading


def test_it_honours_meta_robots_and_skips_non_html(crawled):
    web, report, summary = crawled
    home = web.hosts[0]
    noindex = Document.objects.get(page_url=f"http://{home}/meta/noindex.html")
    assert noindex.noindex and not noindex.indexed
    # the sample web's PDF is a stub with no pages (its links sit in comments, not annotations):
    # read as a PDF, it is one PDFium cannot open
    assert Url.objects.get(url=f"http://{home}/report.pdf").outcome == "pdf:malformed"
    assert not Url.objects.filter(url__contains="/only-from-nofollow/").exists()
    assert not Url.objects.filter(url__contains="/nofollow/").exists()


def test_it_refuses_to_crawl_when_nothing_is_left(crawled):
    with pytest.raises(Exception, match="nothing to crawl"):
        call_command("crawl", "--no-progress", stdout=StringIO())


def test_the_summary_says_what_was_indexed_by_type_and_what_only_archived(crawled):
    web, report, summary = crawled
    documents = summary["documents"]
    assert documents["by_type"]["text/html"] >= 1
    assert set(documents["by_type"]) <= {"text/html", "application/xhtml+xml", "application/pdf"}
    assert sum(documents["by_type"].values()) == documents["indexed"]
    archived_only = Url.objects.filter(state="fetched", outcome="not_html").count()
    assert summary["by_outcome"].get("fetched:not_html", 0) == archived_only
