"""A scope per seed, applied at admission to every link and redirect found from it."""

import json
from collections import Counter
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from frontier import service
from frontier.models import CrawlLimits, CrawlScope, ExcludedDomain, Seed, Url
from frontier.scope import registered_domain

from ..crawl_helpers import DEPTH_LIMIT, audit, sample_web
from ..loopback import QuietHandler, start

pytestmark = pytest.mark.django_db


def seed(url, kind="host", include=(), exclude=()):
    service.add_seeds([url], service.parse_spec(kind, include, exclude))
    return Url.objects.get(url=url).scopes


def links_from(key, *urls, depth=1):
    """Admit links found on a page crawled under `key`; returns what was admitted."""
    before = set(Url.objects.values_list("url", flat=True))
    service.add_urls([service.Candidate(u, depth, scopes=key) for u in urls])
    return set(Url.objects.values_list("url", flat=True)) - before


@pytest.mark.parametrize("kind, inside, outside", [
    ("host", ["http://site.test/a", "https://site.test/b", "http://www.site.test/c", "http://site.test:8080/d"],
     ["http://sub.site.test/", "http://other.test/", "http://site.test.evil/"]),
    ("domain", ["http://site.test/a", "http://deep.sub.site.test/b", "https://www.site.test/c"],
     ["http://other.test/", "http://notsite.test/", "http://site.test.evil/"]),
    ("prefix", ["http://site.test/docs/a.html", "https://site.test/docs/sub/b", "http://www.site.test/docs/"],
     ["http://site.test/doc", "http://site.test/other/docs/", "http://sub.site.test/docs/x"]),
    ("web", ["http://site.test/a", "http://other.test/", "https://elsewhere.example/x"], []),
])
def test_each_kind_of_scope_admits_its_links_and_counts_the_rest(kind, inside, outside):
    key = seed("http://site.test/docs/index.html", kind)
    assert links_from(key, *inside, *outside) == set(inside)
    assert CrawlScope.objects.get().out_of_scope == len(outside)
    assert set(Url.objects.filter(url__in=inside).values_list("scopes", flat=True)) == {key}


@pytest.mark.parametrize("host, domain", [
    ("a.b.example.co.uk", "example.co.uk"),  # a public suffix of two labels
    ("example.com", "example.com"),
    ("user.github.io", "user.github.io"),  # a private suffix: each user is an owner
    ("co.uk", "co.uk"),  # a public suffix is its own domain
    ("127.0.1.3", "127.0.1.3"),
    ("[::1]", "[::1]"),
    ("xn--bcher-kva.example", "xn--bcher-kva.example"),
])
def test_the_registered_domain_comes_from_the_public_suffix_list(host, domain):
    assert registered_domain(host) == domain


def test_include_patterns_widen_a_scope_and_exclude_patterns_narrow_it():
    key = seed("http://site.test/", "host", include=[r"^https?://cdn\.test/assets/"],
               exclude=[r"/calendar/", r"\?print"])
    admitted = links_from(key, "http://cdn.test/assets/a.css", "http://cdn.test/other", "http://site.test/calendar/2026",
                          "http://site.test/page?print=1", "http://site.test/page")
    assert admitted == {"http://cdn.test/assets/a.css", "http://site.test/page"}
    assert CrawlScope.objects.get().out_of_scope == 3


def test_a_url_reached_from_two_seeds_is_in_scope_if_either_allows_it_and_carries_both():
    a = seed("http://a.test/")
    b = seed("http://b.test/", include=[r"^http://a\.test/both$"])
    # b.test/shared is out of a's scope when a's page links to it first: counted, not stored.
    assert links_from(a, "http://b.test/shared") == set()
    assert links_from(b, "http://b.test/shared") == {"http://b.test/shared"}
    # a.test/both, queued under a, is found from b's pages too: it now carries both scopes,
    assert links_from(a, "http://a.test/both") == {"http://a.test/both"}
    service.add_urls([service.Candidate("http://a.test/both", 1, scopes=b)])
    both = Url.objects.get(url="http://a.test/both").scopes
    assert both == f"{a},{b}"
    # so its own links are judged by both seeds' scopes.
    assert links_from(both, "http://a.test/x", "http://b.test/y", "http://c.test/z", depth=2) == {
        "http://a.test/x", "http://b.test/y"}
    # A URL already fetched keeps the scopes it was fetched under.
    Url.objects.filter(url="http://a.test/x").update(state="fetched")
    service.add_urls([service.Candidate("http://a.test/x", 1, scopes=b)])
    assert Url.objects.get(url="http://a.test/x").scopes == both


