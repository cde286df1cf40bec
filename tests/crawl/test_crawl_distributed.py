"""Distributed mode for real: 2 dispatcher processes and 2 Celery worker processes against
PostgreSQL and Redis, crawling the sample web over loopback. Also: SIGKILL a worker
mid-crawl and see the crawl complete through lease expiry."""

import signal

import pytest
from django.conf import settings

from bench.cluster import wait_until_done as wait_for_quiet
from frontier import service
from indexer.backends import get_search_backend

from ..crawl_helpers import (
    assert_complete_and_polite,
    assert_every_response_archived,
    audit,
    distributed_cluster,
    once_fetched,
    sample_web,
)

pytestmark = [pytest.mark.crawl, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CRAWL_TIMEOUT = 180  # seconds; the crawl itself takes ~15 s here


def wait_until_done(running, on_progress=None):
    wait_for_quiet(service.has_pending_work, running, CRAWL_TIMEOUT, on_progress)


@pytest.fixture
def fresh_index():
    get_search_backend().clear()
    yield
    get_search_backend().clear()


def test_it_crawls_completely_and_politely_with_two_workers_and_two_dispatchers(tmp_path, fresh_index):
    with sample_web(tmp_path) as web:
        with distributed_cluster(workers=2, dispatchers=2) as running:
            service.add_seeds(web.seeds, service.ScopeSpec("web"))
            wait_until_done(running)
    report = audit(web)
    assert_complete_and_polite(web, report)
    assert_every_response_archived(web)  # by two worker processes, each with its own files
    # what the workers indexed is searchable from here
    assert len(get_search_backend().search(web.unique_word(f"http://{web.hosts[1]}/p/2.html"))) == 1


def test_it_loses_no_url_when_a_worker_is_killed_mid_crawl(tmp_path, fresh_index):
    with sample_web(tmp_path) as web:
        # A short lease so the dead worker's hosts come back quickly.
        with distributed_cluster(workers=2, dispatchers=1, CRAWLER_LEASE_SECONDS=3) as running:
            service.add_seeds(web.seeds, service.ScopeSpec("web"))
            killed = once_fetched(40, lambda: running.procs["worker0"].send_signal(signal.SIGKILL))
            wait_until_done(running, on_progress=killed)
            assert killed.done, "the crawl finished before the worker could be killed"
            assert running.procs["worker0"].wait(timeout=5) == -signal.SIGKILL
    report = audit(web)
    # Nothing lost and still polite; a URL the dead worker had fetched and not yet written is
    # fetched again, once: what its writer held, at most a commit group (under the full suite's
    # load 17 were seen, alone 0-16).
    assert_complete_and_polite(web, report, allow_duplicates=True)
    assert set(report["duplicate_fetches"].values()) <= {2}
    assert len(report["duplicate_fetches"]) <= settings.CRAWLER_COMMIT_GROUP_PAGES
