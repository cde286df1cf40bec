"""The REST API: who gets in, what each endpoint does, and every way a request can be wrong."""

import json
import socket

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import DatabaseError
from django.test import Client

from console.keys import check_key, create_key
from common.netpolicy import parse_allowed
from console.models import ApiKey
from frontier import bulk, service
from frontier.models import CrawlLimits, CrawlScope, ExcludedDomain, Host, Seed, Url

pytestmark = pytest.mark.django_db


@pytest.fixture
def api_key():
    return create_key("tests")[1]


@pytest.fixture
def api(client, api_key):
    """POST/GET with a valid API key."""

    class Api:
        def post(self, path, payload, **extra):
            body = payload if isinstance(payload, (bytes, str)) else json.dumps(payload)
            return client.post(path, body, content_type=extra.pop("content_type", "application/json"),
                               HTTP_AUTHORIZATION=f"Bearer {api_key}", **extra)

        def get(self, path, **extra):
            return client.get(path, HTTP_AUTHORIZATION=f"Bearer {api_key}", **extra)

    return Api()


def error_of(response) -> str:
    return response.json()["error"]


# --- who gets in -------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/seed/urls", "/url/limit", "/url/trusted", "/metrics", "/dashboard/data"])
def test_it_answers_401_without_credentials(client, path):
    response = client.get(path) if path != "/seed/urls" else client.post(path, "{}", content_type="application/json")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert "API key" in error_of(response)


