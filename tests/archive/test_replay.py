"""`manage.py replay` (issue 26 item 2): the archive replayed by pywb from .venv-replay.

One crawl per module, through real HTTP on loopback: the sample web and a site whose page
answers conditional requests with 304; then a recrawl of every page (archived as revisits:
identical-payload for the sample web, which sends no validators, server-not-modified for the
304). Then `replay` runs as a process, and headless Chromium opens every fetched page at its
capture time through pywb: what it renders is what was indexed. A revisit's capture serves
its original's body. The index follows a crawl that goes on while replay runs; the search
page, the search API and the admin link to the captures; the errors are one line each.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
import requests
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command
from django.test import override_settings
from django.utils import timezone

from archive import warc, cdxj, replay
from crawl.runners import run_embedded
from frontier import recrawl
from frontier import service as frontier
from frontier.models import Url
from indexer.backends import get_search_backend
from indexer.models import Document

from ..crawl_helpers import free_port, sample_web
from ..loopback import QuietHandler, start

# Replay reads WARC files and their index, which no database writes: run once, on the
# SQLite run (the suite's time; the links' timestamps come from the same code on both).
pytestmark = pytest.mark.backend_free

STARTUP_TIMEOUT = 60  # seconds for `replay` to index the archive and pywb to answer
REFRESH = 0.5  # the replay's --refresh in these tests
FOLLOW_TIMEOUT = 30  # seconds a new capture may take to become replayable (many refresh periods)
PROSE = ("The harbour keeps its boats in winter under long sheds of tarred timber where the rope makers "
         "work beside the sail lofts and the smell of pitch hangs over the quay until spring returns.")


class ConditionalSite:
    """A loopback site: /fresh has an ETag and answers a conditional GET with 304; pages
    added later (add()) are plain."""

    def __init__(self):
        self.pages = {"/robots.txt": (b"User-agent: *\nAllow: /\n", "text/plain", None)}
        self.add("/fresh", "Fresh fish", PROSE, etag='"v1"')
        site = self

        class Handler(QuietHandler):
            def do_GET(self):
                if self.path not in site.pages:
                    return self.send(404, b"no such page", [("Content-Type", "text/plain")])
                body, content_type, etag = site.pages[self.path]
                headers = [("Content-Type", content_type)] + ([("ETag", etag)] if etag else [])
                if etag and self.headers.get("If-None-Match") == etag:
                    return self.send(304, b"", headers)
                self.send(200, body, headers)

        self.server, self.origin = start(Handler)

    def add(self, path: str, title: str, text: str, etag: str | None = None) -> None:
        body = f"<!DOCTYPE html><html><head><title>{title}</title></head><body><h1>{title}</h1><p>{text}</p></body></html>"
        self.pages[path] = (body.encode(), "text/html; charset=utf-8", etag)


@dataclass
class Crawled:
    web: object
    site: ConditionalSite
    warc_dir: Path


@pytest.fixture(scope="module")
def crawled(django_db_setup, django_db_blocker, tmp_path_factory, module_test_settings):
    """The crawl and the recrawl, committed for real; the tests read them."""
    warc_dir = tmp_path_factory.mktemp("replay-warc")
    site = ConditionalSite()
    with django_db_blocker.unblock(), override_settings(CRAWLER_WARC_DIR=str(warc_dir),
                                                       CRAWLER_RECRAWL_BUDGET_PER_DAY=86400 * 1000):
        call_command("flush", "--no-input")
        get_search_backend().clear()
        recrawl.forget_plan()
        with sample_web(tmp_path_factory.mktemp("replay-web")) as web:
            call_command("crawl", *web.seeds, site.origin + "/fresh", "--scope", "web", "--no-progress", "--json",
                         "--threads", "6", stdout=StringIO())
            time.sleep(1.1)  # revisits a second later at least: their captures have timestamps of their own
            pages = list(Document.objects.values_list("url_id", flat=True))
            Url.objects.filter(id__in=pages).update(next_fetch_at=timezone.now() - timedelta(seconds=1))
            assert frontier.release_due() == len(pages)
            call_command("crawl", "--no-progress", "--json", "--threads", "6", stdout=StringIO())
        warc.close()
        recrawl.forget_plan()
    yield Crawled(web, site, warc_dir)
    site.server.shutdown()
    with django_db_blocker.unblock():
        call_command("flush", "--no-input")
        get_search_backend().clear()


class Replay:
    """`manage.py replay` running as a process; its output is collected as it comes."""

    def __init__(self, warc_dir: Path, root: Path, *args: str):
        if not replay.VENV.joinpath("bin", "wayback").exists():
            pytest.fail(f"pywb is not installed in {replay.VENV}: run `make replay-setup`")
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}/crawl"
        self.root = root
        env = dict(os.environ, CRAWLER_WARC_DIR=str(warc_dir), CRAWLER_WARC_ENABLED="true")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "replay", "--dir", str(root), "--port", str(self.port),
             "--refresh", str(REFRESH), *args],
            cwd=django_settings.BASE_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            # Ctrl-C as a terminal's foreground process gets it, even when this test runs in
            # the background of a shell (which starts it with SIGINT ignored, and so its children).
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.wait_for(lambda: any("Ctrl-C stops" in line for line in self.lines), STARTUP_TIMEOUT, "replay to start")

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, check, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            result = check()
            if result:
                return result
            assert self.process.poll() is None, (f"replay exited ({self.process.returncode}) while waiting for "
                                                 f"{what}", self.lines)
            time.sleep(0.1)
        raise AssertionError(f"timed out after {timeout} s waiting for {what}", self.lines)

    def stop(self, sig=signal.SIGINT) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


@pytest.fixture(scope="module")
def replaying(crawled, tmp_path_factory):
    running = Replay(crawled.warc_dir, tmp_path_factory.mktemp("replay"))
    yield running
    running.stop()


def captures(root: Path) -> dict[tuple[str, str], dict]:
    """(url, timestamp) -> the fields of the collection's index line."""
    found = {}
    with open(root / "collections" / "crawl" / "indexes" / "index.cdxj", encoding="ascii") as index:
        for line in index:
            _key, timestamp, fields = line.split(" ", 2)
            fields = json.loads(fields)
            found[(fields["url"], timestamp)] = fields
    return found


