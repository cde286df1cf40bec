"""The parse pool (crawl/parsepool.py): pages analysed in worker processes exactly as in
the fetch thread, and a page that kills or hangs its parse process settled as
"parse_failed" in bounded time while the pool replaces the process."""

import os
import queue
import threading
import time

import pytest

from fetch import http
from crawl.parsepool import ParsePool
from crawl.pipeline import analyse
from frontier.records import QueuedUrl

PAGE = b"<html><head><title>Pool page</title></head><body><h1>Head</h1><p>poolword text</p></body></html>"


def response(url: str, body: bytes = PAGE) -> http.FetchResult:
    return http.FetchResult(url=url, status=200, headers={"content-type": "text/html; charset=utf-8"}, body=body,
                            final_url=url, started_at=time.time(), reason="OK",
                            response_headers=[("Content-Type", "text/html; charset=utf-8")], body_read=True)


def queued(url: str) -> QueuedUrl:
    return QueuedUrl(1, url, 1, 0, 0, "")


def hostile_analyse(result, queued_url):
    """What a parser that crashes or hangs on one page looks like to the pool."""
    if result.url.endswith("/crash"):
        os._exit(3)
    if result.url.endswith("/hang"):
        time.sleep(3600)
    return dict(analysis=analyse(result, queued_url), pid=os.getpid())


