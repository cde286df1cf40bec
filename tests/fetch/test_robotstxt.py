"""robots.txt as RFC 9309 reads it (fetch.robotstxt), one case per rule, and the one
definition of what a robots.txt answer means (frontier.robots_state)."""

from collections import Counter

import pytest

from crawl import robots
from fetch import robotstxt
from frontier.robots_state import VERDICT_FILTERS, RobotsVerdict, classify, unreachable

from ..loopback import QuietHandler, serving

TOKEN = "crawlerweb"


def allows(text: str, path: str, token: str = TOKEN) -> bool:
    return robotstxt.parse(text, token).allows("http://h.test" + path)


# --- which group applies (RFC 9309 section 2.2.1) ------------------------------------------

OTHERS_BLOCKED = "User-agent: {}\nDisallow: /\n\nUser-agent: *\nAllow: /\n"


@pytest.mark.parametrize("agent", ["github", "com", "https", "0.1", "crawler", "web", "crawlerwebx", "Mozilla"])
def test_a_group_for_another_name_does_not_apply(agent):
    assert allows(OTHERS_BLOCKED.format(agent), "/x")


@pytest.mark.parametrize("agent", ["crawlerweb", "CrawlerWeb", "CRAWLERWEB", "crawlerweb/2.0", "crawlerweb bar",
                                   "crawlerweb*", "  crawlerweb  "])
def test_a_group_naming_our_product_token_applies_whatever_follows_the_name(agent):
    assert not allows(OTHERS_BLOCKED.format(agent), "/x")


def test_the_token_comes_from_the_user_agent_unless_set(settings):
    assert robotstxt.product_token("crawlerweb/0.1 (+https://github.com/crawlerweb/crawlerweb)") == "crawlerweb"
    assert robotstxt.crawler_token() == "crawlerweb"
    settings.CRAWLER_USER_AGENT = "ExampleBot/3 (+https://example.org/bot)"
    assert robotstxt.crawler_token() == "examplebot"
    settings.CRAWLER_ROBOTS_TOKEN = "Archiver"
    assert robotstxt.crawler_token() == "archiver"


def test_our_group_wins_over_star_and_star_applies_only_without_one():
    text = "User-agent: *\nDisallow: /\n\nUser-agent: crawlerweb\nDisallow: /private\n"
    assert allows(text, "/public") and not allows(text, "/private")
    assert not allows(text, "/public", token="otherbot")


def test_all_groups_naming_us_are_merged():
    text = ("User-agent: crawlerweb\nDisallow: /a\n\nUser-agent: other\nDisallow: /b\n\n"
            "User-agent: crawlerweb\nDisallow: /c\n")
    assert not allows(text, "/a") and allows(text, "/b") and not allows(text, "/c")


def test_user_agent_lines_with_other_lines_between_them_make_one_group():
    text = ("User-agent: a\n# a comment\n\nSitemap: http://h.test/s.xml\nUnknown-field: x\n"
            "User-agent: crawlerweb\nDisallow: /y\n")
    assert not allows(text, "/y")
    assert not allows(text, "/y", token="a")


def test_a_user_agent_line_after_rules_starts_a_new_group():
    text = "User-agent: a\nDisallow: /x\nUser-agent: crawlerweb\nDisallow: /y\n"
    assert allows(text, "/x") and not allows(text, "/y")


def test_rules_before_any_user_agent_line_belong_to_nobody():
    assert allows("Disallow: /\nUser-agent: other\nDisallow: /\n", "/x")


def test_no_group_for_us_and_no_star_means_allow_all():
    assert allows("User-agent: other\nDisallow: /\n", "/anything")
    assert allows("", "/anything")


# --- reading the file -------------------------------------------------------------------

@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_lines_end_at_lf_crlf_or_cr(newline):
    text = newline.join(["User-agent: crawlerweb", "Disallow: /y", "Allow: /y/ok"]) + newline
    assert not allows(text, "/y/no") and allows(text, "/y/ok") and allows(text, "/z")


def test_a_byte_order_mark_is_ignored():
    assert not allows("\ufeffUser-agent: crawlerweb\nDisallow: /y\n", "/y")


def test_a_very_long_line_does_not_hide_the_rules_after_it():
    text = "User-agent: crawlerweb\nDisallow: /" + "a" * 200_000 + "\nDisallow: /b\n"
    assert not allows(text, "/b") and allows(text, "/c")


@pytest.mark.parametrize("line", ["Disallow /y", "disallow: /y", "DISALLOW:/y", "Dissallow: /y", "disalow: /y",
                                  "  Disallow  :  /y  # why"])
def test_keys_are_read_as_google_reads_them(line):
    assert not allows(f"User agent: crawlerweb\n{line}\n", "/y")


def test_a_comment_ends_a_value():
    assert allows("User-agent: crawlerweb\nDisallow: /a#b\n", "/ab") is False
    assert allows("User-agent: crawlerweb # us\nDisallow: # nothing\n", "/x")


# --- matching paths (RFC 9309 section 2.2.2, protego) -----------------------------------

