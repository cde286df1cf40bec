"""`manage.py export`: what the crawl holds as JSON lines or Parquet, every row once, in id
order, streamed a batch (and a row group) at a time, documents with their outlinks read again
from the archive on request (issue 26 item 4). The round trips run on a real crawl of the
sample web, at the end of the module."""

import json
from datetime import datetime
from io import StringIO
from urllib.parse import urljoin

import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from webs.sampleweb.hostile import hostile_web
from webs.sampleweb.truth import canonical
from console.exportparquet import DOCUMENT_SCHEMA, URL_SCHEMA, ParquetFile, schema_for
from archive import warc
from fetch import http
from indexer.pagelinks import outlinks
from frontier import service as frontier
from frontier.models import Host, Url, UrlState
from frontier.normalize import normalize
from indexer import service as indexer
from indexer.backends import get_search_backend
from indexer.models import Document

from ..crawl_helpers import sample_web

pytestmark = pytest.mark.django_db


def make_site(origin: str, pages: int) -> list[Url]:
    host = Host.objects.create(origin=origin)
    urls = []
    for n in range(pages):
        norm = normalize(f"{origin}/p/{n}")
        url = Url.objects.create(url=norm.url, url_key=norm.url_key, host=host, state=UrlState.FETCHED,
                                 last_status=200, text_hash=f"{n:032x}", simhash=-n, last_fetched_at=timezone.now())
        Document.objects.create(url=url, page_url=url.url, title=f"Page {n} of {origin}", headings="Héading",
                                body=f"the text of page {n}", content_hash=f"{n:064x}", status=200)
        urls.append(url)
    return urls


