import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from frontier import service
from frontier.models import CrawlLimits, DeadLetter, ExcludedDomain, Host, Seed, Url, UrlState
from frontier.outcomes import FetchReport
from frontier.service import Candidate


@pytest.mark.django_db
def test_it_admits_each_canonical_url_once():
    first = service.add_urls([Candidate("http://a.test/x"), Candidate("HTTP://A.test:80/x#f"),
                              Candidate("http://a.test/y", depth=1)])
    assert (first.admitted, first.known) == (2, 0)
    again = service.add_urls([Candidate("http://a.test/x"), Candidate("http://b.test/")])
    assert (again.admitted, again.known) == (1, 1)
    assert sorted(Url.objects.values_list("url", flat=True)) == [
        "http://a.test/x", "http://a.test/y", "http://b.test/"]
    assert Host.objects.get(origin="http://a.test").url_count == 2


@pytest.mark.django_db
def test_it_reports_each_rejection_reason(settings):
    settings.CRAWLER_DEPTH_LIMIT = 2
    ExcludedDomain.objects.create(domain="Blocked.test")
    result = service.add_urls([
        Candidate("mailto:x@y.z"), Candidate("http://www.blocked.test/"), Candidate("http://ok.test/", depth=3),
        Candidate("http://ok.test/" + "a" * 3000), Candidate("http://ok.test/r", hops=4), Candidate("http://ok.test/"),
    ])
    assert result.rejected == {"scheme": 1, "excluded_domain": 1, "depth_limit": 1, "url_too_long": 1,
                               "redirect_limit": 1}
    assert result.verdicts[-1] == "http://ok.test/" and result.admitted == 1


@pytest.mark.django_db
def test_it_applies_admin_limits_over_settings(settings):
    settings.CRAWLER_DEPTH_LIMIT = 10
    CrawlLimits.objects.create(depth_limit=1)
    from frontier.limits import forget_cached_limits
    forget_cached_limits()
    assert service.add_urls([Candidate("http://a.test/", depth=2)]).rejected == {"depth_limit": 1}


@pytest.mark.django_db
def test_it_keeps_the_shallowest_depth_seen_while_queued():
    service.add_urls([Candidate("http://a.test/deep", depth=5)])
    service.add_urls([Candidate("http://a.test/deep", depth=2)])
    assert Url.objects.get().depth == 2


@pytest.mark.django_db
def test_it_enforces_the_per_host_quota(settings):
    settings.CRAWLER_MAX_URLS_PER_HOST = 3
    result = service.add_urls([Candidate(f"http://a.test/{i}") for i in range(5)])
    assert result.admitted == 3 and result.rejected == {"host_quota": 2}
    assert service.add_urls([Candidate("http://a.test/9")]).rejected == {"host_quota": 1}


@pytest.mark.django_db
def test_it_stores_seeds_in_canonical_form():
    result = service.add_seeds(["HTTP://Seed.test", "ftp://nope"])
    assert list(Seed.objects.values_list("url", flat=True)) == ["http://seed.test/"]
    assert result.verdicts == ["http://seed.test/", "rejected:scheme"]


@pytest.mark.django_db
def test_it_leases_only_ready_hosts_with_due_urls(settings):
    settings.CRAWLER_DEFAULT_DELAY = 0
    service.add_urls([Candidate(f"http://a.test/{i}") for i in range(3)] + [Candidate("http://b.test/")])
    Host.objects.filter(origin="http://b.test").update(next_fetch_at=timezone.now() + timedelta(hours=1))
    leases = service.lease_ready_hosts("t", 10)
    assert [lease.origin for lease in leases] == ["http://a.test"]
    assert len(leases[0].url_ids) == 3
    assert service.lease_ready_hosts("t2", 10) == []  # a.test is leased, b.test not ready


@pytest.mark.django_db
def test_it_hands_one_url_per_lease_when_the_host_has_a_delay(settings):
    settings.CRAWLER_DEFAULT_DELAY = 0.5
    service.add_urls([Candidate(f"http://a.test/{i}", depth=i) for i in range(3)])
    (lease,) = service.lease_ready_hosts("t", 10)
    assert Url.objects.get(id=lease.url_ids[0]).url == "http://a.test/0"  # shallowest first


@pytest.mark.django_db
def test_it_takes_back_an_expired_lease():
    service.add_urls([Candidate("http://a.test/")])
    (first,) = service.lease_ready_hosts("dead-worker", 10)
    assert service.begin_lease(first.host_id, first.token) is not None
    Host.objects.update(leased_until=timezone.now() - timedelta(seconds=1))
    (second,) = service.lease_ready_hosts("alive", 10)
    assert second.host_id == first.host_id and second.token != first.token
    assert service.begin_lease(first.host_id, first.token) is None  # the dead worker's message is void
    assert not service.release_host(first.host_id, first.token, None)
    assert service.release_host(second.host_id, second.token, None)


@pytest.mark.django_db
def test_it_records_a_result_once_and_dead_letters_after_max_attempts(settings):
    settings.CRAWLER_MAX_ATTEMPTS = 2
    settings.CRAWLER_FAILURE_BACKOFF = []  # no back-off ladder (tests/frontier/test_recrawl.py has it)
    service.add_urls([Candidate("http://a.test/")])
    url = Url.objects.get()
    assert service.record_fetch(FetchReport(url.id, status=500), 0) == UrlState.QUEUED
    assert service.record_fetch(FetchReport(url.id, status=500), 1) == UrlState.FAILED
    assert service.record_fetch(FetchReport(url.id, status=200), 2) is None  # no longer queued
    letter = DeadLetter.objects.get()
    assert (letter.reason, letter.attempts, letter.last_status) == ("http_500", 2, 500)
    assert service.requeue_dead_letters([letter.id]) == 1
    assert Url.objects.get().state == UrlState.QUEUED and not DeadLetter.objects.exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_it_never_leases_a_host_twice_to_concurrent_dispatchers(settings):
    settings.CRAWLER_DEFAULT_DELAY = 0
    settings.CRAWLER_MAX_ACTIVE_LEASES = 10_000
    service.add_urls([Candidate(f"http://h{i}.test/") for i in range(200)])
    got, barrier = [], threading.Barrier(4)

    def dispatcher(name):
        barrier.wait()
        try:
            for _ in range(20):
                got.extend(lease.host_id for lease in service.lease_ready_hosts(name, 7))
        finally:
            connection.close()

    threads = [threading.Thread(target=dispatcher, args=(f"d{i}",)) for i in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert len(got) == len(set(got)) == 200


@pytest.mark.django_db
def test_a_host_inserted_by_the_previous_release_gets_its_wait_reason_from_the_database():
    """A rolling upgrade: the schema is migrated while workers of the previous release still
    run and insert hosts without the columns this release added."""
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO frontier_host (origin, next_fetch_at, lease_owner, robots_body, robots_error,"
            " robots_sitemaps, url_count, failures, created_at) VALUES (%s, %s, '', '', '', '', 0, 0, %s)",
            ["http://old-release.test", now, now])
    host = Host.objects.get(origin="http://old-release.test")
    assert host.wait_reason == "" and host.paused_at is None
