"""Host sessions against small loopback servers: misbehaving robots.txt, a database or a
disk that fails mid-session, a group commit that cannot be written."""

from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from crawl.runners import run_embedded
from frontier import service
from frontier.models import DeadLetter, Host, Url

from ..crawl_helpers import run_sessions
from ..loopback import QuietHandler, start

pytestmark = pytest.mark.django_db(transaction=True)


def serve(robots_status):
    hits = Counter()

    class Handler(QuietHandler):
        def do_GET(self):
            hits[self.path] += 1
            status = robots_status if self.path == "/robots.txt" else 200
            body = b"User-agent: *\nAllow: /\n" if status == 200 else b"<html><title>page</title></html>"
            self.send(status, body, [("Content-Type", "text/html" if self.path != "/robots.txt" else "text/plain")])

    srv, origin = start(Handler)
    return srv, hits, origin


@pytest.fixture
def robots_503(settings):
    settings.CRAWLER_ROBOTS_ERROR_SECONDS = 0.3
    settings.CRAWLER_RETRY_BASE_DELAY = 0.01  # far shorter than the robots retry on purpose
    settings.CRAWLER_MAX_ATTEMPTS = 3
    settings.CRAWLER_FAILURE_BACKOFF = []  # dead-letter once the short retries are spent
    settings.CRAWLER_DEFAULT_DELAY = 0
    settings.CRAWLER_ADAPTIVE_DELAY_FACTOR = 0  # both URLs in one lease
    srv, hits, origin = serve(503)
    yield hits, origin
    srv.shutdown()


def test_it_charges_an_attempt_only_per_real_robots_try(robots_503):
    hits, origin = robots_503
    service.add_seeds([origin + "/a", origin + "/b"])
    run_embedded(threads=2, max_seconds=20)
    assert hits["/robots.txt"] == 3  # one per attempt, even though URL back-off is shorter
    assert hits["/a"] == hits["/b"] == 0  # disallow-all while robots.txt answers 5xx
    assert sorted(Url.objects.values_list("state", "outcome", "attempts")) == [
        ("failed", "robots_unavailable", 3)] * 2
    assert DeadLetter.objects.count() == 2


def test_it_parks_the_host_until_robots_txt_is_retried(robots_503, settings):
    hits, origin = robots_503
    settings.CRAWLER_ROBOTS_ERROR_SECONDS = 60
    service.add_seeds([origin + "/a"])
    (lease,) = service.lease_ready_hosts("t", 1)
    assert run_sessions([lease]).stats.requests == 1
    host = Host.objects.get()
    assert host.robots_error == "http_503" and host.next_fetch_at > timezone.now()
    assert (host.next_fetch_at - host.robots_expires_at).total_seconds() >= -0.01
    assert service.lease_ready_hosts("t", 1) == []  # nothing is tried before then


def test_it_allows_everything_when_robots_txt_is_missing(settings):
    settings.CRAWLER_DEFAULT_DELAY = 0
    srv, hits, origin = serve(404)
    try:
        service.add_seeds([origin + "/a"])
        run_embedded(threads=1, max_seconds=20)
    finally:
        srv.shutdown()
    assert (hits["/robots.txt"], hits["/a"]) == (1, 1)
    assert Url.objects.get().state == "fetched"


def test_a_crash_while_admitting_links_leaves_the_page_queued_not_its_links_lost(settings, monkeypatch):
    from django.db import OperationalError

    from webs.sampleweb.hostile import hostile_web
    from crawl import pipeline as fetch_service

    settings.CRAWLER_DEFAULT_DELAY = 0
    settings.CRAWLER_ADAPTIVE_DELAY_FACTOR = 0
    settings.CRAWLER_MAX_LINKS_PER_PAGE = 3
    settings.CRAWLER_POLITENESS_SCOPE = "host"  # one session: robots.txt, then the page
    with hostile_web() as web:
        service.add_seeds([web.url("/many-links")])
        (lease,) = service.lease_ready_hosts("t", 1)
        real_add_urls = fetch_service.frontier.add_urls

        def database_gone(candidates):
            raise OperationalError("server closed the connection unexpectedly")

        monkeypatch.setattr(fetch_service.frontier, "add_urls", database_gone)
        engine = run_sessions([lease])
        # nothing recorded: the page waits to be fetched again, its links are not lost (the
        # session took them from the page, fetched them, and they wait too, uncharged); the
        # host was released all the same
        assert engine.writer.errors == 1
        assert sorted(Url.objects.values_list("url", "state", "attempts")) == sorted(
            [(web.url("/many-links"), "queued", 0)] + [(web.url(f"/fine/{n}"), "queued", 0) for n in range(3)])
        host = Host.objects.get()  # released, paused: a failure that repeats must not loop
        assert (host.leased_until, host.wait_reason) == (None, "store_failed")
        assert host.next_fetch_at > timezone.now() + timedelta(seconds=30)
        monkeypatch.setattr(fetch_service.frontier, "add_urls", real_add_urls)
        Host.objects.update(next_fetch_at=timezone.now())  # its pause is over
        run_embedded(threads=1, max_seconds=20)
    assert sorted(Url.objects.values_list("url", "state")) == sorted(
        [(web.url("/many-links"), "fetched")] + [(web.url(f"/fine/{n}"), "fetched") for n in range(3)])


