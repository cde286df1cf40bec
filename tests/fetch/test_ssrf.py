"""SSRF through the whole pipeline: a seed, a link, a redirect and a DNS name pointing at
PostgreSQL (5432) or Redis (6379) on loopback are refused before any socket opens, and
each refusal is recorded on its URL. Only the hostile web's own address is allowed."""

import ipaddress

import pytest

from webs.sampleweb.hostile import SSRF_TARGETS, hostile_web
from fetch import http
from crawl.runners import run_embedded
from frontier import service
from frontier.models import Url

pytestmark = [pytest.mark.crawl, pytest.mark.django_db(transaction=True)]

WEB_ADDRESS = "127.0.0.2"  # allowed; 127.0.0.1 (where PostgreSQL and Redis listen) is not


@pytest.fixture
def connections(monkeypatch):
    """Every address a socket was opened to, from the one place sockets are opened."""
    opened = []
    real = http.urllib3_connection.create_connection

    def recording(address, *args, **kwargs):
        opened.append(address)
        return real(address, *args, **kwargs)

    monkeypatch.setattr(http.urllib3_connection, "create_connection", recording)
    return opened


def test_seeds_links_redirects_and_names_pointing_at_internal_services_are_refused(settings, fake_dns, connections):
    settings.CRAWLER_ALLOWED_NETWORKS = [ipaddress.ip_network(f"{WEB_ADDRESS}/32")]
    settings.CRAWLER_DEFAULT_DELAY = 0
    fake_dns["db.internal.example"] = "127.0.0.1"  # a public-looking name that resolves inside
    with hostile_web(address=WEB_ADDRESS) as web:
        seeds = ["http://127.0.0.1:6379/", "http://localhost:5432/", web.url("/ssrf-links"),
                 web.url("/redirect-postgres")]
        service.add_seeds(seeds, service.ScopeSpec("web"))  # the guard must hold on the open web
        stats = run_embedded(threads=2, max_seconds=60)
    assert stats.errors == 0
    refused = [*seeds[:2], *SSRF_TARGETS, "http://127.0.0.1:5432/from-redirect"]
    for url in refused:
        row = Url.objects.get(url=url)
        assert (row.state, row.outcome) == ("failed", "blocked_address"), url
    # the pages that pointed there were crawled normally
    assert Url.objects.get(url=web.url("/ssrf-links")).state == "fetched"
    assert Url.objects.get(url=web.url("/redirect-postgres")).outcome == "redirect"
    # not one socket went anywhere but the allowed address
    assert {host for host, _ in connections} == {WEB_ADDRESS}
    assert "db.internal.example" in fake_dns.asked  # refused on the resolved address


def test_refused_addresses_are_final_not_retried(settings, connections):
    settings.CRAWLER_ALLOWED_NETWORKS = []
    settings.CRAWLER_MAX_ATTEMPTS = 3
    service.add_seeds(["http://127.0.0.1:5432/", "http://[::1]:6379/", "http://169.254.169.254/latest/"])
    run_embedded(threads=1, max_seconds=30)
    rows = list(Url.objects.values_list("state", "outcome", "attempts"))
    assert rows == [("failed", "blocked_address", 1)] * 3
    assert connections == []
