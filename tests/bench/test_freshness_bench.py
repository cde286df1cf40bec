"""The freshness benchmark (bench/freshness.py): one small end-to-end run whose figures must be
well-formed and meaningful.  Which policy wins is not asserted: at this size it is noise."""

import contextlib
import json
import math
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bench import freshness

ROOT = Path(__file__).resolve().parents[2]
IS_POSTGRES = os.environ.get("DATABASE_URL", "").startswith("postgres")
HOSTS, PAGES, DAYS = 8, 10, 12


def test_the_crawl_gets_its_own_database_and_no_inherited_crawler_setting(monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", "sqlite:///the-test-database.sqlite3")
    monkeypatch.setenv("CRAWLER_DEPTH_LIMIT", "6")
    env = freshness.child_env(tmp_path / "crawl.sqlite3", {"CRAWLER_RECRAWL_POLICY": "uniform"})
    assert env["DATABASE_URL"] == f"sqlite:///{tmp_path / 'crawl.sqlite3'}"
    assert "CRAWLER_DEPTH_LIMIT" not in env and env["CRAWLER_RECRAWL_POLICY"] == "uniform"


def test_intervals_are_scaled_to_the_simulated_day(tmp_path):
    args = freshness.parse_args(["--hosts", "2", "--pages", "5", "--day-seconds", "2", "--budget-ratio", "0.5"])
    settings = freshness.crawl_settings(args, "optimal", tmp_path, tmp_path / "rates.jsonl")
    assert float(settings["CRAWLER_RECRAWL_MIN_INTERVAL"]) == pytest.approx(2 / 24)      # 1 hour
    assert float(settings["CRAWLER_RECRAWL_MAX_INTERVAL"]) == pytest.approx(120)         # 60 days
    assert float(settings["CRAWLER_RECRAWL_EXPLORE_INTERVAL"]) == pytest.approx(2)       # 1 day
    assert float(settings["CRAWLER_RECRAWL_FIRST_LAST_MODIFIED_AGE"]) == pytest.approx(60)  # 30 days
    # 0.5 x 10 pages = 5 fetches per simulated day = 5 per 2 s = 216,000 per real day
    assert float(settings["CRAWLER_RECRAWL_BUDGET_PER_DAY"]) == pytest.approx(5 * 86400 / 2)


def test_a_simulated_day_lasts_four_seconds_or_longer_for_a_larger_budget_unless_one_is_given():
    # 16 hosts x 25 pages: a 4 s day at least (the crawler's fixed lags a small share of it);
    # 0.5 asks 50 fetches a real second of a 4 s day, the most; 0.75 would ask 75, so its day
    # lasts 6 s (the fetch rate's rule: only 0.75 here reaches it)
    day = {ratio: freshness.parse_args(["--budget-ratio", str(ratio)]).day_seconds for ratio in (0.2, 0.3, 0.5, 0.75)}
    assert day == {0.2: 4.0, 0.3: 4.0, 0.5: pytest.approx(4.0), 0.75: pytest.approx(6.0)}
    assert freshness.parse_args(["--budget-ratio", "0.5", "--day-seconds", "2"]).day_seconds == 2.0
    assert "50 a real second" in freshness.preamble(freshness.parse_args(["--budget-ratio", "0.5"]))


def test_the_web_can_have_a_history_before_the_crawl(capsys):
    args = freshness.parse_args(["--history-days", "60", "--days", "60"])
    assert freshness.web_config(args).horizon_days == 400  # the crawl's 60 days and the 60 before fit
    assert freshness.web_config(freshness.parse_args(["--history-days", "300", "--days", "60"])).horizon_days == 420
    assert "changing for 60 simulated days when the crawl starts" in freshness.preamble(args)
    assert "History" not in freshness.preamble(freshness.parse_args([]))  # by default it starts with the crawl
    with pytest.raises(SystemExit):
        freshness.parse_args(["--history-days", "-1"])
    assert "--history-days" in capsys.readouterr().err


def test_one_part_of_the_policy_can_be_measured_alone(tmp_path, capsys):
    args = freshness.parse_args(["--set", "CRAWLER_RECRAWL_CARRY_SECONDS=0", "--set", "CRAWLER_RECRAWL_MEMORY_VISITS=0"])
    settings = freshness.crawl_settings(args, "optimal", tmp_path, tmp_path / "rates.jsonl")
    assert (settings["CRAWLER_RECRAWL_CARRY_SECONDS"], settings["CRAWLER_RECRAWL_MEMORY_VISITS"]) == ("0", "0")
    assert "Set: CRAWLER_RECRAWL_CARRY_SECONDS=0" in freshness.preamble(args)
    for wrong in ("CARRY=0", "CRAWLER_RECRAWL_CARRY_SECONDS"):
        with pytest.raises(SystemExit):
            freshness.parse_args(["--set", wrong])
    assert "CRAWLER_NAME=VALUE" in capsys.readouterr().err


@pytest.mark.crawl
@pytest.mark.skipif(IS_POSTGRES, reason="the benchmark runs on its own SQLite files: run once, in the SQLite pass")
def test_a_small_run_reports_meaningful_figures(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "bench.freshness", "--hosts", str(HOSTS), "--pages", str(PAGES), "--day-seconds", "1",
         "--days", str(DAYS), "--policies", "optimal,uniform", "--out", str(tmp_path)],
        cwd=ROOT, env=dict(os.environ), text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "| policy | freshness |" in proc.stdout
    assert f"Later half of the window (simulated days {(0.1 * DAYS + DAYS) / 2:g} to {DAYS:g}): freshness optimal " in proc.stdout
    assert "Expected freshness of the visits made (the true rates;" in proc.stdout
    report = json.loads((tmp_path / "freshness.json").read_text())
    assert list(report["policies"]) == ["optimal", "uniform"]
    budget = report["budget_per_sim_day"]
    assert budget == pytest.approx(0.3 * HOSTS * PAGES)
    initial_crawl = HOSTS * (PAGES + 1)
    for policy, result in report["policies"].items():
        assert 0 < result["freshness"] <= 1, policy
        assert 0 < result["later_freshness"] <= 1, policy  # the later half of the window alone
        assert 0 < result["expected_freshness"] <= 1, policy  # what the visits buy under the true rates
        assert result["later_gain_over_uniform"] == pytest.approx(
            result["later_freshness"] - report["policies"]["uniform"]["later_freshness"])
        assert result["age_days"] >= 0 and result["samples"] > 10
        assert initial_crawl < result["fetches"] <= initial_crawl + 1.25 * budget * DAYS, policy
        # Above 1 by what was carried over (CRAWLER_RECRAWL_CARRY_SECONDS, a plan period's worth:
        # a start slowed by a loaded machine leaves budget unspent before the window opens).
        assert 0 < result["budget_used"] <= 1.35, policy
        assert result["not_modified"] > 0 and result["unchanged_304_share"] >= 0.9, policy
        assert result["noise_pages"] > 0 and result["noise_counted_changed"] == 0, policy
        assert result["never_changed_counted_changed"] == 0, policy
        assert result["settings"]["CRAWLER_RECRAWL_POLICY"] == policy
        assert (tmp_path / policy / "requests.log").stat().st_size > 0
        # The oracle's rates name every page exactly as the crawler stored it.
        rates = {json.loads(line)["url"] for line in (tmp_path / policy / "oracle-rates.jsonl").read_text().splitlines()}
        with contextlib.closing(sqlite3.connect(tmp_path / policy / "crawl.sqlite3")) as db:
            stored = {url for (url,) in db.execute("SELECT address FROM indexer_document")}
        assert len(stored) == HOSTS * (PAGES + 1) and stored <= rates


def test_the_expected_freshness_of_regular_visits_is_cho_and_garcia_molinas():
    """Every page visited every T seconds from the window's start: each page's expected
    freshness is (1 - e^(-λT)) / (λT), whatever its changes did; a page never visited counts
    stale, a failed request is no visit, and a copy fetched before the window counts in it."""
    from urllib.parse import urlsplit

    from webs.changeweb.model import ChangeConfig
    from webs.changeweb.truth import Truth
    from frontier import changerate

    truth = Truth(ChangeConfig(hosts=2, pages_per_host=20, seed=3, day_seconds=1.0), epoch=0.0)
    pages = list(truth.pages())
    window, period = (10.0, 30.0), 2.5
    requests = []
    for page in pages[1:]:
        where = urlsplit(page.url)
        requests += [freshness.Request(10.0 + period * k, where.netloc, where.path, 200, 0) for k in range(8)]
    skipped = urlsplit(pages[0].url)  # pages[0]: only a failed request, and one before the window
    requests.append(freshness.Request(12.0, skipped.netloc, skipped.path, 503, 0))
    expected = sum(changerate.freshness(p.rate_per_day, 1 / period) for p in pages[1:]) / len(pages)
    assert freshness.expected_freshness(requests, truth, window) == pytest.approx(expected)
    assert 0.0 < expected < (len(pages) - 1) / len(pages)  # some pages change
    requests.append(freshness.Request(9.0, skipped.netloc, skipped.path, 200, 0))
    rate = pages[0].rate_per_day
    before = (math.exp(-rate * 1.0) - math.exp(-rate * 21.0)) / rate if rate else 20.0
    assert freshness.expected_freshness(requests, truth, window) == pytest.approx(expected + before / 20 / len(pages))


def test_the_realtime_mode_runs_on_the_real_clock_with_the_intervals_a_user_would_set(tmp_path):
    """Issue 51: --realtime serves the realtime profile on the real clock (a simulated day
    is a day), with the shortest revisit 10 s, and a budget that is a share of the changes."""
    args = freshness.parse_args(["--realtime", "--seconds", "120", "--budget-ratio", "0.3", "--hosts", "4"])
    assert (args.day_seconds, args.days) == (86400.0, pytest.approx(120 / 86400))
    config = freshness.web_config(args)
    assert config.profile == "realtime" and config.horizon_days * 86400 == pytest.approx(240)
    settings = freshness.crawl_settings(args, "optimal", tmp_path, tmp_path / "rates.jsonl")
    assert {name: float(settings[name]) for name in freshness.REALTIME_SETTINGS} == freshness.REALTIME_SETTINGS
    assert float(settings["CRAWLER_DEFAULT_DELAY"]) == freshness.REALTIME_DELAY
    rates = sum(page.rate_per_day for page in freshness.Truth(config, 0.0).pages())
    assert float(settings["CRAWLER_RECRAWL_BUDGET_PER_DAY"]) == pytest.approx(0.3 * rates)
    # the per-class table's classes: by change period, noise apart
    assert [name for name, _, _ in freshness.REALTIME_CLASSES] == [
        "never", "noise", "222-720 s", "68-222 s", "21-68 s", "6-21 s", "2-6 s"]
    assert freshness.rate_class(86400 / 3, freshness.REALTIME_CLASSES) == "2-6 s"
    assert freshness.rate_class(0.0, freshness.REALTIME_CLASSES, noise=True) == "noise"
    assert freshness.rate_class(0.0, freshness.RATE_CLASSES, noise=True) == "never"
    predicted = freshness.predicted_freshness(args)  # the oracle gives the hopeless class almost nothing
    oracle = predicted["by_class"]
    assert oracle["2-6 s"]["optimal"][0] < oracle["222-720 s"]["optimal"][0] < oracle["21-68 s"]["optimal"][0]
    assert "real time" in freshness.preamble(args)
