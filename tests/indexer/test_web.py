"""The admin and the search page, through Django's test client."""

import pytest
from django.urls import reverse

from frontier import service
from frontier.models import CrawlScope, DeadLetter, Host, Seed, Url
from indexer.backends import get_search_backend
from indexer.models import Document

pytestmark = pytest.mark.django_db


@pytest.fixture
def crawled_rows():
    service.add_urls([service.Candidate("http://a.test/page")])
    url = Url.objects.get()
    doc = Document.objects.create(url=url, page_url=url.url, title="Gazette <of> things",
                                  body="a page about lighthouses and harbours", content_hash="0" * 64)
    get_search_backend().add([doc])
    DeadLetter.objects.create(url=url, reason="http_500", attempts=4)
    return url, doc


@pytest.mark.parametrize("model", ["host", "url", "seed", "crawlscope", "excludeddomain", "crawllimits",
                                   "deadletter"])
def test_it_lists_frontier_models_in_the_admin(admin_client, crawled_rows, model):
    page = admin_client.get(reverse(f"admin:frontier_{model}_changelist"), follow=True)  # crawl limits: its row
    assert page.status_code == 200


def test_it_filters_urls_by_state_and_lists_documents(admin_client, crawled_rows):
    page = admin_client.get(reverse("admin:frontier_url_changelist") + "?state__exact=queued")
    assert page.status_code == 200 and b"http://a.test/page" in page.content
    page = admin_client.get(reverse("admin:frontier_url_changelist") + "?state__exact=fetched")
    assert b"http://a.test/page" not in page.content
    assert admin_client.get(reverse("admin:indexer_document_changelist")).status_code == 200
    assert admin_client.get(reverse("admin:frontier_host_changelist") + "?leased=yes").status_code == 200


def test_it_requeues_dead_letters_from_the_admin(admin_client, crawled_rows):
    url, _ = crawled_rows
    Url.objects.filter(id=url.id).update(state="failed", attempts=4)
    letter = DeadLetter.objects.get()
    admin_client.post(reverse("admin:frontier_deadletter_changelist"),
                      {"action": "requeue", "_selected_action": [letter.id]})
    url.refresh_from_db()
    assert (url.state, url.attempts) == ("queued", 0) and not DeadLetter.objects.exists()


def test_it_adds_seeds_from_the_admin_in_canonical_form_with_their_scope(admin_client):
    page = admin_client.post(reverse("admin:frontier_seed_add"), {
        "url": "HTTP://www.New.test:80/x#y", "scope_kind": "domain", "include": "cdn\\.example/\n", "exclude": ""})
    assert page.status_code == 302
    seed = Seed.objects.select_related("scope").get()
    assert seed.url == "http://www.new.test/x"
    assert (seed.scope.kind, seed.scope.anchor, seed.scope.include) == ("domain", "new.test", "cdn\\.example/")
    assert Url.objects.filter(url="http://www.new.test/x", state="queued", scopes=str(seed.scope_id)).exists()
    assert Host.objects.filter(origin="http://www.new.test").exists()
    # A log of what was asked for: viewable, not editable.
    change = admin_client.post(reverse("admin:frontier_seed_change", args=[seed.id]), {"url": "http://other.test/"})
    assert change.status_code == 403 and Seed.objects.get().url == "http://www.new.test/x"


@pytest.mark.parametrize("form, error", [
    ({"url": "http://n.test/", "scope_kind": "galaxy"}, b"Select a valid choice"),
    ({"url": "http://n.test/", "scope_kind": "host", "exclude": "(unclosed"}, b"not a valid regular expression"),
    ({"url": "ftp://n.test/", "scope_kind": "host"}, b"not admitted: scheme"),
])
def test_it_refuses_a_bad_seed_or_scope_in_the_admin_and_writes_nothing(admin_client, form, error):
    page = admin_client.post(reverse("admin:frontier_seed_add"), form)
    assert page.status_code == 200 and error in page.content
    assert not Seed.objects.exists() and not Url.objects.exists()


def test_it_changes_a_scopes_patterns_in_the_admin_and_workers_see_it(admin_client):
    from frontier.limits import current_limits

    service.add_seeds(["http://s.test/"], service.ScopeSpec("host"))
    row = CrawlScope.objects.get()
    version = current_limits().version
    page = admin_client.post(reverse("admin:frontier_crawlscope_change", args=[row.id]),
                             {"include": "", "exclude": "/private/"})
    assert page.status_code == 302
    row.refresh_from_db()
    assert row.exclude == "/private/" and current_limits().version > version
    result = service.add_urls([service.Candidate("http://s.test/private/x", 1, scopes=str(row.id)),
                               service.Candidate("http://s.test/public", 1, scopes=str(row.id))])
    assert (result.admitted, result.rejected) == (1, {"out_of_scope": 1})


