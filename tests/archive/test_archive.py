"""The WARC archive (archive.warc): responses fetched over real HTTP from the hostile web
are written, read back at random by (file, offset, length), and shown in the admin."""

import gzip
import hashlib
import os
import threading
from io import BytesIO
from pathlib import Path

import pytest
from django.urls import reverse
from warcio.archiveiterator import ArchiveIterator

from webs.sampleweb.hostile import hostile_web
from archive import warc, cdxj
from fetch import http
from frontier import service
from frontier.models import Url
from indexer.models import Document

from ..crawl_helpers import warc_records


@pytest.fixture
def warc_dir(settings, tmp_path):
    """A fresh archive directory per test; the process's writer starts a file there."""
    settings.CRAWLER_WARC_DIR = str(tmp_path / "warc")
    warc.close()
    yield Path(settings.CRAWLER_WARC_DIR)
    warc.close()


@pytest.fixture(scope="module")
def web():
    with hostile_web(big_bytes=256 * 1024) as running:
        yield running


def test_a_response_reads_back_byte_for_byte_from_its_location(warc_dir, web):
    result = http.fetch(web.url("/lying-charset"), body_types=("text/html",))
    location = warc.record(result)
    back = warc.read_response(location)
    assert back.body == result.body and back.body.decode("cp1252").count("caf\u00e9") == 1
    assert back.status_line == "HTTP/1.1 200 OK"
    assert ("Content-Type", "text/html; charset=utf-8") in back.http_headers
    assert back.target_uri == web.url("/lying-charset")
    assert dict(back.warc_headers)["WARC-IP-Address"] == "127.0.0.1"
    assert back.truncated == ""
    # The record alone is a valid one-record .warc.gz, digests included.
    (one,) = list(ArchiveIterator(BytesIO(back.record_bytes), check_digests="raise"))
    assert one.rec_type == "response"


def test_each_file_starts_with_warcinfo_and_pairs_every_response_with_its_request(warc_dir, web):
    urls = [web.url(p) for p in ("/ok", "/fine/1", "/no-such-page")]
    for url in urls:
        warc.record(http.fetch(url, body_types=("text/html",)))
    records = warc_records(warc_dir)
    assert [r["type"] for r in records] == ["warcinfo"] + ["response", "request"] * 3
    assert [r["uri"] for r in records if r["type"] == "response"] == urls
    assert [r["status"] for r in records if r["type"] == "response"] == ["200", "200", "404"]
    for response, request in zip(records[1::2], records[2::2]):
        assert request["concurrent"] == response["id"] and request["uri"] == response["uri"]
    warcinfo = records[0]["body"].decode()
    assert "http-header-user-agent: crawlerweb" in warcinfo and "robots: obey" in warcinfo


def test_a_decoded_body_keeps_the_original_framing_headers_under_another_name(warc_dir, web, settings):
    settings.CRAWLER_MAX_BODY_BYTES = 64 * 1024
    result = http.fetch(web.url("/bomb-gzip"), body_types=("text/html",))
    assert result.error == "too_large"
    back = warc.read_response(warc.record(result))
    headers = dict(back.http_headers)
    assert headers["X-Archive-Orig-Content-Encoding"] == "gzip"
    assert "Content-Encoding" not in headers  # readers must not inflate the stored body again
    assert headers["Content-Length"] == str(len(back.body)) == str(64 * 1024)
    assert back.body == b"\x00" * (64 * 1024)
    assert back.truncated == "length"


@pytest.mark.parametrize("path, truncated", [
    ("/slow-drip", "time"), ("/reset-mid-body", "disconnect"), ("/big-length", "length"),
])
def test_a_body_cut_short_is_marked_truncated_with_the_reason(warc_dir, web, settings, path, truncated):
    settings.CRAWLER_MAX_BODY_BYTES, settings.CRAWLER_TOTAL_DEADLINE = 64 * 1024, 0.5
    back = warc.read_response(warc.record(http.fetch(web.url(path), body_types=("text/html",))))
    assert back.truncated == truncated


def test_a_body_not_downloaded_is_marked_and_a_response_that_never_came_is_not_recorded(warc_dir, web):
    skipped = http.fetch(web.url("/other-robots.txt"), body_types=("text/html",))  # text/plain: not read
    back = warc.read_response(warc.record(skipped))
    assert back.body == b"" and back.truncated == "unspecified" and back.status_line.endswith("200 OK")
    refused = http.fetch("http://127.0.0.1:1/nothing-listens-here")
    assert refused.status is None and warc.record(refused) is None


