"""`python -m bench.recrawlsim [--budget-ratio 0.2] [--seeds 1-8] [--policies optimal,uniform,oracle]
[--set CRAWLER_NAME=VALUE ...]`: each policy on each seed's changing web, and the share of the
oracle's gain over uniform per seed (paired: the same web), as a markdown table."""
from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import os
import statistics
import sys

from bench import freshness

from . import FIRST_SPACING, LAG, SESSION_TAIL, WINDOW_DAYS
from .runner import run_one


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.recrawlsim", description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget-ratio", type=float, default=0.3)
    parser.add_argument("--seeds", default="1-8", help="changing-web seeds: 1-8, or 1,3,5")
    parser.add_argument("--policies", default="optimal,uniform,oracle")
    parser.add_argument("--days", type=float, default=60.0)
    parser.add_argument("--realtime", action="store_true",
                        help="bench.freshness's real-time web and settings (issue 51): --seconds of real time")
    parser.add_argument("--seconds", type=float, default=freshness.REALTIME_SECONDS)
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--pages", type=int, default=25)
    parser.add_argument("--day-seconds", type=float, default=None)
    parser.add_argument("--history-days", type=float, default=0.0)
    parser.add_argument("--lag", type=float, default=LAG,
                        help="mean real seconds from a release to its session's first request (exponential)")
    parser.add_argument("--session-tail", type=float, default=SESSION_TAIL,
                        help="seconds a host session holds its host after its last response (0: no sessions, "
                             "each URL answers after its own lag: with --lag 0.3 --first-spacing 0.035, the "
                             "model before sessions)")
    parser.add_argument("--first-spacing", type=float, default=FIRST_SPACING,
                        help="seconds between a host's pages in the first crawl")
    parser.add_argument("--set", action="append", default=[], metavar="CRAWLER_NAME=VALUE")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    first, _, last = args.seeds.partition("-")
    args.seeds = list(range(int(first), int(last) + 1)) if last else [int(s) for s in args.seeds.split(",")]
    args.policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    if set(args.policies) - set(freshness.POLICIES):
        parser.error(f"--policies: choose among {', '.join(freshness.POLICIES)}")
    args.set = freshness.crawler_settings(parser, args.set)
    if min(args.lag, args.session_tail, args.first_spacing) < 0:
        parser.error("--lag, --session-tail and --first-spacing must be >= 0")
    freshness.realtime(args)
    if args.day_seconds is None:
        args.day_seconds = freshness.default_day_seconds(args)
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    jobs = [(args, policy, seed) for seed in args.seeds for policy in args.policies]
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=context, max_tasks_per_child=1) as pool:
        results = list(pool.map(run_one, jobs))
    by = {(r["policy"], r["seed"]): r for r in results}
    if args.realtime:
        print(f"real time: budget {args.budget_ratio:g} x the summed true rates "
              f"(seed {args.seeds[0]}: {freshness.budget_per_sim_day(argparse.Namespace(**vars(args), seed=args.seeds[0])) / freshness.DAY:.2f}"
              f" fetches a second), {args.seconds:g} s; ", end="")
    print(f"budget {args.budget_ratio:g}, {args.hosts}x{args.pages} pages, day {args.day_seconds:g} s, "
          f"{args.days:g} days, lag {args.lag:g} s, session tail {args.session_tail:g} s, "
          f"first crawl {args.first_spacing:g} s a page, seeds {args.seeds[0]}..{args.seeds[-1]}"
          + "".join(f", {k}={v}" for k, v in args.set.items()))
    print(summary_table(args, by) + "\n\n" + window_table(args, by) + "\n\n" + class_table(args, by)
          + "\n\n" + class_table(args, by, "later_visits_by_class"))
    return 0


def _share(by: dict, policy: str, seed: int, pick) -> float | None:
    """(policy - uniform) / (oracle - uniform) on one web, of what `pick` reads from a result."""
    if ("uniform", seed) not in by or ("oracle", seed) not in by:
        return None
    uniform, oracle = pick(by[("uniform", seed)]), pick(by[("oracle", seed)])
    return (pick(by[(policy, seed)]) - uniform) / (oracle - uniform)


