"""Tests of the changing web (webs/changeweb): the pure schedule, content and truth, then
the server over real HTTP on loopback (127.0.3.x, a free port).  Every network call has a
timeout and every wait is bounded."""
import json
import math
import re
import signal
import statistics
import subprocess
import sys
import time
from email.utils import formatdate
from pathlib import Path

import pytest
import requests

from webs.changeweb.model import (
    FAST_RATES,
    SLOW_RATES,
    SPONSORS,
    ChangeConfig,
    ChangeWeb,
    marker,
    poisson_events,
    sponsor,
    version_in_text,
)
from webs.changeweb.runner import run_server
from webs.changeweb.truth import Truth
from indexer.parse import parse_html

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 5
WEB = ChangeWeb(ChangeConfig())
EPOCH = 1_000_000.0


def _masked(text: str) -> str:
    """Text as the crawler compares it: digit runs masked."""
    return re.sub(r"[0-9]+", "0", text)


def _pages(web, *, validators=None, noise=None, rates=(0.0, math.inf)):
    """(host, page) pairs of `web` with the given properties, in order."""
    low, high = rates
    return [(h, p) for h in range(web.config.hosts) for p in range(web.config.pages_per_host)
            if (validators is None or web.has_validators(h) == validators)
            and (noise is None or web.is_noise(h, p) == noise)
            and low <= web.rate(h, p) <= high]


# ------------------------------------------------------------------ schedule
def test_the_schedule_is_a_pure_function_of_the_seed():
    again, other = ChangeWeb(ChangeConfig()), ChangeWeb(ChangeConfig(seed=2))
    pairs = _pages(WEB)
    assert [WEB.events(*p) for p in pairs] == [again.events(*p) for p in pairs]
    assert (WEB.validator_hosts, WEB.noise_pages) == (again.validator_hosts, again.noise_pages)
    assert [WEB.rate(*p) for p in pairs] != [other.rate(*p) for p in pairs]
    assert [WEB.events(*p) for p in pairs] != [other.events(*p) for p in pairs]


def test_exact_shares_of_validator_hosts_and_noise_pages():
    assert len(WEB.validator_hosts) == 6                      # 0.75 of 8
    assert len(WEB.noise_pages) == 20                         # 0.1 of 200
    assert all(WEB.rate(h, p) == 0 for h, p in WEB.noise_pages)


def test_rates_follow_the_spread():
    web = ChangeWeb(ChangeConfig(hosts=40, noise_fraction=0))
    rates = [web.rate(h, p) for h, p in _pages(web)]
    never = sum(r == 0 for r in rates) / len(rates)
    fast = [r for r in rates if r > SLOW_RATES[1]]
    slow = [r for r in rates if 0 < r <= SLOW_RATES[1]]
    assert 0.06 <= never <= 0.14 and 0.06 <= len(fast) / len(rates) <= 0.14
    assert all(FAST_RATES[0] <= r <= FAST_RATES[1] for r in fast)
    assert min(slow) >= SLOW_RATES[0]
    # log-uniform: the mean log-rate is the middle of the log range (sd of the mean ~0.08)
    middle = sum(math.log(r) for r in SLOW_RATES) / 2
    assert abs(statistics.mean(math.log(r) for r in slow) - middle) < 0.4


@pytest.mark.parametrize("rate", [0.05, 1.0, 8.0, 36.0])
def test_event_counts_over_the_horizon_match_the_rate(rate):
    horizon, keys = 400.0, 40
    total = sum(len(poisson_events(rate, horizon, f"test:{rate}:{k}")) for k in range(keys))
    expected = rate * horizon * keys
    assert abs(total - expected) <= 5 * math.sqrt(expected)   # 5 Poisson standard deviations


def test_changes_are_poisson_not_regular():
    """Counts per simulated day have variance == mean (regular spacing would give ~0)."""
    counts = []
    for k in range(10):
        times = poisson_events(2.0, 400.0, f"dispersion:{k}")
        per_day = [0] * 400
        for t in times:
            per_day[min(int(t), 399)] += 1
        counts += per_day
    assert 0.85 <= statistics.pvariance(counts) / statistics.mean(counts) <= 1.15


def test_every_page_of_the_web_changes_about_as_often_as_its_rate():
    horizon = WEB.config.horizon_days
    for h, p in _pages(WEB):
        expected = WEB.rate(h, p) * horizon
        assert abs(len(WEB.events(h, p)) - expected) <= 6 * math.sqrt(expected) + 3, (h, p)
        assert all(0 < t <= horizon for t in WEB.events(h, p))


