"""A crawl of the loopback Geminispace (webs/geminispace) with the embedded crawler, on both
databases: every page robots.txt lets us have is fetched, politely (the server's own log),
and found by search; ASCII art stays out of the index, code stays in; each special answer
gets the outcome the frontier gives its HTTP equal; certificates are trusted on first use
and a change is recorded; hostile capsules get bounded, recorded outcomes."""

import hashlib
import time
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from webs.geminispace import geminispace
from webs.geminispace.specials import PNG
from archive import warc, cdxj
from fetch import http
from crawl.runners import run_embedded
from frontier import service as frontier
from frontier.models import Host, Url
from frontier.scope import parse_spec
from indexer.service import search

# The protocol is the same on both databases: run once, on SQLite (tests/conftest.py).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.backend_free]

AGENTS = ("crawlerweb", "indexer", "archiver")  # our token and CRAWLER_GEMINI_ROBOTS_AGENTS
DELAY = 0.05


@pytest.fixture
def space(settings, tmp_path):
    settings.CRAWLER_WARC_DIR = str(tmp_path / "warc")
    settings.CRAWLER_DEFAULT_DELAY = DELAY
    warc.close()
    with geminispace(capsules=4, pages=20, seed=1, slow_delay=0.1, slow_down_seconds=1) as running:
        yield running
    warc.close()


def crawl(space):
    frontier.add_seeds(space.seeds, parse_spec("web"))
    stats = run_embedded(threads=4, max_seconds=120)
    warc.close()
    return stats


def test_every_page_robots_txt_allows_is_fetched_politely_and_found(space):
    crawl(space)
    report = space.audit(DELAY, agents=AGENTS, star="always")
    assert report["violations"] == 0, {k: report[k] for k in ("overlaps", "gap_violations", "slow_down_violations",
                                                              "robots_disallowed_fetched")}
    assert report["missing"] == [] and report["unexpected"] == []
    assert report["duplicate_fetches"] == {}
    words = space.words(AGENTS, star="always")
    assert len(words) > 60
    for url, word in words.items():
        results = search(word)
        assert [hit.url for hit in results.hits] == [url], word
    # The ASCII art is left out of the index (its alt text is kept); the code blocks stay in.
    pages = [space.page(url) for url in words]
    markers = [marker for page in pages for marker in page.art_markers]
    assert len(markers) > 20 and sum(search(marker).total for marker in markers) == 0
    code_words = [page.code_word for page in pages if page.code_word]
    assert code_words and all(search(word).total == 1 for word in code_words)
    # Snippets do not show the art either.
    assert not any(marker in hit.snippet for word in list(words.values())[:20] for hit in search(word).hits
                   for marker in markers)


def test_each_gemini_answer_gets_the_outcome_its_http_equal_gets(space):
    crawl(space)
    outcome = dict(Url.objects.filter(url__startswith="gemini://").values_list("url", "outcome"))
    special = space.special
    assert outcome[special["not-found"]] == "http_404"
    assert outcome[special["gone"]] == "http_410"
    assert outcome[special["input"]] == "http_428"
    assert outcome[special["client-certificate"]] == "http_401"
    assert outcome[special["bad-request"]] == "http_400"
    assert outcome[special["redirected"]] == "indexed"  # reached through a 31, through the frontier
    assert outcome[special["plain-text"]] == "indexed"
    assert outcome[special["slow-down"]] == "indexed"  # 44 SLOW DOWN first, then the page, later
    assert outcome[special["image"]] == "not_html"  # archived whole (its hash kept), not indexed
    assert Url.objects.get(url=special["image"]).content_hash == hashlib.sha256(PNG).hexdigest()
    states = dict(Url.objects.filter(url__startswith="gemini://").values_list("url", "state"))
    assert states[special["temporary-failure"]] == "backoff"  # tried again later, as after a 503
    # The WARC records hold the protocol's bytes, and the CDXJ their Gemini statuses.
    lines = [line for path in cdxj.sidecars(Path(warc.settings.CRAWLER_WARC_DIR)) for line in
             path.read_text().splitlines()]
    assert any('"status": "44"' in line for line in lines) and any('"status": "52"' in line for line in lines)
    for path in cdxj.warc_files(Path(warc.settings.CRAWLER_WARC_DIR)):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f, check_digests="raise"):
                if record.rec_type == "response" and record.rec_headers.get_header("WARC-Target-URI").startswith(
                        "gemini://"):
                    assert record.rec_headers.get_header("Content-Type") == warc.GEMINI_RESPONSE_TYPE
                    assert record.content_stream().read(3)[:2].isdigit()