def test_robots_txt_redirect_hops_are_each_archived(warc_dir, web):
    result = http.fetch(web.url("/robots.txt", "robots_redirect"), follow_redirects=True)
    warc.record(result)
    responses = [r for r in warc_records(warc_dir) if r["type"] == "response"]
    assert [(r["uri"], r["status"]) for r in responses] == [
        (web.url("/robots.txt", "robots_redirect"), "301"), (web.url("/other-robots.txt"), "200")]
    assert b"Disallow: /blocked-by-other/" in responses[1]["body"]


def test_files_rotate_by_size_and_every_location_stays_readable(warc_dir, web, settings):
    settings.CRAWLER_WARC_MAX_FILE_BYTES = 1  # every record starts a new file
    fetched = [http.fetch(web.url(f"/fine/{n}"), body_types=("text/html",)) for n in range(4)]
    locations = [warc.record(r) for r in fetched]
    assert len({loc.filename for loc in locations}) == 4 == len(list(warc_dir.glob("*.warc.gz")))
    assert all(loc.offset > 0 for loc in locations)  # after each file's warcinfo record
    assert [warc.read_response(loc).body for loc in locations] == [r.body for r in fetched]
    assert [r["type"] for r in warc_records(warc_dir)] == ["warcinfo", "response", "request"] * 4


def test_threads_append_whole_records_without_interleaving(warc_dir, web):
    fetched = {n: http.fetch(web.url(f"/fine/{n}"), body_types=("text/html",)) for n in range(8)}
    locations = {}

    def write(n):
        locations[n] = [warc.record(fetched[n]) for _ in range(25)]

    threads = [threading.Thread(target=write, args=(n,)) for n in fetched]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n, locs in locations.items():
        assert {warc.read_response(loc).body for loc in locs} == {fetched[n].body}
    assert len([r for r in warc_records(warc_dir) if r["type"] == "response"]) == 200


def test_a_forked_worker_writes_its_own_file(warc_dir, web):
    result = http.fetch(web.url("/ok"), body_types=("text/html",))
    parent_file = warc.record(result).filename
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: as a Celery prefork child would, after the parent wrote
        try:
            os.write(write_end, warc.record(result).filename.encode())
        finally:
            os._exit(0)
    os.close(write_end)
    child_file = os.read(read_end, 4096).decode()
    os.waitpid(pid, 0)
    assert child_file != parent_file and child_file.endswith(f"-{pid}.warc.gz")
    assert warc.record(result).filename == parent_file  # the parent carries on in its own


def test_archiving_off_writes_nothing(warc_dir, web, settings):
    settings.CRAWLER_WARC_ENABLED = False
    assert warc.record(http.fetch(web.url("/ok"))) is None
    assert not warc_dir.exists()


def test_a_record_that_cannot_be_read_back_says_why(warc_dir, web, settings):
    location = warc.record(http.fetch(web.url("/ok"), body_types=("text/html",)))
    unreadable = {
        warc.Location("../../etc/passwd", 0, 100): "not a record this crawler wrote",
        warc.Location(location.filename.replace("-0", "-9", 1), 0, 100): "is not in CRAWLER_WARC_DIR",
        warc.Location(location.filename, 0, location.offset): "is a warcinfo",  # the file's first record
        warc.Location(location.filename, location.offset + 1, location.length): "no WARC record",
        warc.Location(location.filename, location.offset, location.length + 10**6): "ends before the record",
        warc.Location(location.filename, -1, 10): "not a record this crawler wrote",
    }
    for bad, message in unreadable.items():
        with pytest.raises(warc.ArchiveUnavailable, match=message):
            warc.read_response(bad)
    missing = warc.Location(location.filename.replace("-0", "-9", 1), 0, 100)
    with pytest.raises(warc.ArchiveUnavailable, match=r"written on host \S+: point CRAWLER_WARC_DIR"):
        warc.read_response(missing)


# --- the admin ----------------------------------------------------------------------------


@pytest.fixture
def archived_document(warc_dir, web, db):
    url = web.url("/lying-charset")
    result = http.fetch(url, body_types=("text/html",))
    location = warc.record(result)
    service.add_urls([service.Candidate(url)])
    return Document.objects.create(
        url=Url.objects.get(url=url), page_url=url, title="lying", content_hash=hashlib.sha256(result.body).hexdigest(),
        encoding="windows-1252", encoding_source="detected", warc_file=location.filename, warc_offset=location.offset, warc_length=location.length,
    ), result