def test_an_archive_that_cannot_be_written_ends_the_session_and_keeps_its_urls(settings, tmp_path):
    from webs.sampleweb.hostile import hostile_web
    from archive import warc

    settings.CRAWLER_DEFAULT_DELAY = 0
    settings.CRAWLER_ADAPTIVE_DELAY_FACTOR = 0
    settings.CRAWLER_POLITENESS_SCOPE = "host"  # one session: robots.txt, then the pages
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the archive directory should be: mkdir fails like a full disk")
    settings.CRAWLER_WARC_DIR = str(blocker / "warc")
    warc.close()
    with hostile_web() as web:
        service.add_seeds([web.url("/ok"), web.url("/fine/1")])
        (lease,) = service.lease_ready_hosts("t", 1)
        engine = run_sessions([lease])
        assert engine.stats.errors == 1 and engine.stats.ended == {"error": 1}
        # nothing recorded, nothing charged, the host released at its normal time
        assert sorted(Url.objects.values_list("state", "attempts")) == [("queued", 0), ("queued", 0)]
        assert Host.objects.get().leased_until is None
        settings.CRAWLER_WARC_DIR = str(tmp_path / "warc")  # the operator frees the disk
        run_embedded(threads=1, max_seconds=20)
        warc.close()
    assert sorted(Url.objects.values_list("state", flat=True)) == ["fetched", "fetched"]
    assert len(list((tmp_path / "warc").glob("*.warc.gz"))) == 1


def test_a_group_that_cannot_be_written_is_written_again_host_by_host(settings):
    """Group commit: one host's results that cannot be stored (here: a document for a URL
    that does not exist) fail the group's transaction; each host's part is then written
    alone (and a failing one URL by URL), so only that host's URL stays queued, and both
    hosts are released."""
    from crawl import pipeline as fetch_service
    from crawl.session import SessionEnded, UrlsDone
    from crawl.writer import Writer

    settings.CRAWLER_DEFAULT_DELAY = 0
    servers = [serve(200), serve(200)]
    try:
        good, bad = (f"{origin}/page" for _, _, origin in servers)
        service.add_seeds([good, bad])
        leases = sorted(service.lease_ready_hosts("t", 2), key=lambda lease: lease.origin != servers[0][2])
        assert [lease.origin for lease in leases] == [servers[0][2], servers[1][2]]
        items = []
        for lease in leases:
            (queued,) = service.queued_urls(lease.url_ids)
            results = fetch_service.Results()
            fetch_service.fetch_one(results, queued)
            items.append(UrlsDone(lease.host_id, results))
        page, _, _ = items[1].results.pages[0]
        page.url_id = Url.objects.order_by("-id").values_list("id", flat=True).first() + 1000
        released = []
        writer = Writer(interval=5.0, group_pages=64, on_release=released.append)  # both in one group
        for item in items:
            writer.put(item)
        for lease in leases:
            writer.put(SessionEnded(lease.host_id, lease.token, "", service.HostUpdate(timezone.now()), 1, 1, "done"))
        writer.close()
    finally:
        for srv, _, _ in servers:
            srv.shutdown()
    assert writer.groups == 1 and writer.errors == 2  # the group, then the bad host's one result
    assert dict(Url.objects.values_list("url", "state")) == {good: "fetched", bad: "queued"}
    assert [ended.host_id for ended in released] == [lease.host_id for lease in leases]
    assert not Host.objects.filter(leased_until__isnull=False).exists()


def test_a_result_the_database_refuses_is_settled_as_a_dead_letter_and_the_rest_stored(settings, monkeypatch):
    """A poisoned row cannot stall its batch, nor come back forever: the batch is stored
    URL by URL, the one result that still fails is settled (failed, in the dead-letter
    table, with the reason) and the host's other URLs are stored."""
    from crawl import pipeline as fetch_service
    from crawl.session import SessionEnded, UrlsDone
    from crawl.writer import Writer

    settings.CRAWLER_DEFAULT_DELAY = 0
    settings.CRAWLER_ADAPTIVE_DELAY_FACTOR = 0
    srv, _, origin = serve(200)
    try:
        service.add_seeds([f"{origin}/a", f"{origin}/poison", f"{origin}/c"])
        (lease,) = service.lease_ready_hosts("t", 1)
        items = []
        for queued in service.queued_urls(lease.url_ids):
            results = fetch_service.Results()
            fetch_service.fetch_one(results, queued)
            items.append(results)
        poison = Url.objects.get(url=f"{origin}/poison").id
        real_store_pages = fetch_service.indexer.store_pages

        def refuse_the_poison(pages):
            if any(page.url_id == poison for page in pages):
                raise ValueError("value too long for type character varying(100)")
            return real_store_pages(pages)

        monkeypatch.setattr(fetch_service.indexer, "store_pages", refuse_the_poison)
        writer = Writer(interval=5.0, group_pages=64)
        merged = fetch_service.Results()
        for results in items:
            merged.extend(results)
        writer.put(UrlsDone(lease.host_id, merged))
        writer.put(SessionEnded(lease.host_id, lease.token, "", service.HostUpdate(timezone.now()), 3, 1, "done"))
        writer.close()
    finally:
        srv.shutdown()
    assert dict(Url.objects.values_list("url", "state")) == {
        f"{origin}/a": "fetched", f"{origin}/poison": "failed", f"{origin}/c": "fetched"}
    assert list(DeadLetter.objects.values_list("url__url", "reason")) == [(f"{origin}/poison", "store_failed:ValueError")]
    assert not Host.objects.filter(leased_until__isnull=False).exists()



