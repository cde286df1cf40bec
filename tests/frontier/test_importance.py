"""Which pages first (frontier/importance.py): a URL's score and its parts, kept up to date at
admission, best first within a host, and dispatch's biased draw over the score bands."""

import random
from collections import Counter
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from frontier import importance, service
from frontier.models import Host, TrustedDomain, Url

pytestmark = pytest.mark.django_db


def test_the_parts_of_a_score():
    home = importance.parts("http://a.test/", "a.test", 0)
    assert (home.depth, home.place, home.inlinks, home.hint, home.trusted, home.total) == (0, 40, 0, 0, 0, 40)
    assert importance.parts("http://a.test/docs/", "a.test", 1).total == -10 + 10  # a section root
    assert importance.parts("http://a.test/docs/page.html", "a.test", 2).total == -20
    assert importance.parts("http://a.test/?page=2", "a.test", 1).place == 0  # a query is no home page
    # Links from other hosts count up to CRAWLER_SCORE_INLINK_HOSTS_MAX hosts.
    assert [importance.inlink_points(n) for n in (0, 1, 3, 5, 50)] == [0, 12, 36, 60, 60]
    assert [importance.sitemap_hint(p) for p in (None, 0.0, 1.0, 7.0)] == [20, 10, 30, 30]
    assert [importance.score_band(s) for s in (40, 20, 19, -30, -31)] == [0, 0, 1, 1, 2]


def test_a_hosts_standing_is_counted_in_two_sketches_a_point_or_two_from_the_exact_count():
    """A row per edge of the host graph cost an insert, a foreign-key check and an index
    entry each; two 63-bit sketches on the host row cost neither, and OR-ing them is what
    lets any process add hosts another counted already."""
    origins = [f"http://site{n}.test" for n in range(20_000)]
    assert importance.referring_hosts(*importance.referrer_sketch([])) == 0
    for n in (1, 2, 5, 30, 100, 1000, 20_000):
        estimate = importance.referring_hosts(*importance.referrer_sketch(origins[:n]))
        assert abs(importance.site_points(estimate) - importance.site_points(n)) <= 6, (n, estimate)
        if n <= 30:  # linear counting: about 10 % at 30 hosts, closer below, where the log2 moves most
            assert abs(estimate - n) <= max(1, 0.15 * n), (n, estimate)
    # Sketches of two sets OR-ed are the sketch of their union: counted twice, counted once.
    first, second = importance.referrer_sketch(origins[:600]), importance.referrer_sketch(origins[400:900])
    union = importance.referrer_sketch(origins[:900])
    assert (first[0] | second[0], first[1] | second[1]) == union


def test_a_trusted_domain_lifts_its_subdomains_too():
    TrustedDomain.objects.create(domain="Example.org.", weight=70)
    TrustedDomain.objects.create(domain="docs.example.org", weight=90)
    importance.forget_trusted()
    assert [importance.trusted_weight(h) for h in ("example.org", "www.example.org", "docs.example.org",
                                                   "a.docs.example.org", "example.com", "notexample.org")] == [
        70, 70, 90, 90, 0, 0]
    assert importance.parts("http://www.example.org/a/b", "www.example.org", 2).total == -20 + 70


def test_quotas_draw_every_band_in_its_share():
    rng = random.Random(1)
    totals, loaded = Counter(), Counter()
    for _ in range(2000):
        totals.update(dict(enumerate(importance.quotas(10, False, rng))))
        loaded.update(dict(enumerate(importance.quotas(10, True, rng))))
    share = [totals[b] / 20000 for b in range(3)]
    share_loaded = [loaded[b] / 20000 for b in range(3)]
    assert [round(s, 2) for s in share] == [0.6, 0.3, 0.1]
    assert [round(s, 2) for s in share_loaded] == [0.8, 0.15, 0.05]
    assert sum(importance.quotas(7, False, rng)) == 7


def url(address):
    return Url.objects.get(url=address)