def test_rate_zero_pages_never_change():
    still = _pages(WEB, rates=(0, 0))
    assert len(still) > 20                                    # noise pages and never-changing ones
    for h, p in still:
        assert WEB.events(h, p) == ()
        assert WEB.version(h, p, 10 * WEB.config.horizon_days) == 0
        assert WEB.last_change_day(h, p, 1e6) == 0.0


def test_version_counts_the_changes_up_to_a_moment():
    h, p = _pages(WEB, rates=(1.0, 8.0))[0]
    events = WEB.events(h, p)
    assert WEB.version(h, p, -1.0) == 0
    for i, t in enumerate(events[:20]):
        assert WEB.version(h, p, t) == i + 1
        assert WEB.version(h, p, math.nextafter(t, 0)) == i
        assert WEB.last_change_day(h, p, t + 1e-9) == t
    assert WEB.version(h, p, 1e9) == len(events)              # frozen after the horizon


def test_clock():
    config = ChangeConfig(day_seconds=2.0)
    assert config.sim_day(EPOCH + 5.0, EPOCH) == 2.5
    assert config.wall_time(2.5, EPOCH) == EPOCH + 5.0


def test_host_addresses_do_not_collide_with_the_sample_web():
    assert ChangeConfig(port=8400).netloc(0) == "127.0.3.1:8400"
    assert WEB.hosts[-1] == "127.0.3.8:8400"
    assert ChangeConfig(hosts=300).netloc(250) == "127.0.4.1:8400"


# ------------------------------------------------------------------ content
def test_markers_round_trip_and_are_unambiguous():
    for host, page, version in [(0, 0, 0), (7, 24, 1), (69, 70, 4899), (4999, 10**6, 123456)]:
        word = marker(host, page, version)
        assert version_in_text(f"some words {word} more words") == (host, page, version)
    assert version_in_text("no marker here") is None
    assert version_in_text(f"{marker(0, 1, 2)} and {marker(0, 1, 3)}") is None
    assert version_in_text("qvbabaqz") is None                # two numbers, not three
    assert not any("q" in word for word in WEB.prose.words)


def test_a_new_version_changes_words_and_keeps_the_stable_part():
    h, p = _pages(WEB, noise=False)[0]
    url = WEB.url(h, p)
    one, two = (parse_html(WEB.page_html(h, p, v).encode(), url) for v in (4, 5))
    assert one.title == two.title
    words_one, words_two = set(one.text.split()), set(two.text.split())
    assert _masked(one.text) != _masked(two.text)
    assert len(words_one ^ words_two) >= 20                    # new prose, not one word
    stable = WEB.layout(h, p).stable[0]
    assert stable in one.text and stable in two.text
    assert version_in_text(one.text) == (h, p, 4) and version_in_text(two.text) == (h, p, 5)
    assert 300 <= len(one.text.split()) <= 1000


def _unsponsored(text):
    return re.sub(r"Sponsored by \w+", "", text)


def test_noise_pages_differ_where_the_crawler_does_not_look_and_in_one_sponsor_word():
    h, p = sorted(WEB.noise_pages)[0]
    first = WEB.page_html(h, p, 0, 10.25, "aaaa1111")
    second = WEB.page_html(h, p, 0, 11.75, "bbbb2222")
    assert first != second
    assert 'content="aaaa1111"' in first and "Generated 2026-01-11 06:00:00" in first
    one, two = parse_html(first.encode(), "http://x/"), parse_html(second.encode(), "http://x/")
    assert "aaaa1111" not in one.text
    # and a one-word sponsor line that rotates with the response (the same token, the same word)
    assert f"Sponsored by {sponsor('aaaa1111')}" in one.text and f"Sponsored by {sponsor('bbbb2222')}" in two.text
    assert sponsor("aaaa1111") != sponsor("bbbb2222") and {sponsor(f"{i:08x}") for i in range(200)} == set(SPONSORS)
    assert one.text != two.text and _masked(_unsponsored(one.text)) == _masked(_unsponsored(two.text))


# ------------------------------------------------------------------ HTTP semantics (pure)
def _changing_page(web):
    """A validator-host page whose first two changes are more than 2 real seconds apart."""
    for h, p in _pages(web, validators=True, noise=False, rates=(0.2, 8.0)):
        events = web.events(h, p)
        if len(events) >= 2 and (events[1] - events[0]) * web.config.day_seconds > 2:
            return h, p
    raise AssertionError("no such page")


