"""Traps that stop themselves (frontier/traps.py): URL patterns, their yield, the stop, the
admission refusal and an operator's resume."""

import pytest

from frontier import service, traps
from frontier.models import Host, Url, UrlPattern
from frontier.outcomes import FetchReport

pytestmark = pytest.mark.django_db

ORIGIN = "http://t.test"


@pytest.mark.parametrize("path, pattern", [
    ("/", "/"),
    ("/cal/2026/05/", "/cal/#/…"),
    ("/cal/1999/12/", "/cal/#/…"),
    ("/calendar?day=7", "/calendar?…"),
    ("/s2/p13.html", "/s#/p#.html"),
    ("/deep/other/deep/", "/deep/other/…"),
    ("/deep/", "/deep/"),
])
def test_a_pattern_abstracts_numbers_and_folds_deep_paths(path, pattern):
    assert traps.pattern_of(ORIGIN + path) == ORIGIN + pattern


def pages(prefix, n, new, origin=ORIGIN, copied=lambda i: False, original="http://original.test"):
    """(url, new text?, the origin it copies or "") for count_yield."""
    return [(f"{origin}{prefix}{i}", new(i), original if copied(i) else "") for i in range(n)]


def test_a_pattern_whose_pages_bring_nothing_new_is_stopped_and_its_urls_set_aside(settings):
    settings.CRAWLER_TRAP_MIN_PAGES, settings.CRAWLER_TRAP_MAX_YIELD = 20, 0.1
    service.add_urls([service.Candidate(f"{ORIGIN}/day/{i}", 2) for i in range(40)]
                     + [service.Candidate(f"{ORIGIN}/article/{i}", 2) for i in range(40)])
    # Articles bring new text; the days are copies but the first. Counted a batch at a time.
    for start in range(0, 30, 10):
        stopped = traps.count_pattern_yield(pages("/day/", 30, lambda i: i == 0)[start:start + 10]
                                    + pages("/article/", 30, lambda i: True)[start:start + 10])
    assert stopped == []  # stopped at the second batch already (20 pages, 1 new)
    days = UrlPattern.objects.get(pattern=f"{ORIGIN}/day/#")
    articles = UrlPattern.objects.get(pattern=f"{ORIGIN}/article/#")
    assert (days.pages, days.new_pages, days.stopped_at is not None) == (30, 1, True)
    assert (articles.pages, articles.new_pages, articles.stopped_at) == (30, 30, None)
    assert Url.objects.filter(url__contains="/day/", state="excluded", outcome="trap_pattern").count() == 40
    assert not Url.objects.filter(url__contains="/article/", state="excluded").exists()
    # No more of its URLs enter; other patterns do.
    result = service.add_urls([service.Candidate(f"{ORIGIN}/day/99", 2), service.Candidate(f"{ORIGIN}/article/99", 2)])
    assert (result.admitted, result.rejected) == (1, {"trap_pattern": 1})
    assert service.pattern_stopped(f"{ORIGIN}/day/123") == "trap_pattern"
    assert service.pattern_stopped(f"{ORIGIN}/article/1") is None


def test_an_operator_resumes_a_pattern_for_good(settings):
    settings.CRAWLER_TRAP_MIN_PAGES = 5
    service.add_urls([service.Candidate(f"{ORIGIN}/tag/{i}", 1) for i in range(10)])
    traps.count_pattern_yield(pages("/tag/", 5, lambda i: False))
    assert Url.objects.filter(state="excluded").count() == 10
    assert traps.resume(f"{ORIGIN}/tag/#") == 10
    assert Url.objects.filter(state="queued").count() == 10
    traps.count_pattern_yield(pages("/tag/", 50, lambda i: False))  # never stopped again
    assert UrlPattern.objects.get(pattern=f"{ORIGIN}/tag/#").stopped_at is None
    assert service.add_urls([service.Candidate(f"{ORIGIN}/tag/77", 1)]).admitted == 1


MIRROR = "http://mirror.test"


