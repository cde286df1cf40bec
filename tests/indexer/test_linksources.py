"""Sitemaps and feeds read for their links (indexer/linksources.py), from bytes anyone wrote:
every format, the sitemaps.org limits, and hostile XML bounded. No database, no network."""

import gzip
import time

import pytest

from indexer import linksources
from indexer.linksources import FEED, SITEMAP, SITEMAP_INDEX, TEXT_SITEMAP, read_feed, read_sitemap
from indexer.parse import MAX_FEEDS, header_directives, parse_html

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*locs: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?><urlset {NS}>'
            + "".join(f"<url><loc>{loc}</loc><lastmod>2026-01-01</lastmod><priority>0.5</priority></url>"
                      for loc in locs) + "</urlset>").encode()


def test_a_urlset_lists_its_locs_trimmed_in_order():
    source = read_sitemap(urlset(" http://a.test/1 ", "http://a.test/2", "", "http://a.test/3"))
    assert (source.kind, source.links, source.truncated, source.malformed) == (
        SITEMAP, ["http://a.test/1", "http://a.test/2", "http://a.test/3"], False, False)


def test_a_sitemap_index_lists_sitemaps_and_not_the_loc_of_other_elements():
    body = (f"<sitemapindex {NS}><sitemap><loc>http://a.test/s1.xml</loc></sitemap>"
            "<sitemap><loc>http://a.test/s2.xml.gz</loc></sitemap><url><loc>http://a.test/page</loc></url>"
            "</sitemapindex>").encode()
    source = read_sitemap(body)
    assert (source.kind, source.links) == (SITEMAP_INDEX, ["http://a.test/s1.xml", "http://a.test/s2.xml.gz"])


def test_gzip_and_text_sitemaps_are_recognised_by_their_bytes():
    assert read_sitemap(gzip.compress(urlset("http://a.test/z"))).links == ["http://a.test/z"]
    text = read_sitemap(b"http://a.test/1\r\n\nhttps://a.test/2\n# comment\nftp://a.test/no\n/relative\n")
    assert (text.kind, text.links) == (TEXT_SITEMAP, ["http://a.test/1", "https://a.test/2"])
    assert read_sitemap(b"<html><body><a href='http://a.test/'>x</a></body></html>").kind == ""
    assert read_sitemap(b"").kind == ""


@pytest.mark.parametrize("body, links", [
    (b'<rss version="2.0"><channel><link>http://a.test/</link><item><link>http://a.test/p1</link></item>'
     b"<item><title>no link</title></item><item><link>/p2</link></item></channel></rss>",
     ["http://a.test/p1", "/p2"]),
    (b'<feed xmlns="http://www.w3.org/2005/Atom"><link href="http://a.test/"/><entry><link rel="self" href="/s"/>'
     b'<link href="http://a.test/e1"/></entry><entry><link rel="alternate" href="e2"/></entry></feed>',
     ["http://a.test/e1", "e2"]),
    (b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">'
     b"<channel><link>http://a.test/</link></channel><item><link>http://a.test/r1</link></item></rdf:RDF>",
     ["http://a.test/r1"]),
])
def test_feeds_list_their_items_links_not_the_channels(body, links):
    source = read_feed(body)
    assert (source.kind, source.links) == (FEED, links)


def test_the_sitemaps_org_url_limit_cuts_a_long_sitemap():
    source = read_sitemap(urlset(*(f"http://a.test/{n}" for n in range(120))), max_urls=100)
    assert (len(source.links), source.links[-1], source.truncated) == (100, "http://a.test/99", True)
    text = read_sitemap("".join(f"http://a.test/{n}\n" for n in range(120)).encode(), max_urls=100)
    assert (len(text.links), text.truncated) == (100, True)


def test_a_gzip_bomb_is_inflated_to_the_byte_cap_only():
    bomb = gzip.compress(b"<urlset>" + b" " * (64 << 20) + b"</urlset>", 9)
    started = time.monotonic()
    source = read_sitemap(bomb, max_bytes=1 << 20)
    assert (source.kind, source.links, source.truncated, source.malformed) == (SITEMAP, [], True, True)
    assert time.monotonic() - started < 10  # bounded: one megabyte inflated, not 64
    body, cut = linksources.gunzip(bomb, 1 << 20)
    assert (len(body), cut) == (1 << 20, True)
    assert linksources.gunzip(b"\x1f\x8b not really gzip", 100) == (b"", True)