def words(text: str) -> str:
    return " ".join(text.split())


def rendered(page, url: str) -> tuple[str, str]:
    """Open a capture in pywb's framed replay; the archived page's title and visible text."""
    page.goto(url)
    frame = page.wait_for_selector("#replay_iframe").content_frame()
    deadline = time.monotonic() + 15
    while "mp_/" not in frame.url:  # pywb's frame sets the capture's address in the iframe
        assert time.monotonic() < deadline, f"{url}: the replay frame never loaded the capture"
        page.wait_for_timeout(20)
    frame.wait_for_load_state("load")
    return frame.title(), frame.evaluate("document.body.innerText")


def revisit_records(warc_dir: Path) -> list[dict]:
    """Every revisit record: url, timestamp, profile."""
    from warcio.archiveiterator import ArchiveIterator

    found = []
    for path in cdxj.warc_files(warc_dir):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type == "revisit":
                    headers = record.rec_headers
                    found.append({"url": headers.get_header("WARC-Target-URI"),
                                  "timestamp": cdxj.timestamp(headers.get_header("WARC-Date")),
                                  "profile": headers.get_header("WARC-Profile")})
    return found


# --- replay in a browser --------------------------------------------------------------------

@pytest.mark.crawl
@pytest.mark.django_db
def test_every_fetched_page_replays_at_its_capture_time_as_it_was_indexed(crawled, replaying, browser):
    index = captures(replaying.root)
    documents = list(Document.objects.exclude(warc_file="").order_by("page_url"))
    assert len(documents) >= 60  # the sample web's pages and /fresh
    page = browser.new_page()
    page.set_default_timeout(15_000)
    for document in documents:
        link = replay.capture_url(document.page_url, document.fetched_at)  # with CRAWLER_REPLAY_URL unset …
        assert link is None
        timestamp = cdxj.timestamp_of(document.fetched_at)
        # … the link names the capture itself (its WARC-Date to the second), not a neighbour
        assert index[(document.page_url, timestamp)]["filename"] == document.warc_file, document.page_url
        assert index[(document.page_url, timestamp)]["offset"] == str(document.warc_offset)
        title, text = rendered(page, f"{replaying.base}/{timestamp}/{document.page_url}")
        # The title shown is the page's <title>; the document's is the part naming the page
        # (indexer/maincontent.py choose_title: "Home - Ni Observer" of "... (qubawbaqz)").
        assert document.title in title and words(text) == words(document.body), document.page_url