def test_admission_scores_new_urls_and_counts_each_other_host_once():
    service.add_seeds(["http://a.test/"], service.ScopeSpec("web"))
    assert url("http://a.test/").score == 40
    links = [service.Candidate("http://a.test/deep/page", 3, via="http://a.test")]  # a link from its own host
    service.add_urls(links)
    assert (url("http://a.test/deep/page").score, url("http://a.test/deep/page").inlink_hosts) == (-30, 0)
    # Found again from another host (twice from one of them, in two batches): +12 per host.
    for via in ("http://b.test", "http://b.test", "http://c.test:8080"):
        service.add_urls([service.Candidate("http://a.test/deep/page", 4, via=via)])
    service.flush_inlinks()  # held in the process until due (frontier/inlinks.py)
    page = url("http://a.test/deep/page")
    assert (page.inlink_hosts, page.score, page.depth) == (2, -30 + 24, 3)
    # A new URL linked from two other hosts in one batch starts with both (and is a section root).
    service.add_urls([service.Candidate("http://a.test/new", 2, via=via) for via in ("http://b.test", "http://d.test")])
    assert (url("http://a.test/new").inlink_hosts, url("http://a.test/new").score) == (2, -20 + 10 + 24)
    # Found by a shorter path: the depth part moves with the depth.
    service.add_urls([service.Candidate("http://a.test/new", 1)])
    assert (url("http://a.test/new").depth, url("http://a.test/new").score) == (1, -10 + 10 + 24)


def test_a_hosts_standing_counts_each_other_host_linking_to_any_of_its_pages_once(admin_client):
    service.add_seeds(["http://a.test/"], service.ScopeSpec("web"))
    links = [service.Candidate(f"http://a.test/p{i}", 2, via=via)
             for i, via in enumerate(["http://a.test", "http://b.test", "http://b.test", "http://c.test"])]
    service.add_urls(links[:2])
    service.add_urls(links[2:] + [service.Candidate("http://new.test/x", 2, via="http://b.test")])
    service.flush_inlinks()
    # b.test counted once (two pages, two batches), c.test once, its own links not at all;
    # a host first met in the batch counts too.
    assert Host.objects.get(origin="http://a.test").referring_hosts == 2
    assert Host.objects.get(origin="http://new.test").referring_hosts == 1
    assert [importance.site_points(n) for n in (0, 1, 3, 7, 63)] == [0, 6, 12, 18, 36]
    # A session of the host orders by its next URL's score plus the host's standing, and
    # the admin says so.
    from crawl.session import HostSession

    lease = next(lease for lease in service.lease_ready_hosts("test", 10)
                 if lease.host_id == Host.objects.get(origin="http://a.test").id)
    view = service.begin_leases([(lease.host_id, lease.token)])[lease.host_id]
    session = HostSession(lease, view, service.queued_urls(lease.url_ids), sink=lambda event: None)
    assert (view.inlink_hosts, session.urls[0].url, session.next_score()) == (2, "http://a.test/", 40 + 10)
    session.connection.close()
    page = admin_client.get(f"/admin/frontier/url/{url('http://a.test/p1').id}/change/").content.decode()
    assert "its host&#x27;s standing (2 other hosts link to its pages): +10" in page


def test_a_link_every_process_sees_counts_once_for_the_url_and_for_its_host():
    """Each crawling process keeps its own set of pairs it has counted; a second process
    (here: the first one's caches forgotten) sending the same pairs again must not count
    them again: the URL's bits and the host's referrer rows hold them once."""
    service.add_seeds(["http://a.test/"], service.ScopeSpec("web"))
    service.add_urls([service.Candidate("http://a.test/p/q", 2, via="http://b.test")])  # new, from b
    service.add_urls([service.Candidate("http://a.test/r/s", 2)])
    for _process in range(3):
        service.forget_caches()
        service.add_urls([service.Candidate("http://a.test/p/q", 2, via="http://b.test"),
                          service.Candidate("http://a.test/r/s", 2, via="http://b.test"),
                          service.Candidate("http://a.test/r/s", 2, via="http://c.test:8080")])
        service.flush_inlinks()  # what each process held, counted before it "ends"
    assert (url("http://a.test/p/q").inlink_hosts, url("http://a.test/p/q").score) == (1, -20 + 12)
    assert (url("http://a.test/r/s").inlink_hosts, url("http://a.test/r/s").score) == (2, -20 + 24)
    assert url("http://a.test/r/s").inlink_bits == importance.referrer_mask(["http://b.test", "http://c.test:8080"])
    assert Host.objects.get(origin="http://a.test").referring_hosts == 2
    host = Host.objects.get(origin="http://a.test")
    assert (host.referrer_bits, host.referrer_ranks) == importance.referrer_sketch(["http://b.test", "http://c.test:8080"])
    # Two referring hosts on one bit (one pair in 63) count once for a URL: the score's few
    # hosts need no more. A host's standing has them in its sketches, whose estimate
    # allows for such pairs on average (linear counting): here three for four.
    first, second = _two_origins_on_one_bit()
    service.add_urls([service.Candidate("http://a.test/t/u", 2, via=first)])
    service.add_urls([service.Candidate("http://a.test/t/u", 2, via=second)])
    service.flush_inlinks()
    assert url("http://a.test/t/u").inlink_hosts == 1
    host = Host.objects.get(origin="http://a.test")
    assert (host.referrer_bits, host.referrer_ranks) == importance.referrer_sketch(
        ["http://b.test", "http://c.test:8080", first, second])
    assert host.referring_hosts == 3


