import pytest

from frontier.normalize import normalize
from indexer.parse import parse_html


def resolved(page):
    """The links as the frontier admits them: resolved against the page's base, canonical."""
    return [normalize(link, page.base).url for link in page.links]

PAGE = b"""<!doctype html><html><head><title> The  Title </title>
<meta name="robots" content="index, follow"><link rel="canonical" href="/canon.html">
<style>.x{color:red}</style><script>var hidden = "scriptword";</script></head>
<body><h1>Main heading</h1><p>First<b>para</b></p><div>second block</div>
<a href="/a.html#frag">a</a><a href="b.html">b</a><a rel="nofollow" href="/nf.html">nf</a>
<a href="http://other.test/c">c</a><a href="/a.html">dup</a><area href="/map.html">
<a>no href</a></body></html>"""


def test_it_extracts_title_headings_text_and_links():
    page = parse_html(PAGE, "http://h.test/dir/page.html")
    assert page.title == "The Title"
    assert page.headings == "Main heading"
    defines = parse_html(b"<h2>API</h2><dl><dt>zipfile.Path.read_text()</dt><dd>Reads text.</dd></dl>", "http://h.test/")
    assert defines.headings == "API · zipfile.Path.read_text()"  # a definition's term is what the page is about
    assert "First para" not in page.text and "Firstpara" in page.text
    assert "second block" in page.text and "Main heading" in page.text
    assert "scriptword" not in page.text and "color" not in page.text
    assert page.links == ["/a.html#frag", "b.html", "http://other.test/c", "/a.html", "/map.html"]
    assert page.base == "http://h.test/dir/page.html"
    assert resolved(page) == [
        "http://h.test/a.html", "http://h.test/dir/b.html", "http://other.test/c",
        "http://h.test/a.html", "http://h.test/map.html",
    ]
    assert page.canonical == "http://h.test/canon.html"
    assert not page.noindex and not page.nofollow


def test_a_summary_the_text_lacks_is_searchable_with_the_headings():
    drawn = parse_html(b'<html><head><title>Socks</title><meta property="og:description" content="Social text">'
                       b'<meta name="description" content="  Engineered for\n comfort, designed to stand out. ">'
                       b'</head><body><div id="app"></div><script>render()</script></body></html>', "http://h.test/")
    assert drawn.text == ""
    assert drawn.headings == "Engineered for comfort, designed to stand out."  # the description before og:'s
    social = parse_html(b'<head><meta property="og:description" content="Only the social one">'
                        b'<meta name="description" content=" "></head><h1>T</h1>',
                        "http://h.test/")
    assert social.headings == "Only the social one · T"
    # Said in the text already: not said twice.
    written = parse_html(b'<head><meta name="description" content="A page about knots."></head>'
                         b'<body><h1>Knots</h1><p>A page about knots. Reef, bowline.</p></body>', "http://h.test/")
    assert written.headings == "Knots"
    long = parse_html(b'<head><meta name="description" content="' + b"word " * 400 + b'"></head>', "http://h.test/")
    assert len(long.headings) == 500
    # A page with words enough of its own is found by them, not by a summary written apart.
    article = parse_html(b'<head><meta name="description" content="A summary apart."></head><body><h1>Knots</h1>'
                         b'<nav>' + b"<a href=/x>menu entry</a>" * 100 + b'</nav><p>' + b"reef bowline " * 60 +
                         b'</p></body>', "http://h.test/")
    assert article.headings == "Knots"
    thin = parse_html(b'<head><meta name="description" content="A summary apart."></head><body><h1>Knots</h1>'
                      b'<nav>' + b"<a href=/x>menu entry</a>" * 10 + b'</nav><p>' + b"reef bowline " * 40 +
                      b'</p></body>', "http://h.test/")
    assert thin.headings == "A summary apart. · Knots"  # its menu is not its text


def test_it_resolves_links_against_base_href():
    page = parse_html(b'<html><head><base href="/p/"></head><body><a href="8.html">x</a></body></html>',
                      "http://h.test/base/index.html")
    assert page.base == "http://h.test/p/"
    assert resolved(page) == ["http://h.test/p/8.html"]


def test_it_skips_links_to_a_place_in_the_page_and_keeps_an_invalid_base_out():
    page = parse_html(b'<a href="#top">top</a><a href="#">x</a><a href="x.html">x</a>', "http://h.test/d/")
    assert page.links == ["x.html"]
    bad_base = parse_html(b'<base href="http://[oops/"><a href="x.html">x</a>', "http://h.test/d/")
    assert bad_base.base == "http://h.test/d/"


def test_it_honours_meta_robots():
    noindex = parse_html(b'<meta name="robots" content="NOINDEX"><a href="/x">x</a>', "http://h.test/")
    assert noindex.noindex and not noindex.nofollow and resolved(noindex) == ["http://h.test/x"]
    nofollow = parse_html(b'<meta name="robots" content="nofollow"><a href="/x">x</a>', "http://h.test/")
    assert nofollow.nofollow and nofollow.links == []
    none = parse_html(b'<meta name="robots" content="none"><a href="/x">x</a>', "http://h.test/")
    assert none.noindex and none.nofollow