@pytest.mark.crawl
@pytest.mark.django_db
def test_a_revisit_replays_the_body_of_its_original_whichever_kind(crawled, replaying, browser, settings):
    settings.CRAWLER_WARC_DIR = str(crawled.warc_dir)  # the originals' bodies, read back here
    revisits = revisit_records(crawled.warc_dir)
    assert {r["profile"] for r in revisits} == {warc.NOT_MODIFIED, warc.IDENTICAL_PAYLOAD}
    documents = {d.page_url: d for d in Document.objects.exclude(warc_file="")}
    assert {r["url"] for r in revisits} == set(documents)  # every page was revisited
    index = captures(replaying.root)
    for revisit in revisits:
        document = documents[revisit["url"]]
        assert revisit["timestamp"] != cdxj.timestamp_of(document.fetched_at)
        # The revisit is a capture of its own in the index, standing for its original's record.
        line = index[(revisit["url"], revisit["timestamp"])]
        assert (line["filename"], line["offset"]) == (document.warc_file, str(document.warc_offset))
        answer = requests.get(f"{replaying.base}/{revisit['timestamp']}id_/{revisit['url']}", timeout=10)
        original = warc.read_response(warc.Location(document.warc_file, document.warc_offset,
                                                          document.warc_length))
        assert (answer.status_code, answer.content) == (200, original.body), revisit
        assert f"/{revisit['timestamp']}id_/" in answer.headers["Content-Location"]  # that capture was served
    # In the browser: the 304 and a few identical-payload revisits render as their originals.
    shown = [r for r in revisits if r["profile"] == warc.NOT_MODIFIED]
    shown += [r for r in revisits if r["profile"] == warc.IDENTICAL_PAYLOAD][:3]
    assert shown[0]["url"] == crawled.site.origin + "/fresh"
    page = browser.new_page()
    page.set_default_timeout(15_000)
    for revisit in shown:
        document = documents[revisit["url"]]
        title, text = rendered(page, f"{replaying.base}/{revisit['timestamp']}/{revisit['url']}")
        assert document.title in title and words(text) == words(document.body), revisit


@pytest.mark.crawl
@pytest.mark.django_db(transaction=True)  # the crawler's threads write: pytest-django runs it after the others
def test_pages_crawled_while_replay_runs_become_replayable(crawled, replaying, settings):
    """A record in a file started after replay started (the files rotate), then one
    appended to that file while it is being written, each replayable within a few refresh
    periods."""
    settings.CRAWLER_WARC_DIR = str(crawled.warc_dir)
    files_before = len(cdxj.warc_files(crawled.warc_dir))
    warc.close()  # the next record starts a new file; the one after goes on in it
    for path, title in (("/late", "Late tide"), ("/later", "Later tide")):
        crawled.site.add(path, title, f"{title}. {PROSE}")
        url = crawled.site.origin + path
        frontier.add_seeds([url])
        run_embedded(threads=1, max_seconds=30)
        document = Document.objects.get(page_url=url)
        timestamp = cdxj.timestamp_of(document.fetched_at)

        def replayed():
            try:
                answer = requests.get(f"{replaying.base}/{timestamp}id_/{url}", timeout=5)
            except requests.RequestException:
                return False
            return answer.status_code == 200 and title.encode() in answer.content

        replaying.wait_for(replayed, FOLLOW_TIMEOUT, f"{url} to be replayable")
    warc.close()
    assert len(cdxj.warc_files(crawled.warc_dir)) == files_before + 1


# --- links to the captures ------------------------------------------------------------------

@pytest.mark.crawl
@pytest.mark.django_db
def test_the_search_page_and_api_link_each_result_to_its_capture(client, crawled, replaying, settings):
    url = f"http://{crawled.web.hosts[3]}/p/4.html"
    word = crawled.web.unique_word(url)
    document = Document.objects.get(page_url=url)
    link = f"{replaying.base}/{cdxj.timestamp_of(document.fetched_at)}/{url}"
    settings.CRAWLER_REPLAY_URL = replaying.base + "/"  # a trailing slash or not: one link
    page = client.get("/", {"q": word}).content.decode()
    assert f'<a class="cached" href="{link}" rel="nofollow">cached</a>' in page
    (hit,) = client.get("/search.json", {"q": word}).json()["results"]
    assert (hit["url"], hit["cached_url"]) == (url, link)

    settings.CRAWLER_REPLAY_URL = ""
    assert 'class="cached"' not in client.get("/", {"q": word}).content.decode()
    assert client.get("/search.json", {"q": word}).json()["results"][0]["cached_url"] is None
    # A document whose response was not archived gets no link.
    settings.CRAWLER_REPLAY_URL = replaying.base
    Document.objects.filter(id=document.id).update(warc_file="")
    assert client.get("/search.json", {"q": word}).json()["results"][0]["cached_url"] is None


