"""A session's own pages' links to its host (crawl/ownlinks.py, frontier/ownlinks.py), against
a small loopback site read page by page.

A small site is read page by page: its next URL is on the page just fetched. The session
must take it from the page, not wait for the writer to store the page and read the link
back (issue 50), and must never take a URL the frontier already has (it would be fetched
twice) nor more than the host's quota. What it fetched is stored under the frontier's ids,
with the referrer chain and the crawl log as if the writer had admitted the links first.
"""

import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from crawl import writer
from crawl.models import CrawlLogEntry
from crawl.ownlinks import LinksTaken, ProvisionalIds
from crawl.pipeline import Redirect, Results
from crawl.engine import SessionEngine
from crawl.runners import run_embedded
from frontier import controls
from frontier import service as frontier
from frontier.models import Url
from frontier.outcomes import FetchReport

from ..loopback import QuietHandler, serving

pytestmark = [pytest.mark.crawl, pytest.mark.django_db(transaction=True)]

PAGES = 6  # /p/0.html .. /p/5.html: home links /p/0, each page the next (depth 6: the tests' depth limit)


class ChainSite(QuietHandler):
    """A small site read page by page, with a Crawl-delay; `asked` is every path asked,
    with the connection (client port) it came on; `chain_read` is set when the last page is."""

    asked: list = []
    chain_read: threading.Event

    def do_GET(self):
        type(self).asked.append((self.path, self.client_address[1]))
        if self.path == f"/p/{PAGES - 1}.html":
            type(self).chain_read.set()
        if self.path == "/robots.txt":
            return self.send(200, b"User-agent: *\nCrawl-delay: 0.05\n", [("Content-Type", "text/plain")])
        if self.path == "/":
            nxt = 0
        elif self.path.startswith("/p/") and self.path.endswith(".html") and self.path[3:-5].isdigit():
            nxt = int(self.path[3:-5]) + 1
        else:
            return self.send(404, b"not here", [("Content-Type", "text/plain")])
        link = f'<a href="/p/{nxt}.html">next</a>' if nxt < PAGES else ""
        body = (f"<html><head><title>{self.path}</title></head><body><h1>{self.path}</h1>"
                f"<p>Words of page {self.path} for its index.</p>{link}"
                f'<a href="http://127.0.0.9:9/">elsewhere</a></body></html>').encode()
        self.send(200, body, [("Content-Type", "text/html; charset=utf-8")])


@pytest.fixture
def chain_site():
    class Site(ChainSite):
        asked = []
        chain_read = threading.Event()

    with serving(Site) as origin:
        yield origin, Site.asked, Site.chain_read


def chain(origin: str) -> list[str]:
    return [f"{origin}/"] + [f"{origin}/p/{k}.html" for k in range(PAGES)]


def pages_asked(asked) -> list[str]:
    return [path for path, _ in asked if path.startswith("/p/")]


def test_a_session_reads_a_small_site_page_by_page_while_the_writer_stores_nothing(chain_site, settings, monkeypatch):
    """The writer's first store is held until the session has fetched the whole chain: a
    session that waited for its pages' links to be stored would never get past home.
    (How far a session may run ahead of the writer is the next test's.)"""
    settings.CRAWLER_SESSION_OWN_LINKS_AHEAD = PAGES
    origin, asked, chain_read = chain_site
    real_store = writer._store_retrying
    held = {}

    def store_held(results):
        if "pages" not in held:
            chain_read.wait(20)  # the last page asked; a session waiting for this store never asks it
            held["pages"] = len(pages_asked(asked))
        return real_store(results)

    monkeypatch.setattr(writer, "_store_retrying", store_held)
    frontier.add_seeds([f"{origin}/"])
    stats = run_embedded(threads=2, max_seconds=60)
    assert held["pages"] == PAGES  # the whole chain fetched before anything was stored
    assert pages_asked(asked) == [f"/p/{k}.html" for k in range(PAGES)]  # each once, in order
    assert stats.connections == 1 and len({port for _, port in asked}) == 1  # one session, one connection
    urls = chain(origin)
    rows = {url: (state, depth, referrer) for url, state, depth, referrer in
            Url.objects.filter(url__in=urls).values_list("url", "state", "depth", "referrer_id")}
    ids = dict(Url.objects.filter(url__in=urls).values_list("url", "id"))
    # stored as if the writer had admitted each link first: state, depth, referrer
    assert [rows[url][:2] for url in urls] == [("fetched", depth) for depth in range(PAGES + 1)]
    assert [rows[url][2] for url in urls[1:]] == [ids[url] for url in urls[:-1]]
    # the crawl log names each request's URL by the frontier's id
    assert dict(CrawlLogEntry.objects.filter(kind="page", url__in=urls).values_list("url", "url_id")) == ids


