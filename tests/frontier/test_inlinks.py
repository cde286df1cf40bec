"""Links from other hosts held in the crawling process and counted a few batches at a time
(frontier/inlinks.py): when they are counted, in how many statements, and that a writer
counts what it holds while idle and before its process ends."""

import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from frontier import service
from frontier.models import Host, Url

pytestmark = pytest.mark.django_db


def url(address: str) -> Url:
    return Url.objects.get(url=address)


def test_links_from_other_hosts_wait_until_enough_are_held_then_go_in_one_statement(settings):
    settings.CRAWLER_INLINK_FLUSH_SECONDS = 3600
    settings.CRAWLER_INLINK_FLUSH_PAIRS = 4
    service.add_urls([service.Candidate("http://a.test/x/1", 2), service.Candidate("http://a.test/x/2", 2)])
    with CaptureQueriesContext(connection) as queries:
        # One pair for a URL and one for its host: held, nothing written.
        result = service.add_urls([service.Candidate("http://a.test/x/1", 2, via="http://b.test")])
        assert (url("http://a.test/x/1").inlink_hosts, url("http://a.test/x/1").score) == (0, -20)
        assert Host.objects.get(origin="http://a.test").referring_hosts == 0 and result.raised == {}
        # Two URLs and two hosts' pairs held: due, counted with this batch.
        result = service.add_urls([service.Candidate("http://a.test/x/1", 2, via="http://c.test"),
                                   service.Candidate("http://a.test/x/2", 2, via="http://b.test")])
    assert (url("http://a.test/x/1").inlink_hosts, url("http://a.test/x/1").score) == (2, -20 + 24)
    assert (url("http://a.test/x/2").inlink_hosts, url("http://a.test/x/2").score) == (1, -20 + 12)
    assert Host.objects.get(origin="http://a.test").referring_hosts == 2
    host_id = Host.objects.get(origin="http://a.test").id
    assert result.raised == {host_id: -20 + 24}  # the sessions of a.test may swap x/1 in
    written = [q["sql"] for q in queries.captured_queries if "inlink_bits = " in q["sql"] or "referrer_bits = " in q["sql"]]
    if connection.vendor == "postgresql":  # SQLite, one writer, reads then writes row by row
        assert len(written) == 2  # the URLs' statement and the hosts', once for both batches


def test_held_links_are_counted_once_the_oldest_has_waited_long_enough(settings, monkeypatch):
    from frontier import inlinks

    settings.CRAWLER_INLINK_FLUSH_SECONDS = 3600
    settings.CRAWLER_INLINK_FLUSH_PAIRS = 1000
    service.add_urls([service.Candidate("http://a.test/x/1", 2)])
    service.add_urls([service.Candidate("http://a.test/x/1", 2, via="http://b.test")])
    assert service.flush_inlinks(due_only=True) == {}  # not due: still held
    assert url("http://a.test/x/1").inlink_hosts == 0
    later = time.monotonic() + 3600  # the hour passes (the held links' clock, not the test's)
    monkeypatch.setattr(inlinks.time, "monotonic", lambda: later)
    host_id = Host.objects.get(origin="http://a.test").id
    assert service.flush_inlinks(due_only=True) == {host_id: -20 + 12}
    assert url("http://a.test/x/1").inlink_hosts == 1
    assert service.flush_inlinks() == {}  # nothing held any more
    # Counted with every batch when the setting says 0 s.
    settings.CRAWLER_INLINK_FLUSH_SECONDS = 0
    service.add_urls([service.Candidate("http://a.test/x/1", 2, via="http://c.test")])
    assert url("http://a.test/x/1").inlink_hosts == 2


