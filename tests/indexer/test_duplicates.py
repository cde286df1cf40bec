"""One text, one search result: near-duplicates across URLs (indexer/neardup.py) and
<link rel=canonical>, crawled over real HTTP on loopback, on both backends."""

import random

import pytest

from crawl.runners import run_embedded
from frontier import service
from frontier.models import Host, Url
from frontier.outcomes import FetchReport
from frontier.service import record_fetches, url_key
from indexer import neardup
from indexer.fingerprint import hamming
from indexer.models import Document, SimhashBlock
from indexer.service import prepare_page, remove_pages, search, settle_canonical_targets, store_pages

from ..loopback import QuietHandler, serving

pytestmark = [pytest.mark.crawl, pytest.mark.django_db(transaction=True)]

_rng = random.Random(7)
# Letters only: the fingerprint's normalization makes every run of digits one "0".
VOCABULARY = ["".join(_rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(_rng.randint(3, 9)))
              for _ in range(3000)]
TEXT = [_rng.choice(VOCABULARY) for _ in range(600)] + ["zanzibarquokka"]  # a word no other page has
NEAR = list(TEXT)
NEAR[300] = "onewordchanged"
OTHER = [_rng.choice(VOCABULARY) for _ in range(600)]
BROKEN = [_rng.choice(VOCABULARY) for _ in range(300)] + ["quokkabroken"]
SAME = [_rng.choice(VOCABULARY) for _ in range(300)] + ["wombatcanonical"]


def _with_table(seed: int) -> list[str]:
    """120 words of prose above a table of 150 version numbers: digits normalize to "0", so
    most of the page's bigrams are ("0", "0") (a SimHash weighted by counts put two such
    pages 0 bits apart: a release-notes index looked like every other page with numbers)."""
    rng = random.Random(seed)
    return ([rng.choice(VOCABULARY) for _ in range(120)]
            + [f"{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 20)}" for _ in range(150)])


SHORT = "a short page of ten words that says very little"


def html(words, head="", title="page") -> bytes:
    return f"<html><head><title>{title}</title>{head}</head><body><p>{' '.join(words)}</p></body></html>".encode()


def canonical(href: str) -> str:
    return f'<link rel="canonical" href="{href}">'


PAGES = {
    "/a": html(TEXT),
    "/a-copy": html(TEXT, head='<meta name="generator" content="another markup">'),  # other bytes, same text
    "/near": html(NEAR),  # one word of 601 changed
    "/b": html(OTHER),
    "/table1": html(_with_table(1)),  # unrelated prose, each above a table of numbers
    "/table2": html(_with_table(2)),
    "/short1": html(SHORT.split()),
    "/short2": html(SHORT.split(), head="<meta name=x>"),  # the same short text: too short to compare
    "/canon-src": html(OTHER[:300], canonical("/canon-target")),
    "/canon-target": html(OTHER[300:]),
    "/loop1": html(OTHER[:200], canonical("/loop2")),
    "/loop2": html(OTHER[200:400], canonical("/loop1")),
    "/away-canon": html(OTHER[400:], canonical("http://elsewhere.invalid/page")),  # out of scope: refused
    "/self-canon": html(OTHER[100:500], canonical("/self-canon")),
    "/broken-canon": html(BROKEN, canonical("/missing")),  # names a URL that answers 404
    # The same bytes under two URLs, both naming one of them: linked (and fetched) alias first.
    "/same-alias": html(SAME, canonical("/same-target")),
    "/same-target": html(SAME, canonical("/same-target")),
}


class Site(QuietHandler):
    def do_GET(self):
        if self.path == "/robots.txt":
            return self.send(404)
        if self.path == "/":
            links = "".join(f'<a href="{path}">x</a>' for path in PAGES)
            return self.send(200, f"<html><body>{links}</body></html>".encode(), [("Content-Type", "text/html")])
        body = PAGES.get(self.path)
        if body is None:
            return self.send(404)
        self.send(200, body, [("Content-Type", "text/html; charset=utf-8")])


@pytest.fixture
def crawled(settings):
    settings.CRAWLER_DEFAULT_DELAY = 0
    with serving(Site) as origin:
        service.add_seeds([origin + "/"])
        stats = run_embedded(threads=2, max_seconds=60)
    assert stats.errors == 0
    return origin


def outcome(origin, path) -> str:
    return Url.objects.get(url=origin + path).outcome


def test_a_text_under_two_urls_is_indexed_once(crawled):
    # Two copies of one text and a page one word of 601 apart (within the default 3 bits):
    # whichever of the three is stored first is indexed, the other two are its duplicates.
    alike = {path: outcome(crawled, path) for path in ("/a", "/a-copy", "/near")}
    assert sorted(alike.values()) == ["indexed", "near_duplicate", "near_duplicate"], alike
    original = Document.objects.get(url__url=crawled + next(p for p, o in alike.items() if o == "indexed"))
    for path, detail in alike.items():
        document = Document.objects.get(url__url=crawled + path)
        if detail == "near_duplicate":
            assert (document.indexed, document.duplicate_of_id) == (False, original.id)
    assert [hit.url for hit in search("zanzibarquokka")] == [original.page_url]
    # Unrelated and short texts are not compared away, nor pages alike only in their numbers.
    paths = ("/b", "/short1", "/short2", "/canon-target", "/table1", "/table2")
    assert {path: outcome(crawled, path) for path in paths} == dict.fromkeys(paths, "indexed")