def test_within_one_batch_a_url_found_under_two_scopes_gets_both():
    a, b = seed("http://a.test/"), seed("http://b.test/")
    web = seed("http://w.test/", "web")
    service.add_urls([service.Candidate("http://w.test/x", 1, scopes=web),
                      service.Candidate("http://w.test/x", 2, scopes=a)])  # a's candidate is out of scope
    assert Url.objects.get(url="http://w.test/x").scopes == web
    service.add_urls([service.Candidate("http://a.test/y", 2, scopes=web),
                      service.Candidate("http://a.test/y", 1, scopes=a)])
    row = Url.objects.get(url="http://a.test/y")
    assert (row.depth, row.scopes) == (1, f"{web},{a}")
    assert b  # (b only proves distinct rows for distinct sites)


def test_a_seeds_redirect_carries_its_scope_along_and_other_redirects_do_not():
    key = seed("http://old.test/")
    seed_url = Url.objects.get(url="http://old.test/")
    moved = service.add_urls([service.Candidate("http://new.test/home", 0, 1, seed_url.id, scopes=key)])
    assert moved.admitted == 1
    widened = Url.objects.get(url="http://new.test/home").scopes
    assert widened.startswith(key + ",") and CrawlScope.objects.filter(kind="host", anchor="new.test").exists()
    assert links_from(widened, "http://new.test/a", "http://old.test/b", "http://third.test/") == {
        "http://new.test/a", "http://old.test/b"}
    # A page deeper in the site that redirects away is just a link leaving the scope.
    refused = service.add_urls([service.Candidate("http://elsewhere.test/", 1, 1, seed_url.id, scopes=key)])
    assert refused.rejected == {"out_of_scope": 1}


def test_seeds_without_a_scope_from_before_scopes_existed_crawl_the_open_web():
    service.add_urls([service.Candidate("http://legacy.test/")])
    Seed.objects.create(url="http://legacy.test/")
    assert links_from("", "http://anywhere.test/") == {"http://anywhere.test/"}
    assert service.scope_summary()["unscoped_seeds"] == 1


def test_the_summary_and_status_show_each_scope():
    seed("http://s.test/", "domain", exclude=["/tmp/"])
    service.add_seeds(["http://s.test/2"], service.parse_spec("domain", (), ["/tmp/"]))
    links_from(Url.objects.get(url="http://s.test/").scopes, "http://elsewhere.test/", "http://s.test/tmp/x")
    summary = service.crawl_summary()["scope"]
    assert summary["scopes"] == [{"id": CrawlScope.objects.get().id, "kind": "domain", "anchor": "s.test",
                                  "include": [], "exclude": ["/tmp/"], "out_of_scope": 2, "seeds": 2}]
    out = StringIO()
    call_command("status", stdout=out)
    assert "domain s.test, never /tmp/ (2 seeds, 2 links left out)" in out.getvalue()


def test_seed_command_takes_a_scope_and_refuses_a_bad_one():
    out = StringIO()
    call_command("seed", "http://c.test/docs/", "--scope", "prefix", "--exclude", "draft", stdout=out)
    assert "scope: prefix" in out.getvalue()
    assert CrawlScope.objects.get().anchor == "c.test/docs/"
    with pytest.raises(Exception, match="not a valid regular expression"):
        call_command("seed", "http://c.test/", "--include", "[", stdout=StringIO())


