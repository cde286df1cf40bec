"""`manage.py export wacz` (issue 26 item 3): a real crawl of the sample web over loopback,
packaged whole, by host, by time range and by scope; each package checked by the `wacz`
package's own validator and by `warcio check`, and opened to compare its pages, its CDXJ
index and its hashes with what the crawl holds."""

import gzip
import hashlib
import json
import subprocess
import sys
import time
import zipfile
from collections import Counter
from datetime import datetime, timedelta, timezone
from io import StringIO
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings
from django.utils import timezone as dj_timezone
from warcio.archiveiterator import ArchiveIterator

from archive import warc, cdxj, package
from frontier.models import CrawlScope, Url
from indexer.backends import get_search_backend
from indexer.models import Document

from ..crawl_helpers import sample_web

# Packaging the archive is the same on both databases: run once, on SQLite (tests/conftest.py).
pytestmark = [pytest.mark.crawl, pytest.mark.django_db, pytest.mark.backend_free]

HOME, SECOND, THIRD = 0, 3, 4  # sample-web hosts: the home host; two plain hosts crawled later


@pytest.fixture(scope="module")
def crawled(django_db_setup, django_db_blocker, tmp_path_factory, module_test_settings):
    """Two crawls a second apart, committed for real: the home host first; then two other
    hosts, each in a host scope, and the home host's pages again (identical 200s: revisit
    records pointing at the first crawl's responses). Yields (web, warc dir, boundary, the
    number of pages crawled again)."""
    warc_dir = tmp_path_factory.mktemp("wacz-warc")
    with django_db_blocker.unblock(), override_settings(CRAWLER_WARC_DIR=str(warc_dir)):
        call_command("flush", "--no-input")
        get_search_backend().clear()
        warc.close()
        with sample_web(tmp_path_factory.mktemp("wacz-web")) as web:
            crawl(web.seeds[0])
            boundary = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(seconds=1)
            time.sleep((boundary - datetime.now(timezone.utc)).total_seconds() + 0.05)
            again = Url.objects.filter(url__startswith=f"http://{web.hosts[HOME]}/p/", state="fetched")
            revisited = again.update(state="queued", attempts=0, next_fetch_at=dj_timezone.now() - timedelta(seconds=1))
            assert revisited
            crawl(f"http://{web.hosts[SECOND]}/", f"http://{web.hosts[THIRD]}/")
        warc.close()
        yield web, warc_dir, boundary, revisited
        call_command("flush", "--no-input")
        get_search_backend().clear()


@pytest.fixture(autouse=True)
def archive_dir(crawled, settings):
    settings.CRAWLER_WARC_DIR = str(crawled[1])


def crawl(*seeds):
    call_command("crawl", *seeds, "--scope", "host", "--no-progress", "--json", "--threads", "4", "--max-seconds", "60",
                 stdout=StringIO())


def export(tmp_path, *args) -> tuple[Path, dict]:
    """Package with these options into tmp_path; validate it; return the path and its parts."""
    target = tmp_path / "crawl.wacz"
    err = StringIO()
    call_command("export", "wacz", "-o", str(target), *args, "--no-progress", stdout=StringIO(), stderr=err)
    assert f"{target}: " in err.getvalue()
    assert not list(tmp_path.glob(".wacz-*")), "temporary files left behind"
    validated = subprocess.run([sys.executable, "-m", "wacz", "validate", "-f", str(target)],
                               capture_output=True, text=True, timeout=120)
    # `python -m wacz` exits 0 whatever it found: its verdict is the last line.
    assert "Validation succeeded, the passed WACZ is valid" in validated.stdout, validated.stdout + validated.stderr
    return target, opened(target, tmp_path / f"unpacked-{len(list(tmp_path.glob('unpacked-*')))}")


