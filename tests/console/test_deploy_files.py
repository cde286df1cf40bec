"""docs/deploy's Prometheus files hold together: the alert rules and the Grafana dashboard
are well formed, every PromQL expression parses (promql-parser, the Rust PromQL parser's
Python binding: what promtool's syntax check would catch), and every metric they name is
one crawlerweb really exposes, collected from the real registry and exposition."""

import json
import re
from pathlib import Path

import promql_parser
import pytest
import yaml
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from crawl import instruments  # noqa: F401  (its counters join REGISTRY)
from console import metrics  # noqa: F401  (its gauges join REGISTRY)

DEPLOY = Path(__file__).resolve().parents[2] / "docs" / "deploy"
# Series Prometheus makes itself for every target.
PROMETHEUS_OWN = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}
SEVERITIES = {"critical", "warning", "info"}
DURATION = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")
# Grafana variables are not PromQL: each is replaced by a value of its kind before parsing.
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h", "$instance": ".*",
                     "${instance}": ".*"}


def rule_file() -> dict:
    return yaml.safe_load((DEPLOY / "crawlerweb-alerts.yml").read_text())


def dashboard() -> dict:
    return json.loads((DEPLOY / "grafana-dashboard.json").read_text())


def panels_of(board: dict) -> list[dict]:
    found = []
    for panel in board["panels"]:
        found.append(panel)
        found.extend(panel.get("panels", []))  # a collapsed row holds its panels
    return [p for p in found if p["type"] != "row"]


def grafana_to_promql(expr: str) -> str:
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    assert "$" not in expr, f"an unknown Grafana variable in {expr!r}"
    return expr


def metric_names(expr: str) -> set[str]:
    """The metric names an expression selects; parsing fails loudly on bad PromQL."""
    names = set()

    def visit(node):
        if isinstance(node, promql_parser.VectorSelector):
            assert node.name, f"a selector without a metric name in {expr!r}"
            names.add(node.name)

    promql_parser.walk(promql_parser.parse(expr), pre_visit=visit)
    return names


def every_expression() -> list[str]:
    rules = [rule["expr"] for group in rule_file()["groups"] for rule in group["rules"]]
    targets = [grafana_to_promql(t["expr"]) for p in panels_of(dashboard()) for t in p["targets"]]
    return rules + targets


@pytest.fixture
def exposed_names(db) -> set[str]:
    """Every sample name crawlerweb exposes: the web's GET /metrics (a real exposition of a
    real snapshot) and the processes' registry (each family's samples by its type)."""
    figures = metrics.snapshot()
    figures["fetch_queues"] = figures["fetch_queues"] or {"fetch.0": 0}  # present with a broker
    body, _ = metrics.prometheus(figures, "text/plain")
    # By family and type, not by sample: a labelled family of an empty frontier has none yet.
    suffixes = {"counter": ["_total"], "gauge": [""], "histogram": ["_bucket", "_count", "_sum"]}
    families = [*text_string_to_metric_families(body.decode()),
                *(f for f in REGISTRY.collect() if f.name.startswith("crawlerweb_"))]
    return {f.name + suffix for f in families for suffix in suffixes[f.type]}


def test_the_rule_file_has_named_groups_of_complete_alerts():
    groups = rule_file()["groups"]
    assert len({g["name"] for g in groups}) == len(groups) >= 1
    alerts = [rule for group in groups for rule in group["rules"]]
    assert len({r["alert"] for r in alerts}) == len(alerts) >= 8
    for rule in alerts:
        assert set(rule) <= {"alert", "expr", "for", "keep_firing_for", "labels", "annotations"}, rule["alert"]
        assert re.fullmatch(r"Crawlerweb[A-Z][A-Za-z]+", rule["alert"])
        assert DURATION.match(rule["for"]), rule["alert"]
        assert rule["labels"]["severity"] in SEVERITIES, rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]


def test_every_expression_parses_and_names_only_metrics_crawlerweb_exposes(exposed_names):
    used = set()
    for expr in every_expression():
        used |= metric_names(expr)
    unknown = used - exposed_names - PROMETHEUS_OWN
    assert not unknown, f"metrics nobody exposes: {sorted(unknown)}"
    # the files use the counters, the histogram and the frontier's gauges alike
    assert {"crawlerweb_fetches_total", "crawlerweb_fetch_duration_seconds_bucket", "crawlerweb_hosts",
            "crawlerweb_queued_due_urls", "crawlerweb_fetch_queue_messages"} <= used


def test_the_parser_refuses_bad_promql():
    """The check above is worth something only if a broken expression fails it."""
    for bad in ("sum(rate(crawlerweb_fetches_total[5m])", "rate(crawlerweb_fetches_total)", "foo{bar=}"):
        with pytest.raises(ValueError):
            metric_names(bad)


def test_counters_are_only_ever_rated_and_gauges_never():
    """rate()/increase() over a gauge (a count by state) is how negative rates came about."""
    rated = re.compile(r"(rate|irate|increase)\(\s*([a-z_:]+)")
    for expr in every_expression():
        for _, name in rated.findall(expr):
            assert name.endswith(("_total", "_bucket", "_sum", "_count")), (name, expr)


def test_the_dashboard_is_templated_on_its_datasource_and_every_panel_queries():
    board = dashboard()
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    panels = panels_of(board)
    ids = [p["id"] for p in board["panels"]]
    assert len(set(ids)) == len(ids) and len(panels) >= 12
    for panel in panels:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"] and all(t["expr"].strip() and t["refId"] for t in panel["targets"]), panel["title"]
        assert {"x", "y", "w", "h"} <= set(panel["gridPos"])
    exprs = " ".join(t["expr"] for p in panels for t in p["targets"])
    assert "histogram_quantile(" in exprs and "rate(" in exprs


def test_the_scrape_config_loads_the_rules_and_names_both_targets():
    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    assert config["rule_files"] == ["crawlerweb-alerts.yml"]
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == {"crawlerweb", "crawlerweb-processes"}
    assert jobs["crawlerweb"]["metrics_path"] == "/metrics" and jobs["crawlerweb"]["authorization"]["type"] == "Bearer"
    assert len(jobs["crawlerweb"]["static_configs"][0]["targets"]) == 1  # global figures: one web
    for job in jobs.values():
        for target in job["static_configs"][0]["targets"]:
            assert re.fullmatch(r"[a-z0-9.-]+:[0-9]+", target)
    # the jobs the rules name are the scrape config's
    used_jobs = set(re.findall(r'job="([^"]+)"', " ".join(every_expression())))
    assert used_jobs <= set(jobs)
