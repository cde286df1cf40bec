"""Continuous crawling through real HTTP, on both databases: conditional GET and 304s,
WARC revisit records, noise that is not a change, the budget and the release task, the
failure back-off ladder, gone pages, a one-shot crawl that defers what waits long and a
later crawl that resumes it, and continuous mode picking up a changed page.

The clock is ours: a revisit is made due by moving the URL's next visit into the past (and
the release task is given its `now`), never by sleeping."""

import email.utils
import math
import threading
import time
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.models import F
from django.utils import timezone
from warcio.archiveiterator import ArchiveIterator

from fetch import archive
from fetch.runners import run_embedded
from frontier import changerate, recrawl
from frontier import service as frontier
from frontier.models import DeadLetter, Host, RecrawlPlan, Url
from frontier.outcomes import FetchReport
from indexer.models import Document
from indexer.service import search

from .loopback import QuietHandler, start

pytestmark = pytest.mark.django_db(transaction=True)

PROSE = ("The harbour keeps its boats in winter under long sheds of tarred timber where the rope makers "
         "work beside the sail lofts and the smell of pitch hangs over the quay until spring returns. ")


class Site:
    """A loopback site whose pages a test edits: path -> (body, headers). It answers
    conditional requests when a page has an ETag, and records what it was asked."""

    def __init__(self):
        self.pages = {"/robots.txt": (b"User-agent: *\nAllow: /\n", [("Content-Type", "text/plain")])}
        self.requests = []  # (path, If-None-Match, If-Modified-Since, status)
        site = self

        class Handler(QuietHandler):
            def do_GET(self):
                page = site.pages.get(self.path)
                if page is None:
                    status, body, headers = 404, b"gone", [("Content-Type", "text/plain")]
                else:
                    body, headers = page
                    if callable(body):
                        body = body()
                    etag = dict(headers).get("ETag")
                    status = 304 if etag and self.headers.get("If-None-Match") == etag else 200
                site.requests.append((self.path, self.headers.get("If-None-Match"),
                                      self.headers.get("If-Modified-Since"), status))
                self.send(status, b"" if status == 304 else body, headers)

        self.server, self.origin = start(Handler)

    def html(self, path, text, links=(), etag=None, last_modified=None):
        body = ("<html><head><title>page</title></head><body><p>" + text + "</p>"
                + "".join(f'<a href="{link}">{link}</a>' for link in links) + "</body></html>")
        headers = [("Content-Type", "text/html; charset=utf-8")]
        if etag:
            headers.append(("ETag", etag))
        if last_modified:
            headers.append(("Last-Modified", last_modified))
        self.pages[path] = (body.encode() if isinstance(body, str) else body, headers)

    def asked(self, path):
        return [r for r in self.requests if r[0] == path]


@pytest.fixture
def site(settings, tmp_path):
    settings.CRAWLER_WARC_DIR = str(tmp_path / "warc")
    settings.CRAWLER_DEFAULT_DELAY = 0
    settings.CRAWLER_ADAPTIVE_DELAY_FACTOR = 0
    settings.CRAWLER_RECRAWL_BUDGET_PER_DAY = 86400 * 100  # plenty: 100 revisits a second
    recrawl.forget_plan()
    s = Site()
    yield s
    s.server.shutdown()
    recrawl.forget_plan()


def crawl():
    stats = run_embedded(threads=2, max_seconds=30)
    archive.close()
    return stats


def revisit(*urls):
    """Make these URLs' next visits due (our clock) and release them as beat would."""
    Url.objects.filter(url__in=urls).update(next_fetch_at=timezone.now() - timedelta(seconds=1))
    released = frontier.release_due()
    assert released == len(urls)
    crawl()


def warc(directory):
    records = []
    for path in sorted(directory.glob("*.warc.gz")):
        with open(path, "rb") as f:
            for rec in ArchiveIterator(f):
                if rec.rec_type in ("response", "revisit"):
                    records.append((rec.rec_type, dict(rec.rec_headers.headers), rec.content_stream().read(),
                                    rec.http_headers.get_statuscode()))
    return records


def test_a_revisit_is_a_conditional_get_and_a_304_a_revisit_record(site, tmp_path):
    url = site.origin + "/a"
    # A day old: a first visit dated CRAWLER_RECRAWL_FIRST_LAST_MODIFIED_AGE back or more is
    # spared its exploring visits, so a fixed date would change what this test sees with the calendar.
    modified = email.utils.formatdate(time.time() - 86400, usegmt=True)
    site.html("/a", PROSE, etag='"v1"', last_modified=modified)
    frontier.add_seeds([url])
    crawl()
    row = Url.objects.get(url=url)
    assert (row.state, row.last_observation, row.etag, row.last_modified) == (
        "fetched", "first", '"v1"', modified)
    assert site.asked("/a") == [("/a", None, None, 200)]
    stored = Document.objects.get(url=row)

    revisit(url)
    assert site.asked("/a")[1] == ("/a", '"v1"', modified, 304)
    row.refresh_from_db()
    assert (row.state, row.outcome, row.last_observation, row.observations, row.last_status) == (
        "fetched", "not_modified", "not_modified", 1, 304)
    stats = changerate.from_text(row.change_stats)
    assert (stats.visits, stats.changes, changerate.estimate(stats)) == (1, 0, 0.0)  # no change seen …
    # … a fifth of a change, for planning (CRAWLER_RECRAWL_UNCHANGED_PRIOR)
    assert row.change_rate == pytest.approx(0.2 / stats.observed_seconds * 86400)
    assert row.next_fetch_at > timezone.now()
    assert Document.objects.get(url=row).fetched_at == stored.fetched_at  # the stored copy stands
    (first, second) = [r for r in warc(tmp_path / "warc") if r[1]["WARC-Target-URI"] == url]
    assert first[0] == "response" and first[3] == "200"
    kind, headers, body, status = second
    assert (kind, status, body) == ("revisit", "304", b"")
    assert headers["WARC-Profile"] == archive.NOT_MODIFIED
    assert headers["WARC-Refers-To-Target-URI"] == url
    assert headers["WARC-Refers-To-Date"] == first[1]["WARC-Date"]
    assert headers["WARC-Refers-To"] == first[1]["WARC-Record-ID"]


