"""PDFs in distributed mode: a Celery worker (its prefork child runs a parse process of its
own, as by default) and a dispatcher against PostgreSQL and Redis crawl the PDF web
(webs/sampleweb/pdfweb.py). The PDFs are found by their own words, and the bomb and the slow
PDF are settled by the worker's parse process (its memory limit and its timeout), while the
worker lives on. tests/indexer/test_pdf.py holds the rest, in the embedded crawler."""

import pytest

from bench.cluster import wait_until_done
from frontier import service
from frontier.models import Url
from frontier.normalize import normalize
from indexer.backends import get_search_backend
from webs.sampleweb.pdfweb import BAD_CASES, UNIQUE_WORDS, pdf_web

from ..crawl_helpers import distributed_cluster

pytestmark = [pytest.mark.crawl, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CRAWL_TIMEOUT = 180  # seconds; the crawl takes ~30 s here (the slow PDF's timeout, two process restarts)


@pytest.fixture
def fresh_index():
    get_search_backend().clear()
    yield
    get_search_backend().clear()


def test_a_celery_worker_indexes_pdfs_and_settles_the_bad_ones_in_its_parse_process(fresh_index):
    with pdf_web() as web:
        with distributed_cluster(workers=1, dispatchers=1, CRAWLER_PARSE_TIMEOUT=4, CRAWLER_DEFAULT_DELAY=0,
                                 CRAWLER_PARSE_MEMORY_LIMIT=384 << 20) as running:
            service.add_seeds([web.url("/")], service.ScopeSpec("host"))
            wait_until_done(service.has_pending_work, running, CRAWL_TIMEOUT)
            assert running.procs["worker0"].poll() is None, "the worker died"
    backend = get_search_backend()
    for path, word in UNIQUE_WORDS.items():
        assert [hit.url for hit in backend.search(word)] == [normalize(web.url(path)).url], word
    outcomes = {path: Url.objects.get(url=normalize(web.url(path)).url).outcome for path in BAD_CASES}
    assert outcomes == BAD_CASES