@pytest.mark.django_db
def test_the_admin_links_a_document_to_its_raw_response(admin_client, archived_document):
    document, result = archived_document
    raw = reverse("admin:indexer_document_raw", args=[document.id])
    assert raw.encode() in admin_client.get(reverse("admin:indexer_document_changelist")).content
    change = admin_client.get(reverse("admin:indexer_document_change", args=[document.id])).content.decode()
    assert raw in change
    # How the page was decoded (issue 53), on the document's page.
    assert "windows-1252" in change and "detected" in change
    page = admin_client.get(raw)
    assert page.status_code == 200
    text = page.content.decode()
    assert "HTTP/1.1 200 OK" in text and "WARC-Payload-Digest" in text and document.warc_file in text
    # The header said UTF-8 and the bytes are cp1252: the preview decodes them as the crawl
    # did (the detector reads them), escaped.
    assert "&lt;title&gt;Caf\u00e9 lying&lt;/title&gt;" in text and "<title>Caf" not in text


@pytest.mark.django_db
def test_the_admin_downloads_the_raw_body_and_the_warc_record_as_attachments(admin_client, archived_document):
    document, result = archived_document
    raw = reverse("admin:indexer_document_raw", args=[document.id])
    body = admin_client.get(raw + "?download=body")
    assert body.content == result.body
    assert body["Content-Type"] == "application/octet-stream" and body["X-Content-Type-Options"] == "nosniff"
    assert body["Content-Disposition"].startswith("attachment;") and body["Content-Security-Policy"] == "sandbox"
    record = admin_client.get(raw + "?download=warc")
    assert record["Content-Type"] == "application/warc"
    payloads = [rec.content_stream().read() for rec in ArchiveIterator(BytesIO(record.content), check_digests="raise")]
    assert payloads == [result.body]
    assert gzip.decompress(record.content).startswith(b"WARC/1.0\r\n")
    assert admin_client.get(raw + "?download=other").status_code == 404


@pytest.mark.django_db
def test_the_admin_explains_a_raw_response_it_cannot_show(admin_client, archived_document, settings, tmp_path):
    document, _ = archived_document
    raw = reverse("admin:indexer_document_raw", args=[document.id])
    settings.CRAWLER_WARC_DIR = str(tmp_path / "elsewhere")  # the web server does not see the workers' disk
    page = admin_client.get(raw)
    assert page.status_code == 404 and b"is not in CRAWLER_WARC_DIR" in page.content
    Document.objects.filter(id=document.id).update(warc_file="")
    page = admin_client.get(raw)
    assert page.status_code == 404 and b"has no archived response" in page.content
    changelist = admin_client.get(reverse("admin:indexer_document_changelist")).content
    assert b"not archived" in changelist and raw.encode() not in changelist
    assert admin_client.get(reverse("admin:indexer_document_raw", args=[document.id + 1000])).status_code == 404


@pytest.mark.django_db
def test_the_raw_response_is_for_staff_only(client, archived_document):
    document, _ = archived_document
    page = client.get(reverse("admin:indexer_document_raw", args=[document.id]) + "?download=body")
    assert page.status_code == 302 and "/admin/login/" in page["Location"]


def test_a_failed_write_leaves_no_torn_record_and_the_next_record_starts_a_new_file(warc_dir, web):
    import json
    import resource

    result = http.fetch(web.url("/fine/1"), body_types=("text/html",))
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # a child, so that the file-size limit (a full disk, as far as write() can tell) stays there
        report = {}
        try:
            first = warc.record(result)
            report["size_before"] = (warc_dir / first.filename).stat().st_size
            soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
            full_at = report["size_before"] + 200  # less than the next record needs
            resource.setrlimit(resource.RLIMIT_FSIZE, (full_at, hard))
            try:
                warc.record(result)
            except OSError as exc:
                report["error"] = exc.strerror
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
            report["next"] = warc.record(result)
        finally:
            os.write(write_end, json.dumps(report).encode())
            os._exit(0)
    os.close(write_end)
    report = json.loads(os.read(read_end, 65536))
    os.waitpid(pid, 0)
    assert report["error"] == "File too large"
    files = sorted(warc_dir.glob("*.warc.gz"))
    assert len(files) == 2 and report["next"][0] == files[1].name
    assert files[0].stat().st_size == report["size_before"]  # the torn 200 bytes were cut off
    # the file that failed holds what was written before and nothing torn after it
    assert [r["type"] for r in warc_records(warc_dir)] == ["warcinfo", "response", "request"] * 2
    assert warc.read_response(warc.Location(*report["next"])).body == result.body
    # and its index lists the record before the failure, whole, and nothing torn
    assert [len(cdxj.sidecar_path(f).read_text().splitlines()) for f in files] == [1, 1]
    assert cdxj.sidecar_path(files[0]).read_text().endswith("\n")