def test_urls_whose_score_takes_no_more_links_are_named_so_they_are_not_sent_again():
    from frontier import bulk

    service.add_urls([service.Candidate(f"http://a.test/{name}/x", 2) for name in ("open", "fetched", "full")])
    Url.objects.filter(url="http://a.test/fetched/x").update(state="fetched")
    key = {name: url(f"http://a.test/{name}/x").url_key for name in ("open", "fetched", "full")}
    five = importance.referrer_mask([f"http://v{n}.test" for n in range(40)][:5])
    raised, closed = bulk.add_inlinks({key["full"]: five}, 12, 5)
    assert len(raised) == 1 and closed == []
    raised, closed = bulk.add_inlinks({k: importance.referrer_mask(["http://z.test"]) for k in key.values()}, 12, 5)
    assert raised == [(url("http://a.test/open/x").host_id, -20 + 12)]
    assert sorted(closed) == sorted([key["fetched"], key["full"]])  # fetched; at the cap
    assert url("http://a.test/fetched/x").inlink_hosts == 0
    # the same bits again: counted already, nothing written, and the URL still open
    raised, closed = bulk.add_inlinks({key["open"]: importance.referrer_mask(["http://z.test"])}, 12, 5)
    assert (raised, closed, url("http://a.test/open/x").score) == ([], [], -20 + 12)


def _two_origins_on_one_bit():
    bits = {}
    for n in range(1000):
        origin = f"http://o{n}.test"
        bit = importance.referrer_key(origin) % importance.REFERRER_BITS
        if bit in bits:
            return bits[bit], origin
        bits[bit] = origin
    raise AssertionError("64 origins share a bit by the pigeonhole principle")


def test_a_host_band_rises_with_its_best_url_and_falls_as_sessions_take_them():
    service.add_urls([service.Candidate("http://h.test/x/y/z", 5)])
    host = Host.objects.get(origin="http://h.test")
    assert host.band == 2
    service.add_urls([service.Candidate("http://h.test/x/y/w", 4, via=f"http://v{n}.test") for n in range(5)])
    host.refresh_from_db()
    assert host.band == 0  # -40 + 60: the best URL it has waiting
    leases = service.lease_ready_hosts("t", 10)
    assert [len(lease.url_ids) for lease in leases] == [2]
    assert Url.objects.filter(id__in=leases[0].url_ids).order_by("-score")[0].url == "http://h.test/x/y/w"
    host.refresh_from_db()
    assert host.band == 2  # what is left is no better than the worst URL taken


def test_dispatch_draws_hosts_from_the_bands_in_their_shares(settings):
    settings.CRAWLER_DEFAULT_DELAY = 0
    settings.CRAWLER_POLITENESS_SCOPE = "host"
    paths = ("/", "/a/b", "/a/b/c")
    service.add_urls([service.Candidate(f"http://b{band}-{n}.test{paths[band]}", depth)  # home pages; -20; -60
                      for band, depth in enumerate((0, 2, 6)) for n in range(60)])
    assert dict(Counter(Host.objects.values_list("band", flat=True))) == {0: 60, 1: 60, 2: 60}
    origins = dict(Host.objects.values_list("id", "origin"))
    drawn = Counter()
    for _ in range(30):
        for lease in service.lease_ready_hosts("t", 10):
            drawn[origins[lease.host_id].split("-")[0]] += 1
        Host.objects.update(leased_until=timezone.now() - timedelta(seconds=1), next_fetch_at=timezone.now())
        Host.objects.update(band=0)
        for band in (1, 2):
            Host.objects.filter(origin__startswith=f"http://b{band}-").update(band=band)
    total = sum(drawn.values())
    assert total == 300
    shares = {name: drawn[name] / total for name in ("http://b0", "http://b1", "http://b2")}
    assert abs(shares["http://b0"] - 0.6) < 0.1 and abs(shares["http://b1"] - 0.3) < 0.1
    assert 0.03 < shares["http://b2"] < 0.2  # drawn now and then: never starved