def test_an_unchanged_200_is_an_identical_payload_revisit(site, tmp_path):
    url = site.origin + "/same"
    site.html("/same", PROSE)  # no validators: the server always answers 200
    frontier.add_seeds([url])
    crawl()
    revisit(url)
    assert [r[1:] for r in site.asked("/same")] == [(None, None, 200), (None, None, 200)]
    row = Url.objects.get(url=url)
    assert (row.last_observation, row.observations, row.outcome) == ("unchanged", 1, "unchanged")
    first, second = [r for r in warc(tmp_path / "warc") if r[1]["WARC-Target-URI"] == url]
    assert second[0] == "revisit" and second[2] == b"" and second[3] == "200"
    assert second[1]["WARC-Profile"] == archive.IDENTICAL_PAYLOAD
    assert second[1]["WARC-Payload-Digest"] == first[1]["WARC-Payload-Digest"]
    assert second[1]["WARC-Refers-To"] == first[1]["WARC-Record-ID"]


def test_noise_is_not_a_change_and_a_real_edit_is(site):
    url = site.origin + "/news"
    served = iter(range(1000))

    def noisy(text, links):
        def body():  # a new timestamp and token on every response: bytes differ, words do not
            n = next(served)
            return (f'<html><head><title>news</title><meta name="csrf-token" content="tok{n * 7919}"></head>'
                    f"<body><p>Generated 2026-11-{n % 28 + 1:02d} 12:{n % 60:02d}:00</p><p>{text}</p>"
                    + "".join(f'<a href="{link}">x</a>' for link in links) + "</body></html>").encode()
        site.pages["/news"] = (body, [("Content-Type", "text/html")])

    noisy(PROSE * 3, ["/old"])
    frontier.add_seeds([url])
    crawl()
    stored = Document.objects.get(url__url=url)
    revisit(url)
    row = Url.objects.get(url=url)
    assert (row.last_observation, row.last_change_at) == ("unchanged", None)
    assert changerate.estimate(changerate.from_text(row.change_stats)) == 0.0
    assert Document.objects.get(url__url=url).fetched_at == stored.fetched_at

    noisy(PROSE + "A storm tore the lighthouse lantern loose and the keepers rebuilt it with brass " * 3, ["/new"])
    revisit(url)
    row.refresh_from_db()
    assert (row.last_observation, row.observations) == ("changed", 2)
    assert row.last_change_at is not None and changerate.estimate(changerate.from_text(row.change_stats)) > 0
    assert "lighthouse" in Document.objects.get(url__url=url).body
    assert [hit.url for hit in search("lighthouse")] == [url]
    # links it no longer has stay in the frontier; new ones enter
    assert set(Url.objects.filter(url__in=[site.origin + "/old", site.origin + "/new"]).values_list("url", flat=True)) \
        == {site.origin + "/old", site.origin + "/new"}


def test_a_rotating_sponsor_word_is_noise_by_the_words_it_moves_and_a_new_sentence_a_change(site, settings):
    # With no SimHash slack at all, the distance alone would call every text edit a change:
    # here the words lost and gained against the stored copy decide.
    settings.CRAWLER_CHANGE_SIMHASH_THRESHOLD = 0
    url = site.origin + "/ad"

    def page(sponsor, extra=""):
        site.html("/ad", PROSE * 3 + extra + f" Sponsored by {sponsor}.")

    page("acme")
    frontier.add_seeds([url])
    crawl()
    stored = Document.objects.get(url__url=url)
    page("globex")
    revisit(url)
    row = Url.objects.get(url=url)
    assert (row.last_observation, row.last_change_at) == ("noise", None)
    assert changerate.estimate(changerate.from_text(row.change_stats)) == 0.0
    document = Document.objects.get(url__url=url)
    assert (document.fetched_at, "acme" in document.body) == (stored.fetched_at, True)  # the stored copy stands

    settings.CRAWLER_CHANGE_NOISE_WORDS = 0  # the distance alone: the same rotation is a change
    page("initech")
    revisit(url)
    row.refresh_from_db()
    assert (row.last_observation, row.observations) == ("changed", 2) and row.last_change_at is not None
    assert "initech" in Document.objects.get(url__url=url).body

    settings.CRAWLER_CHANGE_NOISE_WORDS = 4
    page("initech", "The ferry to the northern islands now leaves an hour earlier on Sundays.")
    revisit(url)
    row.refresh_from_db()
    assert (row.last_observation, row.observations) == ("changed", 3)
    assert [hit.url for hit in search("ferry")] == [url]


