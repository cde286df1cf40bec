"""Gemini where no server is needed, and where one is not reached (fetch.gemini): the status
mapping, the limits checked before a connection, the SSRF guard, the WARC records and their
index lines, and trust on first use in the host row."""

import time
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from pathlib import Path

import pytest

from archive import warc, cdxj
from fetch import gemini, http
from frontier import service as frontier
from frontier.models import Host


@pytest.mark.parametrize("code, status", [
    (10, 428), (11, 428), (20, 200), (21, 200), (30, 307), (31, 308), (40, 503), (41, 503), (42, 500),
    (43, 502), (44, 429), (45, 503), (50, 400), (51, 404), (52, 410), (53, 403), (59, 400), (60, 401),
    (61, 403), (62, 403), (69, 401),
])
def test_each_gemini_status_means_to_the_frontier_what_its_http_equal_does(code, status):
    assert gemini.http_status(code) == status


def test_a_url_longer_than_gemini_allows_is_refused_before_any_connection():
    result = http.fetch("gemini://127.0.0.1:1/" + "a" * 1100)
    assert (result.status, result.error, result.address) == (None, "protocol", "")
    assert "more than Gemini's 1024" in result.error_detail


def test_the_ssrf_guard_refuses_a_capsule_outside_the_allowed_networks():
    result = http.fetch("gemini://10.1.2.3/")
    assert (result.error, result.address) == ("blocked_address", "")


def test_a_closed_port_is_a_connection_error_not_an_exception():
    result = http.fetch("gemini://127.0.0.1:1/")
    assert result.error == "connection" and result.status is None


def _answer(url: str, header: str, body: bytes = b"") -> http.FetchResult:
    code = int(header[:2])
    meta = header[3:]
    result = http.FetchResult(url=url, final_url=url, status=gemini.http_status(code), reason=meta,
                              started_at=time.time(), address="127.0.0.1", gemini_header=header, body=body,
                              body_read=code // 10 == 2)
    if code // 10 == 2:
        result.headers, result.response_headers = {"content-type": meta}, [("Content-Type", meta)]
    return result


def test_a_gemini_answer_is_archived_as_its_own_bytes_and_read_back(settings, tmp_path):
    settings.CRAWLER_WARC_DIR = str(tmp_path)
    warc.close()
    try:
        page = _answer("gemini://cap.test/a.gmi", "20 text/gemini; lang=en", b"# Title\n=> b.gmi\n")
        gone = _answer("gemini://cap.test/gone", "51 Not found")
        location = warc.record(page)
        warc.record(gone)
    finally:
        warc.close()
    back = warc.read_response(location)
    assert (back.status_line, back.body, back.http_headers) == ("20 text/gemini; lang=en", page.body, [])
    assert ("Content-Type", warc.GEMINI_RESPONSE_TYPE) in back.warc_headers
    (path,) = cdxj.warc_files(Path(tmp_path))
    lines = cdxj.sidecar_path(path).read_text().splitlines()
    assert [line.split(" ", 2)[0] for line in lines] == ["test,cap)/a.gmi", "test,cap)/gone"]
    assert '"mime": "text/gemini", "status": "20"' in lines[0] and '"status": "51"' in lines[1]


@pytest.mark.django_db
def test_trust_on_first_use_records_a_certificate_and_a_change_before_it_expired():
    host = Host.objects.create(origin="gemini://cap.test")
    now = datetime.now(dt_timezone.utc)
    later = now + timedelta(days=30)
    assert frontier.record_certificate(host.id, "a" * 64, later, now) == "first"
    assert frontier.record_certificate(host.id, "a" * 64, later, now) == "same"
    assert frontier.record_certificate(host.id, "b" * 64, later + timedelta(days=1), now) == "changed_early"
    host.refresh_from_db()
    assert (host.tls_fingerprint, host.tls_previous_fingerprint, host.tls_changed_early_at) == ("b" * 64, "a" * 64, now)
    # After the old one expired, a new certificate is a renewal, not an alarm.
    renewed_at = later + timedelta(days=2)
    assert frontier.record_certificate(host.id, "c" * 64, None, renewed_at) == "renewed"
    host.refresh_from_db()
    assert (host.tls_fingerprint, host.tls_changed_early_at) == ("c" * 64, now)