@pytest.mark.crawl
@pytest.mark.django_db
def test_a_cached_link_opens_the_page_as_archived(client, crawled, replaying, settings, browser):
    # Reads only: under Playwright the ORM has a connection of its own, outside the test's
    # transaction (tests/conftest.py), which SQLite would lock out of writing.
    url = f"http://{crawled.web.hosts[5]}/p/2.html"
    settings.CRAWLER_REPLAY_URL = replaying.base
    (hit,) = client.get("/search.json", {"q": crawled.web.unique_word(url)}).json()["results"]
    tab = browser.new_page()
    tab.set_default_timeout(15_000)
    title, text = rendered(tab, hit["cached_url"])
    document = Document.objects.get(page_url=url)
    assert document.title in title and words(text) == words(document.body)


@pytest.mark.crawl
@pytest.mark.django_db
def test_the_admins_document_page_links_its_capture(admin_client, crawled, settings):
    document = Document.objects.exclude(warc_file="").order_by("id").first()
    page = f"/admin/indexer/document/{document.id}/change/"
    settings.CRAWLER_REPLAY_URL = "http://127.0.0.1:8090/crawl"
    link = f"http://127.0.0.1:8090/crawl/{cdxj.timestamp_of(document.fetched_at)}/{document.page_url}"
    assert f'href="{link}"' in admin_client.get(page).content.decode()
    settings.CRAWLER_REPLAY_URL = ""
    assert "CRAWLER_REPLAY_URL is not set" in admin_client.get(page).content.decode()


# --- the command's life and its errors --------------------------------------------------------

@pytest.mark.crawl
@pytest.mark.django_db  # grouped with the tests before it, so the module's crawl is made once for them
@pytest.mark.parametrize("how", ["ctrl-c", "sigkill"])
def test_ctrl_c_stops_pywb_and_a_killed_replay_leaves_no_server(crawled, tmp_path, how):
    running = Replay(crawled.warc_dir, tmp_path / "replay")
    assert requests.get(running.base + "/", timeout=10).status_code == 200
    if how == "ctrl-c":
        assert running.stop(signal.SIGINT) == 0
        assert running.lines[-1] == "pywb stopped."
    else:  # the kernel ends pywb with it (PR_SET_PDEATHSIG)
        running.stop(signal.SIGKILL)
    deadline = time.monotonic() + 10
    while not replay.port_free(running.port):
        assert time.monotonic() < deadline, "pywb still listens after replay ended"
        time.sleep(0.1)


def test_it_says_in_one_line_why_it_cannot_replay(settings, tmp_path, monkeypatch):
    settings.CRAWLER_WARC_DIR = str(tmp_path / "warc")
    settings.CRAWLER_WARC_ENABLED = False

    def refusal() -> str:
        with pytest.raises(CommandError) as refused:
            call_command("replay", "--dir", str(tmp_path / "replay"), "--port", str(free_port()), stdout=StringIO(),
                         stderr=StringIO())
        assert "\n" not in str(refused.value)
        return str(refused.value)

    assert refusal().startswith("CRAWLER_WARC_ENABLED is off")
    settings.CRAWLER_WARC_ENABLED = True
    assert refusal() == f"no WARC files in {tmp_path / 'warc'} (CRAWLER_WARC_DIR): crawl something first"
    (tmp_path / "warc").mkdir()
    (tmp_path / "warc" / "crawlerweb-x.warc.gz").write_bytes(b"")
    monkeypatch.setattr(replay, "VENV", tmp_path / "no-venv")
    assert refusal() == f"pywb is not installed ({tmp_path}/no-venv/bin/wayback not found): run `make replay-setup`"
    monkeypatch.undo()
    if not replay.VENV.joinpath("bin", "wayback").exists():
        pytest.fail(f"pywb is not installed in {replay.VENV}: run `make replay-setup`")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(CommandError, match=f"port {port} on 127.0.0.1 is in use: choose another with --port"):
            call_command("replay", "--dir", str(tmp_path / "replay"), "--port", str(port), stdout=StringIO(),
                         stderr=StringIO())


# --- the index --------------------------------------------------------------------------------

def line(url: str, timestamp: str, mime: str, status: str, digest: str, offset: int, filename: str = "a.warc.gz"):
    entry = cdxj.Entry(cdxj.url_key(url), timestamp, url, mime, status, digest)
    return entry.line(filename, offset, 100)


