"""The crawl log (crawl/crawllog.py): one JSON line per request, robots.txt and pages, from
every runner, in a rotated file and in the database for the admin.

Judged against the servers' own record of what they answered: a loopback site that answers
429, 503 and 500 once per page and 304 to a revisit, crawled by `manage.py crawl`; the
sample web crawled by Celery workers (PostgreSQL); several processes and threads writing
one file through its rotations."""

import json
import multiprocessing
import re
import socket
import threading
import time
from collections import Counter
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from bench.cluster import wait_until_done
from webs.sampleweb.audit import read_log
from crawl import crawllog, observe
from crawl.models import CrawlLogEntry
from crawl.observe import RequestRecord
from crawl.runners import run_embedded
from frontier import recrawl
from frontier import service as frontier
from frontier.models import Host, Url

from ..crawl_helpers import distributed_cluster, sample_web
from ..loopback import QuietHandler, start

pytestmark = [pytest.mark.crawl, pytest.mark.django_db(transaction=True)]

FIELDS = ["ts", "kind", "url", "url_id", "host", "host_id", "status", "error", "outcome", "bytes", "ms", "attempt",
          "retry", "not_modified", "retry_after", "address", "type", "worker", "lease"]
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


class Site:
    """A loopback site: /a answers 429, /b 503 (both with Retry-After: 1) and /c 500 the
    first time, 200 after; /e has an ETag and answers 304 to a conditional request. It
    records (path, status, body bytes) of every answer, in order."""

    FIRST = {"/a": 429, "/b": 503, "/c": 500}

    def __init__(self):
        self.served = []
        self.pages = {"/robots.txt": b"User-agent: *\nAllow: /\n"}
        self.pages["/"] = self.html("".join(f'<a href="{p}">{p}</a>' for p in ("/a", "/b", "/c", "/e")))
        for path in ("/a", "/b", "/c", "/e"):
            self.pages[path] = self.html(f"page {path} " + "words " * 200)
        site = self

        class Handler(QuietHandler):
            def do_GET(self):
                status, headers, body = site.answer(self.path, self.headers.get("If-None-Match"))
                site.served.append((self.path, status, len(body)))
                self.send(status, body, headers)

        self.server, self.origin = start(Handler)

    @staticmethod
    def html(text: str) -> bytes:
        return f"<html><head><title>t</title></head><body><p>{text}</p></body></html>".encode()

    def answer(self, path, if_none_match):
        answered = [p for p, _, _ in self.served]
        if path in self.FIRST and path not in answered:
            return self.FIRST[path], [("Retry-After", "1"), ("Content-Type", "text/html")], b"busy"
        if path == "/e":
            if if_none_match == '"v1"':
                return 304, [("ETag", '"v1"')], b""
            return 200, [("Content-Type", "text/html"), ("ETag", '"v1"')], self.pages[path]
        if path in self.pages:
            kind = "text/plain" if path == "/robots.txt" else "text/html"
            return 200, [("Content-Type", kind)], self.pages[path]
        return 404, [("Content-Type", "text/plain")], b"no"


@pytest.fixture
def log_file(settings, tmp_path):
    """The crawl log in this test's directory, with nothing left from an earlier test."""
    settings.CRAWLER_CRAWL_LOG_FILE = str(tmp_path / "log" / "crawl.jsonl")
    crawllog.take_pending()
    yield tmp_path / "log" / "crawl.jsonl"
    crawllog.close()
    crawllog.take_pending()


@pytest.fixture
def site(settings):
    settings.CRAWLER_DEFAULT_DELAY = 0
    settings.CRAWLER_ADAPTIVE_DELAY_FACTOR = 0
    settings.CRAWLER_RECRAWL_BUDGET_PER_DAY = 86400 * 100
    recrawl.forget_plan()
    s = Site()
    yield s
    s.server.shutdown()
    recrawl.forget_plan()


def lines_of(path) -> list[dict]:
    """Every line of the log and its rotated files, oldest file first; each must parse."""
    files = sorted(path.parent.glob(path.name + ".*"), key=lambda p: -int(p.suffix[1:])) + [path]
    found = []
    for file in files:
        if file.exists():
            found.extend(json.loads(line) for line in file.read_text().splitlines())
    return found


def crawl_command(*urls):
    call_command("crawl", *urls, "--no-progress", "--json", "--threads", "2", stdout=StringIO())
    crawllog.flush()