def exported(*args) -> list[dict]:
    out = StringIO()
    call_command("export", *args, "--no-progress", stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def exported_to(path, *args) -> list[dict]:
    """Export into `path` (its name says the format); the rows read back from the file,
    Parquet's timestamps written as JSON lines write them."""
    call_command("export", *args, "--output", str(path), "--no-progress", stdout=StringIO(), stderr=StringIO())
    if path.suffix == ".parquet":
        return [json.loads(json.dumps(row, default=datetime.isoformat)) for row in pq.read_table(path).to_pylist()]
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_documents_export_as_json_lines_each_once_with_their_fields():
    make_site("http://a.test", 3)
    make_site("http://b.test", 2)
    rows = exported("documents")
    assert len(rows) == Document.objects.count() == 5
    assert [row["id"] for row in rows] == sorted(Document.objects.values_list("id", flat=True))
    first = rows[0]
    assert (first["url"], first["title"], first["headings"], first["text"]) == (
        "http://a.test/p/0", "Page 0 of http://a.test", "Héading", "the text of page 0")
    assert (first["status"], first["text_hash"], first["simhash"], first["content_hash"]) == (200, "0" * 32, 0, "0" * 64)
    assert first["fetched_at"].endswith("+00:00") and first["duplicate_of_id"] is None
    assert [row["url"] for row in exported("documents", "--host", "b.test")] == ["http://b.test/p/0",
                                                                                   "http://b.test/p/1"]


def test_urls_export_every_url_with_its_frontier_state(tmp_path):
    make_site("http://a.test", 2)
    norm = normalize("http://a.test/queued")
    Url.objects.create(url=norm.url, url_key=norm.url_key, host=Host.objects.get(), depth=3)
    target = tmp_path / "urls.jsonl"
    err = StringIO()
    call_command("export", "urls", "--output", str(target), "--no-progress", stdout=StringIO(), stderr=err)
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == Url.objects.count() == 3 and "3 urls written to" in err.getvalue()
    queued = rows[-1]
    assert (queued["url"], queued["host"], queued["state"], queued["depth"], queued["last_fetched_at"]) == (
        "http://a.test/queued", "http://a.test", "queued", 3, None)
    with pytest.raises(CommandError, match="not a host"):
        call_command("export", "urls", "--host", "http://", "--no-progress", stdout=StringIO())


def test_the_rows_come_a_batch_at_a_time_none_lost_none_twice():
    make_site("http://a.test", 7)
    ids = sorted(Document.objects.values_list("id", flat=True))
    assert [row["id"] for row in indexer.document_rows(batch=3)] == ids  # 3 + 3 + 1
    assert [row["id"] for row in indexer.document_rows(batch=7)] == ids  # a full last batch, then an empty one
    assert [row["id"] for row in frontier.url_rows(batch=2)] == sorted(Url.objects.values_list("id", flat=True))


def test_it_writes_parquet_only_to_a_file_and_picks_the_format_from_the_name(tmp_path):
    make_site("http://a.test", 3)
    for args in (("--format", "parquet"), ("--format", "parquet", "--output", "-")):
        with pytest.raises(CommandError, match="Parquet is written to a file"):
            call_command("export", "documents", *args, "--no-progress", stdout=StringIO())
    named = tmp_path / "documents.parquet"
    assert exported_to(named, "documents") == exported("documents")
    assert named.read_bytes()[:4] == b"PAR1" and pq.read_schema(named) == DOCUMENT_SCHEMA
    told = tmp_path / "really-json.parquet"
    call_command("export", "documents", "--format", "jsonl", "-o", str(told), "--no-progress", stderr=StringIO())
    assert [json.loads(line)["id"] for line in told.read_text().splitlines()] == [row["id"] for row in exported("documents")]
    other = tmp_path / "urls.data"
    call_command("export", "urls", "--format", "parquet", "-o", str(other), "--no-progress", stderr=StringIO())
    assert pq.read_schema(other) == URL_SCHEMA and pq.read_metadata(other).num_rows == Url.objects.count()


@pytest.mark.parametrize("name", ["documents.parquet", "documents.jsonl"])
def test_it_says_why_a_path_cannot_be_written(tmp_path, name):
    make_site("http://a.test", 1)
    with pytest.raises(CommandError, match=r"cannot write .*no-such-dir.*: No such file or directory"):
        call_command("export", "documents", "-o", str(tmp_path / "no-such-dir" / name), "--no-progress")
    (tmp_path / name).mkdir()
    with pytest.raises(CommandError, match="cannot write .*: Is a directory"):
        call_command("export", "documents", "-o", str(tmp_path / name), "--no-progress")


@pytest.mark.parametrize("name", ["documents.parquet", "documents.jsonl"])
def test_an_export_that_fails_half_way_leaves_no_file(tmp_path, monkeypatch, name):
    make_site("http://a.test", 2)
    rows = indexer.document_rows

    def breaks_after_one(origin=None):
        yield from list(rows(origin))[:1]
        raise RuntimeError("the database went away")

    monkeypatch.setattr(indexer, "document_rows", breaks_after_one)
    with pytest.raises(RuntimeError, match="went away"):
        call_command("export", "documents", "-o", str(tmp_path / name), "--no-progress", stderr=StringIO())
    assert list(tmp_path.iterdir()) == []


def test_a_row_group_ends_at_its_row_or_text_bound(tmp_path):
    rows = [{"id": n, "url": f"http://a.test/{n}", "host": "http://a.test"} for n in range(7)]
    with open(tmp_path / "urls.parquet", "wb") as f:
        out = ParquetFile(f, URL_SCHEMA, rows=3)
        for row in rows:
            out.write(row)
        out.close()
    metadata = pq.read_metadata(tmp_path / "urls.parquet")
    assert [metadata.row_group(n).num_rows for n in range(metadata.num_row_groups)] == [3, 3, 1]
    assert pq.read_table(tmp_path / "urls.parquet").column("id").to_pylist() == list(range(7))
    pages = [{"id": n, "text": "x" * 40, "outlinks": ["http://a.test/"] * n} for n in range(4)]
    with open(tmp_path / "documents.parquet", "wb") as f:
        out = ParquetFile(f, schema_for("documents", outlinks=True), chars=50)  # 40, 54 | 68 | 82
        for row in pages:
            out.write(row)
        out.close()
    metadata = pq.read_metadata(tmp_path / "documents.parquet")
    assert [metadata.row_group(n).num_rows for n in range(metadata.num_row_groups)] == [2, 1, 1]


def test_a_document_without_an_archived_response_gets_null_outlinks_and_is_counted():
    make_site("http://a.test", 2)  # archiving was off: no location
    Document.objects.filter(id=Document.objects.order_by("id").values("id")[:1]).update(
        warc_file="crawlerweb-20260101000000-00001-elsewhere-1.warc.gz", warc_offset=0, warc_length=500)
    err = StringIO()
    out = StringIO()
    call_command("export", "documents", "--outlinks", "--no-progress", stdout=out, stderr=err)
    assert [json.loads(line)["outlinks"] for line in out.getvalue().splitlines()] == [None, None]
    assert "2 documents had no archived response: outlinks null" in err.getvalue()
    with pytest.raises(CommandError, match="--outlinks is for documents"):
        call_command("export", "urls", "--outlinks", "--no-progress", stdout=StringIO())


PAGE = b"""<html><head><base href="/dir/"><link rel="canonical" href="http://h.test/canon">
<link rel="alternate" type="application/rss+xml" href="/feed.rss"></head><body>
<a href="a.html">a</a> <a href="a.html#part">a again</a> <a href="mailto:x@h.test">mail</a>
<a href="/b?jsessionid=42">b</a> <a rel="nofollow" href="/paid">paid</a> <a href="HTTP://Other.TEST:80/c">c</a>
</body></html>"""


def test_outlinks_are_the_urls_the_crawler_takes_from_the_page(settings):
    parsed = indexer.parse_page("http://h.test/page", "text/html", None, PAGE)
    assert outlinks("http://h.test/page", parsed) == [
        "http://h.test/dir/a.html", "http://h.test/b", "http://other.test/c", "http://h.test/feed.rss",
        "http://h.test/canon"]
    settings.CRAWLER_FEEDS = False
    assert "http://h.test/feed.rss" not in outlinks("http://h.test/page", parsed)
    assert outlinks("http://h.test/canon", parsed)[-1] == "http://other.test/c"  # it is the canonical itself


@pytest.fixture
def warc_dir(settings, tmp_path):
    settings.CRAWLER_WARC_DIR = str(tmp_path / "warc")
    warc.close()
    yield
    warc.close()


def test_outlinks_read_from_the_archive_honour_the_response_headers(warc_dir):
    with hostile_web(big_bytes=256 * 1024) as web:
        fetched = {path: http.fetch(web.url(path), body_types=("text/html",))
                   for path in ("/x-robots-nofollow", "/x-robots-otherbot", "/many-links")}
    found = {path: indexer.archived_outlinks(result.url, *warc.record(result)) for path, result in fetched.items()}
    assert found["/x-robots-nofollow"] == []
    assert found["/x-robots-otherbot"] == [web.url("/fine/behind/x-robots-otherbot")]
    assert found["/many-links"][:2] == [web.url("/fine/0"), web.url("/fine/1")]
    assert indexer.archived_outlinks(web.url("/"), "", None, None) is None


# --- a crawl of the sample web, exported -------------------------------------------------
# Last in the module: the crawl is committed for the module's rest, and the tests above
# count the rows they made themselves.

@pytest.fixture(scope="module")
def crawled(django_db_setup, django_db_blocker, tmp_path_factory, module_test_settings):
    """One embedded crawl of the sample web, committed (the crawler's threads have their own
    connections); the tests only read it."""
    with django_db_blocker.unblock():
        call_command("flush", "--no-input")
        get_search_backend().clear()
        with sample_web(tmp_path_factory.mktemp("export")) as web:
            call_command("crawl", *web.seeds, "--scope", "web", "--no-progress", "--json", "--threads", "6",
                         stdout=StringIO())
        yield web
        call_command("flush", "--no-input")
        get_search_backend().clear()


@pytest.mark.crawl
def test_a_crawl_exports_to_parquet_with_the_json_lines_values_row_for_row(crawled, tmp_path):
    for what, model in (("documents", Document), ("urls", Url)):
        as_parquet = exported_to(tmp_path / f"{what}.parquet", what)
        as_json = exported_to(tmp_path / f"{what}.jsonl", what)
        assert len(as_parquet) == model.objects.count() > 50
        assert as_parquet == as_json
        assert list(as_json[0]) == schema_for(what).names
    assert pq.read_schema(tmp_path / "documents.parquet") == DOCUMENT_SCHEMA
    assert pq.read_schema(tmp_path / "urls.parquet") == URL_SCHEMA


@pytest.mark.crawl
def test_a_crawl_exports_one_host_to_parquet(crawled, tmp_path):
    host = crawled.hosts[1]
    rows = exported_to(tmp_path / "one.parquet", "documents", "--host", host)
    assert len(rows) == Document.objects.filter(url__host__origin=f"http://{host}").count() > 0
    assert {frontier.origin_of(row["url"]) for row in rows} == {f"http://{host}"}
    urls = exported_to(tmp_path / "one-urls.parquet", "urls", "--host", host)
    assert {row["host"] for row in urls} == {f"http://{host}"}
    assert len(urls) == Url.objects.filter(host__origin=f"http://{host}").count()


@pytest.mark.crawl
def test_a_crawls_outlinks_are_each_pages_links_and_hold_every_url_admitted_from_it(crawled, tmp_path):
    rows = exported_to(tmp_path / "outlinks.parquet", "documents", "--outlinks")
    assert rows == exported_to(tmp_path / "outlinks.jsonl", "documents", "--outlinks")
    links = {row["url"]: row["outlinks"] for row in rows}
    assert len(links) == Document.objects.count() and None not in links.values()
    # The frontier's own record: each URL admitted from a page is among that page's outlinks.
    admitted = Url.objects.filter(referrer__document__isnull=False).values_list("url", "referrer__url")
    assert len(admitted) > 50
    assert [(url, page) for url, page in admitted if url not in links[page]] == []
    # The sample web's model of each page: its links in page order, resolved, each once, less
    # rel=nofollow ones, all of a meta nofollow page's, and "#…" ones (a place in the page itself).
    for url, found in links.items():
        page = crawled.page(url)
        base = urljoin(url, page.base_href) if page.base_href else url
        written = [] if "nofollow" in page.meta_robots else \
            [urljoin(base, link.href) for link in page.links
             if "nofollow" not in link.rel.split() and not link.href.startswith("#")]
        assert found == list(dict.fromkeys(filter(None, map(canonical, written)))), url
    assert links[f"http://{crawled.hosts[0]}/meta/nofollow.html"] == []