def test_conditional_requests():
    config = WEB.config
    h, p = _changing_page(WEB)
    path = f"/page/{p}"
    first, second = (config.wall_time(t, EPOCH) for t in WEB.events(h, p)[:2])
    now = first + 1.0
    plain = WEB.respond(h, path, {}, now, EPOCH)
    etag, modified = dict(plain.headers)["ETag"], dict(plain.headers)["Last-Modified"]
    assert plain.status == 200 and plain.version == 1 and etag == f'"{h}-{p}-1"'
    assert modified == formatdate(first, usegmt=True)

    def status(headers, at=now):
        return WEB.respond(h, path, headers, at, EPOCH).status

    assert status({"if-none-match": etag}) == 304
    assert status({"if-none-match": f'"x", W/{etag}'}) == 304  # weak comparison, lists
    assert status({"if-none-match": "*"}) == 304
    assert status({"if-none-match": f'"{h}-{p}-0"'}) == 200
    # If-None-Match wins over If-Modified-Since (RFC 9110 13.2.2)
    assert status({"if-none-match": '"nope"', "if-modified-since": modified}) == 200
    assert status({"if-none-match": etag, "if-modified-since": formatdate(EPOCH, usegmt=True)}) == 304
    assert status({"if-modified-since": modified}) == 304
    assert status({"if-modified-since": formatdate(first + 3600, usegmt=True)}) == 304
    assert status({"if-modified-since": formatdate(first - 1, usegmt=True)}) == 200
    assert status({"if-modified-since": "yesterday"}) == 200
    # after the next change the old validators no longer match
    later = second + 0.5
    assert status({"if-none-match": etag}, later) == 200
    assert status({"if-modified-since": modified}, later) == 200
    answer = WEB.respond(h, path, {"if-none-match": etag}, later, EPOCH)
    assert dict(answer.headers)["ETag"] == f'"{h}-{p}-2"' and answer.version == 2
    not_modified = WEB.respond(h, path, {"if-none-match": etag}, now, EPOCH)
    assert not_modified.body == b"" and dict(not_modified.headers) == {"ETag": etag, "Last-Modified": modified}


def test_unchanged_pages_and_the_index_are_modified_at_the_epoch():
    h, p = _pages(WEB, validators=True, noise=False, rates=(0, 0))[0]
    for path, etag in ((f"/page/{p}", f'"{h}-{p}-0"'), ("/", f'"{h}-index-0"')):
        headers = dict(WEB.respond(h, path, {}, EPOCH + 500, EPOCH).headers)
        assert headers["ETag"] == etag and headers["Last-Modified"] == formatdate(EPOCH, usegmt=True)


def test_hosts_without_validators_always_answer_200():
    h, p = _pages(WEB, validators=False)[0]
    for headers in ({}, {"if-none-match": "*"}, {"if-modified-since": formatdate(EPOCH + 1e6, usegmt=True)}):
        answer = WEB.respond(h, f"/page/{p}", headers, EPOCH + 10, EPOCH)
        assert answer.status == 200 and answer.body
        assert not {"ETag", "Last-Modified"} & set(dict(answer.headers))


def test_unknown_paths_are_404():
    for path in ("/page/25", "/page/01", "/page/1?x=1", "/other"):
        assert WEB.respond(0, path, {}, EPOCH, EPOCH).status == 404


# ------------------------------------------------------------------ truth
def test_freshness_and_age():
    truth = Truth(WEB.config, EPOCH)
    h, p = _changing_page(WEB)
    url = WEB.url(h, p)
    events = WEB.events(h, p)
    now = WEB.config.wall_time(events[2], EPOCH) + 0.5
    assert truth.live_version(url, now) == 3
    assert truth.page_age(url, 3, now) == 0.0
    assert truth.page_age(url, 1, now) == pytest.approx(now - WEB.config.wall_time(events[1], EPOCH))
    assert truth.page_age(url, None, now) == now - EPOCH
    with pytest.raises(ValueError):
        truth.page_age(url, 4, now)
    live = {page.url: truth.live_version(page.url, now) for page in truth.pages()}
    assert len(live) == 200
    assert truth.freshness(live, now) == 1.0 and truth.age(live, now) == 0.0
    assert truth.freshness({}, now) == 0.0 and truth.age({}, now) == now - EPOCH
    stale = dict(live, **{url: 1})
    assert truth.freshness(stale, now) == pytest.approx(199 / 200)
    assert truth.age(stale, now) == pytest.approx(truth.page_age(url, 1, now) / 200)