def test_a_band_with_no_ready_host_gives_its_share_to_the_others(settings):
    settings.CRAWLER_DEFAULT_DELAY = 0
    for n in range(12):
        service.add_urls([service.Candidate(f"http://only-deep-{n}.test/a/b/c", 6)])
    leases = service.lease_ready_hosts("t", 10)
    assert len(leases) == 10


class _DueSession:
    """What the engine asks of a session to order it: the score of its next URL (and, for
    its session cap, its host's delay)."""

    def __init__(self, name, score):
        self.name, self.score = name, score
        self.clock = SimpleNamespace(delay=1.0)

    def next_score(self):
        return self.score


def test_the_engine_serves_the_best_due_sessions_first_by_band_draw_without_starving_any(monkeypatch):
    """When more sessions are due than threads are free, a thread draws a band with the
    dispatch shares and takes its best session; a session not yet due waits its time."""
    import time

    from crawl import engine as engine_module

    monkeypatch.setattr(engine_module, "_random", random.Random(3))
    engine = engine_module.SessionEngine(fetch_threads=4)
    now = time.monotonic()
    sessions = ([_DueSession(f"high{s}", s) for s in (30, 80, 50)]  # band 0 (>= 20)
                + [_DueSession(f"mid{s}", s) for s in (-10, 0)]  # band 1
                + [_DueSession(f"low{s}", s) for s in (-60, -90)])  # band 2
    with engine._lock:
        for session in sessions:
            engine._push(now - 1, session)
        engine._push(now + 3600, _DueSession("later", 500))  # the best score, but not due
        engine._promote(time.monotonic())
        drawn_once = [engine._draw().name for _ in range(7)]
        assert not any(engine._due)  # "later" is still in the time heap
    # Each band hands out its best first; which band goes next is the draw.
    assert [n for n in drawn_once if n.startswith("high")] == ["high80", "high50", "high30"]
    assert [n for n in drawn_once if n.startswith("mid")] == ["mid0", "mid-10"]
    assert [n for n in drawn_once if n.startswith("low")] == ["low-60", "low-90"]
    drawn = Counter()
    with engine._lock:
        for session in sessions:
            engine._push(now - 1, session)
        engine._promote(time.monotonic())
        for _ in range(3000):  # every session due again at once: the bands' shares
            session = engine._draw()
            drawn[session.name[:3]] += 1
            engine._push(now - 1, session)
            engine._promote(time.monotonic())
    # 7 due sessions >= 4 threads: the loaded shares, 80/15/5.
    share = {band: drawn[band] / 3000 for band in ("hig", "mid", "low")}
    assert 0.76 <= share["hig"] <= 0.84 and 0.12 <= share["mid"] <= 0.18 and 0.03 <= share["low"] <= 0.07


def test_a_waiting_url_a_sitemap_lists_later_gains_its_hint_even_when_the_seen_cache_knows_it():
    """Pages often link a URL before the host's sitemap is read: the listing still counts."""
    service.add_urls([service.Candidate("http://a.test/s/p7.html", 2, via="http://a.test")])
    before = url("http://a.test/s/p7.html")
    assert (before.score, before.hint) == (-20, 0)
    from frontier import seen
    from frontier.normalize import normalize

    key = normalize("http://a.test/s/p7.html").key
    seen.remember([(key, before.scopes, 2)])  # as after a commit: links to it stop at the cache
    assert seen.unknown([(key, before.scopes, 2)]) == [False]
    hint = service.sitemap_hint(1.0)
    result = service.add_urls([service.Candidate("http://a.test/s/p7.html", 2, hint=hint)])  # from the sitemap
    after = url("http://a.test/s/p7.html")
    assert (result.admitted, after.hint, after.score) == (0, hint, -20 + hint)
    # Listed again with a lower <priority>: nothing moves; found again by a link: nothing either.
    service.add_urls([service.Candidate("http://a.test/s/p7.html", 2, hint=service.sitemap_hint(0.1))])
    service.add_urls([service.Candidate("http://a.test/s/p7.html", 2)])
    assert (url("http://a.test/s/p7.html").hint, url("http://a.test/s/p7.html").score) == (hint, -20 + hint)