def test_cut_off_xml_keeps_the_links_before_the_fault():
    body = urlset("http://a.test/1", "http://a.test/2")
    source = read_sitemap(body[:body.index(b"http://a.test/2") + 8])  # cut inside the second <loc>
    assert (source.links, source.malformed) == (["http://a.test/1"], True)


def test_billion_laughs_expands_nothing():
    entities = '<!ENTITY lol "lol">' + "".join(
        f'<!ENTITY lol{i} "{(f"&lol{i - 1};" if i > 1 else "&lol;") * 10}">' for i in range(1, 10))
    body = (f'<?xml version="1.0"?><!DOCTYPE urlset [{entities}]><urlset><url><loc>http://a.test/&lol9;</loc>'
            "</url></urlset>").encode()
    started = time.monotonic()
    source = read_sitemap(body)
    assert time.monotonic() - started < 5
    assert not any("lollol" in link for link in source.links)


def test_external_entities_are_neither_read_nor_fetched(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    body = (f'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY file SYSTEM "file://{secret}">'
            '<!ENTITY net SYSTEM "http://127.0.0.1:9/entity">]>'
            "<urlset><url><loc>http://a.test/&file;</loc></url><url><loc>&net;</loc></url>"
            "<url><loc>http://a.test/after</loc></url></urlset>").encode()
    source = read_sitemap(body)
    assert not any("SECRET" in link for link in source.links)
    assert "http://a.test/after" in source.links
    assert all(link.startswith("http://a.test/") for link in source.links)


def test_a_page_announces_its_feeds_unless_nofollow():
    head = ('<link rel="alternate" type="application/rss+xml" href="/feed.rss">'
            '<link rel="Alternate" type="application/atom+xml" href="atom.xml">'
            '<link rel="alternate" type="text/html" href="/fr/">'
            '<link rel="alternate" type="application/rss+xml" href="/feed.rss">'
            + "".join(f'<link rel="alternate" type="application/rss+xml" href="/f{n}">' for n in range(10)))
    page = parse_html(f"<html><head>{head}</head><body>x</body></html>".encode(), "http://a.test/")
    assert page.feeds == ["/feed.rss", "atom.xml", "/f0", "/f1"][:MAX_FEEDS]
    nofollow = parse_html(f'<html><head><meta name="robots" content="nofollow">{head}</head></html>'.encode(),
                          "http://a.test/")
    assert nofollow.feeds == []


@pytest.mark.parametrize("header, expected", [
    ("noindex", (True, False)),
    ("NoFollow", (False, True)),
    ("none", (True, True)),
    ("noindex, nofollow", (True, True)),
    ("otherbot: noindex", (False, False)),
    ("otherbot: noindex, nofollow", (False, False)),  # both are otherbot's
    ("ourbot: nofollow", (False, True)),
    ("crawlerweb: noindex", (True, False)),
    ("unavailable_after: 25 Jun 2030 15:00:00 PST, noindex", (True, False)),
    ("max-snippet: 20", (False, False)),
    ("", (False, False)),
])
def test_x_robots_tag_directives_for_every_crawler_and_ours(header, expected):
    assert header_directives(header, "ourbot") == expected


@pytest.mark.parametrize("text, expected", [
    ("2026-01-01", "2026-01-01T00:00:00+00:00"),  # a date: midnight UTC
    ("2026-01-01T10:30:00Z", "2026-01-01T10:30:00+00:00"),
    ("2026-01-01T10:30+02:00", "2026-01-01T08:30:00+00:00"),
    (" 2026-01-01T10:30:00.5-05:00 ", "2026-01-01T15:30:00.500000+00:00"),
    ("yesterday", None), ("2026", None), ("2026-13-01", None), ("", None), (None, None),
])
def test_a_lastmod_is_a_w3c_datetime_in_utc(text, expected):
    from datetime import datetime, timezone
    value = linksources.w3c_datetime(text)
    assert (datetime.fromtimestamp(value, timezone.utc).isoformat() if value is not None else None) == expected


def test_each_sitemap_link_keeps_its_lastmod_or_none():
    body = (f"<urlset {NS}><url><loc>http://a.test/1</loc><lastmod>2026-01-01</lastmod></url>"
            "<url><loc>http://a.test/2</loc></url><url><loc>http://a.test/3</loc><lastmod>soon</lastmod></url>"
            "</urlset>").encode()
    source = read_sitemap(body)
    assert source.links == ["http://a.test/1", "http://a.test/2", "http://a.test/3"]
    assert source.lastmods == [1767225600.0, None, None]
    assert read_sitemap(b"http://a.test/1\n").lastmods == [None]
