"""Shared pieces of the end-to-end crawl tests: a sample web per test, and the checks
every complete, polite crawl must pass (judged from the sample web's own request log)."""

import contextlib
import hashlib
import ipaddress
import os
import socket
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import redis
from django.db import connection

from bench.cluster import run_cluster
from webs.sampleweb import WebConfig, audit_log, run_server
from webs.sampleweb.audit import read_log
from archive import warc
from frontier.models import Url
from indexer.models import Document

from .conftest import TEST_WARC_DIR

# Small enough for CI, with every feature: 8 hosts, 10 pages each, Crawl-delay hosts,
# slow/flaky/trap hosts, redirects, duplicates, 404/410.
TEST_WEB = dict(hosts=8, pages_per_host=10, crawl_delay=0.2, slow_delay=0.1, retry_after=1, port=0)
DEPTH_LIMIT = 6  # tests/conftest.py sets CRAWLER_DEPTH_LIMIT to this
DEFAULT_DELAY = 0.05  # and CRAWLER_DEFAULT_DELAY to this


@contextlib.contextmanager
def sample_web(tmp_path, **overrides):
    log = tmp_path / "requests.log"
    with run_server(WebConfig(**(TEST_WEB | overrides)), log) as web:
        web.request_log = log
        yield web


def audit(web, default_delay=DEFAULT_DELAY, scope="web"):
    return audit_log(web.request_log, web, default_delay, depth_limit=DEPTH_LIMIT, scope=scope)


def assert_complete_and_polite(web, report, *, allow_duplicates=False):
    truth = web.ground_truth(depth_limit=DEPTH_LIMIT)
    assert report["missing"] == [], "ground-truth URLs never fetched"
    assert report["unexpected"] == [], "fetched URLs nobody needed"
    assert set(report["fetched"]) == truth
    assert report["in_flight_violations"] == 0, report["max_in_flight"]
    assert report["gap_violations"] == [], ("requests closer than the host's delay", report["gap_violations"][:5])
    assert report["retry_after_violations"] == []
    assert report["robots_disallowed_fetched"] == []
    assert set(report["robots_fetches"]) == set(web.hosts), "robots.txt fetched for every host"
    if not allow_duplicates:
        assert set(report["robots_fetches"].values()) == {1}, "robots.txt fetched once per host"
        assert report["duplicate_fetches"] == {}, "a URL was fetched twice"
    else:  # a process that died before writing what it fetched: robots.txt included
        assert max(report["robots_fetches"].values()) <= 2, report["robots_fetches"]
    # The frontier's view agrees: nothing left waiting, every fetched URL recorded.
    assert not Url.objects.filter(state="queued").exists()
    # Pages: a host whose robots.txt names no sitemap was asked for /sitemap.xml (a 404).
    recorded = set(Url.objects.exclude(last_fetched_at=None).filter(kind="page").values_list("url", flat=True))
    assert recorded == truth


def warc_records(directory, check_digests: bool = True) -> list[dict]:
    """Every record of every WARC file in `directory`, checked against its digests unless told not to."""
    from warcio.archiveiterator import ArchiveIterator

    found = []
    for path in sorted(Path(directory).glob("*.warc.gz")):
        with open(path, "rb") as f:
            iterator = ArchiveIterator(f, check_digests="raise" if check_digests else False)
            for rec in iterator:
                body = rec.content_stream().read()  # before the offset: asking for it reads the record to its end
                found.append({"file": path.name, "offset": iterator.get_record_offset(), "type": rec.rec_type,
                              "uri": rec.rec_headers.get_header("WARC-Target-URI"), "body": body,
                              "id": rec.rec_headers.get_header("WARC-Record-ID"),
                              "concurrent": rec.rec_headers.get_header("WARC-Concurrent-To"),
                              "status": rec.http_headers.get_statuscode() if rec.http_headers else None})
    return found


def assert_every_response_archived(web):
    """The WARC archive holds exactly the responses the sample web's own log says it sent,
    and every document's raw response reads back to the bytes it was hashed from."""
    netlocs = set(web.hosts)
    # The session's whole archive: a crawler killed by another test may have left a torn tail.
    archived = Counter((r["uri"], int(r["status"])) for r in warc_records(TEST_WARC_DIR, check_digests=False)
                       if r["type"] == "response" and urlsplit(r["uri"]).netloc in netlocs)
    served = Counter((entry.url, entry.status) for entry in read_log(web.request_log))
    assert archived == served
    documents = list(Document.objects.all())
    assert documents and all(doc.warc_file for doc in documents)
    for doc in documents:
        back = warc.read_response(warc.Location(doc.warc_file, doc.warc_offset, doc.warc_length))
        assert back.target_uri == doc.page_url
        assert hashlib.sha256(back.body).hexdigest() == doc.content_hash