def test_a_host_whose_pages_are_copies_of_another_hosts_is_stopped_as_a_mirror(settings):
    settings.CRAWLER_MIRROR_MIN_PAGES, settings.CRAWLER_MIRROR_MIN_SHARE = 5, 0.8
    service.add_urls([service.Candidate(f"{MIRROR}/p{i}", 1) for i in range(30)]
                     + [service.Candidate(f"{ORIGIN}/p{i}", 1) for i in range(30)])
    # Four copies of another host's pages and one page of its own: not yet 5 pages ...
    assert traps.count_pattern_yield(pages("/p", 4, lambda i: False, MIRROR, copied=lambda i: True)) == []
    # ... the fifth page (its own text) makes 4 of 5 copies; a host is stopped as a mirror
    # in a batch where it copies (it is the copy, not the original): the next copy.
    assert traps.count_pattern_yield(pages("/q", 1, lambda i: True, MIRROR)) == []
    assert traps.count_pattern_yield(pages("/r", 1, lambda i: False, MIRROR, copied=lambda i: True)) == [MIRROR]
    row = UrlPattern.objects.get(pattern=MIRROR)
    assert (row.pages, row.new_pages, row.stopped_at is not None) == (6, 1, True)
    assert Url.objects.filter(url__startswith=MIRROR, state="excluded", outcome="mirror_host").count() == 30
    assert not Url.objects.filter(url__startswith=ORIGIN, state="excluded").exists()
    # This process knows at once: the session skips its URLs, admission refuses them.
    assert service.pattern_stopped(f"{MIRROR}/anything/9") == "mirror_host"
    assert service.pattern_stopped(f"{ORIGIN}/p1") is None
    result = service.add_urls([service.Candidate(f"{MIRROR}/new", 1), service.Candidate(f"{ORIGIN}/new", 1)])
    assert (result.admitted, result.rejected) == (1, {"mirror_host": 1})
    # An operator says it is not a mirror: its URLs come back.
    assert traps.resume(MIRROR) == 30
    assert Url.objects.filter(url__startswith=MIRROR, state="queued").count() == 30
    assert service.pattern_stopped(f"{MIRROR}/p1") is None


def test_a_hosts_count_of_its_own_pages_falls_with_each_copy_of_them_and_never_below_zero(settings):
    """Each page another host copies takes one from the original's own pages, in the same
    batch statement as the counts (PostgreSQL: one upsert for the batch, one update for
    what fell), and a host first counted by a copy of its page starts at 0, not below."""
    settings.CRAWLER_MIRROR_MIN_PAGES, settings.CRAWLER_TRAP_MIN_PAGES = 1000, 0
    original = "http://original.test"
    traps.count_pattern_yield(pages("/own", 2, lambda i: True, original))
    assert UrlPattern.objects.get(pattern=original).new_pages == 2
    traps.count_pattern_yield(pages("/p", 1, lambda i: False, MIRROR, copied=lambda i: True)
                      + pages("/own-more", 1, lambda i: True, original))  # +1 -1 in one batch
    assert UrlPattern.objects.get(pattern=original).new_pages == 2
    traps.count_pattern_yield(pages("/q", 5, lambda i: False, MIRROR, copied=lambda i: True))
    assert [(r.pages, r.new_pages) for r in UrlPattern.objects.filter(pattern=original)] == [(3, 0)]
    assert [(r.pages, r.new_pages) for r in UrlPattern.objects.filter(pattern=MIRROR)] == [(6, 0)]
    traps.count_pattern_yield(pages("/r", 1, lambda i: False, MIRROR, copied=lambda i: True, original="http://new.test"))
    assert [(r.pages, r.new_pages) for r in UrlPattern.objects.filter(pattern="http://new.test")] == [(0, 0)]