def _before(now, **fields):
    values = dict(id=0, url="http://x/", priority=0, last_status=200, observed_at=now - timedelta(hours=5),
                  change_stats="", observations=5, last_change_at=None, recrawl_interval=3600.0, next_fetch_at=None)
    return recrawl.Before(**(values | fields))


def test_a_page_never_seen_changing_is_planned_with_a_share_of_a_change_over_the_time_watched(settings):
    stats = changerate.ChangeStats()
    for _ in range(10):
        stats = changerate.observe(stats, 3 * 86400.0, False)  # 30 days the same
    assert recrawl.scheduling_rate(stats) == pytest.approx(0.2 / (30 * 86400.0))  # the default
    settings.CRAWLER_RECRAWL_UNCHANGED_PRIOR = 0.5  # Jeffreys'
    assert recrawl.scheduling_rate(stats) == pytest.approx(0.5 / (30 * 86400.0))
    settings.CRAWLER_RECRAWL_UNCHANGED_PRIOR = 0.0  # unchanged means never: the longest interval
    assert recrawl.scheduling_rate(stats) == 0.0
    # a change seen is the estimate's to judge
    changed = changerate.observe(stats, 3 * 86400.0, True)
    assert recrawl.scheduling_rate(changed) == pytest.approx(changerate.estimate(changed)) and changerate.estimate(changed) > 0


def test_a_page_that_changed_at_every_visit_is_planned_by_its_shortest_intervals():
    stats = changerate.ChangeStats()
    for seconds in [3 * 3600.0] * 3 + [4 * 86400.0] * 10:  # three looks 3 h apart, then ten 4 days apart
        stats = changerate.observe(stats, seconds, True)
    assert changerate.estimate(stats) * 86400 < 3  # the long intervals make it look slow …
    assert recrawl.scheduling_rate(stats) == pytest.approx(math.log(7) / (3 / 24) / 86400)  # ≈ 15.6 a day
    # … and one look that saw no change is evidence the estimate weighs as it is
    unchanged = changerate.observe(stats, 3 * 3600.0, False)
    assert recrawl.scheduling_rate(unchanged) == changerate.estimate(unchanged)


def test_a_last_modified_counts_from_the_middle_of_the_second_it_names():
    now = timezone.now().replace(microsecond=900_000)  # 0.9 s into the second
    stated = email.utils.format_datetime(now - timedelta(seconds=10), usegmt=True)  # the second, 10 s ago
    assert recrawl._since_last_modified(stated, now, 60.0) == pytest.approx(10.4)  # 9.9 to 10.9 s ago
    assert recrawl._since_last_modified(stated, now, 10.0) is None  # outside the interval
    # A date naming the visit's own second: the page changed 0 to 0.9 s ago, not 0.9 s ago
    # (read as 0.9, any page changing faster would look like one changing about once a second).
    assert recrawl._since_last_modified(email.utils.format_datetime(now, usegmt=True), now, 60.0) == \
        pytest.approx(0.45)
    assert recrawl._since_last_modified("not a date", now, 60.0) is None


def test_a_first_visit_dated_long_ago_is_not_explored_and_counts_as_watched_that_long(settings):
    now = timezone.now()
    month = 30 * 86400.0  # CRAWLER_RECRAWL_FIRST_LAST_MODIFIED_AGE's default
    long_ago = email.utils.format_datetime(now - timedelta(days=400), usegmt=True)

    def first_visit(last_modified):
        before = _before(now, observed_at=None, observations=0, change_stats="", recrawl_interval=None)
        return recrawl.after_visit(before, "first", last_modified, now)

    dated = first_visit(long_ago)
    assert dated["observations"] == settings.CRAWLER_RECRAWL_EXPLORE_VISITS
    assert not recrawl.exploring(dated["observations"])
    stats = changerate.from_text(dated["change_stats"])
    assert (stats.visits, stats.watched_seconds) == (0, month)  # time watched, not an observation
    assert dated["change_rate"] == pytest.approx(0.2 / month * 86400)  # the unchanged prior over a month
    # A date of last week, none, or no date at all: explored as any new page
    for value in (email.utils.format_datetime(now - timedelta(days=7), usegmt=True), "", "last year"):
        fresh = first_visit(value)
        assert (fresh["observations"], fresh["change_stats"], fresh["change_rate"]) == (0, "", 0.0), value
    settings.CRAWLER_RECRAWL_FIRST_LAST_MODIFIED_AGE = 0  # off: every new page is explored
    assert first_visit(long_ago)["observations"] == 0
    # A date that lied: the page changed within a day while still naming the old date. The
    # change is judged by the visits alone (one change in one day: Cho's ln 3 a day), not
    # against the month the date claimed.
    settings.CRAWLER_RECRAWL_FIRST_LAST_MODIFIED_AGE = month
    later = now + timedelta(days=1)
    before = _before(later, observed_at=now, observations=dated["observations"], change_stats=dated["change_stats"])
    changed = recrawl.after_visit(before, "changed", long_ago, later)
    assert changed["change_rate"] == pytest.approx(math.log(3))
    assert changerate.from_text(changed["change_stats"]).watched_seconds == pytest.approx(month + 86400)