class FakeDns(dict):
    """name -> IP address; `asked` lists the names looked up."""

    asked: list[str]


def install_fake_dns(monkeypatch) -> FakeDns:
    """Names resolve only through the returned dict; any other name fails as a
    non-existent domain, so no DNS query ever leaves the machine. IP literals and
    localhost still go to the real resolver."""
    real = socket.getaddrinfo
    names = FakeDns()
    names.asked = []

    def getaddrinfo(host, port, *args, **kwargs):
        text = host.decode() if isinstance(host, bytes) else str(host)
        if text in names:
            names.asked.append(text)
            return real(names[text], port, *args, **kwargs)
        try:
            ipaddress.ip_address(text.strip("[]"))
        except ValueError:
            if text != "localhost":
                names.asked.append(text)
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known") from None
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return names


def free_port() -> int:
    """A loopback TCP port nobody listens on right now (for servers the tests start)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


BROKER = os.environ.get("CRAWLER_TEST_BROKER_URL", "redis://127.0.0.1:6379/14")


def child_env(**extra) -> dict:
    db = connection.settings_dict
    env = dict(os.environ)
    env.update(
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        CELERY_BROKER_URL=BROKER,
        CRAWLER_ALLOWED_NETWORKS="127.0.0.0/8",
        CRAWLER_DEFAULT_DELAY=str(DEFAULT_DELAY),
        CRAWLER_RETRY_BASE_DELAY="0.2",
        CRAWLER_DEPTH_LIMIT=str(DEPTH_LIMIT),
        CRAWLER_FETCH_QUEUES="4",
        CRAWLER_WARC_DIR=TEST_WARC_DIR,
        CRAWLER_CRAWL_LOG_FILE=f"{TEST_WARC_DIR}/crawl.jsonl",
        CRAWLER_SITEMAP_GUESS="false",  # as TEST_SETTINGS: the tests count their requests
    )
    env.update({k: str(v) for k, v in extra.items()})
    return env


@contextlib.contextmanager
def distributed_cluster(workers=2, dispatchers=2, concurrency=1, **env_extra):
    """Celery workers and dispatchers on the test database, their broker emptied first.
    `concurrency` is each worker's number of pool processes, i.e. of session engines."""
    env = child_env(**env_extra)
    redis.Redis.from_url(env["CELERY_BROKER_URL"]).flushdb()
    try:
        with run_cluster(env, workers=workers, dispatchers=dispatchers, concurrency=concurrency) as running:
            yield running
    finally:
        connection.close()


def run_sessions(leases, threads: int = 2, timeout: float = 60.0):
    """Run these leases as host sessions on a real engine until all are written; returns
    the engine (its stats and its writer's)."""
    from crawl.engine import SessionEngine

    engine = SessionEngine(fetch_threads=threads, name="test").start()
    try:
        for lease in leases:
            engine.submit(lease)
        deadline = time.monotonic() + timeout
        while not engine.idle():
            assert time.monotonic() < deadline, "sessions did not end in time"
            engine.wait_for_change(0.05)
    finally:
        engine.stop()
    return engine


def fetched_count() -> int:
    return Url.objects.exclude(last_fetched_at=None).count()


def once_fetched(n: int, action):
    """An on_progress hook that runs `action` once, when n URLs have been fetched (again at
    each call while the action returns False: not the moment yet); `hook.done` says whether
    it ran."""
    done = []

    def hook():
        if not done and fetched_count() >= n and action() is not False:
            done.append(time.monotonic())

    hook.done = done
    return hook


def wait_until(check, timeout: float = 15.0, what: str = "the condition"):
    """Poll `check` until it is true (returns it); fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def until_a_backend_waits_for_a_lock(seconds: float = 10.0) -> None:
    """Until another backend of this database waits on a lock (PostgreSQL's own view of its
    sessions, read afresh each look: within a transaction it is a snapshot), at most
    `seconds`."""
    def waiting() -> bool:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                           "AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'")
            return cursor.fetchone()[0] > 0

    wait_until(waiting, seconds, "another backend to wait for a row lock")