def test_it_logs_every_request_with_its_fields_in_the_file_and_the_database(site, log_file):
    crawl_command(site.origin + "/")

    lines = lines_of(log_file)
    # One line per answer the site gave, in the same order (one host: one request at a time).
    assert [(urlpath(line["url"]), line["status"], line["bytes"]) for line in lines] == site.served
    assert all(list(line) == FIELDS for line in lines)
    host = Host.objects.get(origin=site.origin)
    url_ids = dict(Url.objects.values_list("url", "id"))
    for line in lines:
        assert TS.match(line["ts"]) and isinstance(line["ms"], int) and line["ms"] >= 0
        assert (line["host"], line["host_id"], line["address"]) == (site.origin, host.id, "127.0.0.1")
        assert line["worker"] == f"{socket.gethostname()}/embedded"
        assert line["lease"].startswith(f"embedded-{socket.gethostname()}-")
        assert line["retry"] == (line["attempt"] > 1) and line["not_modified"] is False
    robots, pages = lines[0], lines[1:]
    assert (robots["kind"], robots["url_id"], robots["outcome"], robots["type"]) == ("robots", None, "ok", "text/plain")
    # A URL the session took from the page just fetched is not in the frontier when its line
    # is written: the file names it by its URL alone, the database's copy by its id too.
    assert all(line["kind"] == "page" and line["url_id"] in (url_ids[line["url"]], None) for line in pages)
    assert {url: url_id for url, url_id in CrawlLogEntry.objects.filter(kind="page").values_list("url", "url_id")} == {
        line["url"]: url_ids[line["url"]] for line in pages}

    by_url = {}
    for line in pages:
        by_url.setdefault(urlpath(line["url"]), []).append(line)
    for path, status in Site.FIRST.items():
        first, second = by_url[path]
        assert (first["status"], first["attempt"], first["retry"]) == (status, 1, False)
        assert (second["status"], second["outcome"], second["attempt"], second["retry"]) == (200, "ok", 2, True)
    assert [line["outcome"] for line in by_url["/a"] + by_url["/b"]] == ["throttled", "ok", "throttled", "ok"]
    assert by_url["/a"][0]["retry_after"] == by_url["/b"][0]["retry_after"] == 1.0
    assert by_url["/c"][0]["outcome"] == "server_error" and by_url["/c"][0]["retry_after"] is None

    # The database holds the same requests.
    rows = list(CrawlLogEntry.objects.order_by("at", "id"))
    assert Counter(row_key(row) for row in rows) == Counter(line_key(line, url_ids) for line in lines)
    throttled = CrawlLogEntry.objects.filter(outcome="throttled")
    assert sorted(throttled.values_list("status", "attempt", "retry_after")) == [(429, 1, 1.0), (503, 1, 1.0)]
    assert CrawlLogEntry.objects.filter(attempt__gt=1).count() == 3
    assert {row.worker for row in rows} == {f"{socket.gethostname()}/embedded"}
    assert {row.lease for row in rows} == {line["lease"] for line in lines}

    # A revisit of /e is a conditional GET: its 304 is flagged in both.
    Url.objects.filter(url=site.origin + "/e").update(next_fetch_at=timezone.now() - timedelta(seconds=1))
    assert frontier.release_due() == 1
    run_embedded(threads=2, max_seconds=30)
    crawllog.flush()
    last = lines_of(log_file)[-1]
    assert site.served[-1] == ("/e", 304, 0)
    assert (last["url"], last["status"], last["outcome"], last["not_modified"], last["bytes"]) == (
        site.origin + "/e", 304, "not_modified", True, 0)
    assert CrawlLogEntry.objects.filter(status=304, outcome="not_modified", url=site.origin + "/e").count() == 1
    assert CrawlLogEntry.objects.count() == len(site.served)


def urlpath(url: str) -> str:
    return "/" + url.split("/", 3)[3]


def line_key(line: dict, url_ids: dict) -> tuple:
    url_id = line["url_id"] if line["url_id"] is not None or line["kind"] != "page" else url_ids[line["url"]]
    return (line["kind"], line["url"], url_id, line["host_id"], line["status"], line["error"], line["outcome"],
            line["bytes"], line["attempt"], line["retry_after"], line["type"], line["worker"], line["lease"],
            line["ms"])


def row_key(row: CrawlLogEntry) -> tuple:
    return (row.kind, row.url, row.url_id, row.host_id, row.status, row.error, row.outcome, row.bytes, row.attempt,
            row.retry_after, row.content_type, row.worker, row.lease, row.ms)


