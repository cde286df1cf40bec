"""URL canonicalization: the WHATWG URL Standard's parsing rules (cases written from the
standard's sections, one group per kind of mistake a non-browser parser makes) and our
canonical policy on top (docs/urls.md)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier.filters import rejection_reason
from frontier.limits import Limits
from frontier.normalize import InvalidUrl, normalize


def canon(url, base=None):
    return normalize(url, base).url


# --- our policy -------------------------------------------------------------------------

@pytest.mark.parametrize("raw, expected", [
    ("HTTP://Example.COM/a", "http://example.com/a"),
    ("http://example.com:80/a", "http://example.com/a"),  # default port
    ("https://example.com:443/", "https://example.com/"),
    ("http://example.com:8080", "http://example.com:8080/"),  # empty path is "/"
    ("http://example.com/a#frag", "http://example.com/a"),  # fragment dropped
    ("http://example.com/a/./b/../c", "http://example.com/a/c"),
    ("http://example.com/../../x", "http://example.com/x"),
    ("http://example.com/a/b/..", "http://example.com/a/"),
    ("http://example.com/%7euser/%2f", "http://example.com/~user/%2F"),  # unreserved decoded, hex upper
    ("http://example.com/%41%62?%7A=%3d", "http://example.com/Ab?z=%3D"),
    ("http://example.com/a b", "http://example.com/a%20b"),
    ("http://example.com/?b=2&a=1", "http://example.com/?b=2&a=1"),  # query order kept
    ("http://example.com/x?", "http://example.com/x?"),  # an empty query is kept
    ("http://BÜCHER.example/", "http://xn--bcher-kva.example/"),
    ("http://example.com./x", "http://example.com/x"),  # trailing dot dropped
    ("  http://example.com/\n", "http://example.com/"),
    ("http://ex\tam\nple.com/", "http://example.com/"),  # tabs and newlines anywhere
    ("http://[::1]:8080/x", "http://[::1]:8080/x"),
    ("http://127.0.1.3:8300/p/1.html", "http://127.0.1.3:8300/p/1.html"),
    ("http://h.test/a;jsessionid=ABC?x=1", "http://h.test/a?x=1"),  # session ids dropped
    ("http://h.test/a?PHPSESSID=1&page=2&sid=3", "http://h.test/a?page=2"),
    ("http://h.test/a?sid=3", "http://h.test/a"),  # the whole query was a session id
    ("http://h.test/a?x=1&&y", "http://h.test/a?x=1&&y"),  # other parameters exactly as they were
    ("http://a_b.example/", "http://a_b.example/"),  # underscores occur in real host names
])
def test_it_canonicalizes(raw, expected):
    assert canon(raw) == expected


@pytest.mark.parametrize("raw, reason", [
    ("mailto:a@b.c", "scheme"),
    ("javascript:void(0)", "scheme"),
    ("ftp://h.test/x", "scheme"),
    ("data:text/html,hi", "scheme"),
    ("http://user:pw@h.test/", "credentials"),
    ("http://user@h.test/", "credentials"),
    ("http://h.test:99999/", "unparsable"),
    ("", "empty"),
    (" \t\n", "empty"),
    ("http://exa mple.com/", "unparsable"),
    ("http://a.b!c/", "host"),  # WHATWG accepts it; no resolver can
    ("http://a..b/", "host"),
    ("http://" + "a" * 64 + ".example/", "host"),  # a DNS label is at most 63 bytes
    ("http://" + "a." * 127 + "example/", "host"),  # a name at most 253
    ("http://\udc80.example/", "unparsable"),  # not encodable as UTF-8
])
def test_it_rejects_uncrawlable_urls(raw, reason):
    with pytest.raises(InvalidUrl) as exc:
        normalize(raw)
    assert exc.value.args[0] == reason


def test_it_caches_a_refusal_without_the_callers_frames():
    from frontier.normalize import _normalize_cached

    with pytest.raises(InvalidUrl):
        normalize("mailto:someone@h.test", "http://h.test/page")
    # cached under the link alone (a mailto: link means the same on every page) and without
    # a traceback, which would keep the caller's whole batch of pages alive
    cached = _normalize_cached("mailto:someone@h.test", None)
    assert isinstance(cached, InvalidUrl) and cached.__traceback__ is None


def test_it_gives_one_hash_per_canonical_url():
    assert normalize("HTTP://h.test:80/a#x").url_hash == normalize("http://h.test/a").url_hash
    assert normalize("http://h.test/a").url_hash != normalize("http://h.test/b").url_hash
    assert normalize("http://h.test:81/").origin == "http://h.test:81"
    parts = normalize("https://Sub.H.test:8443/x")
    assert (parts.scheme, parts.host, parts.port) == ("https", "sub.h.test", 8443)


# --- the URL Standard: resolution ---------------------------------------------------------

BASE = "http://h.test/dir/page.html?q=1"


@pytest.mark.parametrize("href, expected", [
    ("../p/3.html", "http://h.test/p/3.html"),
    ("3.html#x", "http://h.test/dir/3.html"),
    ("//other.test/a", "http://other.test/a"),
    ("?x=2", "http://h.test/dir/page.html?x=2"),
    ("#top", "http://h.test/dir/page.html?q=1"),
    ("", "http://h.test/dir/page.html?q=1"),
    ("/", "http://h.test/"),
    ("\\x", "http://h.test/x"),  # a backslash is a slash in special URLs
    ("..\\a\\b", "http://h.test/a/b"),
    ("http:foo/bar", "http://h.test/dir/foo/bar"),  # same scheme, no slashes: relative
    ("https:example.com/", "https://example.com/"),  # another special scheme: absolute
    ("///three.test/x", "http://three.test/x"),  # any number of slashes before the host
    ("http://x.test/../a", "http://x.test/a"),
])
def test_it_resolves_links_as_browsers_do(href, expected):
    assert canon(href, BASE) == expected


def test_it_gives_relative_and_absolute_links_one_form_when_the_base_has_empty_segments():
    # Python's urljoin collapses "//" in the base path; the URL Standard keeps it.
    base = "http://h.test/a//b/c.html"
    assert canon("../d.html", base) == "http://h.test/a//d.html"
    assert canon("http://h.test/a//d.html") == canon("../d.html", base)
    assert canon("d.html", base) == "http://h.test/a//b/d.html"


# --- the URL Standard: hosts --------------------------------------------------------------

@pytest.mark.parametrize("raw, expected", [
    ("http://192.0x00A80001/", "http://192.168.0.1/"),  # hex part
    ("http://0xffffffff/", "http://255.255.255.255/"),  # one 32-bit number
    ("http://4294967295/", "http://255.255.255.255/"),
    ("http://2130706433/", "http://127.0.0.1/"),
    ("http://192.168.257/", "http://192.168.1.1/"),  # the last part fills the rest
    ("http://0x7f.1/", "http://127.0.0.1/"),
    ("http://0177.0.0.1/", "http://127.0.0.1/"),  # octal
    ("http://127.1:8000/", "http://127.0.0.1:8000/"),
    ("http://1.2.3.4./", "http://1.2.3.4/"),
    ("http://%30%78%63%30%2e%30%32%35%30.01/", "http://192.168.0.1/"),  # escaped, then IPv4
    ("http://[0:0:0:0:0:0:0:1]/", "http://[::1]/"),
    ("http://[::FFFF:1.2.3.4]/", "http://[::ffff:102:304]/"),
])
def test_it_writes_every_ipv4_and_ipv6_form_one_way(raw, expected):
    assert canon(raw) == expected
    assert normalize(raw).host == normalize(expected).host  # one server, one frontier host


@pytest.mark.parametrize("raw", [
    "http://192.168.0.257/",  # a part out of range
    "http://4294967296/",  # more than 32 bits
    "http://1.2.3.08/",  # 08 is no octal number
    "http://foo.1.2.3.4/",  # ends in a number, yet no IPv4 address
    "http://foo.09/",
    "http://[fe80::1%25eth0]/",  # IPv6 zone ids are not allowed
    "http://[::1/",
    "http://h.test:8o/",
    "http://h.test:-1/",
    "http://%zz/",
    "http:///",
    "http://a.b.c.xn--pokxncvks/",  # punycode that decodes to no valid name
    "https://xn--/",
])
def test_it_refuses_hosts_and_ports_the_url_standard_calls_invalid(raw):
    with pytest.raises(InvalidUrl):
        normalize(raw)


@pytest.mark.parametrize("raw, expected", [
    ("http:/example.com/", "http://example.com/"),
    ("http:example.com/", "http://example.com/"),  # no base: the host comes right after
    ("http:\\\\foo.com\\a", "http://foo.com/a"),
    ("https://%e2%98%83/", "https://xn--n3h/"),  # a percent-encoded host
    ("https://faß.example/", "https://xn--fa-hia.example/"),  # UTS-46 nontransitional
    ("http://ＥＸＡＭＰＬＥ.com/", "http://example.com/"),  # full-width letters mapped
    ("http://h.test:0/", "http://h.test:0/"),  # port 0 is a port
    ("http://h.test/[a]|b^", "http://h.test/[a]|b%5E"),  # [ ] | left as they are, ^ escaped
    ("http://h.test/é?é", "http://h.test/%C3%A9?%C3%A9"),
    ("http://h.test/a/%2e%2E/b", "http://h.test/b"),  # escaped dot segments are dot segments
    ("http://h.test/a/.%2e/b", "http://h.test/b"),
])
def test_it_accepts_what_browsers_accept(raw, expected):
    assert canon(raw) == expected


# --- idempotence --------------------------------------------------------------------------

@pytest.mark.parametrize("raw, expected", [
    ("http://host/%%36%31", "http://host/%%361"),  # not %61, which would then become "a"
    ("http://host/%%300", "http://host/%%300"),  # not %00
    ("http://host/100%", "http://host/100%"),  # kept as the link wrote it (WHATWG)
    ("http://host/foo%2", "http://host/foo%2"),
    ("http://host/?%GH", "http://host/?%GH"),
    ("http://host/%4%31", "http://host/%4%31"),  # "1" decoded would make "%41"
    ("http://host/%%7e%41", "http://host/%~A"),
    ("http://host/?q=50%+off", "http://host/?q=50%+off"),
    ("http://h.test/..;jsessionid=1/x", "http://h.test/x"),  # the exposed ".." is resolved
])
def test_it_never_creates_a_new_escape_or_dot_segment(raw, expected):
    assert canon(raw) == expected
    assert canon(expected) == expected


_url_chars = st.sampled_from(list("aZ09-._~!$&'()*+,;=:@/?#[]%\\ \té\u2603") + ["%2e", "%41", "%7e", "%2F",
                                                                               "%%", "..", "./", ";sid=1"])
# Escapes that fuse with their neighbours once decoded ("%" + "%36" + "%31" -> "%61").
_escape_soup = st.sampled_from(["%", "%%", "%3", "%36", "%31", "%41", "%2e", "1", "a", "F", "/", "?"])
_hosts = st.sampled_from(["h.test", "H.TEST.", "0x7f.1", "127.1", "[::1]", "xn--n3h", "bücher.test", "%68.test",
                          "192.168.257", "a_b.test"])


@settings(max_examples=600, deadline=None)
@given(scheme=st.sampled_from(["http", "https", "HTTP", "gemini", "GEMINI"]), host=_hosts,
       port=st.sampled_from(["", ":80", ":443", ":8080", ":0", ":1965"]),
       tail=st.lists(st.one_of(_url_chars, _escape_soup), max_size=30).map("".join))
def test_it_is_idempotent(scheme, host, port, tail):
    try:
        once = canon(f"{scheme}://{host}{port}/{tail}")
    except InvalidUrl:
        return
    assert canon(once) == once


@settings(max_examples=300, deadline=None)
@given(href=st.lists(_url_chars, max_size=20).map("".join))
def test_it_is_idempotent_for_links_resolved_against_a_base(href):
    for base in ("http://h.test/a//b/c.html?x", "gemini://h.test/a//b/c.gmi?x"):
        try:
            once = canon(href, base)
        except InvalidUrl:
            continue
        assert canon(once) == once


# --- gemini:// (a non-special scheme to WHATWG; given a special URL's form, docs/urls.md) ---

@pytest.mark.parametrize("raw, expected", [
    ("gemini://Example.COM/a", "gemini://example.com/a"),  # WHATWG alone keeps the host as written
    ("gemini://example.com:1965/a", "gemini://example.com/a"),  # Gemini's default port
    ("gemini://example.com", "gemini://example.com/"),  # an empty path is "/"
    ("gemini://example.com?q", "gemini://example.com/?q"),
    ("gemini://example.com:443/", "gemini://example.com:443/"),  # only 1965 is Gemini's
    ("gemini://example.com:80/", "gemini://example.com:80/"),
    ("gemini://BÜCHER.example/ä", "gemini://xn--bcher-kva.example/%C3%A4"),
    ("gemini://ex%41mple.com/", "gemini://example.com/"),  # escapes in a host decoded, as a browser's host parser does
    ("gemini://0x7f.1/", "gemini://127.0.0.1/"),
    ("gemini://[::1]:1965/x", "gemini://[::1]/x"),
    ("gemini://h.test/a/./b/../c#top", "gemini://h.test/a/c"),
    ("gemini://h.test/%7euser", "gemini://h.test/~user"),
    ("GEMINI://h.test/", "gemini://h.test/"),
])
def test_it_gives_gemini_urls_the_form_of_a_web_url(raw, expected):
    assert canon(raw) == expected


@pytest.mark.parametrize("href, expected", [
    ("../c.gmi", "gemini://cap.test/c.gmi"),
    ("//other.test/x", "gemini://other.test/x"),
    ("/", "gemini://cap.test/"),
    ("?q=1", "gemini://cap.test/a/b.gmi?q=1"),
    ("https://web.test/", "https://web.test/"),
])
def test_it_resolves_gemtext_links_against_a_capsule_page(href, expected):
    assert canon(href, "gemini://cap.test/a/b.gmi") == expected


@pytest.mark.parametrize("raw, reason", [
    ("gemini://user@h.test/", "credentials"),
    ("gemini:///x", "host"),
    ("gemini:h.test/x", "scheme"),  # no authority: not a URL a capsule can be asked for
    ("gemini://a..b/", "host"),
    ("gopher://h.test/", "scheme"),
])
def test_it_refuses_gemini_urls_no_capsule_can_answer(raw, reason):
    with pytest.raises(InvalidUrl) as exc:
        normalize(raw)
    assert exc.value.args[0] == reason


# --- admission filters ------------------------------------------------------------------

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


# --- the canonical form kept while it gets faster ------------------------------------------

def test_it_gives_every_golden_input_the_form_it_had():
    """12,000 links and rule-hitting strings (tests/frontier/normalize_cases.py), each with
    what normalize() made of it before its speed work: the same URL, or the same refusal."""
    from .normalize_cases import outcome, read_golden

    golden = read_golden()
    differ = [(href, base, want, got) for href, base, want in golden if (got := outcome(href, base)) != want]
    assert len(golden) == 12000
    assert not differ, f"{len(differ)} differ, e.g. {differ[:5]}"
