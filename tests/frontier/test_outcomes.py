"""The frontier state machine, one row per (fetch result -> next state) pair."""

from datetime import datetime, timedelta, timezone

import pytest

from frontier.outcomes import FetchReport, next_state

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize("report, attempts, state, outcome, wait, dead", [
    (FetchReport(1, status=200, detail="indexed"), 0, "fetched", "indexed", 0, False),
    (FetchReport(1, status=204), 0, "fetched", "ok", 0, False),
    (FetchReport(1, status=304), 0, "fetched", "not_modified", 0, False),
    (FetchReport(1, status=301, redirect_outcome="redirect"), 0, "redirected", "redirect", 0, False),
    (FetchReport(1, status=302, redirect_outcome="redirect_refused:redirect_limit"), 0, "redirected",
     "redirect_refused:redirect_limit", 0, False),
    (FetchReport(1, status=404), 0, "gone", "http_404", 0, False),
    (FetchReport(1, status=410), 2, "gone", "http_410", 0, False),
    (FetchReport(1, status=401), 0, "denied", "http_401", 0, False),
    (FetchReport(1, status=403), 0, "denied", "http_403", 0, False),
    (FetchReport(1, status=418), 0, "http_error", "http_418", 0, False),
    (FetchReport(1, status=429, retry_after=7), 0, "queued", "http_429", 7, False),
    (FetchReport(1, status=503, retry_after=2), 1, "queued", "http_503", 2, False),
    (FetchReport(1, status=503), 0, "queued", "http_503", 10, False),
    (FetchReport(1, status=500), 1, "queued", "http_500", 20, False),
    (FetchReport(1, status=500), 3, "failed", "http_500", 0, True),
    (FetchReport(1, status=429, retry_after=1), 3, "failed", "http_429", 0, True),
    (FetchReport(1, error="timeout"), 0, "queued", "timeout", 10, False),
    (FetchReport(1, error="connection"), 2, "queued", "connection", 40, False),
    (FetchReport(1, error="connection"), 3, "failed", "connection", 0, True),
    (FetchReport(1, error="robots_unavailable"), 0, "queued", "robots_unavailable", 10, False),
    (FetchReport(1, error="blocked_address"), 0, "failed", "blocked_address", 0, False),
    (FetchReport(1, error="too_large", status=200), 0, "failed", "too_large", 0, False),
    (FetchReport(1, robots_blocked=True), 0, "robots_blocked", "robots.txt", 0, False),
])
def test_it_moves_a_url_to_its_next_state(report, attempts, state, outcome, wait, dead):
    t = next_state(report, attempts, NOW, max_attempts=4, retry_base=10)
    assert (t.state, t.outcome, t.dead_letter) == (state, outcome, dead)
    assert t.next_fetch_at == NOW + timedelta(seconds=wait)
    assert t.attempts == (attempts if report.robots_blocked else attempts + 1)