def test_it_keeps_no_rows_when_the_database_copy_is_off_and_no_file_when_its_setting_is_empty(site, log_file,
                                                                                              settings):
    settings.CRAWLER_CRAWL_LOG_DB = False
    crawl_command(site.origin + "/")
    assert len(lines_of(log_file)) == len(site.served) > 5
    assert not CrawlLogEntry.objects.exists()

    settings.CRAWLER_CRAWL_LOG_DB = True
    settings.CRAWLER_CRAWL_LOG_FILE = ""
    log_file.unlink()
    Url.objects.filter(url=site.origin + "/e").update(next_fetch_at=timezone.now() - timedelta(seconds=1))
    frontier.release_due()
    run_embedded(threads=2, max_seconds=30)
    assert not log_file.exists()
    assert CrawlLogEntry.objects.get().status == 304


def test_a_broken_listener_or_a_failing_insert_never_breaks_the_crawl(site, log_file, settings, monkeypatch):
    def broken(record):
        raise RuntimeError("listener bug")

    def failing_insert():
        raise RuntimeError("database refuses the crawl log")

    settings.CRAWLER_CRAWL_LOG_BUFFER = 1  # and never drained: every record after the first is dropped
    monkeypatch.setattr(crawllog, "store_pending", failing_insert)
    observe.listen(broken)
    try:
        frontier.add_seeds([site.origin + "/"])
        stats = run_embedded(threads=2, max_seconds=30)
    finally:
        observe._listeners.remove(broken)
    assert stats.errors == 0
    assert set(Url.objects.values_list("state", flat=True)) == {"fetched"}
    assert Url.objects.count() == 5
    records, dropped = crawllog.take_pending()
    assert len(records) == 1 and dropped == len(site.served) - 1
    assert not CrawlLogEntry.objects.exists()


def test_a_full_buffer_drops_and_counts_without_waiting(log_file, settings, caplog):
    settings.CRAWLER_CRAWL_LOG_BUFFER = 2
    settings.CRAWLER_CRAWL_LOG_FILE = ""  # first the database buffer alone
    for i in range(3):
        crawllog.record_request(record(f"http://127.0.0.1:9/{i}"))
    assert crawllog.store_pending() == 2
    assert "1 crawl log entries did not reach the database" in caplog.text
    assert sorted(CrawlLogEntry.objects.values_list("url", flat=True)) == ["http://127.0.0.1:9/0",
                                                                           "http://127.0.0.1:9/1"]

    # The file's queue: while its thread is stuck on a slow disk, lines beyond the queue's
    # room are dropped at once, and the fetch thread goes on.
    settings.CRAWLER_CRAWL_LOG_FILE = str(log_file)
    settings.CRAWLER_CRAWL_LOG_DB = False
    entered, release = threading.Event(), threading.Event()
    crawllog.record_request(record("http://127.0.0.1:9/warm"))  # sets the file up
    crawllog.flush()
    handler = crawllog._file.file_handler
    real_handle = handler.handle

    def slow_handle(log_record):
        entered.set()
        release.wait(10)
        return real_handle(log_record)

    handler.handle = slow_handle
    crawllog.record_request(record("http://127.0.0.1:9/stuck"))
    assert entered.wait(5)
    for i in range(5):
        crawllog.record_request(record(f"http://127.0.0.1:9/q{i}"))
    assert crawllog.dropped_lines() == 3
    release.set()
    assert crawllog.flush()
    assert [line["url"].rsplit("/", 1)[1] for line in lines_of(log_file)] == ["warm", "stuck", "q0", "q1"]
    crawllog.store_pending()
    assert "3 crawl log lines were not written" in caplog.text