# ------------------------------------------------------------------ the server
@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with run_server(tmp_path_factory.mktemp("changeweb")) as server:
        yield server.truth


@pytest.fixture
def client():
    with requests.Session() as session:
        session.trust_env = False          # never route loopback through a proxy
        yield session


def test_robots_and_the_index(served, client):
    web = served.web
    answer = client.get(f"http://{web.hosts[1]}/robots.txt", timeout=TIMEOUT)
    assert answer.status_code == 200 and answer.text == "User-agent: *\nAllow: /\nCrawl-delay: 0.02\n"
    index = client.get(f"http://{web.hosts[1]}/", timeout=TIMEOUT)
    links = parse_html(index.content, index.url).links
    assert links == [f"/page/{k}" for k in range(web.config.pages_per_host)]
    assert index.content == client.get(index.url, timeout=TIMEOUT).content


def test_served_versions_round_trip_through_the_extractor(served, client):
    web, changed = served.web, 0
    for truth_page in served.pages():
        url = truth_page.url
        before = served.live_version(url, time.time())
        answer = client.get(url, timeout=TIMEOUT)
        after = served.live_version(url, time.time())
        assert answer.status_code == 200
        host, page, version = version_in_text(parse_html(answer.content, url).text)
        assert (host, page) == (truth_page.host, truth_page.page) and before <= version <= after
        if truth_page.validators:
            assert answer.headers["ETag"] == f'"{host}-{page}-{version}"'
        else:
            assert "ETag" not in answer.headers and "Last-Modified" not in answer.headers
        changed += version > 0
    assert changed >= 5, "some pages must have changed since the epoch"
    assert web.hosts == [f"127.0.3.{i + 1}:{web.config.port}" for i in range(8)]


def test_conditional_get_over_http(served, client):
    web = served.web
    h, p = _pages(web, validators=True, noise=False, rates=(0, 0))[0]
    url = web.url(h, p)
    first = client.get(url, timeout=TIMEOUT)
    etag, modified = first.headers["ETag"], first.headers["Last-Modified"]
    again = client.get(url, headers={"If-None-Match": etag}, timeout=TIMEOUT)
    assert again.status_code == 304 and again.content == b"" and again.headers["ETag"] == etag
    assert client.get(url, headers={"If-None-Match": '"0-0-999"'}, timeout=TIMEOUT).status_code == 200
    assert client.get(url, headers={"If-Modified-Since": modified}, timeout=TIMEOUT).status_code == 304
    earlier = formatdate(served.epoch - 60, usegmt=True)
    assert client.get(url, headers={"If-Modified-Since": earlier}, timeout=TIMEOUT).status_code == 200


def test_a_changed_page_no_longer_matches_its_old_etag(served, client):
    web = served.web
    h, p = _pages(web, validators=True, noise=False, rates=FAST_RATES)[0]
    url = web.url(h, p)
    old = client.get(url, timeout=TIMEOUT).headers["ETag"]
    version = int(old.strip('"').split("-")[2])
    deadline = time.monotonic() + 3
    while served.live_version(url, time.time()) <= version:
        assert time.monotonic() < deadline, "a fast page did not change within 3 s"
        time.sleep(0.01)
    answer = client.get(url, headers={"If-None-Match": old}, timeout=TIMEOUT)
    assert answer.status_code == 200
    assert int(answer.headers["ETag"].strip('"').split("-")[2]) > version


def test_hosts_without_validators_answer_200_over_http(served, client):
    h, p = _pages(served.web, validators=False)[0]
    answer = client.get(served.web.url(h, p), headers={"If-None-Match": "*"}, timeout=TIMEOUT)
    assert answer.status_code == 200 and "ETag" not in answer.headers


def test_noise_pages_over_http(served, client):
    web = served.web
    h, p = sorted(page for page in web.noise_pages if web.has_validators(page[0]))[0]
    url = web.url(h, p)
    one, two = (client.get(url, timeout=TIMEOUT) for _ in range(2))
    assert one.content != two.content
    tokens = [re.search(rb'name="csrf-token" content="([0-9a-f]+)"', r.content)[1] for r in (one, two)]
    assert tokens[0] != tokens[1]
    text_one, text_two = (parse_html(r.content, url).text for r in (one, two))
    assert version_in_text(text_one) == version_in_text(text_two) == (h, p, 0)
    assert _masked(_unsponsored(text_one)) == _masked(_unsponsored(text_two))
    assert one.headers["ETag"] == two.headers["ETag"] == f'"{h}-{p}-0"'
    assert client.get(url, headers={"If-None-Match": one.headers["ETag"]}, timeout=TIMEOUT).status_code == 304