def test_a_page_served_with_an_old_last_modified_is_planned_without_exploring(site, settings):
    old = email.utils.format_datetime(timezone.now() - timedelta(days=400), usegmt=True)
    site.html("/", PROSE, links=["/old", "/undated"])
    site.html("/old", PROSE + "old", etag='"o1"', last_modified=old)
    site.html("/undated", PROSE + "undated", etag='"u1"')
    frontier.add_seeds([site.origin + "/"])
    crawl()
    rows = dict(Url.objects.filter(url__in=[site.origin + "/old", site.origin + "/undated"]).values_list(
        "url", "observations"))
    assert rows == {site.origin + "/old": settings.CRAWLER_RECRAWL_EXPLORE_VISITS, site.origin + "/undated": 0}
    stats = changerate.from_text(Url.objects.get(url=site.origin + "/old").change_stats)
    assert stats.watched_seconds == settings.CRAWLER_RECRAWL_FIRST_LAST_MODIFIED_AGE and stats.visits == 0


def test_pages_fetched_before_the_first_plan_with_pages_are_not_all_due_within_the_hour(settings):
    """Beat's first plan comes before any page is fetched: no price yet. The pages of the
    crawl's first minutes are planned long (exploring ones at the exploring interval), not
    at the shortest interval ahead of every later page; the next plan brings sooner what it
    wants sooner."""
    settings.CRAWLER_RECRAWL_BUDGET_PER_DAY = 1000.0
    assert recrawl.plan_recrawl().pages == 0
    now = timezone.now()
    first = _before(now, observed_at=None, observations=0, change_stats="", recrawl_interval=None)
    long_ago = email.utils.format_datetime(now - timedelta(days=400), usegmt=True)

    def interval(last_modified=""):
        return recrawl.after_visit(first, "first", last_modified, now)["recrawl_interval"]

    assert interval() == pytest.approx(86400 * 0.125)  # the first exploring look (1/8 of the exploring interval)
    assert interval(long_ago) == settings.CRAWLER_RECRAWL_MAX_INTERVAL  # explored by its date: no price to plan by
    settings.CRAWLER_RECRAWL_POLICY = "uniform"
    assert interval() == settings.CRAWLER_RECRAWL_MAX_INTERVAL
    settings.CRAWLER_RECRAWL_POLICY = "optimal"
    # Once pages are fetched, the plan has a price and the provisional intervals give way
    frontier.add_urls([frontier.Candidate("http://x.example/page")])
    Url.objects.update(state="fetched", observed_at=now, observations=3, change_rate=0.5,
                       recrawl_interval=settings.CRAWLER_RECRAWL_MAX_INTERVAL,
                       next_fetch_at=now + timedelta(seconds=settings.CRAWLER_RECRAWL_MAX_INTERVAL))
    plan = recrawl.plan_recrawl(now=now)
    assert plan.pages == 1 and plan.price == 0.0  # a budget to spare for one page
    assert interval(long_ago) == settings.CRAWLER_RECRAWL_MIN_INTERVAL
    assert Url.objects.get().next_fetch_at < now + timedelta(days=1)  # brought sooner by the plan


def test_adaptive_starts_the_pages_fetched_before_the_first_plan_at_the_exploring_interval(settings):
    """No plan reschedules adaptive's visits (each page's interval is its own), so a page it
    started at the longest interval while the plan had no pages was not visited again for
    that long: bench.freshness's adaptive run fetched its 448 pages once in 60 simulated
    days. It starts them at the exploring interval instead, then at uniform's once a plan
    has pages."""
    settings.CRAWLER_RECRAWL_POLICY = "adaptive"
    settings.CRAWLER_RECRAWL_BUDGET_PER_DAY = 1000.0
    assert recrawl.plan_recrawl().pages == 0
    now = timezone.now()
    first = _before(now, observed_at=None, observations=0, change_stats="", recrawl_interval=None)
    grown = 1.4 * settings.CRAWLER_RECRAWL_EXPLORE_INTERVAL  # unchanged: Nutch's +40 %
    assert recrawl.after_visit(first, "first", "", now)["recrawl_interval"] == pytest.approx(grown)
    frontier.add_urls([frontier.Candidate(f"http://x.example/{n}") for n in range(100)])
    Url.objects.update(state="fetched", observed_at=now, observations=1)
    assert recrawl.plan_recrawl(now=now).pages == 100
    low, high = settings.CRAWLER_RECRAWL_MIN_INTERVAL, settings.CRAWLER_RECRAWL_MAX_INTERVAL
    uniform = min(max(100 / (1000.0 / 86400), low), high)  # 100 pages at 1,000 visits a day: 8,640 s
    assert recrawl.after_visit(first, "first", "", now)["recrawl_interval"] == pytest.approx(min(1.4 * uniform, high))


def test_a_late_revisit_schedules_the_next_from_when_it_was_due(site, settings):
    settings.CRAWLER_RECRAWL_POLICY = "uniform"  # every interval CRAWLER_RECRAWL_MIN_INTERVAL here
    settings.CRAWLER_RECRAWL_MIN_INTERVAL = 3600.0
    now = timezone.now()

    def next_in(**fields):
        return (recrawl.after_visit(_before(now, **fields), "unchanged", "", now)["next_fetch_at"] - now).total_seconds()

    assert next_in(next_fetch_at=now - timedelta(seconds=100)) == pytest.approx(3500)  # 100 s late: made up
    assert next_in(next_fetch_at=now - timedelta(hours=3)) == pytest.approx(1800)  # at most half the interval
    assert next_in(next_fetch_at=now + timedelta(seconds=100)) == pytest.approx(3600)  # early: nothing to make up
    assert next_in(next_fetch_at=now - timedelta(seconds=100), observed_at=None) == pytest.approx(3600)  # a first visit
    settings.CRAWLER_RECRAWL_ON_SCHEDULE = False
    assert next_in(next_fetch_at=now - timedelta(seconds=100)) == pytest.approx(3600)