def test_revisits_stand_for_their_originals_in_the_merged_index(tmp_path):
    page, other = "http://a.test/page", "http://a.test/other"
    (tmp_path / "a.cdxj").write_text(
        line(page, "20260101000000", "text/html", "200", "sha1:ONE", 0)
        + line(page, "20260102000000", "warc/revisit", "200", "sha1:ONE", 200)  # identical payload
        + line(page, "20260103000000", "text/html", "200", "sha1:TWO", 400)  # changed
        + line(page, "20260104000000", "warc/revisit", "304", "", 600)  # not modified: the latest 2xx
        + line(other, "20260102000000", "warc/revisit", "200", "sha1:GONE", 800))  # its original is not kept
    (tmp_path / "b.cdxj").write_text(line(page, "20260105000000", "warc/revisit", "200", "sha1:ONE", 0, "b.warc.gz"))
    stats = replay.write_index([tmp_path / "a.cdxj", tmp_path / "b.cdxj"], tmp_path / "index.cdxj")
    assert (stats.lines, stats.revisits, stats.unresolved) == (5, 3, 1)
    got = [(ts, json.loads(fields)["offset"], json.loads(fields)["mime"])
           for _key, ts, fields in (ln.split(" ", 2) for ln in (tmp_path / "index.cdxj").read_text().splitlines())]
    assert got == [("20260101000000", "0", "text/html"), ("20260102000000", "0", "text/html"),
                   ("20260103000000", "400", "text/html"), ("20260104000000", "400", "text/html"),
                   ("20260105000000", "0", "text/html")]
    assert not list(tmp_path.glob("*.partial"))


def test_the_index_is_merged_again_only_when_a_sidecar_changed(tmp_path):
    warc_dir = tmp_path / "warc"
    warc_dir.mkdir()
    for name in ("crawlerweb-1.warc.gz", "crawlerweb-2.warc.gz"):
        (warc_dir / name).write_bytes(b"")
        cdxj.sidecar_path(warc_dir / name).write_text(line(f"http://a.test/{name}", "20260101000000", "text/html",
                                                           "200", "sha1:X", 0, name))
    collection = replay.Collection(tmp_path / "replay", "crawl")
    collection.create()
    refresher = replay.Refresher(collection, warc_dir)
    assert refresher.refresh().lines == 2
    assert sorted(p.name for p in collection.archive.iterdir()) == ["crawlerweb-1.warc.gz", "crawlerweb-2.warc.gz"]
    assert refresher.refresh() is None  # nothing changed: no merge
    with open(cdxj.sidecar_path(warc_dir / "crawlerweb-2.warc.gz"), "a") as sidecar:
        sidecar.write(line("http://a.test/new", "20260101000001", "text/html", "200", "sha1:Y", 100))
        sidecar.write('{"a line being written')  # not whole yet: left out
    assert refresher.refresh().lines == 3
    (warc_dir / "crawlerweb-1.warc.gz").unlink()
    cdxj.sidecar_path(warc_dir / "crawlerweb-1.warc.gz").unlink()
    assert refresher.refresh().lines == 2
    assert [p.name for p in collection.archive.iterdir()] == ["crawlerweb-2.warc.gz"]  # no dangling link


def test_an_empty_warc_file_is_left_to_the_writer_that_just_opened_it(tmp_path):
    # archive/warc.py opens the WARC file, then its sidecar: a sidecar made in between
    # would take the writer's place.
    warc_dir = tmp_path / "warc"
    warc_dir.mkdir()
    (warc_dir / "crawlerweb-1.warc.gz").write_bytes(b"")
    collection = replay.Collection(tmp_path / "replay", "crawl")
    collection.create()
    assert replay.Refresher(collection, warc_dir).refresh().lines == 0
    assert cdxj.missing(warc_dir) == [warc_dir / "crawlerweb-1.warc.gz"]


def test_a_capture_link_names_the_capture_time_to_the_second_and_only_for_the_web(settings):
    from datetime import datetime, timezone as dt_timezone

    moment = datetime(2026, 11, 26, 21, 33, 30, 999_999, tzinfo=dt_timezone.utc)
    settings.CRAWLER_REPLAY_URL = ""
    assert replay.capture_url("http://a.test/", moment) is None
    settings.CRAWLER_REPLAY_URL = "http://127.0.0.1:8090/crawl"
    assert replay.capture_url("http://a.test/?q=1", moment) == "http://127.0.0.1:8090/crawl/20261126213330/http://a.test/?q=1"
    assert replay.capture_url("gemini://a.test/", moment) is None  # pywb speaks HTTP only
    assert replay.capture_url("http://a.test/", None) is None
