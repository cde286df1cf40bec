"""Links reach the database only when new (frontier/seen.py, frontier/admission.py): the
seen-cache of the crawling process drops links it knows, never one that would change the
frontier (a shorter path, another scope), and losing it loses nothing."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from frontier import seen, service
from frontier.admission import Candidate, add_urls
from frontier.models import CrawlScope, Url

pytestmark = pytest.mark.django_db(transaction=True)

LINKS = [f"http://seen.test/page/{n}" for n in range(20)]


def url_statements(queries) -> list[str]:
    return [q["sql"] for q in queries if "frontier_url" in q["sql"]]


def test_it_admits_new_links_in_one_statement_and_known_ones_without_any():
    with CaptureQueriesContext(connection) as first:
        result = add_urls([Candidate(url, depth=1) for url in LINKS])
    assert (result.admitted, result.known) == (20, 0)
    inserts = [sql for sql in url_statements(first.captured_queries) if "INSERT INTO frontier_url" in sql]
    assert len(inserts) == 1  # one set-based statement for the batch (SQLite: one executemany)

    with CaptureQueriesContext(connection) as again:
        result = add_urls([Candidate(url, depth=1) for url in LINKS] + [Candidate(url, depth=3) for url in LINKS])
    assert (result.admitted, result.known) == (0, 20)
    assert url_statements(again.captured_queries) == []  # known here: the database is not asked
    assert Url.objects.count() == 20


def test_a_shorter_path_still_reaches_the_database_and_lowers_the_depth(settings):
    add_urls([Candidate(LINKS[0], depth=4)])
    with CaptureQueriesContext(connection) as shorter:
        result = add_urls([Candidate(LINKS[0], depth=2)])
    assert result.known == 1 and url_statements(shorter.captured_queries)
    assert Url.objects.get().depth == 2 and Url.objects.get().score == 2 * settings.CRAWLER_SCORE_DEPTH


def test_a_link_found_under_another_scope_widens_the_scopes_of_the_known_url():
    a = CrawlScope.objects.create(key="a", kind="web")
    b = CrawlScope.objects.create(key="b", kind="web")
    add_urls([Candidate(LINKS[0], depth=1, scopes=str(a.id))])
    add_urls([Candidate(LINKS[0], depth=1, scopes=str(b.id))])
    assert Url.objects.get().scopes == f"{a.id},{b.id}"


def test_a_lost_cache_loses_nothing_and_a_full_one_starts_again(settings):
    add_urls([Candidate(url, depth=1) for url in LINKS[:10]])
    seen.forget()  # a new process, or a killed one's successor
    result = add_urls([Candidate(url, depth=1) for url in LINKS])
    assert (result.admitted, result.known) == (10, 10)
    settings.CRAWLER_SEEN_CACHE_SIZE = 5  # bounded: past it the cache starts again
    service.forget_caches()
    result = add_urls([Candidate(url, depth=1) for url in LINKS])
    assert (result.admitted, result.known) == (0, 20)
    assert seen.size() <= 5
    assert Url.objects.count() == 20


def test_urls_of_a_rolled_back_transaction_are_not_remembered():
    with pytest.raises(RuntimeError):
        with transaction.atomic():
            add_urls([Candidate(LINKS[0], depth=1)])
            raise RuntimeError("the seed list failed after its URLs were inserted")
    assert Url.objects.count() == 0
    assert add_urls([Candidate(LINKS[0], depth=1)]).admitted == 1  # not taken for known


@pytest.mark.postgres
def test_a_new_database_connection_forgets_the_cache():
    """Rows committed asynchronously may not survive a database crash: a process whose
    connection was replaced asks the database again."""
    add_urls([Candidate(url, depth=1) for url in LINKS])
    assert seen.size() == 20
    Url.objects.all().delete()  # what a crash that lost the last commits looks like
    connection.close()  # the next statement opens a new connection
    result = add_urls([Candidate(url, depth=1) for url in LINKS])
    assert result.admitted == 20 and Url.objects.count() == 20


def test_on_sqlite_a_new_connection_keeps_the_cache():
    """The embedded writer closes its connection after every batch (CONN_MAX_AGE 0); SQLite's
    commits are in the file, so the links it knows stay known (they were forgotten at every
    batch: 714 times in a 687-page crawl)."""
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL: test_a_new_database_connection_forgets_the_cache")
    add_urls([Candidate(url, depth=1) for url in LINKS])
    connection.close()
    with CaptureQueriesContext(connection) as again:
        result = add_urls([Candidate(url, depth=1) for url in LINKS])
    assert (result.admitted, result.known) == (0, 20)
    assert url_statements(again.captured_queries) == []


def test_a_deleted_host_is_created_again_not_a_failed_batch():
    add_urls([Candidate(LINKS[0], depth=1)])
    from frontier.models import Host

    Host.objects.all().delete()  # its URLs with it (by hand: the crawler never does)
    result = add_urls([Candidate(LINKS[1], depth=1)])
    assert result.admitted == 1 and Url.objects.get().url == LINKS[1]


def test_url_keys_are_the_first_eight_bytes_of_the_url_hash():
    from frontier.normalize import normalize

    norm = normalize("http://seen.test/a")
    assert norm.url_key == int(norm.url_hash[:16], 16) - (1 << 64 if int(norm.url_hash[0], 16) >= 8 else 0)
    add_urls([Candidate(norm.url)])
    assert Url.objects.get().url_key == norm.url_key
