"""What the documentation (README.md and docs/) promises about the metrics and the REST API answers is what the code does:
every documented metric exists with exactly the documented labels and every metric is
documented; every documented answer key comes back and every key that comes back is
documented. (The OpenAPI document is held to the code in test_api.py and test_steering.py.)"""

import json
import re
from pathlib import Path

import pytest
import yaml
from prometheus_client.metrics import MetricWrapperBase

from crawl import instruments
from console import metrics
from console.keys import create_key
from frontier.models import Host, Url
from frontier.normalize import normalize

README_PATH = Path(__file__).resolve().parents[2] / "README.md"
# The README is a map; the tables it points to are in docs/ (operations.md: metrics; api.md).
README = "\n".join(page.read_text() for page in [README_PATH, *sorted((README_PATH.parent / "docs").glob("*.md"))])
TICKED = re.compile(r"`([^`]+)`")


def table_rows(first_cell: str) -> list[list[str]]:
    """The cells of README's table rows whose first cell starts with first_cell (an escaped
    `\\|` inside a cell is not a column break)."""
    rows = []
    for line in README.splitlines():
        if line.startswith("| " + first_cell):
            cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
            rows.append([cell.strip() for cell in cells])
    return rows


def names_outside_parentheses(cell: str) -> set[str]:
    """The backticked identifiers of a cell, leaving out what a parenthesis explains."""
    depth, kept = 0, []
    for char in cell:
        depth += char == "("
        if depth == 0:
            kept.append(char)
        depth -= char == ")" and depth > 0
    return {name for name in TICKED.findall("".join(kept)) if re.fullmatch(r"[A-Za-z_]\w*", name)}


def make_url(origin: str = "http://127.0.0.1:8300") -> Url:
    norm = normalize(origin + "/")
    host = Host.objects.create(origin=origin)
    return Url.objects.create(url=norm.url, url_key=norm.url_key, host=host)


# --- metrics --------------------------------------------------------------------------------

def documented_metrics() -> dict[str, set[str]]:
    documented = {}
    for name_cell, _kind, label_cell, _what in table_rows("`crawlerweb_"):
        names = TICKED.findall(name_cell)
        stem = names[0]
        for name in names:
            full = stem + name[1:] if name.startswith("…") else name
            assert full not in documented, f"{full} is documented twice"
            documented[full] = names_outside_parentheses(label_cell)
    return documented


def process_metrics() -> dict[str, set[str]]:
    """The crawling processes' counters, histogram and gauge, as the exporter names them."""
    found = {}
    for value in vars(instruments).values():
        if isinstance(value, MetricWrapperBase):
            suffix = "_total" if value._type == "counter" else ""
            found[value._name + suffix] = set(value._labelnames)
    return found


@pytest.mark.django_db
def test_every_metric_is_documented_with_exactly_its_labels():
    make_url()
    figures = metrics.snapshot(max_age=0)
    figures["fetch_queues"] = figures.get("fetch_queues") or {"fetch.0": 0}  # SQLite runs have no broker
    frontier_metrics = {family.name: set(family._labelnames)
                        for family in metrics._Collector(figures).collect()}
    real = process_metrics() | frontier_metrics
    documented = documented_metrics()
    assert len(real) >= 25  # the families were found at all
    assert sorted(set(real) - set(documented)) == [], "metrics README does not list"
    assert sorted(set(documented) - set(real)) == [], "metrics README lists that do not exist"
    wrong = {name: (documented[name], labels) for name, labels in real.items() if documented[name] != labels}
    assert wrong == {}, "README's labels (left) differ from the metric's (right)"


# --- REST API answers ----------------------------------------------------------------------

def documented_answer(endpoint: str) -> set[str]:
    rows = [row for row in table_rows("`") if endpoint in row[0]]
    assert len(rows) == 1, f"README documents {endpoint} in {len(rows)} rows"
    return names_outside_parentheses(rows[0][2])


@pytest.fixture
def call(client):
    key = create_key("docs")[1]

    def call(method: str, path: str, payload=None) -> dict:
        headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
        if method == "GET":
            response = client.get(path, **headers)
        else:
            body = "" if payload is None else json.dumps(payload)
            response = client.post(path, body, content_type="application/json", **headers)
        assert response.status_code == 200, (path, response.content)
        return response.json()

    return call


@pytest.mark.django_db
def test_every_documented_answer_key_comes_back_and_nothing_else(call):
    url = make_url()
    host = url.host
    answers = {
        "POST /seed/urls": [call("POST", "/seed/urls", {"urls": ["http://127.0.0.1:8300/a", "ftp://x/"]})],
        "GET /url/limit": [call("GET", "/url/limit")],
        "POST /url/limit": [call("POST", "/url/limit", {"depthLimit": 9})],
        "GET /url/trusted": [call("GET", "/url/trusted")],
        "POST /url/trusted": [call("POST", "/url/trusted", {"trustedDomains": [{"domain": "a.test"}]})],
        "GET /crawl": [call("GET", "/crawl")],
        "POST /crawl/pause": [call("POST", "/crawl/pause"), call("POST", "/crawl/resume")],
        "POST /hosts/": [call("POST", f"/hosts/{action}", {"hosts": [host.id, "http://unknown.test"]})
                         for action in ("pause", "resume", "fetch-now", "reset-breaker", "refetch-robots")],
        "POST /urls/recrawl": [call("POST", "/urls/recrawl", {"urls": [url.id, "http://unknown.test/x"]})],
    }
    for endpoint, replies in answers.items():
        documented = documented_answer(endpoint)
        seen = set().union(*replies)
        if endpoint == "POST /url/limit":  # "the limits in force as GET answers them"
            documented |= documented_answer("GET /url/limit")
        assert seen == documented, f"{endpoint}: answered {sorted(seen)}, README says {sorted(documented)}"
    # The OpenAPI document's steering answer names every key the steering endpoints give.
    spec = yaml.safe_load((README_PATH.parent / "docs" / "openapi.yaml").read_text())
    described = set(TICKED.findall(spec["components"]["responses"]["SteeringDone"]["description"]))
    steering = set().union(*answers["POST /crawl/pause"], *answers["POST /hosts/"], *answers["POST /urls/recrawl"])
    assert steering == described


@pytest.mark.django_db
def test_the_search_answer_has_exactly_the_keys_readme_and_openapi_document(client, settings):
    from indexer.backends import get_search_backend
    from indexer.models import Document

    settings.CRAWLER_REPLAY_URL = "http://127.0.0.1:8090/crawl"  # cached_url filled, not null
    url = make_url()
    document = Document.objects.create(url=url, page_url=url.url, title="Harbour", body="lighthouse keepers",
                                       content_hash="0" * 64, warc_file="crawlerweb-x.warc.gz")
    get_search_backend().add([document])
    answer = client.get("/search.json?q=lighthouse").json()
    (hit,) = answer["results"]
    spec = yaml.safe_load((README_PATH.parent / "docs" / "openapi.yaml").read_text())
    schema = spec["components"]["schemas"]["SearchResults"]
    assert set(answer) == set(schema["required"]) == set(schema["properties"])
    item = schema["properties"]["results"]["items"]
    assert set(hit) == set(item["required"]) == set(item["properties"])
    assert hit["cached_url"].startswith("http://127.0.0.1:8090/crawl/")
    # README names every key of a result.
    line = next(line for line in README.splitlines() if "each page's `url`" in line)
    assert set(hit) <= set(TICKED.findall(line))
