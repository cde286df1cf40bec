"""`manage.py export`: what the crawl holds as JSON lines, every row once, in id order,
streamed a batch at a time (issue 26 item 4)."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from frontier import service as frontier
from frontier.models import Host, Url, UrlState
from frontier.normalize import normalize
from indexer import service as indexer
from indexer.models import Document

pytestmark = pytest.mark.django_db


def make_site(origin: str, pages: int) -> list[Url]:
    host = Host.objects.create(origin=origin)
    urls = []
    for n in range(pages):
        norm = normalize(f"{origin}/p/{n}")
        url = Url.objects.create(url=norm.url, url_key=norm.url_key, host=host, state=UrlState.FETCHED,
                                 last_status=200, text_hash=f"{n:032x}", simhash=-n, last_fetched_at=timezone.now())
        Document.objects.create(url=url, address=url.url, title=f"Page {n} of {origin}", headings="Héading",
                                body=f"the text of page {n}", content_hash=f"{n:064x}", status=200)
        urls.append(url)
    return urls


def exported(*args) -> list[dict]:
    out = StringIO()
    call_command("export", *args, "--no-progress", stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


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
