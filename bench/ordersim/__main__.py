"""`python -m bench.ordersim [--C 32] [--variants a,b] [--seeds 5]`: the harvest of every
order on every web variant, mean [min-max] over the seeds, as a markdown table."""
from __future__ import annotations

import argparse
import statistics
import sys

from . import graphs, sim

ORDERS = [
    ("bfs-rr", "bfs-rr", {}),
    ("bfs-depth", "bfs-depth", {}),
    ("depth+place", "ours", {"parts": ("depth", "home", "section")}),
    ("ours+standing", "ours", {"standing": True}),
    ("ours-default", "ours", {"standing": True, "bands": True, "sitemaps": True}),
    ("ours, sitemap entries 1 link down", "ours", {"standing": True, "bands": True, "sitemaps": True,
                                                   "sitemap_step": 1}),
    ("backlink", "backlink", {}),
    ("opic", "opic", {}),
    ("omniscient", "omniscient", {}),
]

VARIANTS = {
    "harvestweb-60x50": (graphs.from_harvestweb, {}),
    "harvestweb-60x50-sitemaps-all": (graphs.from_harvestweb, {"sitemap_lists": "all"}),
    "realweb": (graphs.realweb, {}),
    "rw-intra90": (graphs.realweb, {"external": 0.1}),
    "rw-intra70": (graphs.realweb, {"external": 0.3}),
    "rw-home30": (graphs.realweb, {"p_home": 0.3}),
    "rw-home70": (graphs.realweb, {"p_home": 0.7}),
    "rw-size1.6": (graphs.realweb, {"size_exp": 1.6}),
    "rw-size2.0": (graphs.realweb, {"size_exp": 2.0}),
    "rw-links8": (graphs.realweb, {"out_min": 8.0}),
    "rw-300hosts": (graphs.realweb, {"hosts": 300}),
    "rw-randomseeds": (graphs.realweb, {"seed_mode": "random"}),
    "rw-notemplates": (graphs.realweb, {"templates": False}),
    "rw-sitemap-best10": (graphs.realweb, {"sitemaps": "best10"}),
    "rw-sitemap-all": (graphs.realweb, {"sitemaps": "all"}),
}


def _cell(values: list[float]) -> str:
    mean, low, high = statistics.mean(values), min(values), max(values)
    return f"{mean:.2f}" if high - low < 0.005 else f"{mean:.2f} [{low:.2f}–{high:.2f}]"


def harvests(name: str, C: int, seeds: int) -> dict[str, list[float]]:
    """Harvest per order (and the ideal's) for each seed of one web variant."""
    builder, kwargs = VARIANTS[name]
    rows = {label: [] for label, _, _ in ORDERS} | {"ideal": []}
    for seed in range(1, seeds + 1):
        g = builder(seed=seed, **kwargs)
        for label, order, options in ORDERS:
            rows[label].append(sim.harvest(g, sim.simulate(g, order, C=C, rng_seed=seed, **options)))
        rows["ideal"].append(sim.ideal(g)[0])
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ordersim", description=__doc__)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--C", type=int, default=32, help="URLs fetched per round, of distinct hosts")
    parser.add_argument("--seeds", type=int, default=5, help="webs per variant (generator seeds 1..N)")
    args = parser.parse_args(argv)
    labels = [label for label, _, _ in ORDERS] + ["ideal"]
    print(f"C = {args.C}; harvest: of the top 1 % by PageRank, the share fetched in the first 10 % of fetches;"
          f" mean [min–max] over {args.seeds} seeds")
    print("| web | " + " | ".join(labels) + " | ours-default ÷ bfs-rr | most any order could: 1 ÷ bfs-rr |")
    print("|---" * (len(labels) + 3) + "|")
    for name in args.variants.split(","):
        rows = harvests(name, args.C, args.seeds)
        ratio = [ours / bfs for ours, bfs in zip(rows["ours-default"], rows["bfs-rr"]) if bfs]
        ceiling = [1 / bfs for bfs in rows["bfs-rr"] if bfs]
        print(f"| {name} | " + " | ".join(_cell(rows[label]) for label in labels)
              + f" | {statistics.mean(ratio):.2f} | {statistics.mean(ceiling):.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