def test_a_host_whose_results_cannot_be_stored_is_paused_on_the_breakers_ladder(settings, monkeypatch):
    """A store failing with an OperationalError every time (not a deadlock: the database
    refuses it) must not refetch the host in a loop: the host is released paused, the
    pause doubles with each failure in a row, the crawl log says why; its URLs stay queued."""
    from django.db import OperationalError

    from crawl import pipeline as fetch_service
    from crawl.models import CrawlLogEntry
    from crawl.session import SessionEnded, UrlsDone
    from crawl.writer import Writer

    settings.CRAWLER_DEFAULT_DELAY = 0
    settings.CRAWLER_HOST_PAUSE_SECONDS = 60
    srv, _, origin = serve(200)

    def refuse(pages):
        raise OperationalError("canceling statement due to statement timeout")

    def one_session(writer):
        (lease,) = service.lease_ready_hosts("t", 1)
        (queued,) = service.queued_urls(lease.url_ids)
        results = fetch_service.Results()
        fetch_service.fetch_one(results, queued)
        writer.put(UrlsDone(lease.host_id, results))
        writer.put(SessionEnded(lease.host_id, lease.token, "", service.HostUpdate(timezone.now()), 1, 1, "done",
                                origin, "w"))
        writer.flush()
        return Host.objects.get(id=lease.host_id)

    try:
        service.add_seeds([f"{origin}/a"])
        monkeypatch.setattr(fetch_service.indexer, "store_pages", refuse)
        writer = Writer(interval=0.01, group_pages=64)
        before = timezone.now()
        host = one_session(writer)
        assert (host.wait_reason, host.leased_until) == ("store_failed", None)
        first_pause = (host.next_fetch_at - before).total_seconds()
        assert 60 <= first_pause < 70
        Host.objects.filter(id=host.id).update(next_fetch_at=timezone.now())  # an operator lets it go again
        before = timezone.now()
        host = one_session(writer)
        assert 120 <= (host.next_fetch_at - before).total_seconds() < 130  # doubled
        monkeypatch.undo()  # the database takes it again: the next release is a plain one
        Host.objects.filter(id=host.id).update(next_fetch_at=timezone.now())
        host = one_session(writer)
        writer.close()
    finally:
        srv.shutdown()
    assert host.wait_reason != "store_failed" and host.next_fetch_at <= timezone.now() + timedelta(seconds=5)
    assert Url.objects.get().state == "fetched"
    logged = CrawlLogEntry.objects.filter(kind="store").order_by("at")
    assert list(logged.values_list("error", "outcome", "attempt", "origin")) == [
        ("store_failed", "paused_60s", 1, origin), ("store_failed", "paused_120s", 2, origin)]


def test_a_store_aborted_by_a_deadlock_is_tried_again_not_left_to_a_second_fetch(settings, monkeypatch):
    """Two writers that lock rows in different orders deadlock; PostgreSQL aborts one. Its
    results are stored on a second try, so no page waits to be fetched a second time."""
    from django.db import OperationalError
    from psycopg import errors as pg_errors

    from crawl import pipeline as fetch_service
    from crawl import writer as writer_module
    from crawl.session import SessionEnded, UrlsDone
    from crawl.writer import Writer

    settings.CRAWLER_DEFAULT_DELAY = 0
    srv, _, origin = serve(200)
    try:
        service.add_seeds([f"{origin}/a"])
        (lease,) = service.lease_ready_hosts("t", 1)
        (queued,) = service.queued_urls(lease.url_ids)
        results = fetch_service.Results()
        fetch_service.fetch_one(results, queued)
        real_store, tries = writer_module.store, []

        def deadlocked_once(merged):
            tries.append(1)
            if len(tries) == 1:
                try:
                    raise pg_errors.DeadlockDetected("deadlock detected")
                except pg_errors.DeadlockDetected as cause:
                    raise OperationalError("deadlock detected") from cause
            return real_store(merged)

        monkeypatch.setattr(writer_module, "store", deadlocked_once)
        writer = Writer(interval=0.01)
        writer.put(UrlsDone(lease.host_id, results))
        writer.put(SessionEnded(lease.host_id, lease.token, "", service.HostUpdate(timezone.now()), 1, 1, "done"))
        writer.close()
    finally:
        srv.shutdown()
    assert len(tries) == 2 and writer.errors == 0
    assert Url.objects.get().state == "fetched"