def test_a_session_swaps_in_its_hosts_better_urls_when_its_process_stores_one(settings):
    """A URL found (or raised) while a session works through its list does not wait for the
    list's end: the session asks for its host's best, swaps them in, and lets its worst go."""
    from crawl.session import HostSession, MoreUrlsWanted

    settings.CRAWLER_SESSION_REFRESH_URLS, settings.CRAWLER_SESSION_MAX_URLS = 3, 6
    lease = service.Lease(host_id=1, token="t", url_ids=[], origin="http://a.test")
    view = service.HostView(1, "http://a.test", None, 404, "", "", None, None)
    carried = [service.QueuedUrl(i, f"http://a.test/{i}", 2, 0, 0, "", score=p)
               for i, p in zip(range(1, 7), (30, 20, 10, 0, -10, -20))]
    sent = []
    session = HostSession(lease, view, carried, sink=sent.append)
    session.urls.popleft()  # one fetched: id 1 is done
    session.offered(5)  # above the third it fetches next (20, 10, 0): it would be among them
    assert session.refresh_wanted
    session.refresh_wanted = False
    session.offered(-5)  # not among the next three (20, 10, 0)
    assert not session.refresh_wanted
    session.offered(15)
    session._refresh()
    asked = sent[-1]
    assert isinstance(asked, MoreUrlsWanted) and (asked.taken, asked.limit, asked.above) == (frozenset({1}), 3, -20)
    session._refresh()  # one question at a time
    assert len(sent) == 1
    # The answer: a new URL (15), one it carries whose score rose (id 5: -10 -> 25), and the
    # one it fetched already (never again).
    session.better.append([service.QueuedUrl(9, "http://a.test/9", 2, 0, 0, "", score=15),
                           service.QueuedUrl(5, "http://a.test/5", 2, 0, 0, "", score=25),
                           service.QueuedUrl(1, "http://a.test/1", 2, 0, 0, "", score=30)])
    session._swap_in_better()
    assert [queued.id for queued in session.urls] == [5, 2, 9, 3, 4]  # the worst (id 6, -20) let go
    assert session.taken == {1, 2, 3, 4, 5, 9} and not session.refreshing
    session.connection.close()


@pytest.mark.django_db(transaction=True)  # the crawl's threads read what the test wrote
def test_a_url_a_sitemap_lists_counts_as_two_links_below_it_until_a_link_finds_it_shallower(settings, tmp_path):
    """Most sitemaps list every page of a site without <priority>, mostly articles two links
    below the home. At one link below the sitemap (the depth of the page whose host's
    robots.txt named it) a big site's articles outranked its own listing pages, which the
    home reaches in two links (bench.harvest --sitemap-lists all; docs/benchmarks.md)."""
    from archive import warc
    from crawl.runners import run_embedded

    from ..loopback import QuietHandler, serving

    settings.CRAWLER_WARC_DIR = str(tmp_path / "warc")
    settings.CRAWLER_DEFAULT_DELAY = 0
    links = {"/": ["/news/"], "/news/": ["/news/latest.html"], "/news/latest.html": ["/news/1.html"]}
    listed = ["/", "/news/", "/news/latest.html", "/news/1.html", "/news/2.html"]  # 2: the sitemap's only

    class Site(QuietHandler):
        def do_GET(self):
            origin = f"http://{self.headers['Host']}"
            if self.path == "/robots.txt":
                return self.send(200, f"User-agent: *\nAllow: /\nSitemap: {origin}/sitemap.xml\n".encode(),
                                 [("Content-Type", "text/plain")])
            if self.path == "/sitemap.xml":
                entries = "".join(f"<url><loc>{origin}{path}</loc></url>" for path in listed)
                body = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
                return self.send(200, body.encode(), [("Content-Type", "application/xml")])
            anchors = "".join(f'<a href="{link}">more</a>' for link in links.get(self.path, ()))
            self.send(200, f"<html><body><p>page {self.path}</p>{anchors}</body></html>".encode(),
                      [("Content-Type", "text/html")])

    with serving(Site) as origin:
        service.add_seeds([origin + "/"])
        run_embedded(threads=1, max_seconds=30)
        warc.close()
    rows = {row.url[len(origin):]: row for row in Url.objects.all()}
    assert {path: rows[path].state for path in listed} == dict.fromkeys(listed, "fetched")
    hint = importance.sitemap_hint(None)
    assert rows["/sitemap.xml"].depth == 0  # named by the robots.txt of the seed's host
    assert {path: (rows[path].depth, rows[path].score) for path in listed[1:]} == {
        "/news/": (1, -10 + 10 + hint),  # a link from the home: shallower than the listing
        "/news/latest.html": (2, -20 + hint),  # two links down either way
        "/news/1.html": (2, -20 + hint),  # linked three links down, listed two
        "/news/2.html": (2, -20 + hint),  # the sitemap's only (at one link below: -10 + hint, above latest.html)
    }