def test_it_decodes_with_header_then_meta_then_utf8():
    latin = "<html><head><title>caf\u00e9</title></head><body>\u00fcber</body></html>".encode("latin-1")
    assert parse_html(latin, "http://h.test/", "iso-8859-1").title == "caf\u00e9"
    meta = b'<meta charset="iso-8859-1">' + latin
    assert parse_html(meta, "http://h.test/").title == "caf\u00e9"
    # a header that says UTF-8 over bytes that are not: the detector reads them (issue 53)
    lying = parse_html(latin, "http://h.test/", "utf-8")
    assert (lying.title, lying.encoding, lying.encoding_source) == ("caf\u00e9", "windows-1252", "detected")
    unknown = parse_html(b"<title>plain</title>", "http://h.test/", "no-such-charset")
    assert (unknown.title, unknown.encoding, unknown.encoding_source) == ("plain", "UTF-8", "default")


def test_it_caps_links_and_text():
    body = b"<body>" + b"".join(b'<a href="/l%d">w%d</a>' % (i, i) for i in range(500)) + b"</body>"
    page = parse_html(body, "http://h.test/", max_links=100, max_chars=1000)
    assert len(page.links) == 100 and len(page.text) <= 1000


def test_it_survives_empty_and_garbage_input():
    assert parse_html(b"", "http://h.test/").links == []
    assert parse_html(b"\x00\xff\xfe garbage <<<>>>", "http://h.test/").title == ""
    assert parse_html(b'<?xml version="1.0" encoding="utf-8"?><html><title>x</title></html>',
                      "http://h.test/").title == "x"


@pytest.mark.parametrize("body", [b"<p>x</p>&#1;y", b"<p>x</p>\x0by", b"<body>" + b"a" * 2000 + b"<p>x</p>\x01y</body>"])
def test_it_survives_control_characters_after_a_block(body):
    """A C0 control character right after a block element (an entity, or a raw byte past
    the binary sniff's first KB) is text the parser keeps but lxml refuses to be given back:
    it becomes a space instead of failing the page."""
    assert parse_html(body, "http://h.test/").text.endswith("x y")


# -- the page's furniture, for snippets (issue 25 item 7) -----------------------------------------

FURNISHED = (b"<html><head><title>Lighthouses \xe2\x80\x94 Coast guide</title></head><body>"
             b"<header><a href='/'>Coast guide</a> <form role=search><input name=q></form></header>"
             b"<nav><ul><li><a href='/'>Home</a><li><a href='/ships'>Ships</a><li><a href='/lights'>Lights</a></ul></nav>"
             b"<main><article><header><h1>Lighthouses</h1></header><p>A lighthouse guides ships at night.</p>"
             b"<aside>See also: buoys</aside><footer>Written by the keeper</footer></article></main>"
             b"<div class=sidebar role=navigation>Contents: lights, fog</div>"
             b"<footer>\xc2\xa9 2026 Coast guide</footer></body></html>")


def furniture(page):
    return [page.text[a:b].strip() for a, b in page.boilerplate]


def test_it_finds_the_pages_furniture_and_keeps_its_text_whole():
    page = parse_html(FURNISHED, "http://coast.test/lights")
    assert page.text == ("Coast guide Home Ships Lights Lighthouses A lighthouse guides ships at night. "
                         "See also: buoys Written by the keeper Contents: lights, fog \u00a9 2026 Coast guide")
    # The page's banner, menu, sidebar and footer; an article's own header and footer are
    # its content; an aside is furniture wherever it is.
    # Ranges that meet are one.
    assert furniture(page) == ["Coast guide Home Ships Lights", "See also: buoys",
                               "Contents: lights, fog \u00a9 2026 Coast guide"]


@pytest.mark.parametrize("html", [
    b"<body><nav><header>inner</header><nav>deeper</nav>menu</nav>text</body>",  # nested: the outer one once
    b"<body><nav role=navigation>menu</nav>text</body>",  # a tag and a role: once
    b"<body><nav></nav>text<aside> </aside></body>",  # empty
    b"<body>text<nav>menu",  # unclosed, at the end
])
def test_furniture_marks_never_change_the_text(html):
    from indexer import parse

    page = parse_html(html, "http://x.test/")
    real, parse._mark_furniture = parse._mark_furniture, lambda doc, roles=True, body=None: []
    try:
        assert page.text == parse_html(html, "http://x.test/").text
    finally:
        parse._mark_furniture = real
    assert "\ufdd0" not in page.text and "\ufdd1" not in page.text
    assert all(0 <= a < b <= len(page.text) for a, b in page.boilerplate)
    assert len(page.boilerplate) <= 1 and "text" not in furniture(page)


def test_a_page_that_carries_the_marker_characters_loses_them_only():
    page = parse_html("<body><p>a\ufdd0b\ufdd1c</p><nav>menu</nav></body>".encode(), "http://x.test/")
    assert page.text == "abc menu" and page.boilerplate == []