def test_it_keeps_the_admin_for_staff_only(client):
    page = client.get(reverse("admin:frontier_url_changelist"))
    assert page.status_code == 302 and "/admin/login/" in page["Location"]


def test_it_shows_ranked_results_with_escaped_titles_on_the_search_page(client, crawled_rows):
    page = client.get("/?q=lighthouses")
    assert page.status_code == 200
    assert b"http://a.test/page" in page.content and b"<mark>lighthouses</mark>" in page.content
    assert b"Gazette &lt;of&gt; things" in page.content
    assert b"No results" in client.get("/?q=submarines").content


def test_it_answers_search_json_and_rejects_a_missing_query(client, crawled_rows):
    data = client.get("/search.json?q=harbours").json()
    assert [r["url"] for r in data["results"]] == ["http://a.test/page"]
    assert set(data["results"][0]) >= {"url", "title", "snippet", "score"}
    bad = client.get("/search.json")
    assert bad.status_code == 400 and "q" in bad.json()["error"]


def indexed_pages(pages: list[tuple[str, str, str]]) -> list[Document]:
    """(URL, title, body) admitted, stored and indexed, the i-th with content hash i."""
    service.add_urls([service.Candidate(address) for address, _, _ in pages])
    urls = {url.url: url for url in Url.objects.filter(url__in=[address for address, _, _ in pages])}
    docs = [Document.objects.create(url=urls[address], page_url=address, title=title, content_hash=f"{i:064x}",
                                    body=body) for i, (address, title, body) in enumerate(pages)]
    get_search_backend().add(docs)
    return docs


@pytest.fixture
def many_pages():
    return indexed_pages([(f"http://{'docs.b' if i % 2 else 'a'}.test/p{i}", f"Page {i}",
                           f"the pagedword story number {i} " + "extra " * i) for i in range(23)])


def test_the_search_page_counts_pages_dates_and_paginates(client, many_pages):
    first = client.get("/?q=pagedword").content.decode()
    assert "23 pages" in first and "page 1 of 3" in first and 'rel="next"' in first and "fetched 20" in first
    third = client.get("/?q=pagedword&page=3").content.decode()
    assert third.count('class="hit"') == 3 and 'rel="prev"' in third and 'rel="next"' not in third
    onsite = client.get("/?q=pagedword+site%3Ab.test").content.decode()
    assert "11 pages" in onsite and "on b.test" in onsite and "http://a.test/" not in onsite


def test_search_json_pages_and_reports_counts(client, many_pages):
    data = client.get("/search.json?q=pagedword&page=2").json()
    assert data["total"] == 23 and data["page"] == 2 and data["next_page"] == 3 and len(data["results"]) == 10
    assert all(r["fetched_at"] for r in data["results"])
    last = client.get("/search.json?q=pagedword&page=3").json()
    assert last["next_page"] is None and len(last["results"]) == 3
    phrase = client.get('/search.json?q="number 7 extra"').json()
    assert [r["url"] for r in phrase["results"]] == ["http://docs.b.test/p7"]
    fallback = client.get("/search.json?q=pagedword+zeppelin").json()
    assert fallback["any_word"] and fallback["total"] == 23


def test_site_alone_lists_that_sites_pages_by_url_on_the_page_and_in_json(client, many_pages):
    expected = sorted(f"http://docs.b.test/p{i}" for i in range(1, 23, 2))
    first = client.get("/search.json?q=site%3Ab.test").json()
    second = client.get("/search.json?q=site%3Ab.test&page=2").json()
    assert (first["total"], first["last_page"], first["next_page"], first["order"], first["sites"]) == (
        11, 2, 2, "url", ["b.test"])
    assert [r["url"] for r in first["results"] + second["results"]] == expected and second["next_page"] is None
    assert first["results"][0]["snippet"].startswith("the pagedword story number")
    html = client.get("/?q=site%3Ab.test").content.decode()
    assert "11 pages on b.test, by URL" in html and html.count('class="hit"') == 10 and "page 1 of 2" in html
    assert "http://a.test/" not in html and "no words" not in html
    assert client.get("/search.json?q=pagedword").json()["order"] == "relevance"
    assert "No results" in client.get("/?q=site%3Anowhere.test").content.decode()
    nothing = client.get("/search.json?q=%22%22")
    assert nothing.status_code == 400 and "no words" in nothing.json()["error"]