def test_a_mirror_crawled_at_the_pace_of_its_original_is_stopped_and_the_original_kept(settings):
    """Each host stores half the shared texts first: counting only the later copy, each
    held half the originals and neither was ever stopped (the harvest bench's mirror was
    fetched in full in one run of two)."""
    settings.CRAWLER_MIRROR_MIN_PAGES, settings.CRAWLER_MIRROR_MIN_SHARE, settings.CRAWLER_TRAP_MIN_PAGES = 5, 0.8, 0
    service.add_urls([service.Candidate(f"{ORIGIN}/p{i}", 1) for i in range(30)])  # the original, found first
    service.add_urls([service.Candidate(f"{MIRROR}/p{i}", 1) for i in range(30)])
    stopped = []
    for i in range(0, 6, 2):  # T_i first on the original, T_i+1 first on the mirror
        stopped += traps.count_pattern_yield([(f"{ORIGIN}/p{i}", True, ""), (f"{MIRROR}/p{i + 1}", True, "")])
        stopped += traps.count_pattern_yield([(f"{MIRROR}/p{i}", False, ORIGIN), (f"{ORIGIN}/p{i + 1}", False, MIRROR)])
    assert stopped == [MIRROR]
    assert UrlPattern.objects.get(pattern=ORIGIN).stopped_at is None
    assert Url.objects.filter(url__startswith=MIRROR, state="excluded", outcome="mirror_host").count() == 30  # still queued here
    assert not Url.objects.filter(url__startswith=ORIGIN, state="excluded").exists()


def test_a_mirror_crawled_ahead_of_its_original_is_still_the_one_stopped(settings):
    """The mirror stores the shared texts first, so the original holds the copies; the pair
    is mostly shared on both sides, and the host found later is the mirror."""
    settings.CRAWLER_MIRROR_MIN_PAGES, settings.CRAWLER_MIRROR_MIN_SHARE, settings.CRAWLER_TRAP_MIN_PAGES = 5, 0.8, 0
    service.add_urls([service.Candidate(f"{ORIGIN}/p{i}", 1) for i in range(30)])  # found first
    service.add_urls([service.Candidate(f"{MIRROR}/p{i}", 1) for i in range(30)])
    assert traps.count_pattern_yield([(f"{MIRROR}/p{i}", True, "") for i in range(6)]) == []
    assert traps.count_pattern_yield([(f"{ORIGIN}/p{i}", False, MIRROR) for i in range(6)]) == [MIRROR]
    assert UrlPattern.objects.get(pattern=ORIGIN).stopped_at is None
    assert not Url.objects.filter(url__startswith=ORIGIN, state="excluded").exists()


def test_a_host_found_first_is_never_stopped_as_the_mirror_of_a_later_one(settings):
    """The later host quotes the first one's pages among many of its own: the first is
    mostly shared, the later is not; neither is stopped (the first is not its copy)."""
    settings.CRAWLER_MIRROR_MIN_PAGES, settings.CRAWLER_MIRROR_MIN_SHARE, settings.CRAWLER_TRAP_MIN_PAGES = 5, 0.8, 0
    service.add_urls([service.Candidate(f"{ORIGIN}/p{i}", 1) for i in range(30)])  # found first
    service.add_urls([service.Candidate(f"{MIRROR}/p{i}", 1) for i in range(30)])
    traps.count_pattern_yield([(f"{MIRROR}/own{i}", True, "") for i in range(40)])  # the later, mostly its own
    assert traps.count_pattern_yield([(f"{ORIGIN}/p{i}", False, MIRROR) for i in range(5)]) == []
    assert not UrlPattern.objects.filter(stopped_at__isnull=False).exists()


def test_a_host_that_shows_a_trap_has_its_other_patterns_judged_at_once(settings):
    settings.CRAWLER_TRAP_MIN_PAGES, settings.CRAWLER_MIRROR_MIN_PAGES = 12, 0  # suspects: after 3
    service.add_urls([service.Candidate(f"{ORIGIN}/deep/{i}/x/", 3) for i in range(10)]
                     + [service.Candidate(f"{ORIGIN}/cal/{i}", 2) for i in range(20)])
    # Three pages of the relative-path trap, nothing new, stored before the calendar's.
    assert traps.count_pattern_yield(pages("/deep/", 3, lambda i: False, origin=ORIGIN + "/deep/x")) == []
    assert traps.count_pattern_yield(pages("/article-", 3, lambda i: True)) == []
    # The calendar's twelfth page stops it, and the deep pattern with it (no page of its in
    # this batch); the articles, new text, go on.
    stopped = traps.count_pattern_yield(pages("/cal/", 12, lambda i: i == 0))
    assert sorted(stopped) == [f"{ORIGIN}/cal/#", f"{ORIGIN}/deep/x/…"]
    assert UrlPattern.objects.get(pattern=f"{ORIGIN}/article-#").stopped_at is None