def test_a_page_that_changed_at_every_visit_is_looked_at_sooner_for_a_few_visits(site, settings):
    settings.CRAWLER_RECRAWL_MIN_INTERVAL = 600.0
    now = timezone.now()
    stats = changerate.ChangeStats()
    for _ in range(3):
        stats = changerate.observe(stats, 86400.0, True)
    least = recrawl.changed_every_time_rate(stats)  # three changes in three days: at least ~2 a day

    def plan(price):
        RecrawlPlan.objects.update_or_create(pk=1, defaults=dict(price=price, explore_freq=1 / 86400, pages=1,
                                                                 solved_at=now))
        recrawl.forget_plan()

    def interval(observations, stats, seen=86400.0):
        before = _before(now, change_stats=changerate.to_text(stats), observations=observations,
                         observed_at=now - timedelta(seconds=seen))
        return recrawl.after_visit(before, "changed", "", now)["recrawl_interval"]

    # A price at which such a page is worth a visit about once a day (φ(x) = 0.6 = price·λ/w at
    # x = λ/f ≈ 2), and one changing more than 1/0.6 times as fast is not worth chasing at all.
    plan(0.6 / least)
    chased = changerate._gain_inverse(0.6) / least
    longest = settings.CRAWLER_RECRAWL_MAX_INTERVAL
    # three daily visits each saw a change: the next comes after a quarter of the last interval …
    assert interval(3, stats) == pytest.approx(21600)
    # … but once the least rate the visits show is one the plan no longer chases (a 6-hour
    # interval that saw a change too: at least ~4.4 a day), a faster page would get no more
    # visits, and looking sooner would buy nothing
    assert interval(4, changerate.observe(stats, 21600.0, True), seen=21600.0) == pytest.approx(longest)
    plan(0.1 / least)  # a cheaper budget still chases it: a quarter of the 6 hours
    assert interval(4, changerate.observe(stats, 21600.0, True), seen=21600.0) == pytest.approx(5400)
    plan(0.6 / least)
    # A dated change needs no sooner look: its Last-Modified says how long ago the page changed
    # (an hour before each of three daily visits), and the plan has its interval for that
    dated = changerate.ChangeStats()
    for _ in range(3):
        dated = changerate.observe(dated, 86400.0, True, since_last_modified=3600.0)
    assert interval(3, dated) == pytest.approx(longest)
    # … never below the minimum interval, and only for CRAWLER_RECRAWL_EXPLORE_FAST_VISITS more visits
    plan(1e-12)  # anything is chased
    assert interval(5, changerate.observe(stats, 1800.0, True), seen=1800.0) == pytest.approx(600)
    plan(0.6 / least)
    settings.CRAWLER_RECRAWL_EXPLORE_FAST_VISITS = 0
    own = interval(3, stats)  # the plan's own interval: about a day
    assert own == pytest.approx(chased, rel=0.2)
    settings.CRAWLER_RECRAWL_EXPLORE_FAST_VISITS = 3
    assert interval(6, stats) == pytest.approx(own)  # past the extra looks
    settings.CRAWLER_RECRAWL_EXPLORE_FAST_VISITS = 0
    assert interval(3, stats) == pytest.approx(own)  # or with none
    settings.CRAWLER_RECRAWL_EXPLORE_FAST_VISITS = 3
    settings.CRAWLER_RECRAWL_POLICY = "uniform"  # the baselines stay what they are: here one page,
    settings.CRAWLER_RECRAWL_BUDGET_PER_DAY = 1.0  # one visit a day
    assert interval(3, stats) == pytest.approx(86400)
    settings.CRAWLER_RECRAWL_POLICY = "optimal"
    # a visit that saw no change ends it
    before = _before(now, change_stats=changerate.to_text(stats), observations=3, observed_at=now - timedelta(days=1))
    assert recrawl.after_visit(before, "unchanged", "", now)["recrawl_interval"] > 21600


def test_a_visit_counts_from_its_response_not_from_its_record(site):
    frontier.add_seeds([site.origin + "/r"])
    url_id = Url.objects.get(url=site.origin + "/r").id
    answered = timezone.now() - timedelta(seconds=30)
    frontier.record_fetches([(FetchReport(url_id, status=200, detail="indexed", observation="first",
                                         started_at=answered.timestamp()), 0)])
    row = Url.objects.get(id=url_id)
    assert abs((row.observed_at - answered).total_seconds()) < 0.001
    assert row.next_fetch_at - row.observed_at == timedelta(seconds=row.recrawl_interval)


def test_gone_twice_in_a_row_leaves_the_index(site, settings):
    settings.CRAWLER_GONE_RECHECK_SECONDS = 3600
    url = site.origin + "/g"
    site.html("/g", PROSE + " quarantine")
    frontier.add_seeds([url])
    crawl()
    assert [hit.url for hit in search("quarantine")] == [url]
    del site.pages["/g"]
    revisit(url)
    row = Url.objects.get(url=url)
    assert (row.state, row.last_status) == ("gone", 404)
    wait = (row.next_fetch_at - row.last_fetched_at).total_seconds()
    assert 3590 < wait < 3610  # checked again after CRAWLER_GONE_RECHECK_SECONDS
    assert [hit.url for hit in search("quarantine")] == [url]  # once may be a hiccup
    revisit(url)
    assert Url.objects.get(url=url).state == "gone"
    assert list(search("quarantine")) == [] and not Document.objects.get(url__url=url).indexed