def test_a_log_file_that_cannot_be_opened_costs_only_the_file(settings, tmp_path, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    settings.CRAWLER_CRAWL_LOG_FILE = str(blocker / "crawl.jsonl")
    crawllog.take_pending()
    try:
        crawllog.record_request(record("http://127.0.0.1:9/a"))
        crawllog.record_request(record("http://127.0.0.1:9/b"))
        assert caplog.text.count("cannot be opened") == 1
        assert crawllog.store_pending() == 2
    finally:
        crawllog.close()


def record(url: str, **fields) -> RequestRecord:
    values = dict(at=time.time(), kind="page", url=url, url_id=1, host_id=1, origin="http://127.0.0.1:9", status=200,
                  error="", outcome="ok", bytes=10, duration=0.01, attempt=1, retry_after=None, address="127.0.0.1",
                  content_type="text/html", worker="test", lease="t:1")
    values.update(fields)
    return RequestRecord(**values)


# --- several writers, one rotated file -----------------------------------------------------

PROCESSES, THREADS, LINES = 4, 4, 400


def write_lines(process: int) -> None:
    """A child process's work: THREADS threads each recording LINES requests."""
    def thread(t: int):
        for i in range(LINES):
            crawllog.record_request(record(f"http://127.0.0.1:9/{process}/{t}/{i}", worker=f"p{process}"))

    threads = [threading.Thread(target=thread, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dropped = crawllog.dropped_lines()
    crawllog.close()
    if dropped:
        raise SystemExit(3)


def test_it_rotates_one_file_written_by_several_processes_without_losing_or_mixing_lines(log_file, settings):
    settings.CRAWLER_CRAWL_LOG_DB = False
    settings.CRAWLER_CRAWL_LOG_MAX_BYTES = 64 * 1024
    settings.CRAWLER_CRAWL_LOG_BACKUPS = 1000  # keep every rotated file, to count every line
    crawllog.record_request(record("http://127.0.0.1:9/parent"))  # the children inherit a running file log
    crawllog.flush()
    fork = multiprocessing.get_context("fork")
    children = [fork.Process(target=write_lines, args=(p,)) for p in range(PROCESSES)]
    for child in children:
        child.start()
    for child in children:
        child.join(60)
    assert [child.exitcode for child in children] == [0] * PROCESSES
    crawllog.close()

    files = list(log_file.parent.glob("crawl.jsonl*"))
    assert len(files) > 10  # rotated many times
    lines = lines_of(log_file)  # each line parses: none torn, none interleaved
    urls = [line["url"] for line in lines]
    expected = {f"http://127.0.0.1:9/{p}/{t}/{i}" for p in range(PROCESSES) for t in range(THREADS)
                for i in range(LINES)}
    assert len(urls) == len(set(urls)) == len(expected) + 1
    assert set(urls) == expected | {"http://127.0.0.1:9/parent"}
    # Each thread's lines are in its order across the rotations.
    order = {}
    for url in urls[1:]:
        p, t, i = url.rsplit("/", 3)[1:]
        assert order.get((p, t), -1) < int(i)
        order[(p, t)] = int(i)
    assert all(f.stat().st_size < 2 * settings.CRAWLER_CRAWL_LOG_MAX_BYTES for f in files)


# --- pruning and the admin --------------------------------------------------------------------

def entry(url, minutes_ago=1.0, **fields) -> CrawlLogEntry:
    values = dict(at=timezone.now() - timedelta(minutes=minutes_ago), kind="page", url=url, url_id=1, host_id=1,
                  origin="http://one.test", status=200, outcome="ok", bytes=100, ms=5, attempt=1,
                  address="127.0.0.1", worker="w", lease="d0:abc")
    values.update(fields)
    return CrawlLogEntry(**values)


# For a test whose rows no other thread or process reads: its transaction is rolled back,
# instead of every table emptied after it (the module's transaction=True).
rolled_back = pytest.mark.django_db


@rolled_back
def test_it_prunes_entries_older_than_the_retention_at_most_every_few_minutes(settings):
    settings.CRAWLER_CRAWL_LOG_RETENTION_HOURS = 2
    CrawlLogEntry.objects.bulk_create([entry("http://one.test/old", minutes_ago=121),
                                       entry("http://one.test/new", minutes_ago=119)])
    crawllog._next_prune = 0.0
    assert crawllog.prune_if_due() == 1
    assert list(CrawlLogEntry.objects.values_list("url", flat=True)) == ["http://one.test/new"]
    CrawlLogEntry.objects.bulk_create([entry("http://one.test/old2", minutes_ago=500)])
    assert crawllog.prune_if_due() == 0  # not due yet
    assert crawllog.prune(now=timezone.now() + timedelta(hours=3)) == 2


@pytest.fixture
def log_rows():
    CrawlLogEntry.objects.bulk_create([
        entry("http://one.test/robots.txt", kind="robots", url_id=None, minutes_ago=30),
        entry("http://one.test/429", status=429, outcome="throttled", retry_after=1.0, minutes_ago=1),
        entry("http://one.test/retried", attempt=2, minutes_ago=2),
        entry("http://one.test/304", status=304, outcome="not_modified", bytes=0, minutes_ago=3),
        entry("http://one.test/500", status=500, outcome="server_error", minutes_ago=200),
        entry("http://one.test/reset", status=None, error="connection", outcome="connection", bytes=0, minutes_ago=4),
        entry("http://two.test/", host_id=2, origin="http://two.test", minutes_ago=2000),
    ])


def listed(admin_client, query: str = "") -> list[str]:
    response = admin_client.get("/admin/crawl/crawllogentry/" + query)
    assert response.status_code == 200
    return [row.url.split("/", 3)[2] + "/" + row.url.split("/", 3)[3] for row in response.context["cl"].result_list]


@pytest.mark.parametrize("query, expected", [
    ("", ["one.test/429", "one.test/retried", "one.test/304", "one.test/reset", "one.test/robots.txt",
          "one.test/500", "two.test/"]),
    ("?outcome=throttled", ["one.test/429"]),
    ("?kind=robots", ["one.test/robots.txt"]),
    ("?status=5xx", ["one.test/500"]),
    ("?status=4xx", ["one.test/429"]),
    ("?status=none", ["one.test/reset"]),
    ("?retry=yes", ["one.test/retried"]),
    ("?not_modified=yes", ["one.test/304"]),
    ("?since=15m", ["one.test/429", "one.test/retried", "one.test/304", "one.test/reset"]),
    ("?since=1h&kind=robots", ["one.test/robots.txt"]),
    ("?since=24h&host_id=1", ["one.test/429", "one.test/retried", "one.test/304", "one.test/reset",
                              "one.test/robots.txt", "one.test/500"]),
    ("?host_id=2", ["two.test/"]),
    ("?q=retr", ["one.test/retried"]),
])
@rolled_back
def test_the_admin_lists_the_log_newest_first_and_filters_it(admin_client, log_rows, query, expected):
    assert listed(admin_client, query) == expected


@rolled_back
def test_the_admin_log_is_read_only_and_names_the_chosen_host(admin_client, log_rows):
    page = admin_client.get("/admin/crawl/crawllogentry/?host_id=2").content.decode()
    assert "http://two.test" in page and 'href="?host_id=2"' in page
    assert "delete_selected" not in page
    assert admin_client.get("/admin/crawl/crawllogentry/add/").status_code == 403
    row = CrawlLogEntry.objects.get(url="http://one.test/429")
    change = f"/admin/crawl/crawllogentry/{row.id}/change/"
    assert admin_client.get(change).status_code == 200  # a view, not a form
    assert admin_client.post(change, {"url": "http://evil.test/"}).status_code == 403
    assert admin_client.post(f"/admin/crawl/crawllogentry/{row.id}/delete/").status_code == 403
    assert CrawlLogEntry.objects.get(id=row.id).url == "http://one.test/429"


# --- distributed -------------------------------------------------------------------------------

WORKER = re.compile(rf"^{re.escape(socket.gethostname())}/worker-\d+$")
LEASE = re.compile(r"^d[01]:[0-9a-f]{12}$")


@pytest.mark.postgres
def test_celery_workers_log_every_request_with_their_worker_name_and_lease(tmp_path, log_file):
    with sample_web(tmp_path) as web:
        with distributed_cluster(workers=2, dispatchers=2, CRAWLER_CRAWL_LOG_FILE=str(log_file)) as running:
            frontier.add_seeds(web.seeds, frontier.ScopeSpec("web"))
            wait_until_done(frontier.has_pending_work, running, 180)
    served = Counter((e.url, e.status) for e in read_log(web.request_log))
    lines = lines_of(log_file)
    rows = list(CrawlLogEntry.objects.all())
    # Both workers' processes appended to one file; every request is in it and in the table.
    assert Counter((line["url"], line["status"]) for line in lines) == served
    assert Counter((row.url, row.status) for row in rows) == served
    assert all(WORKER.match(line["worker"]) and LEASE.match(line["lease"]) for line in lines)
    assert {(row.worker, row.lease) for row in rows} == {(line["worker"], line["lease"]) for line in lines}
    # The sample web's throttling answers (429/503 once per page of its flaky host) are there.
    throttled = [row for row in rows if row.outcome == "throttled"]
    assert len(throttled) == sum(n for (url, status), n in served.items() if status in (429, 503)) > 5
    flaky = {row.url for row in throttled}
    retried = [row for row in rows if row.url in flaky and row.status == 200]
    assert len(retried) == len(flaky) and all(row.attempt == 2 for row in retried)