def test_the_search_command_lists_a_site(many_pages):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("search", "site:a.test", "--limit", "5", "--page", "3", stdout=out)
    text = out.getvalue()
    assert text.startswith("12 pages on a.test, by URL · page 3 of 3\n")
    assert "11. Page" in text and "12. Page" in text and "docs.b.test" not in text and "[0.000]" not in text


@pytest.fixture
def eighty_four_pages():
    return indexed_pages([(f"http://c.test/q{i:02d}", f"Note {i}", f"an eightyfour note, number {i} " + "more " * i)
                          for i in range(84)])


@pytest.mark.parametrize("page, hits, last, next_page", [(1, 10, 9, 2), (8, 10, 9, 9), (9, 4, 9, None),
                                                         (10, 0, 9, None), (999, 0, 9, None)])
def test_it_numbers_the_pages_of_84_results(client, eighty_four_pages, page, hits, last, next_page):
    data = client.get(f"/search.json?q=eightyfour&page={page}").json()
    assert (data["total"], data["page"], data["last_page"], data["next_page"]) == (84, page, last, next_page)
    assert len(data["results"]) == hits


def test_a_page_past_the_last_says_how_many_there_are_and_links_to_the_last(client, eighty_four_pages):
    html = client.get("/?q=eightyfour&page=999").content.decode()
    assert "There are only 9 pages of results: page 999 is past the last." in html
    assert '<a href="?q=eightyfour&amp;page=9">Go to the last page (9)</a>' in html
    assert "84 pages" in html and "page 999 of" not in html and "page 100" not in html
    assert "No results" not in html and 'class="hit"' not in html
    last = client.get("/?q=eightyfour&page=9").content.decode()
    assert last.count('class="hit"') == 4 and "page 9 of 9" in last and 'rel="next"' not in last
    assert "past the last" not in last
    single = client.get("/?q=eightyfour+number+7+more&page=2").content.decode()  # p7 only: 1 page
    assert "There is only 1 page of results: page 2 is past the last." in single


def test_search_results_go_as_deep_as_the_ranked_candidates(client, eighty_four_pages, settings):
    settings.CRAWLER_SEARCH_CANDIDATES = 30
    data = client.get("/search.json?q=eightyfour&page=3").json()
    assert (data["total"], data["last_page"], data["next_page"], len(data["results"])) == (84, 3, None, 10)
    assert client.get("/search.json?q=eightyfour&page=4").json()["results"] == []
    html = client.get("/?q=eightyfour&page=3").content.decode()
    assert "page 3 of 3" in html and "the first 30 results are shown" in html


def test_search_json_answers_as_docs_openapi_says(client, eighty_four_pages, settings):
    import yaml

    spec = yaml.safe_load((settings.BASE_DIR / "docs" / "openapi.yaml").read_text())
    documented = spec["components"]["schemas"]["SearchResults"]
    answer = client.get("/search.json?q=eightyfour").json()
    assert set(documented["properties"]) == set(documented["required"]) == set(answer)
    assert set(documented["properties"]["results"]["items"]["properties"]) == set(answer["results"][0])
    example = spec["paths"]["/search.json"]["get"]["responses"]["200"]["content"]["application/json"]["example"]
    assert client.get(f"/search.json?q={example['query']}&page={example['page']}").json() == example


@pytest.mark.parametrize("raw", ["0", "-3", "two", "", "9" * 5000])
def test_a_page_that_is_no_number_is_the_first(client, eighty_four_pages, raw):
    data = client.get(f"/search.json?q=eightyfour&page={raw}").json()
    assert data["page"] == 1 and len(data["results"]) == 10


def test_the_search_command_pages_like_the_search_page(eighty_four_pages):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("search", "eightyfour", "--page", "9", stdout=out)
    assert out.getvalue().startswith("84 pages · page 9 of 9\n") and "81. Note" in out.getvalue()
    out = StringIO()
    call_command("search", "eightyfour", "--limit", "20", "--page", "6", stdout=out)
    assert "there are only 5 pages of 20 results: page 6 is past the last (--page 5)" in out.getvalue()
    assert "page 6 of" not in out.getvalue() and "1. " not in out.getvalue()