def test_certificates_are_trusted_on_first_use_and_a_change_is_recorded_not_refused(space):
    crawl(space)
    host = Host.objects.get(origin=space.url("", 1).rstrip("/"))
    assert host.tls_fingerprint == space.fingerprint(1) and host.tls_not_after is not None
    assert host.tls_changed_early_at is None
    new = space.replace_certificate(1)
    page = space.url("/gemlog/1.gmi", 1)
    Url.objects.filter(url=page).update(next_fetch_at=Url.objects.get(url=page).created_at)
    frontier.release_due()
    Url.objects.filter(url=page).update(state="queued")
    run_embedded(threads=2, max_seconds=30)
    host.refresh_from_db()
    assert host.tls_fingerprint == new != host.tls_previous_fingerprint
    assert host.tls_changed_early_at is not None  # the old one had not expired: noted


@pytest.mark.parametrize("name, error", [
    ("long-header", "protocol"), ("endless-header", "protocol"), ("no-crlf", "timeout"),
    ("bad-status-one-digit", "protocol"), ("bad-status-letters", "protocol"), ("empty-answer", "protocol"),
])
def test_a_hostile_capsule_gets_a_bounded_recorded_outcome(space, settings, name, error):
    settings.CRAWLER_READ_TIMEOUT = 1.0
    settings.CRAWLER_TOTAL_DEADLINE = 2.0
    started = time.monotonic()
    result = http.fetch(space.hostile[name])
    assert (result.error, result.status) == (error, None), result.error_detail
    assert time.monotonic() - started < 4.0


def test_an_endless_body_and_a_hanging_handshake_end_within_their_limits(space, settings):
    settings.CRAWLER_TOTAL_DEADLINE = 1.5
    settings.CRAWLER_CONNECT_TIMEOUT = 1.0
    settings.CRAWLER_MAX_BODY_BYTES = 10_000_000
    started = time.monotonic()
    endless = http.fetch(space.hostile["endless-body"])
    assert endless.status == 200 and endless.error in ("deadline", "too_large", "timeout")
    hang = http.fetch(space.hostile["handshake-hang"])
    assert hang.error == "timeout" and hang.status is None
    assert time.monotonic() - started < 6.0
    settings.CRAWLER_MAX_BODY_BYTES = 50_000
    capped = http.fetch(space.hostile["endless-body"])
    assert capped.error == "too_large" and len(capped.body) == 50_000


def test_a_crawl_seeded_with_hostile_capsules_records_an_outcome_for_each_and_goes_on(space, settings):
    # The answers that fail at once; the ones that fail by waiting (no CRLF, a drip, a hanging
    # handshake) are timed above: in a crawl they are tried again later, as on the web.
    settings.CRAWLER_TOTAL_DEADLINE = 2.0
    settings.CRAWLER_MAX_BODY_BYTES = 200_000
    names = ("long-header", "endless-header", "bad-status-one-digit", "bad-status-letters", "empty-answer",
             "endless-body")
    hostile = {name: space.hostile[name] for name in names}
    frontier.add_seeds(list(hostile.values()))
    run_embedded(threads=4, max_seconds=30)
    rows = {url: (state, outcome, attempts) for url, state, outcome, attempts in
            Url.objects.filter(url__in=hostile.values()).values_list("url", "state", "outcome", "attempts")}
    assert {name: rows[url][1] for name, url in hostile.items()} == {
        "long-header": "protocol", "endless-header": "protocol", "bad-status-one-digit": "protocol",
        "bad-status-letters": "protocol", "empty-answer": "protocol", "endless-body": "too_large"}
    # A broken answer is retried a few times, then climbs the back-off ladder (as on the
    # web); a body past the cap settles the URL.
    assert {rows[hostile[name]][0] for name in names[:-1]} <= {"queued", "backoff"}
    assert rows[hostile["endless-body"]][0] == "failed"