def wait_for_children(pool: ParsePool, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while len(pool._children) < pool.size:
        assert time.monotonic() < deadline, "the parse processes did not start"
        time.sleep(0.05)


@pytest.fixture
def pool(settings):
    settings.CRAWLER_PARSE_TIMEOUT = 2.0
    pool = ParsePool(2, analyse_path="tests.crawl.test_parsepool.hostile_analyse")
    wait_for_children(pool)
    yield pool
    pool.close()


def test_it_analyses_pages_in_other_processes_as_the_fetch_thread_would(settings):
    pool = ParsePool(1)
    try:
        wait_for_children(pool)
        result = response("http://pool.test/page")
        away, here = pool.analyse(result, queued(result.url)), analyse(result, queued(result.url))
    finally:
        pool.close()
    assert pool.inline == 0
    assert away.page.parsed == here.page.parsed and away.page.fingerprint == here.page.fingerprint
    assert away.page.index == here.page.index and away.observation == here.observation == "first"
    assert away.body_hash == here.body_hash and len(away.records) == len(here.records) == 1


def test_a_page_that_kills_its_parse_process_is_settled_and_the_process_replaced(pool):
    ok = pool.analyse(response("http://pool.test/ok"), queued("http://pool.test/ok"))
    assert ok["pid"] != os.getpid()
    started = time.monotonic()
    failed = pool.analyse(response("http://pool.test/crash"), queued("http://pool.test/crash"))
    assert failed.failed == "parse_failed" and failed.page is None
    assert len(failed.records) == 1  # the response is archived all the same
    assert time.monotonic() - started < 2.0
    wait_for_children(pool)  # replaced
    assert pool.failures == 1
    assert pool.analyse(response("http://pool.test/ok"), queued("http://pool.test/ok"))["analysis"].page.parsed.title \
        == "Pool page"


def test_a_page_that_hangs_its_parse_process_is_settled_within_the_timeout(pool):
    started = time.monotonic()
    failed = pool.analyse(response("http://pool.test/hang"), queued("http://pool.test/hang"))
    assert failed.failed == "parse_failed"
    assert 2.0 <= time.monotonic() - started < 5.0
    wait_for_children(pool)
    assert pool.analyse(response("http://pool.test/ok"), queued("http://pool.test/ok"))["analysis"].page is not None


def test_many_threads_share_one_child_and_each_gets_its_own_answer(settings):
    pool = ParsePool(1, analyse_path="tests.crawl.test_parsepool.hostile_analyse")
    try:
        wait_for_children(pool)
        urls = [f"http://pool.test/page{i}" for i in range(12)]
        answers = {}

        def work(url):
            answers[url] = pool.analyse(response(url, PAGE.replace(b"Pool page", url.encode())), queued(url))

        threads = [threading.Thread(target=work, args=(url,)) for url in urls]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    finally:
        pool.close()
    assert pool.inline == 0 and pool.failures == 0
    assert {url: answers[url]["analysis"].page.parsed.title for url in urls} == {url: url for url in urls}
    assert len({answer["pid"] for answer in answers.values()}) == 1


class _Signalling(queue.Queue):
    """The pool's queue of idle children, telling the test when one has been taken."""

    def __init__(self, idle: queue.Queue, taken: threading.Event):
        super().__init__()
        while not idle.empty():
            self.put(idle.get_nowait())
        self.taken = taken

    def get(self, *args, **kwargs):
        child = super().get(*args, **kwargs)
        self.taken.set()
        return child


def test_a_page_waiting_behind_one_that_hangs_the_child_is_analysed_not_failed(settings):
    settings.CRAWLER_PARSE_TIMEOUT = 2.0
    pool = ParsePool(1, analyse_path="tests.crawl.test_parsepool.hostile_analyse")
    try:
        wait_for_children(pool)
        taken = threading.Event()
        pool._idle = _Signalling(pool._idle, taken)
        answers = {}
        hang = threading.Thread(target=lambda: answers.update(
            hang=pool.analyse(response("http://pool.test/hang"), queued("http://pool.test/hang"))))
        hang.start()
        assert taken.wait(10)  # the hanging page holds the only child
        behind = pool.analyse(response("http://pool.test/ok"), queued("http://pool.test/ok"))
        hang.join(10)
    finally:
        pool.close()
    assert answers["hang"].failed == "parse_failed"
    assert pool.failures == 1
    # Analysed by the replacement child, or here while it starts; never failed.
    page = behind["analysis"].page if isinstance(behind, dict) else behind.page
    assert page is not None and page.parsed.title == "Pool page"


@pytest.mark.django_db(transaction=True)
def test_an_embedded_crawl_with_the_pool_indexes_every_page_and_settles_a_page_that_crashes_it(settings):
    """The default embedded crawl (a parse process per core) end to end, one page of the
    site killing its parse process: that URL is fetched and settled as parse_failed, every
    other page is indexed, and the crawl goes on."""
    from webs.sampleweb.hostile import hostile_web
    from crawl import engine as engine_module
    from crawl.runners import run_embedded
    from frontier import service
    from frontier.models import Url
    from indexer.service import search

    settings.CRAWLER_PARSE_PROCESSES = 2
    settings.CRAWLER_DEFAULT_DELAY = 0
    real_pool = engine_module.ParsePool
    with hostile_web() as web:
        pages = [web.url("/fine/1"), web.url("/fine/2"), web.url("/fine/crash")]
        service.add_seeds(pages)
        def started_pool(processes):  # the crawl is short: let it start with its processes up
            pool = real_pool(processes, "tests.crawl.test_parsepool.crash_on_crash_path")
            wait_for_children(pool)
            return pool

        engine_module.ParsePool = started_pool
        try:
            run_embedded(threads=2, max_seconds=60)
        finally:
            engine_module.ParsePool = real_pool
    outcomes = dict(Url.objects.filter(url__in=pages).values_list("url", "outcome"))
    assert outcomes == {web.url("/fine/1"): "indexed", web.url("/fine/2"): "indexed", web.url("/fine/crash"): "parse_failed"}
    assert search("fine").total >= 1


def crash_on_crash_path(result, queued_url):
    if result.url.endswith("/crash"):
        os._exit(3)
    return analyse(result, queued_url)


@pytest.mark.django_db(transaction=True)
def test_a_page_the_analysis_fails_on_is_settled_once_not_fetched_again_and_again(settings, monkeypatch):
    """A bug or a hostile page that makes the analysis raise (not crash the process): the
    fetch is recorded as parse_failed, archived, and the URL is not tried again."""
    from webs.sampleweb.hostile import hostile_web
    from crawl.runners import run_embedded
    from frontier import service
    from frontier.models import Url
    from indexer import service as indexer

    settings.CRAWLER_DEFAULT_DELAY = 0
    real = indexer.prepare_page

    def failing(url_id, url, *args, **kwargs):
        if url.endswith("/fine/bad"):
            raise RecursionError("maximum recursion depth exceeded while parsing")
        return real(url_id, url, *args, **kwargs)

    monkeypatch.setattr(indexer, "prepare_page", failing)
    with hostile_web() as web:
        service.add_seeds([web.url("/fine/good"), web.url("/fine/bad")])
        run_embedded(threads=2, max_seconds=30)
    outcomes = dict(Url.objects.values_list("url", "outcome"))
    assert outcomes[web.url("/fine/good")] == "indexed" and outcomes[web.url("/fine/bad")] == "parse_failed"
    bad = Url.objects.get(url=web.url("/fine/bad"))
    assert (bad.state, bad.attempts) == ("fetched", 1)  # settled: not due again before a recrawl