def opened(target: Path, unpack_dir: Path) -> dict:
    with zipfile.ZipFile(target) as package:
        names = package.namelist()
        datapackage = json.loads(package.read("datapackage.json"))
        digest = json.loads(package.read("datapackage-digest.json"))
        # datapackage.json lists every other file with its size and hash; its own hash is in the digest file
        assert sorted(r["path"] for r in datapackage["resources"]) == sorted(
            set(names) - {"datapackage.json", "datapackage-digest.json"})
        for resource in datapackage["resources"]:
            data = package.read(resource["path"])
            assert resource["hash"] == "sha256:" + hashlib.sha256(data).hexdigest(), resource["path"]
            assert resource["bytes"] == len(data)
        assert digest["hash"] == "sha256:" + hashlib.sha256(package.read("datapackage.json")).hexdigest()
        # the WARC files stored (replay reads them at random), the page list deflated (its text is most of it)
        assert {info.compress_type for info in package.infolist() if info.filename.startswith("archive/")} == {
            zipfile.ZIP_STORED}
        assert package.getinfo("pages/pages.jsonl").compress_type == zipfile.ZIP_DEFLATED
        lines = package.read("pages/pages.jsonl").decode("utf-8").splitlines()
        index = gzip.decompress(package.read("indexes/index.cdx.gz")).decode("utf-8").splitlines()
        warcs = [name for name in names if name.startswith("archive/")]
        package.extractall(unpack_dir, warcs)
    header, pages = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
    assert header == {"format": "json-pages-1.0", "id": "pages", "title": "Pages", "hasText": True}
    captures = []
    for line in index:
        key, ts, fields = line.split(" ", 2)
        fields = json.loads(fields)
        captures.append((fields["url"], ts, fields["mime"], fields["filename"]))
    warc_paths = [unpack_dir / name for name in warcs]
    for path in warc_paths:  # warcio's own check: every record's block and payload digests
        checked = subprocess.run([str(Path(sys.executable).with_name("warcio")), "check", "-v", str(path)],
                                 capture_output=True, text=True, timeout=120)
        assert checked.returncode == 0 and "digest failed" not in checked.stdout, checked.stdout[-2000:]
    return {"datapackage": datapackage, "pages": pages, "captures": captures, "warcs": warc_paths}


def archived(warc_dir: Path) -> list[dict]:
    """The crawl's response and revisit records, from its WARC files."""
    found = []
    for path in cdxj.warc_files(warc_dir):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type in ("response", "revisit"):
                    headers = record.rec_headers
                    found.append({"url": headers.get_header("WARC-Target-URI"), "type": record.rec_type,
                                  "ts": cdxj.timestamp(headers.get_header("WARC-Date")),
                                  "refers_to": (headers.get_header("WARC-Refers-To-Target-URI"),
                                                cdxj.timestamp(headers.get_header("WARC-Refers-To-Date") or ""))})
    return found


def expected_pages(documents) -> dict[str, tuple[str, str]]:
    return {doc.page_url: (doc.title, doc.body) for doc in documents.filter(indexed=True)}


def assert_pages(pages: list[dict], documents) -> None:
    """One line per indexed document, with its title and the text the index was built from."""
    assert len(pages) == len({page["url"] for page in pages})
    assert {page["url"]: (page["title"], page["text"]) for page in pages} == expected_pages(documents)
    assert all(page["ts"].endswith("Z") and page["id"] for page in pages)


def origin(url: str) -> str:
    return urlsplit(url).netloc


def test_it_packages_the_whole_crawl_with_its_warc_files_as_they_are(crawled, tmp_path):
    web, warc_dir, boundary, revisited = crawled
    target, parts = export(tmp_path)
    # the WARC files, byte for byte
    assert sorted(path.name for path in parts["warcs"]) == [path.name for path in cdxj.warc_files(warc_dir)]
    for path in parts["warcs"]:
        assert path.read_bytes() == (warc_dir / path.name).read_bytes()
    # an index line for every response and revisit, nothing else
    assert Counter((c[0], c[1]) for c in parts["captures"]) == Counter((r["url"], r["ts"]) for r in archived(warc_dir))
    assert_pages(parts["pages"], Document.objects.all())
    data = parts["datapackage"]
    assert data["title"] == "crawlerweb crawl" and "selection: the whole crawl" in data["description"]
    assert data["mainPageURL"] == web.seeds[0]  # the first seed page