def test_seed_command_takes_bare_origins_and_says_what_it_will_not_fetch_and_why(settings):
    settings.CRAWLER_ALLOWED_NETWORKS = []
    CrawlLimits.objects.update_or_create(pk=1, defaults={"url_length_limit": 30})
    out = StringIO()
    call_command("seed", "127.0.1.3:8300", "c.test/docs/", "http://c.test/" + "x" * 30, stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == ("warning\thttp://127.0.1.3:8300/\taccepted, but it will not be fetched: 127.0.1.3 is a "
                        "loopback address and CRAWLER_ALLOWED_NETWORKS does not allow it (port 8300)")
    assert lines[1] == "ok\thttp://c.test/docs/"
    assert lines[2].startswith("rejected:url_too_long\thttp://c.test/xxx")
    assert lines[2].endswith("\t(44 characters in canonical form; the limit is 30, set by urlLengthLimit or "
                             "CRAWLER_MAX_URL_LENGTH)")
    assert lines[3] == "2 new, 0 already known, 1 with a warning, 1 rejected; scope: host"
    assert set(Url.objects.values_list("url", flat=True)) == {"http://127.0.1.3:8300/", "http://c.test/docs/"}


def test_seed_command_reads_a_file_one_seed_per_line(tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("# the docs sites\n\nhttp://c.test/docs/\n  d.test   # a bare origin, commented\n"
                     "http://excluded.test/\nhttp://c.test/docs/\n", encoding="utf-8")
    ExcludedDomain.objects.create(domain="excluded.test")
    out = StringIO()
    call_command("seed", "--file", str(seeds), stdout=out)
    assert out.getvalue().splitlines() == [
        "line 3\tok\thttp://c.test/docs/", "line 4\tok\thttp://d.test/",
        "line 5\trejected:excluded_domain\thttp://excluded.test/\t(excluded.test is in excludedDomains, with its subdomains)",
        "line 6\tok\thttp://c.test/docs/", "2 new, 0 already known, 1 rejected; scope: host"]  # line 6 repeats line 3
    assert set(Url.objects.values_list("url", flat=True)) == {"http://c.test/docs/", "http://d.test/"}


def test_a_seed_file_with_lines_that_are_no_urls_adds_nothing_and_names_every_such_line(tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://good.test/\nftp://files.test/\nhttp://also-good.test/\nhttp://user:pw@x.test/\n",
                     encoding="utf-8")
    with pytest.raises(CommandError) as refused:
        call_command("seed", "--file", str(seeds), stdout=StringIO())
    message = str(refused.value)
    assert message.startswith(f"{seeds}: 2 line(s) are not seeds; nothing was added:")
    assert message.splitlines()[1:] == ["line 2: scheme\tftp://files.test/", "line 4: credentials\thttp://user:pw@x.test/"]
    assert not Url.objects.exists() and not Seed.objects.exists() and not CrawlScope.objects.exists()
    (tmp_path / "latin1.txt").write_bytes("http://caf\xe9.test/\n".encode("latin-1"))
    with pytest.raises(CommandError, match="is not UTF-8 text"):
        call_command("seed", "--file", str(tmp_path / "latin1.txt"), stdout=StringIO())
    with pytest.raises(CommandError, match="cannot read .*missing.txt: No such file or directory"):
        call_command("seed", "--file", str(tmp_path / "missing.txt"), stdout=StringIO())
    with pytest.raises(CommandError, match="give seed URLs, or --file"):
        call_command("seed", stdout=StringIO())


# --- through real HTTP ----------------------------------------------------------------------

class _Sites(QuietHandler):
    """Three sites on one loopback server, told apart by the Host header."""

    hits: Counter
    pages = {
        ("seed.test", "/"): (301, "http://www.moved.test:{port}/"),
        ("www.moved.test", "/"): (200, '<a href="/a">a</a><a href="http://sub.moved.test:{port}/s">s</a>'
                                       '<a href="http://other.test:{port}/o">o</a><a href="/away">away</a>'),
        ("www.moved.test", "/a"): (200, "<title>a</title>"),
        ("www.moved.test", "/away"): (302, "http://other.test:{port}/target"),
        ("sub.moved.test", "/s"): (200, "<title>s</title>"),
    }

    def do_GET(self):
        host, port = self.headers["Host"].split(":")
        self.hits[(host, self.path)] += 1
        status, text = self.pages.get((host, self.path), (404, "no"))
        text = text.format(port=port)
        if status in (301, 302):
            self.send(status, b"", [("Location", text)])
        else:
            self.send(status, text.encode(), [("Content-Type", "text/html")])


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind, fetched", [
    ("host", {"/", "/a", "/away"}),
    ("domain", {"/", "/a", "/away", "/s"}),
])
def test_links_and_redirects_leaving_the_scope_are_not_followed(kind, fetched, fake_dns, settings):
    from crawl.runners import run_embedded

    settings.CRAWLER_DEFAULT_DELAY = 0
    for name in ("seed.test", "www.moved.test", "sub.moved.test", "other.test"):
        fake_dns[name] = "127.0.0.1"
    handler = type("Handler", (_Sites,), {"hits": Counter()})
    srv, origin = start(handler)
    port = srv.server_address[1]
    try:
        service.add_seeds([f"http://seed.test:{port}/"], service.ScopeSpec(kind))
        run_embedded(threads=2, max_seconds=30)
    finally:
        srv.shutdown()
    pages = {path for (host, path) in handler.hits if path != "/robots.txt"}
    assert pages == fetched
    assert not any(host == "other.test" for host, _ in handler.hits)  # not even its robots.txt
    states = dict(Url.objects.values_list("url", "outcome"))
    assert states[f"http://seed.test:{port}/"] == "redirect"  # the seed moved: followed, scope widened
    assert states[f"http://www.moved.test:{port}/away"] == "redirect_refused:out_of_scope"
    assert not Url.objects.filter(url__contains="other.test").exists()