def test_a_session_runs_no_further_ahead_of_the_writer_than_its_setting(chain_site, settings, monkeypatch):
    """The writer's first store is held: the session fetches CRAWLER_SESSION_OWN_LINKS_AHEAD
    pages it took and waits (trap and mirror judgement counts stored pages); once the
    store goes, it reads the rest of the chain, each page once."""
    settings.CRAWLER_SESSION_OWN_LINKS_AHEAD = 2
    origin, asked, _ = chain_site
    real_store, real_await = writer._store_retrying, SessionEngine._await_writer
    parked, held = threading.Event(), {}

    def await_writer(engine, session):
        real_await(engine, session)
        if session in engine._behind_writer:
            parked.set()

    def store_held(results):
        if "pages" not in held:
            # home is the frontier's URL; /p/0 and /p/1 are taken; the session parks before
            # /p/2 (it cannot wake while this store is held). Without the gate it never
            # parks: the whole chain is asked by the end of the wait.
            parked.wait(20)
            held["pages"] = pages_asked(asked)
        return real_store(results)

    monkeypatch.setattr(SessionEngine, "_await_writer", await_writer)
    monkeypatch.setattr(writer, "_store_retrying", store_held)
    frontier.add_seeds([f"{origin}/"])
    run_embedded(threads=2, max_seconds=60)
    assert held["pages"] == ["/p/0.html", "/p/1.html"]
    assert pages_asked(asked) == [f"/p/{k}.html" for k in range(PAGES)]
    assert Url.objects.filter(url__in=chain(origin), state="fetched").count() == PAGES + 1


def test_a_link_the_frontier_has_is_not_taken_again(chain_site, settings):
    """A URL of the host fetched before (here /p/1.html, recorded as fetched) is in the
    frontier: the session must not fetch it again when /p/0.html links to it."""
    origin, asked, _ = chain_site
    frontier.add_seeds([f"{origin}/", f"{origin}/p/1.html"])
    Url.objects.filter(url=f"{origin}/p/1.html").update(state="fetched", last_fetched_at=timezone.now(),
                                                         next_fetch_at=timezone.now() + timedelta(days=30))
    run_embedded(threads=2, max_seconds=60)
    assert pages_asked(asked) == ["/p/0.html"]
    assert Url.objects.get(url=f"{origin}/p/0.html").state == "fetched"


def test_a_session_takes_no_more_than_its_hosts_quota(chain_site, settings):
    settings.CRAWLER_MAX_URLS_PER_HOST = 4
    settings.CRAWLER_SITEMAP_GUESS = False  # no /sitemap.xml admitted meanwhile: the quota is the pages'
    origin, asked, _ = chain_site
    frontier.add_seeds([f"{origin}/"])
    run_embedded(threads=2, max_seconds=60)
    held = set(Url.objects.values_list("url", flat=True))
    assert held == set(chain(origin)[:4])  # its quota: home, /p/0, /p/1, /p/2
    requested = {origin + path for path, _ in asked if path != "/robots.txt"}
    assert requested == held  # nothing fetched that the frontier refused, nothing left queued
    assert not Url.objects.filter(state="queued").exists()


def test_with_the_setting_at_zero_a_session_waits_for_the_writer_as_before(chain_site, settings):
    settings.CRAWLER_SESSION_OWN_LINKS_HOST_URLS = 0
    origin, asked, _ = chain_site
    frontier.add_seeds([f"{origin}/"])
    run_embedded(threads=2, max_seconds=60)
    assert pages_asked(asked) == [f"/p/{k}.html" for k in range(PAGES)]
    assert Url.objects.filter(state="fetched").count() == PAGES + 1


def test_the_writer_stores_taken_urls_under_the_frontiers_ids_and_drops_what_it_refuses(settings):
    """Two levels taken in one group (a link found on a page that was itself taken), and one
    link the frontier refuses by the time the writer admits it (its domain excluded)."""
    frontier.add_seeds(["http://a.example/"])
    home = Url.objects.get()
    page = frontier.Candidate("http://a.example/one", 1, 0, home.id, via="http://a.example")
    next_page = frontier.Candidate("http://a.example/two", 2, 0, -1, via="http://a.example")
    refused = frontier.Candidate("http://b.example/", 1, 0, home.id)
    controls.update_limits(exclude_domains=["b.example"])
    ids = ProvisionalIds()
    ids.admit([LinksTaken(7, [(-2, next_page)]), LinksTaken(7, [(-1, page), (-3, refused)])])
    one, two = Url.objects.get(url=page.url), Url.objects.get(url=next_page.url)
    assert (ids.url_id(-1), ids.url_id(-2), ids.url_id(-3)) == (one.id, two.id, None)
    assert (one.referrer_id, two.referrer_id) == (home.id, one.id)
    results = Results(reports=[(FetchReport(-1, status=404), 0), (FetchReport(-3, status=200), 0),
                               (FetchReport(home.id, status=500), 0)],
                      redirects=[Redirect(-2, 0, 301, frontier.Candidate("/three", 2, 1, -2, base=next_page.url))])
    ids.resolve(results)
    assert [report.url_id for report, _ in results.reports] == [one.id, home.id]
    assert [(r.url_id, r.target.referrer_id) for r in results.redirects] == [(two.id, two.id)]
    assert ids.dropped == 1
    ids.forget([7])
    assert ids.url_id(-1) is None
