import pytest

from frontier.filters import rejection_reason
from frontier.limits import Limits
from frontier.normalize import InvalidUrl, normalize, remove_dot_segments


@pytest.mark.parametrize("raw, expected", [
    ("HTTP://Example.COM/a", "http://example.com/a"),
    ("http://example.com:80/a", "http://example.com/a"),
    ("https://example.com:443/", "https://example.com/"),
    ("http://example.com:8080", "http://example.com:8080/"),
    ("http://example.com/a#frag", "http://example.com/a"),
    ("http://example.com/a/./b/../c", "http://example.com/a/c"),
    ("http://example.com/../../x", "http://example.com/x"),
    ("http://example.com/a/b/..", "http://example.com/a/"),
    ("http://example.com/%7euser/%2f", "http://example.com/~user/%2F"),
    ("http://example.com/a b", "http://example.com/a%20b"),
    ("http://example.com/?b=2&a=1", "http://example.com/?b=2&a=1"),
    ("http://BÜCHER.example/", "http://xn--bcher-kva.example/"),
    ("http://example.com./x", "http://example.com/x"),
    ("  http://example.com/\n", "http://example.com/"),
    ("http://[::1]:8080/x", "http://[::1]:8080/x"),
    ("http://127.0.1.3:8300/p/1.html", "http://127.0.1.3:8300/p/1.html"),
])
def test_it_canonicalizes(raw, expected):
    assert normalize(raw).url == expected


def test_it_resolves_relative_links_against_a_base():
    base = "http://h.test/dir/page.html"
    assert normalize("../p/3.html", base).url == "http://h.test/p/3.html"
    assert normalize("3.html#x", base).url == "http://h.test/dir/3.html"
    assert normalize("//other.test/a", base).url == "http://other.test/a"


@pytest.mark.parametrize("raw, reason", [
    ("mailto:a@b.c", "scheme"),
    ("javascript:void(0)", "scheme"),
    ("ftp://h.test/x", "scheme"),
    ("http://user:pw@h.test/", "credentials"),
    ("http:///nohost", "host"),
    ("http://h.test:99999/", "unparsable"),
    ("", "empty"),
    ("http://exa mple.com/", "host"),
])
def test_it_rejects_uncrawlable_urls(raw, reason):
    with pytest.raises(InvalidUrl) as exc:
        normalize(raw)
    assert exc.value.args[0] == reason


def test_it_gives_one_hash_per_canonical_url():
    assert normalize("HTTP://h.test:80/a#x").url_hash == normalize("http://h.test/a").url_hash
    assert normalize("http://h.test/a").url_hash != normalize("http://h.test/b").url_hash
    assert normalize("http://h.test:81/").origin == "http://h.test:81"


def test_it_removes_dot_segments_like_rfc3986():
    assert remove_dot_segments("/a/b/c/./../../g") == "/a/g"
    assert remove_dot_segments("mid/content=5/../6") == "/mid/6"


def _limits(**kw):
    base = dict(depth_limit=3, url_length_limit=40, max_urls_per_host=10, max_redirects=3,
                excluded_domains=frozenset({"bad.test"}), version=1)
    base.update(kw)
    return Limits(**base)


@pytest.mark.parametrize("url, depth, hops, reason", [
    ("http://ok.test/", 0, 0, None),
    ("http://bad.test/", 0, 0, "excluded_domain"),
    ("http://www.sub.bad.test/", 0, 0, "excluded_domain"),
    ("http://notbad.test/", 0, 0, None),
    ("http://ok.test/" + "x" * 40, 0, 0, "url_too_long"),
    ("http://ok.test/", 4, 0, "depth_limit"),
    ("http://ok.test/", 3, 0, None),
    ("http://ok.test/", 0, 4, "redirect_limit"),
])
def test_it_filters_by_the_limits(url, depth, hops, reason):
    assert rejection_reason(normalize(url), depth, hops, _limits()) == reason