@pytest.mark.parametrize("header", ["Bearer cw_00000000_wrong", "Bearer nonsense", "Basic dXNlcjpwYXNz", "Bearer "])
def test_it_refuses_a_bad_key_or_scheme(client, api_key, header):
    response = client.get("/metrics", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401


def test_it_refuses_a_key_with_the_right_prefix_and_a_wrong_secret(client, api_key):
    prefix = api_key.split("_")[1]
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer cw_{prefix}_{'x' * 43}")
    assert response.status_code == 401


def test_it_refuses_a_revoked_key(client, api_key):
    ApiKey.objects.update(revoked=True)
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {api_key}").status_code == 401


def test_it_stores_only_a_hash_and_records_use(api_key, api):
    row = ApiKey.objects.get()
    assert api_key not in (row.key_hash, row.prefix) and len(row.key_hash) == 64
    assert row.last_used_at is None
    assert api.get("/metrics").status_code == 200
    row.refresh_from_db()
    assert row.last_used_at is not None
    assert check_key(api_key).pk == row.pk and check_key(api_key + "x") is None


def test_the_management_command_prints_a_working_key(client, capsys):
    call_command("createapikey", "prometheus")
    key = capsys.readouterr().out.strip()
    assert ApiKey.objects.get().name == "prometheus"
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {key}").status_code == 200


def test_a_non_staff_session_gets_403(client):
    User.objects.create_user("reader", password="pw")
    client.login(username="reader", password="pw")
    assert client.get("/metrics").status_code == 403
    assert error_of(client.get("/url/limit")) == "staff only"


def test_a_staff_session_needs_the_csrf_token_to_change_anything():
    User.objects.create_user("op", password="pw", is_staff=True)
    browser = Client(enforce_csrf_checks=True)
    browser.login(username="op", password="pw")
    assert browser.get("/url/limit").status_code == 200  # reading needs no token
    refused = browser.post("/url/limit", {"depthLimit": 3}, content_type="application/json")
    assert refused.status_code == 403 and "CSRF" in error_of(refused)
    assert CrawlLimits.objects.filter(depth_limit=3).count() == 0
    browser.get("/admin/")  # any page that sets the CSRF cookie
    token = browser.cookies["csrftoken"].value
    accepted = browser.post("/url/limit", {"depthLimit": 3}, content_type="application/json",
                            HTTP_X_CSRFTOKEN=token)
    assert accepted.status_code == 200 and accepted.json()["depthLimit"] == 3


def test_a_key_needs_no_csrf_token():
    key = create_key("ci")[1]
    response = Client(enforce_csrf_checks=True).post(
        "/url/limit", {"depthLimit": 4}, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 200


def test_the_admin_creates_a_key_and_shows_it_once(admin_client):
    page = admin_client.post("/admin/console/apikey/add/", {"name": "grafana"}, follow=True)
    assert page.status_code == 200
    row = ApiKey.objects.get(name="grafana")
    shown = [str(m) for m in page.context["messages"] if "cw_" in str(m)]
    key = shown[0].split(": ", 1)[1].split(" ")[0]
    assert check_key(key).pk == row.pk


# --- POST /seed/urls ------------------------------------------------------------------------

def test_it_adds_seeds_and_says_why_each_rejected_one_was_refused(api):
    service.add_urls([service.Candidate("http://known.test/")])
    response = api.post("/seed/urls", {"urls": [
        "HTTP://Example.TEST/a", "http://example.test/a#frag", "ftp://example.test/", "not a url",
        "http://known.test/", "http://user:pw@example.test/", "http://example.test/b",
    ]})
    assert response.status_code == 200
    body = response.json()
    assert body["accepted"] == 4 and body["added"] == 2 and body["alreadyKnown"] == 2
    assert body["rejected"] == 3
    assert [(r["index"], r["reason"]) for r in body["rejections"]] == [
        (2, "scheme"), (3, "unparsable"), (5, "credentials")]
    assert all(r["message"] for r in body["rejections"])
    assert set(Url.objects.values_list("url", flat=True)) == {
        "http://known.test/", "http://example.test/a", "http://example.test/b"}
    assert Url.objects.get(url="http://example.test/a").depth == 0
    assert sorted(Seed.objects.values_list("url", flat=True)) == [
        "http://example.test/a", "http://example.test/b", "http://known.test/"]


def test_seeds_get_the_default_scope_or_the_one_asked_for(api, settings):
    body = api.post("/seed/urls", {"urls": ["http://www.d.test/a/b.html"]}).json()
    assert body["scope"] == {"kind": settings.CRAWLER_DEFAULT_SCOPE, "include": [], "exclude": []}
    body = api.post("/seed/urls", {"urls": ["http://d.test/docs/index.html"],
                                   "scope": {"kind": "prefix", "exclude": ["\\.pdf$"]}}).json()
    assert body["scope"] == {"kind": "prefix", "include": [], "exclude": ["\\.pdf$"]}
    assert api.post("/seed/urls", {"urls": ["http://x.d.test/"], "scope": "domain"}).json()["scope"]["kind"] == "domain"
    scopes = {(s.kind, s.anchor, s.exclude) for s in CrawlScope.objects.all()}
    assert scopes == {("host", "d.test", ""), ("prefix", "d.test/docs/", "\\.pdf$"), ("domain", "d.test", "")}
    prefix = Seed.objects.get(url="http://d.test/docs/index.html").scope
    assert Url.objects.get(url="http://d.test/docs/index.html").scopes == str(prefix.id)


def test_reposting_seeds_logs_each_seed_once(api):
    for _ in range(3):
        api.post("/seed/urls", {"urls": ["http://r.test/", "http://r.test/"]})
    assert Seed.objects.count() == 1 and CrawlScope.objects.count() == 1


def test_ten_thousand_seeds_of_one_scope_definition_share_one_scope_row(api, django_assert_max_num_queries):
    # One host under the host scope, then 10,000 hosts under the web scope: two definitions.
    # The statements do not grow with the seeds (no row-by-row scope, host or seed writes).
    with django_assert_max_num_queries(30):
        body = api.post("/seed/urls", {"urls": [f"http://one.test/p/{n}" for n in range(10_000)]}).json()
    assert body["added"] == 10_000 and CrawlScope.objects.count() == 1 and Seed.objects.count() == 10_000
    hosts = [f"http://h{n}.test/" for n in range(10_000)]
    with django_assert_max_num_queries(30):
        body = api.post("/seed/urls", {"urls": hosts, "scope": "web"}).json()
    assert body["added"] == 10_000 and Host.objects.count() == 10_001
    web = CrawlScope.objects.get(kind="web")
    assert CrawlScope.objects.count() == 2 and Seed.objects.filter(scope=web).count() == 10_000
    assert set(Url.objects.filter(host__origin__startswith="http://h").values_list("scopes", flat=True)) == {str(web.id)}
    # Posting them again reuses the rows: nothing new anywhere.
    body = api.post("/seed/urls", {"urls": hosts, "scope": "web"}).json()
    assert body["added"] == 0 and body["alreadyKnown"] == 10_000
    assert CrawlScope.objects.count() == 2 and Seed.objects.count() == 20_000 and Url.objects.count() == 20_000


def test_seeds_of_many_hosts_get_one_host_scope_each_once(api):
    hosts = [f"http://www.s{n}.test/" for n in range(50)] + [f"https://s{n}.test/other" for n in range(50)]
    api.post("/seed/urls", {"urls": hosts})
    # www. or not, http or https: one site, one host scope (docs/urls.md).
    assert CrawlScope.objects.count() == 50
    assert sorted(CrawlScope.objects.values_list("anchor", flat=True)) == sorted(f"s{n}.test" for n in range(50))
    api.post("/seed/urls", {"urls": hosts[:10] + [f"http://s{n}.test/new" for n in range(50, 60)]})
    assert CrawlScope.objects.count() == 60 and Seed.objects.count() == 110


@pytest.mark.parametrize("scope, message", [
    ("galaxy", "scope: unknown scope 'galaxy'; one of host, domain, prefix, web"),
    (7, "scope must be a string or an object, got an integer"),
    ({"kind": "host", "only": ["x"]}, "unknown scope field(s): only"),
    ({"kind": 1}, "scope.kind must be a string, got an integer"),
    ({"kind": "host", "include": "x"}, "scope.include must be an array of regular expressions, got a string"),
    ({"kind": "host", "exclude": ["(a"]}, "scope: exclude[0] is not a valid regular expression"),
    ({"kind": "host", "exclude": [""]}, "scope: exclude[0] must be a non-empty string"),
    ({"kind": "host", "include": [3]}, "scope: include[0] must be a non-empty string"),
    ({"kind": "host", "include": ["x" * 501]}, "at most 500 characters"),
    ({"kind": "host", "include": ["x"] * 51}, "51 include patterns; at most 50"),
])
def test_a_bad_scope_is_refused_and_nothing_is_added(api, scope, message):
    response = api.post("/seed/urls", {"urls": ["http://a.test/"], "scope": scope})
    assert response.status_code == 400 and message in error_of(response)
    assert not Url.objects.exists() and not CrawlScope.objects.exists()


def test_seeds_of_an_excluded_domain_or_over_the_quota_are_rejected_with_reasons(api):
    ExcludedDomain.objects.create(domain="blocked.test")
    CrawlLimits.objects.update_or_create(pk=1, defaults={"max_urls_per_host": 2})
    body = api.post("/seed/urls", {"urls": [
        "http://www.blocked.test/", "http://q.test/1", "http://q.test/2", "http://q.test/3"]}).json()
    reasons = {r["url"]: r["reason"] for r in body["rejections"]}
    assert reasons["http://www.blocked.test/"] == "excluded_domain"
    assert list(reasons.values()).count("host_quota") == 1
    assert body["added"] == 2 and Url.objects.filter(host__origin="http://q.test").count() == 2


def test_each_rejection_names_the_limit_it_breaks(api):
    ExcludedDomain.objects.create(domain="blocked.test")
    CrawlLimits.objects.update_or_create(pk=1, defaults={"max_urls_per_host": 1, "url_length_limit": 40})
    body = api.post("/seed/urls", {"urls": [
        "http://q.test/1", "http://q.test/2", "http://a.b.blocked.test/", "http://q.test/" + "x" * 40,
    ], "scope": {"kind": "host", "exclude": ["/2$"]}}).json()
    messages = {r["reason"]: r["message"] for r in body["rejections"]}
    assert messages["url_too_long"] == ("longer than the URL length limit (54 characters in canonical form; "
                                        "the limit is 40, set by urlLengthLimit or CRAWLER_MAX_URL_LENGTH)")
    assert "(blocked.test is in excludedDomains" in messages["excluded_domain"]
    assert "exclude pattern '/2$' matches it" in messages["out_of_scope"]
    body = api.post("/seed/urls", {"urls": ["http://q.test/3"]}).json()
    assert body["rejections"][0]["message"] == (
        "its host has reached the per-host URL quota (http://q.test has its 1 URLs, the quota set by "
        "maxUrlsPerHost or CRAWLER_MAX_URLS_PER_HOST)")


def test_an_accepted_seed_on_an_address_the_crawler_refuses_carries_a_warning(api, settings, monkeypatch):
    settings.CRAWLER_ALLOWED_NETWORKS = [parse_allowed("127.0.1.0/24:8300")]

    def no_dns(*args, **kwargs):
        raise AssertionError("seeding must not resolve names")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    urls = ["http://10.0.0.1/", "http://127.0.1.3:8300/", "http://127.0.1.3:8301/", "http://intranet.test/",
            "http://localhost/", "http://[fe80::1]/", "http://169.254.169.254/latest/", "http://93.184.215.14/"]
    body = api.post("/seed/urls", {"urls": urls}).json()
    assert body["accepted"] == len(urls) and body["added"] == len(urls) and body["rejected"] == 0
    warned = {w["url"]: w["message"] for w in body["warnings"]}
    assert {w["warning"] for w in body["warnings"]} == {"refused_address"}
    # A name is judged when it is fetched (fetch.http checks the resolved address): no DNS now.
    assert set(warned) == {"http://10.0.0.1/", "http://127.0.1.3:8301/", "http://localhost/", "http://[fe80::1]/",
                           "http://169.254.169.254/latest/"}
    assert warned["http://10.0.0.1/"] == ("accepted, but it will not be fetched: 10.0.0.1 is a private address "
                                          "and CRAWLER_ALLOWED_NETWORKS does not allow it (port 80)")
    assert "127.0.1.3 is a loopback address" in warned["http://127.0.1.3:8301/"]
    assert "link-local" in warned["http://169.254.169.254/latest/"] and "link-local" in warned["http://[fe80::1]/"]
    assert [w["index"] for w in body["warnings"]] == [0, 2, 4, 5, 6]
    settings.CRAWLER_ALLOWED_NETWORKS = [parse_allowed("10.0.0.0/8")]
    assert api.post("/seed/urls", {"urls": ["http://10.0.0.1/"]}).json()["warnings"] == []


def test_the_crawlers_own_services_are_warned_about_even_inside_an_allowed_network(api, settings):
    settings.CRAWLER_OWN_SERVICES = [("127.0.0.1", 5432), ("0.0.0.0", 5555)]  # tests allow 127.0.0.0/8
    body = api.post("/seed/urls", {"urls": ["http://127.0.0.1:5432/", "http://127.0.0.2:5555/",
                                            "http://127.0.0.1:8300/"]}).json()
    assert [w["index"] for w in body["warnings"]] == [0, 1]
    assert "one of the crawler's own services" in body["warnings"][0]["message"]


@pytest.mark.parametrize("seed, canonical", [
    ("127.0.1.3:8300", "http://127.0.1.3:8300/"),
    ("example.test", "http://example.test/"),
    ("  Example.TEST:8080/docs/?a=1 ", "http://example.test:8080/docs/?a=1"),
    ("[::1]:8301", "http://[::1]:8301/"),
    ("localhost", "http://localhost/"),
])
def test_a_bare_origin_is_a_seed_on_http(api, seed, canonical):
    body = api.post("/seed/urls", {"urls": [seed]}).json()
    assert body["accepted"] == 1 and body["added"] == 1, body
    assert Url.objects.get().url == canonical and Seed.objects.get().url == canonical


@pytest.mark.parametrize("seed, reason", [
    ("not a url", "unparsable"), ("mailto:a@b.test", "scheme"), ("javascript:alert(1)", "scheme"),
    ("a.test:http", "scheme"), ("user@a.test", "unparsable"), ("/relative/path", "unparsable"),
])
def test_what_is_no_bare_origin_is_refused_as_before(api, seed, reason):
    body = api.post("/seed/urls", {"urls": [seed]}).json()
    assert [r["reason"] for r in body["rejections"]] == [reason]


def test_a_failing_database_leaves_no_seed_half_added(api, monkeypatch):
    def broken(*args, **kwargs):
        raise DatabaseError("disk full")

    monkeypatch.setattr(bulk, "log_seeds", broken)  # the last statement of a seeding
    response = api.post("/seed/urls", {"urls": ["http://a.test/", "http://b.test/"]})
    assert response.status_code == 503 and "nothing was applied" in error_of(response)
    assert not Url.objects.exists() and not Host.objects.exists() and not CrawlScope.objects.exists()
    monkeypatch.undo()
    body = api.post("/seed/urls", {"urls": ["http://a.test/", "http://b.test/"]}).json()  # the caches forgot it too
    assert body["added"] == 2 and Seed.objects.count() == 2 and CrawlScope.objects.count() == 2


@pytest.mark.parametrize("body, content_type, status, message", [
    ('{"urls": ["http://a.test/"]', "application/json", 400, "malformed JSON"),
    ("  ", "application/json", 400, "malformed JSON"),
    ('["http://a.test/"]', "application/json", 400, "expected a JSON object, got an array"),
    ('{"urls": "http://a.test/"}', "application/json", 400, "urls must be an array of strings, got a string"),
    ('{"urls": []}', "application/json", 400, "urls is empty"),
    ('{"urls": ["http://a.test/", 7]}', "application/json", 400, "urls[1] must be a string, got an integer"),
    ('{"urls": [null]}', "application/json", 400, "urls[0] must be a string, got null"),
    ('{"seeds": ["http://a.test/"]}', "application/json", 400, "unknown field(s): seeds"),
    ('{"urls": ["http://a.test/"], "depth": 1}', "application/json", 400, "unknown field(s): depth"),
    ('{}', "application/json", 400, "missing field: urls"),
    ('{"urls": ["a"], "urls": ["b"]}', "application/json", 400, "duplicate key 'urls'"),
    ('{"urls": [NaN]}', "application/json", 400, "NaN is not valid JSON"),
    (b'{"urls": ["\xff"]}', "application/json", 400, "not UTF-8"),
    ('urls=http://a.test/', "application/x-www-form-urlencoded", 415, "Content-Type: application/json"),
])
def test_bad_seed_payloads_get_a_clear_refusal(api, body, content_type, status, message):
    response = api.post("/seed/urls", body, content_type=content_type)
    assert response.status_code == status
    assert message in error_of(response)
    assert not Url.objects.exists()


def test_too_many_seeds_and_huge_bodies_are_refused(api, settings):
    settings.CRAWLER_API_MAX_SEEDS = 3
    response = api.post("/seed/urls", {"urls": [f"http://a.test/{n}" for n in range(4)]})
    assert response.status_code == 400 and "at most 3" in error_of(response)
    settings.CRAWLER_API_MAX_BODY_BYTES = 2048
    response = api.post("/seed/urls", {"urls": ["http://a.test/" + "x" * 3000]})
    assert response.status_code == 413 and "limit is 2048" in error_of(response)
    assert not Url.objects.exists()


def test_the_wrong_method_gets_405_in_json_with_the_allowed_ones(api):
    response = api.get("/seed/urls")
    assert response.status_code == 405 and response["Allow"] == "POST"
    assert error_of(response) == "GET is not allowed here; use POST" and response.json()["allowed"] == ["POST"]
    response = api.post("/metrics", {})
    assert response.status_code == 405 and response["Allow"] == "GET, HEAD"
    assert api.get("/url/limit").status_code == 200


def test_deeply_nested_json_is_refused_not_a_server_error(api):
    response = api.post("/seed/urls", "[" * 100_000)
    assert response.status_code == 400 and error_of(response) == "JSON nested too deeply"
    response = api.post("/seed/urls", '{"urls": ' + "[" * 50_000 + "]" * 50_000 + "}")
    assert response.status_code == 400
    assert not Url.objects.exists()


def _chunked_request(body: bytes, terminated: bool, api_key: str):
    from io import BytesIO

    from django.core.handlers.wsgi import WSGIRequest
    from django.test import RequestFactory

    environ = RequestFactory().post("/seed/urls").environ
    environ.pop("CONTENT_LENGTH", None)
    environ.update({"CONTENT_TYPE": "application/json", "HTTP_TRANSFER_ENCODING": "chunked",
                    "wsgi.input": BytesIO(body), "wsgi.input_terminated": terminated,
                    "HTTP_AUTHORIZATION": f"Bearer {api_key}"})
    return WSGIRequest(environ)


def test_a_chunked_body_is_read_when_the_server_dechunks_it(api_key):
    from console.views import seed_urls

    body = json.dumps({"urls": ["http://chunked.test/"]}).encode()
    response = seed_urls(_chunked_request(body, True, api_key))
    assert response.status_code == 200 and json.loads(response.content)["added"] == 1
    assert Url.objects.filter(url="http://chunked.test/").exists()
    # a server that cannot de-chunk: a clear 411, not "malformed JSON" for valid JSON
    response = seed_urls(_chunked_request(body, False, api_key))
    assert response.status_code == 411 and "Content-Length" in json.loads(response.content)["error"]


def test_a_chunked_body_over_the_limit_is_refused(api_key, settings):
    from console.views import seed_urls

    settings.CRAWLER_API_MAX_BODY_BYTES = 100
    body = json.dumps({"urls": ["http://chunked.test/" + "x" * 200]}).encode()
    response = seed_urls(_chunked_request(body, True, api_key))
    assert response.status_code == 413 and not Url.objects.exists()


# --- POST /url/limit ------------------------------------------------------------------------

def test_it_sets_limits_and_reads_them_back(api):
    response = api.post("/url/limit", {"depthLimit": 2, "urlLengthLimit": 100, "excludedDomains": ["Spam.TEST."]})
    assert response.status_code == 200
    body = response.json()
    assert (body["depthLimit"], body["urlLengthLimit"], body["excludedDomains"]) == (2, 100, ["spam.test"])
    assert body["addedDomains"] == ["spam.test"]
    assert api.get("/url/limit").json()["depthLimit"] == 2
    # The frontier applies them to the next admissions.
    result = service.add_urls([service.Candidate("http://a.test/deep", depth=3),
                               service.Candidate("http://a.test/" + "x" * 100),
                               service.Candidate("http://m.spam.test/")])
    assert result.rejected == {"depth_limit": 1, "url_too_long": 1, "excluded_domain": 1}
    # null goes back to the setting's default; domains given again are not added twice.
    body = api.post("/url/limit", {"depthLimit": None, "excludedDomains": ["spam.test"]}).json()
    assert body["depthLimit"] == 6 and body["addedDomains"] == [] and body["urlLengthLimit"] == 100
    assert ExcludedDomain.objects.count() == 1


def test_excluding_a_domain_stops_its_queued_urls_and_only_those(api):
    service.add_urls([service.Candidate(u) for u in (
        "http://ads.test/1", "http://cdn.ads.test:8080/2", "https://ads.test/3", "http://notads.test/4",
        "http://ads.test.example/5")])
    body = api.post("/url/limit", {"excludedDomains": ["ads.test"]}).json()
    assert body["stoppedQueuedUrls"] == 3
    states = dict(Url.objects.values_list("url", "state"))
    assert states == {
        "http://ads.test/1": "excluded", "http://cdn.ads.test:8080/2": "excluded", "https://ads.test/3": "excluded",
        "http://notads.test/4": "queued", "http://ads.test.example/5": "queued"}
    leased = {lease.origin for lease in service.lease_ready_hosts("test", 10)}
    assert leased == {"http://notads.test", "http://ads.test.example"}


@pytest.mark.parametrize("payload, message", [
    ({}, "nothing to change"),
    ({"depthLimit": -1}, "depthLimit must be between 0 and 1000, got -1"),
    ({"depthLimit": "3"}, "depthLimit must be an integer or null, got a string"),
    ({"depthLimit": 2.5}, "depthLimit must be an integer or null, got a number"),
    ({"depthLimit": True}, "depthLimit must be an integer or null, got a boolean"),
    ({"urlLengthLimit": 10}, "urlLengthLimit must be between 16 and 65536"),
    ({"urlLengthLimit": 10**12}, "urlLengthLimit must be between 16 and 65536"),
    ({"maxUrlsPerHost": 0}, "maxUrlsPerHost must be between 1"),
    ({"depthLimit": 3, "excludeDomains": ["a.test"]}, "unknown field(s): excludeDomains"),
    ({"excludedDomains": "a.test"}, "excludedDomains must be an array of domain names, got a string"),
    ({"excludedDomains": [1]}, "excludedDomains[0] must be a string, got an integer"),
    ({"excludedDomains": ["http://a.test/"]}, "not a domain name"),
    ({"excludedDomains": ["a..test"]}, "not a valid domain name"),
    ({"excludedDomains": [""]}, "empty domain"),
    ({"excludedDomains": ["-bad-.test"]}, "not a valid domain name"),
])
def test_bad_limit_payloads_get_400_and_change_nothing(api, payload, message):
    payload = {"depthLimit": 3, **payload} if "excludedDomains" in payload else payload
    response = api.post("/url/limit", payload)
    assert response.status_code == 400
    assert message in error_of(response)
    assert not CrawlLimits.objects.filter(depth_limit=3).exists()  # a valid field in the same call: not applied
    assert not ExcludedDomain.objects.exists()


def test_too_many_domains_are_refused(api, settings):
    settings.CRAWLER_API_MAX_DOMAINS = 2
    response = api.post("/url/limit", {"excludedDomains": ["a.test", "b.test", "c.test"]})
    assert response.status_code == 400 and "at most 2" in error_of(response)


def test_international_domains_are_stored_in_their_ascii_form(api):
    assert api.post("/url/limit", {"excludedDomains": ["BÜCHER.example"]}).json()["excludedDomains"] == [
        "xn--bcher-kva.example"]


def test_trusted_domains_are_listed_reweighed_and_dropped(api):
    assert api.get("/url/trusted").json() == {"trustedDomains": []}
    answer = api.post("/url/trusted", {"trustedDomains": [{"domain": "Docs.Example.org."}, {"domain": "b.example",
                                                                                           "weight": -20}]})
    assert answer.status_code == 200
    assert answer.json()["trustedDomains"] == [{"domain": "b.example", "weight": -20},
                                               {"domain": "docs.example.org", "weight": 50}]
    answer = api.post("/url/trusted", {"trustedDomains": [{"domain": "b.example", "weight": None},
                                                          {"domain": "docs.example.org", "weight": 90}]})
    assert answer.json()["trustedDomains"] == [{"domain": "docs.example.org", "weight": 90}]
    # URLs admitted from now on are scored with it.
    from frontier import service
    from frontier.models import Url

    service.add_urls([service.Candidate("http://www.docs.example.org/a/b", 2)])
    assert Url.objects.get(url="http://www.docs.example.org/a/b").score == -20 + 90


@pytest.mark.parametrize("payload, message", [
    ({}, "trustedDomains must be a non-empty array"),
    ({"trustedDomains": []}, "trustedDomains must be a non-empty array"),
    ({"trustedDomains": "a.example"}, "trustedDomains must be a non-empty array"),
    ({"trustedDomains": [{"weight": 5}]}, "trustedDomains[0] must be"),
    ({"trustedDomains": [{"domain": "a.example", "extra": 1}]}, "trustedDomains[0] must be"),
    ({"trustedDomains": [{"domain": 7}]}, "trustedDomains[0].domain must be a string"),
    ({"trustedDomains": [{"domain": "a.example", "weight": "high"}]}, "trustedDomains[0].weight must be an integer"),
    ({"trustedDomains": [{"domain": "a.example", "weight": 10001}]}, "trustedDomains[0].weight must be an integer"),
    ({"trustedDomains": [{"domain": "a.example", "weight": True}]}, "trustedDomains[0].weight must be an integer"),
    ({"trustedDomains": [{"domain": "http://a.example/"}]}, "trustedDomains[0]:"),
    ({"trustedDomains": [{"domain": "a.example"}], "more": 1}, "unknown field(s): more"),
])
def test_a_bad_trusted_domains_payload_gets_400_and_changes_nothing(api, payload, message):
    from frontier.models import TrustedDomain

    answer = api.post("/url/trusted", payload)
    assert answer.status_code == 400 and message in error_of(answer)
    assert not TrustedDomain.objects.exists()


# --- the documented contract ----------------------------------------------------------------

def test_the_openapi_document_matches_the_api(api, settings):
    import yaml
    from django.urls import resolve

    from console import payloads
    from console.views import REJECTION_MESSAGES
    from frontier.vocabulary import SeedWarning

    spec = yaml.safe_load((settings.BASE_DIR / "docs" / "openapi.yaml").read_text())
    for path in spec["paths"]:
        assert resolve(path).url_name.startswith(("api-", "dashboard", "search-json")), path
    schemas = spec["components"]["schemas"]
    reasons = schemas["SeedResult"]["properties"]["rejections"]["items"]["properties"]["reason"]["enum"]
    assert set(reasons) == set(REJECTION_MESSAGES)
    from frontier.vocabulary import Rejection

    assert set(REJECTION_MESSAGES) == {r.value for r in Rejection}  # every refusal has its message
    warnings = schemas["SeedResult"]["properties"]["warnings"]["items"]["properties"]["warning"]["enum"]
    assert set(warnings) == set(SeedWarning)
    limit_body = spec["paths"]["/url/limit"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert set(limit_body["properties"]) == {"excludedDomains", *payloads._LIMIT_FIELDS}
    for name, (_, low, high) in payloads._LIMIT_FIELDS.items():
        assert (limit_body["properties"][name]["minimum"], limit_body["properties"][name]["maximum"]) == (low, high)
    # Every documented figure is in a real answer, and the examples are accepted as documented.
    figures = api.get("/metrics").json()
    assert set(schemas["Metrics"]["required"]) <= set(figures)
    assert set(schemas["Metrics"]["properties"]["urls"]["properties"]) == set(figures["urls"])
    example = spec["paths"]["/seed/urls"]["post"]["requestBody"]["content"]["application/json"]["example"]
    answer = api.post("/seed/urls", example).json()
    documented = spec["paths"]["/seed/urls"]["post"]["responses"]["200"]["content"]["application/json"]["example"]
    assert answer == documented
    example = spec["paths"]["/url/limit"]["post"]["requestBody"]["content"]["application/json"]["example"]
    assert api.post("/url/limit", example).status_code == 200
    example = spec["paths"]["/url/trusted"]["post"]["requestBody"]["content"]["application/json"]["example"]
    assert api.post("/url/trusted", example).status_code == 200