def test_failures_back_off_one_two_four_eight_weeks_then_dead_letter(site, settings):
    settings.CRAWLER_MAX_ATTEMPTS = 2
    settings.CRAWLER_RETRY_BASE_DELAY = 0.01
    week = 7 * 86400.0
    settings.CRAWLER_FAILURE_BACKOFF = [week, 2 * week, 4 * week, 8 * week]
    site.pages["/down"] = (b"", [])

    class Down(QuietHandler):
        def do_GET(self):
            self.send(200 if self.path == "/robots.txt" else 500, b"", [("Content-Type", "text/plain")])

    srv, origin = start(Down)
    try:
        url = origin + "/down"
        frontier.add_seeds([url])
        crawl()  # two short retries, then the first step of the ladder: the crawl ends, deferred
        for level, weeks in enumerate((1, 2, 4, 8), start=1):
            row = Url.objects.get(url=url)
            assert (row.state, row.outcome, row.backoff_level, row.attempts) == ("backoff", "http_500", level, 0)
            wait = (row.next_fetch_at - row.last_fetched_at).total_seconds()
            assert abs(wait - weeks * week) < 60, (level, wait)
            assert not DeadLetter.objects.exists()
            deferred = frontier.deferred_work()
            assert [(g["state"], g["reason"], g["urls"]) for g in deferred] == [("backoff", "http_500", 1)]
            revisit(url)
        row = Url.objects.get(url=url)
        assert (row.state, row.backoff_level) == ("failed", 4)
        letter = DeadLetter.objects.get(url=row)
        assert (letter.reason, letter.last_status) == ("http_500", 500)
    finally:
        srv.shutdown()


def test_release_spends_the_budget_most_overdue_first(site, settings):
    settings.CRAWLER_RECRAWL_BUDGET_PER_DAY = 86400  # one revisit a second
    settings.CRAWLER_RECRAWL_RELEASE_SECONDS = 10
    settings.CRAWLER_RECRAWL_CARRY_SECONDS = 20  # unspent budget carried over: at most 20 s of it
    frontier.add_urls([frontier.Candidate(f"{site.origin}/p{i}") for i in range(50)])
    now = timezone.now()
    ids = list(Url.objects.order_by("?").values_list("id", flat=True))
    for i, url_id in enumerate(ids):  # due 1000 s ago, 999 s ago, …
        Url.objects.filter(id=url_id).update(state="fetched", next_fetch_at=now - timedelta(seconds=1000 - i))
    Url.objects.filter(id=ids[-1]).update(next_fetch_at=now + timedelta(hours=1))  # not due
    assert frontier.release_due(now=now) == 20
    assert set(Url.objects.filter(state="queued").values_list("id", flat=True)) == set(ids[:20])  # most overdue
    assert frontier.release_due(now=now) == 0  # the budget is spent
    assert frontier.release_due(now=now + timedelta(seconds=5)) == 5  # five seconds' worth
    assert frontier.release_due(now=now + timedelta(seconds=500), limit=7) == 7  # and never past the batch
    assert RecrawlPlan.objects.get().released_total == 32
    assert Url.objects.filter(state="fetched", next_fetch_at__lte=now).count() == 49 - 32
    # the bucket never holds less than two release periods
    settings.CRAWLER_RECRAWL_CARRY_SECONDS = 0
    assert frontier.release_due(now=now + timedelta(seconds=1000)) == 17  # 20 allowed, 17 due


def test_a_sitemap_lastmod_after_our_visit_brings_the_next_visit_forward(site, settings):
    settings.CRAWLER_RECRAWL_MIN_INTERVAL = 1.0
    lastmods = {}

    def sitemap():
        return ("<urlset xmlns='http://www.sitemaps.org/schemas/sitemap/0.9'>" + "".join(
            f"<url><loc>{site.origin}{path}</loc>{lastmods.get(path, '')}</url>" for path in ("/a", "/b", "/c", "/d"))
            + "</urlset>").encode()

    site.pages["/robots.txt"] = (f"User-agent: *\nAllow: /\nSitemap: {site.origin}/sitemap.xml\n".encode(),
                                 [("Content-Type", "text/plain")])
    site.pages["/sitemap.xml"] = (sitemap, [("Content-Type", "application/xml")])
    for path in ("/", "/a", "/b", "/c", "/d"):
        site.html(path, PROSE + path)
    frontier.add_seeds([site.origin + "/"])
    crawl()
    assert {path: len(site.asked(path)) for path in ("/a", "/b", "/c", "/d")} == {"/a": 1, "/b": 1, "/c": 1, "/d": 1}
    first_plan = dict(Url.objects.values_list("url", "next_fetch_at"))
    # The first visits were more than CRAWLER_RECRAWL_MIN_INTERVAL ago: a page may be visited again now.
    Url.objects.update(last_fetched_at=F("last_fetched_at") - timedelta(seconds=2))
    # The sitemap now says /a changed a moment ago, /b in the future (a lie), /c before our
    # visit, /d nothing: only /a is brought forward.
    now = timezone.now()
    lastmods.update({"/a": f"<lastmod>{now.isoformat()}</lastmod>",
                     "/b": f"<lastmod>{(now + timedelta(days=2)).date().isoformat()}</lastmod>",
                     "/c": "<lastmod>2020-01-01T00:00:00Z</lastmod>"})
    revisit(site.origin + "/sitemap.xml")
    moved = {url for url, due in Url.objects.values_list("url", "next_fetch_at") if due < first_plan[url]}
    assert moved == {site.origin + "/a", site.origin + "/sitemap.xml"}
    # The sitemap itself changed, so its own next read may be due a second later (the minimum
    # interval): on a slow machine it is due by now. When to reread it is the plan's business,
    # not this test's, so it waits.
    Url.objects.filter(url=site.origin + "/sitemap.xml").update(next_fetch_at=timezone.now() + timedelta(days=1))
    # beat releases /a like any due revisit; the visit is the observation the estimator learns from.
    assert frontier.release_due() == 1
    assert list(Url.objects.filter(state="queued").values_list("url", flat=True)) == [site.origin + "/a"]
    crawl()
    assert {path: len(site.asked(path)) for path in ("/a", "/b", "/c", "/d")} == {"/a": 2, "/b": 1, "/c": 1, "/d": 1}
    assert Url.objects.get(url=site.origin + "/a").last_observation == "unchanged"
    # Read again, the same lastmod is older than our visit now: nothing moves twice.
    Url.objects.exclude(url=site.origin + "/sitemap.xml").update(next_fetch_at=timezone.now() + timedelta(days=1))
    planned = dict(Url.objects.values_list("url", "next_fetch_at"))
    revisit(site.origin + "/sitemap.xml")
    assert len(site.asked("/sitemap.xml")) == 3
    assert {url for url, due in Url.objects.exclude(url=site.origin + "/sitemap.xml").values_list("url", "next_fetch_at")
            if due < planned[url]} == set()