def test_every_request_is_logged_and_sigterm_flushes_the_log(tmp_path, client):
    with run_server(tmp_path, "--hosts", "2", "--pages", "5", "--latency", "0.01") as server:
        web = server.truth.web
        base = f"http://{web.hosts[0]}"
        page_path = f"/page/{sorted(_pages(web, noise=False))[0][1]}"
        sent = [("GET", "/robots.txt", 200, -1), ("GET", "/", 200, -1), ("GET", "/nope", 404, -1)]
        for _, path, status, _ in sent:
            assert client.get(base + path, timeout=TIMEOUT).status_code == status
        answer = client.get(base + page_path, timeout=TIMEOUT)
        version = version_in_text(parse_html(answer.content, answer.url).text)[2]
        sent.append(("GET", page_path, 200, version))
        head = client.head(base + page_path, timeout=TIMEOUT)
        assert head.status_code == 200 and head.content == b""
        sent.append(("HEAD", page_path, 200, None))
        assert client.post(base + "/", timeout=TIMEOUT).status_code == 405
        sent.append(("POST", "/", 405, -1))
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(timeout=5) == 0
    rows = [line.split("\t") for line in server.log.read_text().splitlines()]
    assert len(rows) == len(sent)
    for row, (method, path, status, version) in zip(rows, sent):
        assert len(row) == 8 and row[2] == web.hosts[0] and row[3:6] == [method, path, str(status)]
        assert float(row[0]) + 0.009 <= float(row[1])           # the latency was waited out
        if version is not None:
            assert int(row[7]) == version
    assert int(rows[4][7]) >= 0
    assert len({row[6] for row in rows}) < len(rows)          # keep-alive: connections reused


def test_the_info_file_and_the_truth_command(tmp_path):
    with run_server(tmp_path, "--hosts", "3", "--pages", "4", "--epoch", "1234.5") as server:
        info = json.loads(server.info.read_text())
        out = subprocess.run([sys.executable, "-m", "webs.changeweb", "truth", "--info", str(server.info)],
                             cwd=ROOT, capture_output=True, text=True, timeout=20, check=True).stdout
    assert info["epoch"] == 1234.5 and info["config"]["port"] > 0
    assert info["config"]["hosts"] == 3 and info["hosts"][2] == f"127.0.3.3:{info['config']['port']}"
    lines = [json.loads(line) for line in out.splitlines()]
    expected = [{"url": p.url, "rate_per_day": p.rate_per_day, "validators": p.validators, "noise": p.noise}
                for p in server.truth.pages()]
    assert lines == expected and len(lines) == 12
    assert lines[0]["url"] == f"http://127.0.3.1:{info['config']['port']}/page/0"


def test_the_realtime_profile_has_pages_faster_than_any_revisit_interval():
    """Issue 51's web: 10 % noise, 15 % never changing, the rest from one change per 12
    minutes to one every 2 seconds (rates per day of a web served on the real clock)."""
    from webs.changeweb.model import REALTIME_RATES
    web = ChangeWeb(ChangeConfig(hosts=40, pages_per_host=25, day_seconds=86400.0, horizon_days=0.01,
                                 profile="realtime"))
    pages = [(h, p) for h in range(40) for p in range(25)]
    rates = [web.rate(h, p) for h, p in pages]
    noise = sum(web.is_noise(h, p) for h, p in pages)
    never = sum(1 for (h, p), r in zip(pages, rates) if r == 0 and not web.is_noise(h, p))
    changing = [r for r in rates if r > 0]
    assert noise == 100 and 0.11 < never / 1000 < 0.19
    assert REALTIME_RATES[0] <= min(changing) and max(changing) <= REALTIME_RATES[1]
    assert sum(1 for r in changing if r > 86400 / 10) > 0.15 * len(changing)  # faster than a 10 s revisit
    assert "--profile" in ChangeConfig(profile="realtime").to_argv()
    with pytest.raises(ValueError):
        ChangeConfig(profile="hourly")
    # the default profile is unchanged by the new one
    assert ChangeWeb(ChangeConfig(seed=3)).rate(1, 2) == ChangeWeb(ChangeConfig(seed=3, profile="days")).rate(1, 2)