def test_it_packages_one_host_with_every_page_fetched_there_and_nothing_else(crawled, tmp_path):
    web, warc_dir, boundary, revisited = crawled
    home = web.hosts[HOME]
    target, parts = export(tmp_path, "--host", home)
    assert [path.name for path in parts["warcs"]] == [parts["captures"][0][3]]  # one new file
    indexed = {c[0] for c in parts["captures"]}
    assert {origin(url) for url in indexed} == {home}
    fetched = set(Url.objects.filter(host__origin=f"http://{home}").exclude(last_fetched_at=None)
                  .values_list("url", flat=True))
    assert fetched and fetched <= indexed
    # each of the host's records once, its revisits included
    assert Counter((c[0], c[1]) for c in parts["captures"]) == Counter(
        (r["url"], r["ts"]) for r in archived(warc_dir) if origin(r["url"]) == home)
    assert sum(c[2] == "warc/revisit" for c in parts["captures"]) == revisited
    assert_pages(parts["pages"], Document.objects.filter(url__host__origin=f"http://{home}"))
    assert parts["datapackage"]["title"] == f"crawlerweb crawl of http://{home}"
    # the new file: its own warcinfo first, then each record followed by its request
    with open(parts["warcs"][0], "rb") as f:
        records = [(r.rec_type, r.rec_headers.get_header("WARC-Record-ID"),
                    r.rec_headers.get_header("WARC-Concurrent-To"), r.content_stream().read()) for r in ArchiveIterator(f)]
    assert records[0][0] == "warcinfo" and f"host http://{home}".encode() in records[0][3]
    pairs = records[1:]
    assert [r[0] for r in pairs[1::2]] == ["request"] * (len(pairs) // 2)
    assert all(request[2] == record[1] for record, request in zip(pairs[::2], pairs[1::2]))


def test_a_time_range_brings_the_responses_its_revisits_refer_to(crawled, tmp_path):
    web, warc_dir, boundary, revisited = crawled
    records = archived(warc_dir)
    after = [r for r in records if r["ts"] >= cdxj.timestamp_of(boundary)]
    revisits = [r for r in after if r["type"] == "revisit"]
    assert len(revisits) == revisited and len(after) > len(revisits)
    target, parts = export(tmp_path, "--since", boundary.isoformat())
    selected = Counter((c[0], c[1]) for c in parts["captures"])
    originals = Counter(r["refers_to"] for r in revisits)
    assert selected == Counter((r["url"], r["ts"]) for r in after) + originals
    assert all(ts < cdxj.timestamp_of(boundary) for _, ts in originals)
    later_hosts = {f"http://{web.hosts[SECOND]}", f"http://{web.hosts[THIRD]}"}
    assert_pages(parts["pages"], Document.objects.filter(url__host__origin__in=later_hosts))

    target, parts = export(tmp_path, "--until", boundary.strftime("%Y-%m-%dT%H:%M:%S"))
    assert Counter((c[0], c[1]) for c in parts["captures"]) == Counter(
        (r["url"], r["ts"]) for r in records if r["ts"] < cdxj.timestamp_of(boundary))
    assert_pages(parts["pages"], Document.objects.filter(url__host__origin=f"http://{web.hosts[HOME]}"))


def test_a_scope_selects_the_captures_its_rule_allows(crawled, tmp_path):
    web, warc_dir, boundary, revisited = crawled
    second = web.hosts[SECOND]
    scope = CrawlScope.objects.get(seeds__url=f"http://{second}/")
    by_seed = export(tmp_path, "--scope", f"http://{second}/")[1]
    assert {origin(c[0]) for c in by_seed["captures"]} == {second}
    assert Counter((c[0], c[1]) for c in by_seed["captures"]) == Counter(
        (r["url"], r["ts"]) for r in archived(warc_dir) if origin(r["url"]) == second)
    assert_pages(by_seed["pages"], Document.objects.filter(url__host__origin=f"http://{second}"))
    by_id = export(tmp_path, "--scope", str(scope.id))[1]
    assert sorted(c[:3] for c in by_id["captures"]) == sorted(c[:3] for c in by_seed["captures"])
    assert by_id["datapackage"]["title"] == f"crawlerweb crawl of {scope}"


def test_an_empty_or_impossible_selection_is_an_error_and_writes_nothing(crawled, tmp_path):
    web, warc_dir, boundary, revisited = crawled
    target = tmp_path / "crawl.wacz"
    for args, message in [
        (("--since", "2100-01-01"), "nothing in the archive matches"),
        (("--host", "http://127.9.9.9:1"), "nothing in the archive matches"),
        (("--since", "2026-11-02", "--until", "2026-11-01"), "is not before"),
        (("--since", "yesterday"), "is not an ISO date"),
        (("--scope", "999999"), "no crawl scope has id 999999"),
        (("--scope", "http://not-a-seed.test/"), "neither a crawl scope's id nor a seed URL"),
    ]:
        with pytest.raises(CommandError, match=message):
            call_command("export", "wacz", "-o", str(target), *args, "--no-progress", stdout=StringIO(),
                         stderr=StringIO())
        assert list(tmp_path.iterdir()) == []
    err = StringIO()
    with pytest.raises(CommandError, match="nothing in the archive matches"):
        call_command("export", "wacz", "-o", str(target), "--since", "2100-01-01", stdout=StringIO(), stderr=err)
    assert "selecting records: captured from 2100-01-01T00:00:00Z" in err.getvalue()  # progress on stderr
    with pytest.raises(CommandError, match="-o FILE.wacz"):
        call_command("export", "wacz", "--no-progress", stdout=StringIO())
    with pytest.raises(CommandError, match="WACZ package"):
        call_command("export", "documents", "--since", "2026-11-01", "--no-progress", stdout=StringIO())


def test_index_lines_that_are_not_records_here_are_left_out(crawled, tmp_path):
    """A warcinfo line (what cdxj-indexer writes for a rebuilt file once the `wacz` package
    was imported into the process), a line pointing past the file's end and a line whose
    record is another one copy nothing; the good line is copied with its request."""
    web, warc_dir, boundary, revisited = crawled
    source = cdxj.warc_files(warc_dir)[0]
    (tmp_path / "in").mkdir()
    copy = tmp_path / "in" / source.name
    copy.write_bytes(source.read_bytes())
    cdxj.rebuild(copy)
    good = cdxj.sidecar_path(copy).read_text().splitlines()[0]
    key, ts, fields = good.split(" ", 2)
    fields = json.loads(fields)
    past_end = json.dumps(fields | {"offset": str(copy.stat().st_size - 10)})
    elsewhere = json.dumps(fields | {"offset": "0", "length": "100"})  # the warcinfo record's place
    warcinfo = json.dumps({"mime": "application/warc-fields", "length": "300", "offset": "0", "filename": copy.name})
    cdxj.sidecar_path(copy).write_text("\n".join([f"- {ts} {warcinfo}", f"{key} {ts} {past_end}",
                                                  f"{key} {ts} {elsewhere}", good]) + "\n")
    copied = package.write_selection(tmp_path / "in", lambda capture: True, tmp_path / "out.warc.gz", "test")
    assert (copied.records, copied.requests, copied.unreadable) == (1, 1, 2)
    with open(tmp_path / "out.warc.gz", "rb") as f:
        assert [r.rec_type for r in ArchiveIterator(f, check_digests="raise")] == ["warcinfo", "response", "request"]
