"""The archive as the web-archiving tools read it (archive.warc, archive.cdxj): the CDXJ index
written beside each WARC file equals webrecorder's cdxj-indexer reading the same file; every
record names its file's warcinfo; revisits name their original; warcio's own checker passes
every file; rotation and the parse pool keep records and index lines in the file they name.
A real crawl over loopback HTTP, on both databases."""

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from cdxj_indexer.main import CDXJIndexer
from warcio.archiveiterator import ArchiveIterator

from archive import warc, cdxj
from fetch import http

from ..frontier.test_recrawl import PROSE, Site, crawl, revisit

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def site(settings, tmp_path):
    from frontier import recrawl

    settings.CRAWLER_WARC_DIR = str(tmp_path / "warc")
    settings.CRAWLER_DEFAULT_DELAY = 0
    settings.CRAWLER_ADAPTIVE_DELAY_FACTOR = 0
    settings.CRAWLER_RECRAWL_BUDGET_PER_DAY = 86400 * 100
    recrawl.forget_plan()
    warc.close()
    s = Site()
    yield s
    s.server.shutdown()
    warc.close()
    recrawl.forget_plan()


def crawled_with_revisits(site):
    """A crawl of pages and a missing page, then a revisit answered 304 and one
    answered with the same bytes: every kind of record the crawler writes."""
    from frontier import service as frontier

    site.html("/", PROSE, links=["/etag", "/same", "/missing"])
    site.html("/etag", PROSE + " with a validator", etag='"v1"')
    site.html("/same", PROSE + " always the same")
    frontier.add_seeds([site.origin + "/"])
    crawl()
    revisit(site.origin + "/etag", site.origin + "/same")
    return Path(warc.settings.CRAWLER_WARC_DIR)


def records_of(path: Path) -> list:
    with open(path, "rb") as f:
        return [(rec.rec_type, dict(rec.rec_headers.headers), rec.http_headers)
                for rec in ArchiveIterator(f, check_digests="raise")]


def indexer_lines(path: Path) -> list[str]:
    out = StringIO()
    CDXJIndexer(output=out, inputs=[str(path)]).process_all()
    return out.getvalue().splitlines(keepends=True)


def test_the_index_written_with_the_records_is_what_cdxj_indexer_reads_from_the_file(site):
    directory = crawled_with_revisits(site)
    files = cdxj.warc_files(directory)
    assert files and not cdxj.missing(directory)
    lines = []
    for path in files:
        ours = cdxj.sidecar_path(path).read_text("ascii").splitlines(keepends=True)
        assert ours == indexer_lines(path)
        lines += ours
    by_url = {}
    for line in lines:
        key, stamp, fields = line.split(" ", 2)
        fields = json.loads(fields)
        by_url.setdefault(fields["url"], []).append((fields["mime"], fields["status"]))
        assert len(stamp) == 14 and key == cdxj.url_key(fields["url"])
    origin = site.origin
    assert by_url[origin + "/etag"] == [("text/html", "200"), ("warc/revisit", "304")]
    assert by_url[origin + "/same"] == [("text/html", "200"), ("warc/revisit", "200")]
    assert by_url[origin + "/missing"] == [("text/plain", "404")]
    assert by_url[origin + "/robots.txt"] == [("text/plain", "200")]
    # Each line finds its record: the tools read the response at (filename, offset, length).
    for line in lines:
        fields = json.loads(line.split(" ", 2)[2])
        if fields["mime"] != "warc/revisit":
            back = warc.read_response(warc.Location(fields["filename"], int(fields["offset"]),
                                                          int(fields["length"])))
            assert back.target_uri == fields["url"]


def test_every_record_names_its_warcinfo_and_a_revisit_names_its_original(site):
    directory = crawled_with_revisits(site)
    responses = {}
    revisits = []
    for path in cdxj.warc_files(directory):
        records = records_of(path)
        kind, info, _ = records[0]
        assert kind == "warcinfo"
        for other_kind, headers, http_headers in records[1:]:
            assert headers["WARC-Warcinfo-ID"] == info["WARC-Record-ID"], (path.name, other_kind)
            assert headers["WARC-IP-Address"] == "127.0.0.1"
            if other_kind == "response":
                responses[headers["WARC-Record-ID"]] = headers
            elif other_kind == "revisit":
                revisits.append(headers)
    assert len(revisits) == 2
    for headers in revisits:
        original = responses[headers["WARC-Refers-To"]]
        assert original["WARC-Target-URI"] == headers["WARC-Refers-To-Target-URI"] == headers["WARC-Target-URI"]
        assert original["WARC-Date"] == headers["WARC-Refers-To-Date"]
    assert len(set(responses)) == len(responses)


