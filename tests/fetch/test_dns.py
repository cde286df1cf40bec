"""fetch.dns: each name resolved once per TTL, failures cached and told apart; a resolver
that cannot answer pauses its host without charging URLs or stalling other hosts."""

import socket

import pytest

from webs.sampleweb.hostile import hostile_web
from fetch import dns, http
from crawl.runners import run_embedded
from frontier import service
from frontier.models import Host, Url


def test_a_name_is_resolved_once_per_ttl(settings, fake_dns, monkeypatch):
    settings.CRAWLER_DNS_CACHE_SECONDS = 300
    now = [1000.0]
    monkeypatch.setattr(dns, "_clock", lambda: now[0])
    fake_dns["site.example"] = "127.0.0.1"
    for _ in range(5):
        assert dns.resolve("site.example", 80)[0][4][0] == "127.0.0.1"
    now[0] += 299
    dns.resolve("site.example", 80)
    assert fake_dns.asked == ["site.example"]
    now[0] += 2  # past the TTL
    dns.resolve("site.example", 80)
    assert fake_dns.asked == ["site.example"] * 2


def test_failures_are_cached_for_the_negative_ttl(settings, fake_dns):
    settings.CRAWLER_DNS_NEGATIVE_SECONDS = 60
    for _ in range(3):
        with pytest.raises(socket.gaierror):
            dns.resolve("nowhere.example", 80)
    assert fake_dns.asked == ["nowhere.example"]


def test_the_cache_is_bounded(settings, fake_dns):
    settings.CRAWLER_DNS_CACHE_SIZE = 3
    for n in range(5):
        fake_dns[f"h{n}.example"] = "127.0.0.1"
        dns.resolve(f"h{n}.example", 80)
    dns.resolve("h0.example", 80)  # evicted: asked again
    assert fake_dns.asked.count("h0.example") == 2
    assert len(dns._cache) == 3


def test_a_missing_name_and_a_failed_resolver_are_different_errors(monkeypatch):
    def resolver_down(*args, **kwargs):
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", resolver_down)
    assert http.fetch("http://flaky-resolver.example/").error == "dns_unavailable"
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: (_ for _ in ()).throw(
        socket.gaierror(socket.EAI_NONAME, "Name or service not known")))
    assert http.fetch("http://no-such-name.example/").error == "dns"


@pytest.mark.crawl
@pytest.mark.django_db(transaction=True)
def test_a_failed_resolver_pauses_its_host_without_charging_urls_or_stalling_others(settings, monkeypatch):
    settings.CRAWLER_DNS_NEGATIVE_SECONDS = 30
    settings.CRAWLER_DEFAULT_DELAY = 0
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host == "down.example":
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    with hostile_web() as web:
        healthy = [web.url(f"/fine/{n}") for n in range(5)]
        service.add_seeds(["http://down.example/a", "http://down.example/b", *healthy])
        run_embedded(threads=2, max_seconds=3)
    down = Host.objects.get(origin="http://down.example")
    assert down.robots_error == "dns_unavailable"
    assert (down.next_fetch_at - down.robots_fetched_at).total_seconds() >= 29  # paused, not hammered
    assert sorted(Url.objects.filter(host=down).values_list("state", "attempts")) == [("queued", 0)] * 2
    assert Url.objects.exclude(host=down).filter(state="fetched").count() == 5
