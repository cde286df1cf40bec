"""Hosts with nothing waiting are set aside, and every way a URL comes back wakes its host
(frontier/idle.py): nothing is lost by leaving finished hosts out of the dispatcher's scan."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from frontier import idle, service, steering, traps
from frontier.importance import IDLE_BAND, LOWEST_BAND
from frontier.leases import HostUpdate
from frontier.models import DeadLetter, Host, Url, UrlState
from frontier.outcomes import FetchReport
from frontier.service import Candidate

from ..crawl_helpers import until_a_backend_waits_for_a_lock

ORIGIN = "http://a.test"


@pytest.fixture(autouse=True)
def no_delay(settings):
    settings.CRAWLER_DEFAULT_DELAY = 0
    settings.CRAWLER_IDLE_SWEEP_SECONDS = 3600  # a test sweeps when it says so
    idle._last_sweep["at"] = time.monotonic()


def _session(status: int = 200) -> int:
    """Lease the one ready host, record `status` for all its URLs, release it: its id."""
    (lease,) = service.lease_ready_hosts("t", 10)
    service.record_fetches([(FetchReport(url_id, status=status), 0) for url_id in lease.url_ids])
    assert service.release_hosts([(lease.host_id, lease.token, "", HostUpdate(next_fetch_at=timezone.now()))])
    return lease.host_id


def _band(host_id: int) -> int:
    return Host.objects.get(id=host_id).band


def _finished_host(n: int = 2) -> int:
    service.add_urls([Candidate(f"{ORIGIN}/{i}") for i in range(n)])
    host_id = _session()
    assert _band(host_id) == IDLE_BAND
    return host_id


def _leased_urls() -> list[str]:
    leases = service.lease_ready_hosts("t2", 10)
    return sorted(Url.objects.filter(id__in=[i for lease in leases for i in lease.url_ids]).values_list("url", flat=True))


@pytest.mark.django_db
def test_it_sets_aside_a_host_whose_urls_are_all_fetched_and_dispatch_skips_it():
    _finished_host()
    assert service.lease_ready_hosts("t2", 10) == []


@pytest.mark.django_db
def test_it_keeps_a_host_whose_url_waits_for_a_retry_in_the_scan():
    service.add_urls([Candidate(f"{ORIGIN}/flaky")])
    host_id = _session(status=503)
    url = Url.objects.get()
    assert url.state == UrlState.QUEUED and url.next_fetch_at > timezone.now()  # backing off
    assert _band(host_id) < IDLE_BAND  # nothing would wake it when the retry is due
    Url.objects.update(next_fetch_at=timezone.now() - timedelta(seconds=1))
    assert _leased_urls() == [f"{ORIGIN}/flaky"]


@pytest.mark.django_db
def test_it_wakes_a_host_when_a_new_link_to_it_is_admitted():
    host_id = _finished_host()
    service.add_urls([Candidate(f"{ORIGIN}/new")])
    assert _band(host_id) < IDLE_BAND
    assert _leased_urls() == [f"{ORIGIN}/new"]


def _recrawl_release(settings, host_id):
    settings.CRAWLER_RECRAWL_BUDGET_PER_DAY = 86400 * 10
    Url.objects.update(next_fetch_at=timezone.now() - timedelta(seconds=5))
    assert service.release_due() == 2


def _operator_recrawl(settings, host_id):
    ids = list(Url.objects.values_list("id", flat=True))
    assert steering.recrawl_now(ids, "test").changed == 2


def _dead_letter_requeue(settings, host_id):
    urls = list(Url.objects.all())
    Url.objects.update(state=UrlState.FAILED)
    letters = [DeadLetter.objects.create(url=url, reason="http_500", attempts=3) for url in urls]
    assert service.requeue_dead_letters([letter.id for letter in letters]) == 2


def _trap_resumed(settings, host_id):
    pattern = traps.pattern_of(f"{ORIGIN}/0")
    Url.objects.update(state=UrlState.EXCLUDED, outcome=traps.TRAP_OUTCOME)
    assert traps.resume(pattern) == 2


@pytest.mark.django_db
@pytest.mark.parametrize("queue_again", [_recrawl_release, _operator_recrawl, _dead_letter_requeue, _trap_resumed],
                         ids=["recrawl release", "recrawl now", "dead letters requeued", "trap pattern resumed"])
def test_every_way_a_url_is_queued_again_wakes_its_host(settings, queue_again):
    host_id = _finished_host()
    queue_again(settings, host_id)
    assert _band(host_id) == LOWEST_BAND
    assert _leased_urls() == [f"{ORIGIN}/0", f"{ORIGIN}/1"]


@pytest.mark.django_db
def test_the_sweep_wakes_what_a_writer_missed_and_sets_aside_what_is_finished():
    service.add_urls([Candidate(f"{ORIGIN}/{i}") for i in range(2)] + [Candidate("http://b.test/done")])
    a, b = (Host.objects.get(origin=o).id for o in (ORIGIN, "http://b.test"))
    Host.objects.filter(id=a).update(band=IDLE_BAND)  # as if the previous release queued its URLs
    Url.objects.filter(host_id=b).update(state=UrlState.FETCHED)  # finished before this release
    assert _leased_urls() == []  # a is asleep, b has nothing
    idle._last_sweep["at"] = None  # a dispatcher's first round sweeps
    assert _leased_urls() == [f"{ORIGIN}/0", f"{ORIGIN}/1"]
    assert _band(a) < IDLE_BAND and _band(b) == IDLE_BAND
    assert idle.sweep() == (0, 0)  # nothing left to do


def _finished_hosts(n: int) -> list[int]:
    """n hosts, each with one URL fetched, not set aside (as a crawl begun before this release left them)."""
    service.add_urls([Candidate(f"http://h{i}.test/") for i in range(n)])
    hosts = list(Host.objects.order_by("id").values_list("id", flat=True))
    Url.objects.update(state=UrlState.FETCHED)
    Host.objects.update(band=LOWEST_BAND)
    return hosts


@pytest.mark.django_db
def test_the_sweep_walks_every_host_in_batches(monkeypatch):
    monkeypatch.setattr(idle, "SWEEP_BATCH", 3)
    hosts = _finished_hosts(10)
    service.add_urls([Candidate("http://h4.test/more")])  # one host keeps a URL waiting
    assert idle.sweep() == (0, 9)
    assert [_band(h) == IDLE_BAND for h in hosts] == [True] * 4 + [False] + [True] * 5


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_sweep_goes_past_a_batch_another_writer_holds(monkeypatch):
    """Set-aside skips rows another transaction holds (they are seen next sweep); the walk
    goes on to the next batch instead of stopping at one where it could do nothing."""
    monkeypatch.setattr(idle, "SWEEP_BATCH", 3)
    hosts = _finished_hosts(7)
    swept = []
    with transaction.atomic():
        Host.objects.filter(id__in=hosts[:3]).update(lease_holder="busy")  # holds the first batch

        def sweep():
            try:
                swept.append(idle.sweep())
            finally:
                connection.close()

        thread = threading.Thread(target=sweep)
        thread.start()
        thread.join(20)
    assert swept == [(0, 4)]
    assert [_band(h) for h in hosts] == [LOWEST_BAND] * 3 + [IDLE_BAND] * 4


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_url_queued_while_its_host_is_being_set_aside_wakes_it():
    """The race the module's rule closes: the release holds the host's row and looks (the
    new URL not committed yet, so it sets the host aside); the admission of the URL, whose
    host update waits for that lock, then wakes it. A wake that changed only idle rows would
    have matched nothing under its snapshot and been lost."""
    host_id = _finished_host()
    Host.objects.filter(id=host_id).update(band=LOWEST_BAND)  # not set aside yet
    inserted, release_looked = threading.Event(), threading.Event()

    def admission():
        try:
            with transaction.atomic():
                service.add_urls([Candidate(f"{ORIGIN}/late")])  # inserts, then updates the host row: waits
                inserted.set()
        finally:
            connection.close()

    def release():
        try:
            with transaction.atomic():
                Host.objects.filter(id=host_id).update(lease_owner="")  # the release's row lock
                thread.start()
                until_a_backend_waits_for_a_lock()  # admission has inserted its URL and waits for this row
                assert not inserted.is_set()
                assert idle.set_aside([host_id], locked=True) == 1  # its URL not committed: set aside
                release_looked.set()
        finally:
            connection.close()

    thread = threading.Thread(target=admission)
    releaser = threading.Thread(target=release)
    releaser.start()
    releaser.join()
    thread.join()
    assert release_looked.is_set() and inserted.is_set()
    assert _band(host_id) < IDLE_BAND  # the band of its new URL
    assert _leased_urls() == [f"{ORIGIN}/late"]