def summary_table(args, by: dict) -> str:
    lines = ["| policy | freshness (mean) | later half | of budget | share of the oracle's gain: mean, sd, least"
             " (by seed) | later half's share | expected freshness's share: mean, least (by seed) |",
             "|---|---|---|---|---|---|---|"]
    for policy in args.policies:
        rows = [by[(policy, seed)] for seed in args.seeds]
        shares = [_share(by, policy, seed, lambda r: r["freshness"]) for seed in args.seeds]
        later = [_share(by, policy, seed, lambda r: r["later_freshness"]) for seed in args.seeds]
        expected = [_share(by, policy, seed, lambda r: r["expected_freshness"]) for seed in args.seeds]
        share, later_share, expected_share = "-", "-", "-"
        if None not in shares:
            share = (f"{statistics.mean(shares):.0%}, {statistics.pstdev(shares):.0%}, {min(shares):.0%}"
                     f" ({' '.join(f'{x:.0%}' for x in shares)})")
            later_share = f"{statistics.mean(later):.0%}"
            expected_share = (f"{statistics.mean(expected):.0%}, {min(expected):.0%}"
                              f" ({' '.join(f'{x:.0%}' for x in expected)})")
        lines.append(f"| {policy} | {statistics.mean(r['freshness'] for r in rows):.4f}"
                     f" | {statistics.mean(r['later_freshness'] for r in rows):.4f}"
                     f" | {statistics.mean(r['budget_used'] for r in rows):.0%} | {share} | {later_share}"
                     f" | {expected_share} |")
    return "\n".join(lines)


def window_table(args, by: dict) -> str:
    """Freshness by WINDOW_DAYS (uniform, oracle) and each other policy's share of the
    oracle's gain in it (over the seeds' summed gains)."""
    windows = len(by[(args.policies[0], args.seeds[0])]["by_window"])
    lines = ["| policy | " + " | ".join(f"days {WINDOW_DAYS * k:g}-{WINDOW_DAYS * (k + 1):g}" for k in range(windows)) + " |",
             "|---|" + "---|" * windows]
    for policy in args.policies:
        cells = []
        for k in range(windows):
            values = [by[(policy, seed)]["by_window"][k] for seed in args.seeds]
            baselines = ("uniform", args.seeds[0]) in by and ("oracle", args.seeds[0]) in by
            if policy in ("uniform", "oracle") or not baselines:
                cells.append(f"{statistics.mean(values):.3f}")
                continue
            uniform = [by[("uniform", seed)]["by_window"][k] for seed in args.seeds]
            oracle = [by[("oracle", seed)]["by_window"][k] for seed in args.seeds]
            cells.append(f"{(sum(values) - sum(uniform)) / (sum(oracle) - sum(uniform)):.0%}")
        lines.append(f"| {policy} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def class_table(args, by: dict, key: str = "visits_by_class") -> str:
    """Visits per page and simulated day (per real hour with --realtime) and freshness by
    class of true rate, mean over the seeds; with key "later_visits_by_class", the visits of
    the later half of the window (freshness still the whole window's)."""
    names = list(by[(args.policies[0], args.seeds[0])][key])
    unit, per = ("fetches/h", 3600.0 / args.day_seconds) if args.realtime else ("visits/day", 1.0)
    later = " (later half)" if key.startswith("later") else ""
    lines = ["| policy | " + " | ".join(f"{name}: {unit}{later}, F" for name in names) + " |",
             "|---|" + "---|" * len(names)]
    for policy in args.policies:
        rows = [by[(policy, seed)] for seed in args.seeds]
        cells = []
        for name in names:
            visits = [r[key][name] for r in rows if r[key][name] is not None]
            fresh = [r["fresh_by_class"][name] for r in rows if r["fresh_by_class"][name] is not None]
            cells.append(f"{statistics.mean(visits) * per:.{0 if args.realtime else 3}f}, {statistics.mean(fresh):.3f}"
                         if visits else "-")
        lines.append(f"| {policy} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