def test_beat_tasks_release_due_urls_in_batches_and_plan(site, settings):
    from frontier import tasks

    settings.CRAWLER_RECRAWL_RELEASE_BATCH = 4
    frontier.add_urls([frontier.Candidate(f"{site.origin}/b{i}") for i in range(10)])
    Url.objects.update(state="fetched", next_fetch_at=timezone.now() - timedelta(seconds=5), observed_at=timezone.now())
    # the tasks as a worker runs them (thin wrappers; apply() runs one in this process)
    assert [tasks.release_due_urls.apply().get() for _ in range(3)] == [4, 4, 2]
    assert not Url.objects.filter(state="fetched").exists()
    assert tasks.plan_recrawl.apply().get() == 0.0  # a budget to spare: no price
    assert RecrawlPlan.objects.get().pages == 10


def test_the_plan_spends_the_budget_within_the_bounds(site, settings):
    settings.CRAWLER_RECRAWL_BUDGET_PER_DAY = 86400 * 2  # two revisits a second for 40 pages
    settings.CRAWLER_RECRAWL_MIN_INTERVAL = 1.0
    settings.CRAWLER_RECRAWL_MAX_INTERVAL = 300.0
    settings.CRAWLER_RECRAWL_EXPLORE_VISITS = 0
    frontier.add_urls([frontier.Candidate(f"{site.origin}/r{i}") for i in range(40)])
    now = timezone.now()
    rates = [0.0] * 5 + [86400 * 10.0 ** (i / 5 - 4) for i in range(35)]  # per day: never to 10/s
    for row, rate in zip(Url.objects.order_by("id"), rates):
        Url.objects.filter(id=row.id).update(state="fetched", change_rate=rate, observations=5, observed_at=now,
                                             recrawl_interval=300.0, next_fetch_at=now + timedelta(seconds=300))
    plan = frontier.plan_recrawl(now=now)
    assert plan.pages == 40 and 0 < plan.price
    assert abs(plan.planned - 2.0) < 0.02  # the budget is spent, not more
    intervals, sooner = {}, set()
    for url, rate, observations, priority in Url.objects.values_list("url", "change_rate", "observations",
                                                                     "priority"):
        before = recrawl.Before(0, url, priority, None, now, "", observations, None, None)
        intervals[rate] = recrawl.plan_interval(before, rate / 86400, observations, False, now)
        if intervals[rate] < 0.9 * 300:
            sooner.add(url)
    assert all(1.0 <= i <= 300.0 for i in intervals.values())
    assert intervals[0.0] == 300.0  # never seen changing: the longest interval
    by_rate = [intervals[r] for r in sorted(intervals) if r > 0]
    fastest = by_rate.index(min(by_rate))
    assert 0 < fastest < len(by_rate) - 1  # visits rise with the rate, then fall: the fastest get fewer
    # the plan moved the planned visits it wants sooner, and only those
    assert sooner and set(Url.objects.filter(next_fetch_at__lt=now + timedelta(seconds=299))
                          .values_list("url", flat=True)) == sooner