@pytest.mark.parametrize("rules, path, allowed", [
    ("Disallow: /\nAllow: /pub", "/pub/x", True),  # the longest match wins
    ("Allow: /\nDisallow: /pub", "/pub/x", False),
    ("Disallow: /page\nAllow: /page", "/page", True),  # Allow wins a tie
    ("Disallow: /*.php$", "/x.php", False),  # $ anchors the end
    ("Disallow: /*.php$", "/x.php?a=1", True),
    ("Disallow: /*/secret", "/a/b/secret/x", False),  # * is any run of characters
    ("Disallow: /*?sort=", "/list?sort=up", False),
    ("Disallow: /%E4%BD%A0", "/%E4%BD%A0", False),  # percent-encoded rule and URL
    ("Disallow: /你", "/%E4%BD%A0", False),  # raw non-ASCII rule, encoded URL
    ("Disallow: /%e4%bd%a0", "/%E4%BD%A0", False),  # escapes compare case-insensitively
    ("Disallow: /~joe", "/%7Ejoe", False),  # an escaped unreserved character is the character
    ("Disallow: /a%2Fb", "/a/b", True),  # an escaped reserved one is not
    ("Disallow: /Private", "/private", True),  # paths are case-sensitive
    ("Disallow:", "/x", True),  # an empty rule means nothing
    ("Disallow: /", "/robots.txt", True),  # robots.txt itself is always allowed
])
def test_paths_match_as_the_rfc_says(rules, path, allowed):
    assert allows(f"User-agent: *\n{rules}\n", path) is allowed


# --- Crawl-delay and Sitemap -------------------------------------------------------------

def test_crawl_delay_is_read_from_our_group_only():
    text = ("User-agent: other\nCrawl-delay: 9\n\nUser-agent: crawlerweb\nCrawl-delay: 2.5\nCrawl-delay: 7\n\n"
            "User-agent: *\nCrawl-delay: 4\n")
    assert robotstxt.parse(text, TOKEN).crawl_delay == 2.5  # the first valid value of our group
    assert robotstxt.parse(text, "nobody").crawl_delay == 4
    assert robotstxt.parse("User-agent: crawlerweb\nDisallow: /x\n", TOKEN).crawl_delay is None
    for bad in ("soon", "-1", "nan", "inf"):
        assert robotstxt.parse(f"User-agent: *\nCrawl-delay: {bad}\n", TOKEN).crawl_delay is None


def test_sitemap_lines_are_collected_wherever_they_are():
    text = ("Sitemap: http://h.test/a.xml\nUser-agent: other\nsitemap: http://h.test/b.xml\nDisallow: /\n"
            "SITEMAP:http://cdn.test/c.xml\n")
    assert robotstxt.parse(text, TOKEN).sitemaps == ("http://h.test/a.xml", "http://h.test/b.xml",
                                                     "http://cdn.test/c.xml")


# --- what an answer means: one definition (robots_state) ---------------------------------

@pytest.mark.parametrize("status, error, fetched, verdict", [
    (None, "", False, RobotsVerdict.NOT_FETCHED),
    (200, "", True, RobotsVerdict.RULES),
    (204, "", True, RobotsVerdict.RULES),
    (301, "", True, RobotsVerdict.ALLOW_ALL),  # still a redirect after five hops
    (401, "", True, RobotsVerdict.ALLOW_ALL),
    (404, "", True, RobotsVerdict.ALLOW_ALL),
    (410, "", True, RobotsVerdict.ALLOW_ALL),
    (429, "http_429", True, RobotsVerdict.DISALLOW_ALL),
    (500, "http_500", True, RobotsVerdict.DISALLOW_ALL),
    (503, "http_503", True, RobotsVerdict.DISALLOW_ALL),
    (None, "timeout", True, RobotsVerdict.DISALLOW_ALL),
    (None, "blocked_address", True, RobotsVerdict.DISALLOW_ALL),
])
def test_every_robots_answer_has_one_meaning(status, error, fetched, verdict):
    assert classify(status, error, fetched) == verdict
    if fetched:  # what crawl.robots.save stores as an error is exactly the unreachable
        assert unreachable(status) == (verdict == RobotsVerdict.DISALLOW_ALL) == bool(error)


@pytest.mark.django_db
def test_metrics_and_admin_count_each_host_in_exactly_one_robots_class(admin_client):
    from django.utils import timezone

    from frontier.models import Host
    from frontier.stats import host_figures

    now = timezone.now()
    rows = {"http://ok.test": (200, ""), "http://gone.test": (404, ""), "http://slow.test": (429, "http_429"),
            "http://down.test": (503, "http_503"), "http://net.test": (None, "timeout")}
    for origin, (status, error) in rows.items():
        Host.objects.create(origin=origin, robots_status=status, robots_error=error, robots_fetched_at=now)
    Host.objects.create(origin="http://new.test")
    figures = host_figures()["robots"]
    assert (figures["ok"], figures["allow_all"], figures["unavailable"], figures["never"]) == (1, 1, 3, 1)
    per_verdict = {v: set(Host.objects.filter(VERDICT_FILTERS[v]).values_list("origin", flat=True))
                   for v in RobotsVerdict}
    assert per_verdict[RobotsVerdict.DISALLOW_ALL] == {"http://slow.test", "http://down.test", "http://net.test"}
    assert sum(len(hosts) for hosts in per_verdict.values()) == Host.objects.count()
    page = admin_client.get("/admin/frontier/host/?robots=disallow_all")
    assert b"slow.test" in page.content and b"gone.test" not in page.content