def test_copies_within_one_host_do_not_make_it_a_mirror(settings):
    settings.CRAWLER_MIRROR_MIN_PAGES, settings.CRAWLER_TRAP_MIN_PAGES = 5, 0
    # Every page a copy, but of a page of the same host (`/` and `/index.html`).
    assert traps.count_pattern_yield(pages("/p", 20, lambda i: False, MIRROR, copied=lambda i: False)) == []
    assert UrlPattern.objects.get(pattern=MIRROR).stopped_at is None
    settings.CRAWLER_MIRROR_MIN_PAGES = 0  # off: not even counted
    traps.count_pattern_yield(pages("/p", 20, lambda i: False, ORIGIN, copied=lambda i: True))
    assert not UrlPattern.objects.filter(pattern=ORIGIN).exists()


def test_a_url_of_a_stopped_pattern_met_in_a_session_is_set_aside_without_a_request():
    service.add_urls([service.Candidate(f"{ORIGIN}/x/1", 1)])
    url = Url.objects.get()
    assert service.record_fetch(FetchReport(url.id, set_aside="trap_pattern"), 0) == "excluded"
    url.refresh_from_db()
    assert (url.state, url.outcome, url.last_fetched_at) == ("excluded", "trap_pattern", None)


def test_off_counts_nothing(settings):
    settings.CRAWLER_TRAP_MIN_PAGES = settings.CRAWLER_MIRROR_MIN_PAGES = 0
    assert traps.count_pattern_yield(pages("/day/", 50, lambda i: False)) == []
    assert not UrlPattern.objects.exists()


def test_a_registered_domain_has_a_quota_across_its_hosts(settings):
    """A trap of endless subdomains: each host under its own quota, the domain under one."""
    settings.CRAWLER_MAX_URLS_PER_DOMAIN = 25
    result = service.add_urls([service.Candidate(f"http://s{i}.trap.example.co.uk/p{j}", 1)
                               for i in range(10) for j in range(5)])
    assert (result.admitted, result.rejected) == (25, {"domain_quota": 25})
    assert set(Host.objects.values_list("domain", flat=True)) == {"example.co.uk"}  # eTLD+1
    # Another domain is not held back; the same domain stays full in a later batch too.
    result = service.add_urls([service.Candidate("http://other.example.org/a", 1),
                               service.Candidate("http://s99.trap.example.co.uk/b", 1)])
    assert (result.admitted, result.rejected) == (1, {"domain_quota": 1})
    assert Url.objects.filter(url__contains="trap.example.co.uk").count() == 25


def test_the_admin_tells_a_mirror_host_from_a_trap_pattern_and_resumes_it(admin_client, settings):
    settings.CRAWLER_MIRROR_MIN_PAGES, settings.CRAWLER_TRAP_MIN_PAGES = 5, 5
    service.add_urls([service.Candidate(f"{MIRROR}/{i}/p", 1) for i in range(8)])
    # The mirror's pages are copies of another host's (each its own path pattern: /#/p, one
    # new text in five); the trap's, copies of its own pages.
    traps.count_pattern_yield(pages("/", 5, lambda i: i == 0, MIRROR, copied=lambda i: i > 0)
                      + pages("/day/", 5, lambda i: False))
    page = admin_client.get("/admin/frontier/urlpattern/?stopped_at__isnull=False").content.decode()
    assert "host (mirror test)" in page and "path (trap test)" in page and MIRROR in page
    host_row = UrlPattern.objects.get(pattern=MIRROR)
    response = admin_client.post("/admin/frontier/urlpattern/", {"action": "resume_patterns",
                                                                 "_selected_action": [host_row.id]}, follow=True)
    assert "1 patterns resumed, 8 URLs queued again" in response.content.decode()
    assert Url.objects.filter(url__startswith=MIRROR, state="queued").count() == 8