def test_a_one_shot_crawl_defers_what_waits_long_and_a_later_crawl_resumes(site, settings):
    settings.CRAWLER_ROBOTS_ERROR_SECONDS = 300
    robots = site.pages.pop("/robots.txt")
    site.pages["/robots.txt"] = (b"busy", [("Content-Type", "text/plain")])

    class Busy(QuietHandler):
        def do_GET(self):
            if self.path == "/robots.txt" and not ready.is_set():
                return self.send(503, b"busy", [("Content-Type", "text/plain")])
            body, headers = robots if self.path == "/robots.txt" else (PROSE.encode(), [("Content-Type", "text/html")])
            self.send(200, body, headers)

    ready = threading.Event()
    srv, origin = start(Busy)
    try:
        out = StringIO()
        started = time.monotonic()
        call_command("crawl", origin + "/a", origin + "/b", "--no-progress", stdout=out)
        assert time.monotonic() - started < 20  # not the 5 minutes robots.txt asks for
        text = out.getvalue()
        assert "Deferred" in text and "2 queued URLs, robots_unavailable: first due" in text
        (group,) = frontier.deferred_work()
        assert 250 < (group["due"] - timezone.now()).total_seconds() <= 300
        # Five minutes later (our clock): robots.txt answers, and a crawl without URLs resumes.
        ready.set()
        past = timezone.now() - timedelta(seconds=1)
        Host.objects.update(next_fetch_at=past, robots_expires_at=past)
        Url.objects.update(next_fetch_at=past)
        out = StringIO()
        call_command("crawl", "--no-progress", stdout=out)
        assert sorted(Url.objects.values_list("url", "state")) == [(origin + "/a", "fetched"), (origin + "/b", "fetched")]
        assert "Deferred" not in out.getvalue()
    finally:
        srv.shutdown()


def test_continuous_mode_picks_up_a_changed_page(site, settings):
    settings.CRAWLER_RECRAWL_MIN_INTERVAL = 0.2
    settings.CRAWLER_RECRAWL_MAX_INTERVAL = 1.0
    settings.CRAWLER_RECRAWL_EXPLORE_INTERVAL = 0.5
    settings.CRAWLER_RECRAWL_RELEASE_SECONDS = 0.1
    settings.CRAWLER_RECRAWL_PLAN_SECONDS = 0.5
    url = site.origin + "/live"
    site.html("/live", PROSE, etag='"1"')
    frontier.add_seeds([url])
    stop = threading.Event()

    def run():
        try:
            run_embedded(threads=2, max_seconds=60, continuous=True, stop=stop)
        finally:
            connection.close()  # this thread's own connection

    runner = threading.Thread(target=run)
    runner.start()
    try:
        deadline = time.monotonic() + 30
        while 304 not in [r[3] for r in site.asked("/live")] and time.monotonic() < deadline:
            time.sleep(0.05)  # revisited, unchanged
        site.html("/live", PROSE + " The ferry now sails at dawn to the northern islands of kelp and granite.",
                  etag='"2"')
        while time.monotonic() < deadline and "ferry" not in (
                Document.objects.filter(url__url=url).values_list("body", flat=True).first() or ""):
            time.sleep(0.05)
    finally:
        stop.set()
        runner.join(30)
    assert not runner.is_alive()
    assert [hit.url for hit in search("ferry")] == [url]
    row = Url.objects.get(url=url)
    assert row.observations >= 2 and row.last_change_at is not None and row.change_rate > 0
    statuses = [r[3] for r in site.asked("/live")]
    assert statuses[0] == 200 and 304 in statuses  # revisits before the edit were 304s


@pytest.mark.postgres
def test_the_set_based_plan_is_the_row_by_row_plan(settings, monkeypatch):
    """frontier/planning.py: on PostgreSQL the plan's groups are counted, and the visits it
    wants sooner moved, in SQL; same price, same pages, same visits moved, to the same times,
    as the row-by-row path over the same URLs."""
    import random

    from frontier import planning

    settings.CRAWLER_RECRAWL_BUDGET_PER_DAY = 300  # scarce: a price to solve
    settings.CRAWLER_RECRAWL_RELEASE_BATCH = 10_000
    rng = random.Random(7)
    host = Host.objects.create(origin="http://plan.test")
    now = timezone.now()
    Url.objects.bulk_create([Url(
        url=f"http://plan.test/{i}", url_key=i, host=host, state="fetched", priority=rng.choice((-10, -20, 5, 40)),
        change_rate=rng.choice((None, 0.0, 0.01, 0.3, 1.0, 4.2, 24.0, 100.0)), observations=rng.randrange(0, 6),
        observed_at=now - timedelta(hours=rng.uniform(0, 48)), recrawl_interval=rng.choice((None, 600.0, 86400.0 * 9)),
        next_fetch_at=now + timedelta(days=rng.uniform(0, 30))) for i in range(3000)])
    start = dict(Url.objects.values_list("id", "next_fetch_at"))

    def plan_with(set_based: bool):
        Url.objects.bulk_update([Url(id=i, next_fetch_at=at) for i, at in start.items()], ["next_fetch_at"])
        Url.objects.update(recrawl_interval=None)
        Url.objects.filter(id__in=[i for i in start if i % 3]).update(recrawl_interval=86400.0 * 9)
        recrawl.forget_plan()
        monkeypatch.setattr(planning, "set_based", lambda: set_based)
        plan = recrawl.plan_recrawl(now=now)
        return (plan.price, plan.pages, plan.planned), dict(Url.objects.values_list("id", "next_fetch_at"))

    (by_sql, moved_sql), (by_rows, moved_rows) = plan_with(True), plan_with(False)
    assert by_sql[1] == by_rows[1] == 3000 and by_sql[0] > 0
    assert by_sql[0] == pytest.approx(by_rows[0], rel=1e-9) and by_sql[2] == pytest.approx(by_rows[2], rel=1e-9)
    changed = {i for i in start if moved_rows[i] != start[i]}
    assert changed and {i for i in start if moved_sql[i] != start[i]} == changed
    assert all(abs((moved_sql[i] - moved_rows[i]).total_seconds()) < 0.01 for i in changed)