@pytest.mark.parametrize("query", ["%00%00", "%22%22", "AND+OR+%28+%29", "x" * 10_000])
def test_hostile_queries_get_a_clear_bounded_answer(client, many_pages, query):
    page = client.get(f"/?q={query}")
    assert page.status_code == 200
    data = client.get(f"/search.json?q={query}")
    if data.status_code == 400:
        assert "error" in data.json()
    else:
        body = data.json()
        assert body["truncated"] == (len(query) > 500) and len(body["query"]) <= 500


def test_it_excludes_a_domain_from_the_admin_at_once(admin_client):
    service.add_urls([service.Candidate("http://warmup.test/")])  # caches the limits
    admin_client.post(reverse("admin:frontier_excludeddomain_add"), {"domain": "Spam.test"})
    assert service.add_urls([service.Candidate("http://www.spam.test/")]).rejected == {"excluded_domain": 1}


def test_it_notices_a_limits_change_made_by_another_process(monkeypatch):
    from frontier import limits
    from frontier.models import CrawlLimits

    assert service.add_urls([service.Candidate("http://a.test/", depth=3)]).admitted == 1
    # another process writes the row: bulk_create skips save(), so this process is not told
    CrawlLimits.objects.bulk_create([CrawlLimits(pk=1, depth_limit=1, version=99)])
    assert service.add_urls([service.Candidate("http://c.test/", depth=3)]).admitted == 1  # cached
    monkeypatch.setattr(limits, "LIMITS_RECHECK_SECONDS", 0.0)
    assert service.add_urls([service.Candidate("http://b.test/", depth=3)]).rejected == {"depth_limit": 1}


def test_excluding_a_domain_in_the_admin_stops_its_queued_urls_and_removing_it_resumes_them(admin_client):
    from frontier.models import ExcludedDomain

    service.add_urls([service.Candidate("http://www.spam.test/a"), service.Candidate("http://ham.test/b")])
    page = admin_client.post(reverse("admin:frontier_excludeddomain_add"), {"domain": "http://spam.test/"})
    assert b"not a domain name" in page.content and not ExcludedDomain.objects.exists()
    admin_client.post(reverse("admin:frontier_excludeddomain_add"), {"domain": "SPAM.test"})
    assert dict(Url.objects.values_list("url", "state")) == {
        "http://www.spam.test/a": "excluded", "http://ham.test/b": "queued"}
    domain = ExcludedDomain.objects.get()
    admin_client.post(reverse("admin:frontier_excludeddomain_delete", args=[domain.id]), {"post": "yes"})
    assert Url.objects.get(url="http://www.spam.test/a").state == "queued"


def test_url_list_filters_by_status_class_and_by_host_without_listing_every_host(admin_client):
    service.add_urls([service.Candidate(u) for u in ("http://a.test/1", "http://a.test/2", "http://b.test/3")])
    Url.objects.filter(url="http://a.test/1").update(state="fetched", last_status=200)
    Url.objects.filter(url="http://b.test/3").update(state="gone", last_status=404)
    changelist = reverse("admin:frontier_url_changelist")
    page = admin_client.get(changelist + "?status=2xx")
    assert b"http://a.test/1" in page.content and b"http://b.test/3" not in page.content
    assert b"http://b.test/3" in admin_client.get(changelist + "?status=404/410").content
    host = Host.objects.get(origin="http://a.test")
    page = admin_client.get(changelist + f"?host={host.id}")
    assert b"http://a.test/2" in page.content and b"http://b.test/3" not in page.content
    assert b"http://b.test" not in admin_client.get(changelist).content.split(b'id="changelist-filter"')[1]
    hosts = admin_client.get(reverse("admin:frontier_host_changelist")).content
    assert f'{changelist}?host={host.id}'.encode() in hosts  # each host links to its URLs


def test_admin_lists_count_at_most_the_cap(admin_client, monkeypatch):
    from common import paging

    monkeypatch.setattr(paging, "ADMIN_COUNT_CAP", 5)
    service.add_urls([service.Candidate(f"http://a.test/{n}") for n in range(12)])
    page = admin_client.get(reverse("admin:frontier_url_changelist") + "?state__exact=queued")
    assert page.context["cl"].result_count == 6  # counted up to cap + 1, not all 12
    assert page.context["cl"].paginator.count == 6


def test_the_document_page_links_to_its_frontier_url(admin_client, crawled_rows):
    url, doc = crawled_rows
    page = admin_client.get(reverse("admin:indexer_document_change", args=[doc.id]))
    assert reverse("admin:frontier_url_change", args=[url.id]).encode() in page.content