def test_rel_canonical_admits_the_named_url_and_leaves_this_copy_out(crawled):
    assert outcome(crawled, "/canon-src") == "canonical_elsewhere"
    assert not Document.objects.get(url__url=crawled + "/canon-src").indexed
    assert Url.objects.get(url=crawled + "/canon-target").state == "fetched"
    # A loop is broken at its second page; a refused or self canonical leaves the page indexed.
    assert sorted([outcome(crawled, "/loop1"), outcome(crawled, "/loop2")]) == ["canonical_elsewhere", "indexed"]
    assert outcome(crawled, "/away-canon") == "indexed"
    assert outcome(crawled, "/self-canon") == "indexed"


def test_a_canonical_that_cannot_stand_for_the_page_leaves_it_indexed(crawled):
    # The named URL answered 404: the hint led nowhere, so the page is found as itself.
    document = Document.objects.get(url__url=crawled + "/broken-canon")
    assert (document.indexed, document.canonical_key) == (True, url_key(crawled + "/missing"))
    assert Url.objects.get(url=crawled + "/missing").state == "gone"
    assert [hit.url for hit in search("quokkabroken")] == [crawled + "/broken-canon"]
    # The same bytes under the alias and the URL it names: the named URL is the one indexed,
    # whichever was stored first (an alias left out claims no text).
    assert [hit.url for hit in search("wombatcanonical")] == [crawled + "/same-target"]
    assert outcome(crawled, "/same-target") == "indexed"


def test_a_page_indexed_while_its_canonical_was_gone_gives_way_when_it_comes_back():
    host = Host.objects.create(origin="http://site.test")
    alias, target = (Url.objects.create(url_key=url_key(u), url=u, host=host)
                     for u in ("http://site.test/alias", "http://site.test/"))
    body = html(SAME, canonical("http://site.test/"))

    def stored(url):
        return store_pages([prepare_page(url.id, url.url, 200, "text/html", "utf-8", body)])[url.id]

    assert stored(alias) == "canonical_elsewhere"  # the named URL is queued: it stands for the page
    assert settle_canonical_targets([target.id]) == 0
    record_fetches([(FetchReport(target.id, status=404), 0)])
    assert settle_canonical_targets([target.id]) == 1
    assert [hit.url for hit in search("wombatcanonical")] == [alias.url]
    # Back, with the same bytes: it takes the text's claim and the alias leaves the index.
    assert stored(target) == "indexed"
    assert [hit.url for hit in search("wombatcanonical")] == [target.url]
    assert not Document.objects.get(url=alias).indexed
    # The alias visited again while the named page is indexed: left out, as at first.
    assert stored(alias) == "canonical_elsewhere"
    assert Document.objects.filter(indexed=True).count() == 1


def test_bands_follow_the_index(crawled, settings):
    indexed = set(Document.objects.filter(indexed=True).values_list("id", flat=True))
    blocked = set(SimhashBlock.objects.values_list("document_id", flat=True))
    long_enough = {d.id for d in Document.objects.filter(indexed=True) if len(d.body.split()) >= 50}
    assert blocked == long_enough and blocked <= indexed
    assert SimhashBlock.objects.count() == 4 * len(blocked)  # CRAWLER_NEAR_DUPLICATE_BITS 3: four blocks a page
    # Leaving the index takes the blocks along; reindex rebuilds them.
    gone = Document.objects.get(url__url=crawled + "/b")
    assert remove_pages([gone.url_id]) == 1
    assert not SimhashBlock.objects.filter(document_id=gone.id).exists()
    assert neardup.rebuild() == Document.objects.filter(indexed=True).exclude(url__simhash=None).count()


def test_with_0_bits_only_the_same_text_is_a_duplicate(settings):
    settings.CRAWLER_NEAR_DUPLICATE_BITS = 0
    settings.CRAWLER_DEFAULT_DELAY = 0
    with serving(Site) as origin:
        service.add_seeds([origin + "/"])
        run_embedded(threads=2, max_seconds=60)
    assert sorted(outcome(origin, p) for p in ("/a", "/a-copy", "/near")) == ["indexed", "indexed", "near_duplicate"]
    assert outcome(origin, "/near") == "indexed"
    blocked = set(SimhashBlock.objects.values_list("document_id", flat=True))
    assert SimhashBlock.objects.count() == len(blocked)  # one block a page: the SimHash itself


@pytest.mark.parametrize("bits", [1, 2, 3, 4])
def test_two_simhashes_within_the_bits_share_a_band(bits):
    rng = random.Random(bits)
    for _ in range(2000):
        a = rng.getrandbits(64)
        b = a
        for bit in rng.sample(range(64), rng.randint(0, bits)):
            b ^= 1 << bit
        assert hamming(a, b) <= bits
        assert set(neardup.blocks(a, bits)) & set(neardup.blocks(b, bits))
    assert len(neardup.blocks(rng.getrandbits(64), bits)) == bits + 1