# Last: the module's committed crawl must not meet the transactional test above.
@pytest.fixture(scope="module")
def crawled_with_the_default_scope(django_db_setup, django_db_blocker, tmp_path_factory, module_test_settings):
    """`manage.py crawl <seed>` with no --scope: the seed's host only."""
    from indexer.backends import get_search_backend

    with django_db_blocker.unblock():
        call_command("flush", "--no-input")
        with sample_web(tmp_path_factory.mktemp("scope")) as web:
            out = StringIO()
            call_command("crawl", *web.seeds, "--no-progress", "--json", stdout=out)
            human = StringIO()
            call_command("status", stdout=human)
            yield web, json.loads(out.getvalue()), human.getvalue(), audit(web, scope="host")
        call_command("flush", "--no-input")
        get_search_backend().clear()


@pytest.mark.crawl
def test_a_crawl_stays_on_its_seeds_host_by_default_and_says_so(crawled_with_the_default_scope):
    web, summary, status, report = crawled_with_the_default_scope
    home = web.hosts[0].split(":")[0]
    truth = web.ground_truth(depth_limit=DEPTH_LIMIT, scope="host")
    assert truth < web.ground_truth(depth_limit=DEPTH_LIMIT)  # the scope leaves something out
    assert set(report["fetched"]) == truth and report["missing"] == [] and report["unexpected"] == []
    assert set(report["robots_fetches"]) == {web.hosts[0]}  # no other host was asked anything
    assert report["in_flight_violations"] == 0 and report["gap_violations"] == []
    (scope,) = summary["scope"]["scopes"]
    assert (scope["kind"], scope["anchor"], scope["seeds"]) == ("host", home, 1)
    assert scope["out_of_scope"] > 0 and summary["scope"]["out_of_scope"] == scope["out_of_scope"]
    assert not Url.objects.exclude(url__startswith=f"http://{web.hosts[0]}/").exists()  # counted, not stored
    assert f"host {home} (1 seed, {scope['out_of_scope']} links left out)" in status