# --- through the fetcher, over real HTTP --------------------------------------------------

ROBOTS_FOR_OTHERS = b"""User-agent: github
User-agent: crawler
User-agent: com
Disallow: /

User-agent: crawlerweb
Crawl-delay: 0.01
Disallow: /private

Sitemap: /sitemap.xml
"""


@pytest.mark.django_db(transaction=True)
def test_the_crawler_obeys_only_the_group_meant_for_it(settings):
    from crawl.runners import run_embedded
    from frontier import service
    from frontier.models import Host, Url

    settings.CRAWLER_DEFAULT_DELAY = 0
    hits = Counter()

    class Handler(QuietHandler):
        def do_GET(self):
            hits[self.path] += 1
            robots = self.path == "/robots.txt"
            self.send(200, ROBOTS_FOR_OTHERS if robots else b"<title>p</title>",
                      [("Content-Type", "text/plain" if robots else "text/html")])

    with serving(Handler) as origin:
        service.add_seeds([origin + "/public", origin + "/private/x"])
        run_embedded(threads=1, max_seconds=20)
    assert (hits["/public"], hits["/private/x"]) == (1, 0)
    assert dict(Url.objects.values_list("url", "state")) == {
        origin + "/public": "fetched", origin + "/private/x": "robots_blocked", origin + "/sitemap.xml": "fetched"}
    host = Host.objects.get()
    assert (host.crawl_delay, host.robots_sitemaps) == (0.01, "/sitemap.xml")
    # The sitemap it names was read as one (it is HTML here: no links, not indexed).
    sitemap = Url.objects.get(url=origin + "/sitemap.xml")
    assert (sitemap.kind, sitemap.outcome, hits["/sitemap.xml"]) == ("sitemap", "not_a_link_source", 1)


# --- Gemini's virtual user-agents (the robots.txt companion specification) ------------------

CAPSULE = """User-agent: archiver
Disallow: /logs/

User-agent: indexer
Disallow: /drafts/
Crawl-delay: 4

User-agent: researcher
Disallow: /

User-agent: *
Disallow: /cgi-bin/
Crawl-delay: 1
"""


def gemini_allows(text: str, path: str, token: str = TOKEN, also=("indexer", "archiver")) -> bool:
    return robotstxt.parse(text, token, also).allows("gemini://cap.test" + path)


@pytest.mark.parametrize("path, allowed", [
    ("/", True), ("/logs/today.gmi", False), ("/drafts/x.gmi", False), ("/cgi-bin/search", False),
    ("/research/", True),  # we are no researcher by default
])
def test_a_capsule_rules_for_every_virtual_agent_we_are_and_for_star(path, allowed):
    assert gemini_allows(CAPSULE, path) is allowed


def test_a_research_crawl_obeys_the_researcher_group_too():
    assert not gemini_allows(CAPSULE, "/anything", also=("indexer", "archiver", "researcher"))


def test_our_own_group_and_the_virtual_ones_both_apply():
    text = "User-agent: crawlerweb\nDisallow: /mine/\n\nUser-agent: indexer\nDisallow: /idx/\n\nUser-agent: *\nDisallow: /all/\n"
    assert not gemini_allows(text, "/mine/a") and not gemini_allows(text, "/idx/a")
    assert not gemini_allows(text, "/all/a")  # Gemini: * applies besides our name
    assert allows(text, "/all/a")  # the web (RFC 9309): our group replaces *


def test_the_most_specific_rule_wins_whichever_group_it_is_in():
    text = "User-agent: crawlerweb\nDisallow: /private/\nAllow: /private/7.gmi\n\nUser-agent: *\nDisallow: /\n"
    assert gemini_allows(text, "/private/7.gmi")
    assert not gemini_allows(text, "/private/6.gmi") and not gemini_allows(text, "/gemlog/1.gmi")


def test_the_longest_crawl_delay_among_the_groups_counts():
    assert robotstxt.parse(CAPSULE, TOKEN, ("indexer", "archiver")).crawl_delay == 4
    assert robotstxt.parse(CAPSULE, TOKEN).crawl_delay == 1


def test_a_gemini_hosts_robots_txt_is_read_with_the_configured_agents(settings):
    settings.CRAWLER_GEMINI_ROBOTS_AGENTS = ["indexer", "archiver", "researcher"]
    assert not robots.read(CAPSULE, "gemini://cap.test").allows("gemini://cap.test/x")
    assert robots.read(CAPSULE, "http://cap.test").allows("http://cap.test/x")  # the web: * only