def test_a_url_linked_from_several_hosts_meanwhile_is_written_once_with_all_of_them(settings):
    settings.CRAWLER_INLINK_FLUSH_SECONDS = 3600
    service.add_urls([service.Candidate("http://a.test/x/1", 2)])
    for n in range(7):  # past the cap of 5 hosts
        service.add_urls([service.Candidate("http://a.test/x/1", 2, via=f"http://v{n}.test")])
    with CaptureQueriesContext(connection) as queries:
        service.flush_inlinks()
    assert (url("http://a.test/x/1").inlink_hosts, url("http://a.test/x/1").score) == (7, -20 + 60)
    assert Host.objects.get(origin="http://a.test").referring_hosts == 7
    if connection.vendor == "postgresql":
        assert sum("inlink_bits = " in q["sql"] for q in queries.captured_queries) == 1


@pytest.mark.django_db(transaction=True)  # the writer's thread reads what the test wrote
def test_a_writer_counts_what_its_process_holds_while_idle_and_when_it_closes(settings):
    from crawl.pipeline import Results
    from crawl.session import UrlsDone
    from crawl.writer import Writer

    from ..crawl_helpers import wait_until

    settings.CRAWLER_INLINK_FLUSH_SECONDS = 0.2
    service.add_urls([service.Candidate("http://a.test/x/1", 2), service.Candidate("http://a.test/x/2", 2)])
    host_id = Host.objects.get(origin="http://a.test").id
    raised = []
    writer = Writer(on_raised=raised.append)
    try:
        service.add_urls([service.Candidate("http://a.test/x/1", 2, via="http://b.test")])
        wait_until(lambda: raised, what="the idle writer to count the held link")  # told once written
        assert url("http://a.test/x/1").inlink_hosts == 1  # no group came: counted while idle
        assert raised == [{host_id: -20 + 12}]
        settings.CRAWLER_INLINK_FLUSH_SECONDS = 3600  # not due again before the writer closes
        service.add_urls([service.Candidate("http://a.test/x/2", 2, via="http://b.test")])
        # Two groups, one after the other: once the second is written, the writer has
        # passed the due test that follows the first.
        for _ in range(2):
            writer.put(UrlsDone(host_id, Results()))
            assert writer.flush(10)
        assert url("http://a.test/x/2").inlink_hosts == 0
    finally:
        writer.close()
    assert url("http://a.test/x/2").inlink_hosts == 1  # counted as the writer closed
    assert raised == [{host_id: -20 + 12}, {host_id: -20 + 12}]


@pytest.mark.django_db(transaction=True)  # the crawl's threads read what the test wrote
def test_links_to_pages_this_process_fetched_are_not_sent_to_be_counted(settings, tmp_path):
    """Most links from other hosts point at pages fetched already; the database would
    answer "takes no more links" for each after an index probe. Pages the process stored
    itself need no probe."""
    from archive import warc
    from crawl.runners import run_embedded

    from ..loopback import QuietHandler, serving

    settings.CRAWLER_WARC_DIR = str(tmp_path / "warc")
    settings.CRAWLER_DEFAULT_DELAY = 0
    settings.CRAWLER_INLINK_FLUSH_SECONDS = 0  # a batch's links counted with it

    class Site(QuietHandler):
        def do_GET(self):
            if self.path == "/robots.txt":
                return self.send(404)
            anchors = '<a href="/a/page">a</a>' if self.path == "/" else ""
            self.send(200, f"<html><body><p>page {self.path}</p>{anchors}</body></html>".encode(),
                      [("Content-Type", "text/html")])

    with serving(Site) as origin:
        service.add_seeds([origin + "/"])
        run_embedded(threads=1, max_seconds=30)
        warc.close()
    assert url(origin + "/a/page").state == "fetched"
    service.add_urls([service.Candidate(origin + "/a/late", 2)])  # waiting: it takes links
    with CaptureQueriesContext(connection) as queries:
        service.add_urls([service.Candidate(origin + "/a/page", 2, via="http://other.test"),
                          service.Candidate(origin + "/a/late", 2, via="http://other.test")])
    counted = [q["sql"] for q in queries.captured_queries if "inlink_bits" in q["sql"] and "INSERT" not in q["sql"]]
    assert counted and not [sql for sql in counted if str(url(origin + "/a/page").url_key) in sql]
    assert (url(origin + "/a/late").inlink_hosts, url(origin + "/a/page").inlink_hosts) == (1, 0)