def test_the_warcinfo_names_the_crawler_and_the_settings_that_shaped_the_crawl(site, settings):
    settings.CRAWLER_MAX_BODY_BYTES = 123_456
    warc.close()
    warc.record(http.fetch(site.origin + "/robots.txt"))
    (path,) = cdxj.warc_files(Path(settings.CRAWLER_WARC_DIR))
    with open(path, "rb") as f:
        info = next(iter(ArchiveIterator(f)))
        fields = dict(line.split(": ", 1) for line in info.content_stream().read().decode().splitlines() if line)
    assert fields["software"].startswith("crawlerweb/0.1 (warcio/1.")
    assert fields["http-header-user-agent"] == settings.CRAWLER_USER_AGENT
    assert fields["crawler-max-body-bytes"] == "123456"
    assert fields["robots"] == "obey" and "crawler-default-delay-seconds" in fields


def test_warcios_checker_passes_every_file(site):
    directory = crawled_with_revisits(site)
    files = [str(p) for p in cdxj.warc_files(directory)]
    checked = subprocess.run([str(Path(sys.executable).with_name("warcio")), "check", "-v", *files],
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "digest pass" in checked.stdout and "digest failed" not in checked.stdout


def test_a_record_built_before_a_rotation_goes_to_the_file_it_names(site, settings):
    settings.CRAWLER_WARC_MAX_FILE_BYTES = 65536
    warc.close()
    big = http.fetch(site.origin + "/robots.txt")
    big.body = os.urandom(70_000)  # one record passes the file size limit, compressed or not
    a1, a2 = warc.build(big), warc.build(big)  # both built for the first file
    first = warc.append(a1)  # the first file passes the limit: it rotates
    second = warc.append(a2)
    a3 = warc.build(big)  # built for the next file
    third = warc.append(a3)
    assert first.filename == second.filename != third.filename
    assert a1[0].warcinfo_id == a2[0].warcinfo_id != a3[0].warcinfo_id
    directory = Path(settings.CRAWLER_WARC_DIR)
    for path in cdxj.warc_files(directory):
        records = records_of(path)
        assert {h["WARC-Warcinfo-ID"] for _, h, _ in records[1:]} == {records[0][1]["WARC-Record-ID"]}
        assert cdxj.sidecar_path(path).read_text().splitlines(keepends=True) == indexer_lines(path)
    assert [warc.read_response(loc).body for loc in (first, second, third)] == [big.body] * 3


def test_records_built_in_a_parse_process_name_the_parents_file(site, settings):
    from crawl.parsepool import ParsePool
    from frontier.records import QueuedUrl

    from ..crawl.test_parsepool import wait_for_children

    site.html("/p", PROSE)
    result = http.fetch(site.origin + "/p", body_types=("text/html",))
    pool = ParsePool(1)
    try:
        wait_for_children(pool)
        analysis = pool.analyse(result, QueuedUrl(1, site.origin + "/p", 0, 0, 0, ""))
        assert pool.inline == 0  # built in the child process
    finally:
        pool.close()
    warc.append(analysis.records)
    (path,) = cdxj.warc_files(Path(settings.CRAWLER_WARC_DIR))
    records = records_of(path)
    assert records[1][1]["WARC-Warcinfo-ID"] == records[0][1]["WARC-Record-ID"]


def test_the_merged_index_is_sorted_whole_and_skips_a_line_still_being_written(tmp_path):
    a, b = tmp_path / "a.cdxj", tmp_path / "b.cdxj"
    a.write_text("org,z)/ 20260101000000 {}\ncom,a)/ 20260101000000 {}\n")
    b.write_text("net,m)/ 20260101000000 {}\ncom,b)/ 2026")  # the writer is mid-line
    out = tmp_path / "index.cdxj"
    assert cdxj.write_sorted([a, b], out) == 3
    assert out.read_text().splitlines() == ["com,a)/ 20260101000000 {}", "net,m)/ 20260101000000 {}",
                                            "org,z)/ 20260101000000 {}"]


def test_a_file_without_an_index_gets_one_equal_to_what_the_writer_writes(site):
    directory = crawled_with_revisits(site)
    for path in cdxj.warc_files(directory):
        written = cdxj.sidecar_path(path).read_text()
        cdxj.sidecar_path(path).unlink()
        assert cdxj.missing(directory) == [path]
        assert cdxj.rebuild(path) == len(written.splitlines())
        assert cdxj.sidecar_path(path).read_text() == written


def test_the_cdxj_command_writes_the_sorted_index_and_indexes_files_that_had_none(site, tmp_path):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    directory = crawled_with_revisits(site)
    written = sorted(line for p in cdxj.sidecars(directory) for line in p.read_text().splitlines(keepends=True))
    cdxj.sidecar_path(cdxj.warc_files(directory)[0]).unlink()
    out, err = StringIO(), StringIO()
    call_command("cdxj", "-o", str(tmp_path / "index.cdxj"), stdout=out, stderr=err)
    assert (tmp_path / "index.cdxj").read_text().splitlines(keepends=True) == written
    assert "(it had no index)" in err.getvalue() and f"{len(written)} records" in err.getvalue()
    printed = StringIO()
    call_command("cdxj", stdout=printed)
    assert printed.getvalue().splitlines(keepends=True) == written
    with pytest.raises(CommandError, match="no WARC files in"):
        call_command("cdxj", "--dir", str(tmp_path / "nothing"))
