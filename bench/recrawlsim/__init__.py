"""Recrawl policies offline: bench.freshness's changing web and clock without HTTP, in a few
seconds a run (`python -m bench.recrawlsim`; every seed's web, each policy on each).

bench.freshness runs the real crawler against one web (seed 1) in real time: 3 minutes a
policy, and its share of the oracle's gain moves by ±3-5 points from run to run (the
machine's timing), so one run cannot tell a change of a few points from noise, and one web
cannot tell a better policy from a lucky one. This runs the crawler's own recrawl code
(sim.py says which parts, and what is modelled instead) on as many webs as asked, paired:
each web's share is against its own uniform and oracle. It reproduces bench.freshness:
seed 1 at budget 0.2 gave optimal 0.627, uniform 0.604, oracle 0.657 here, 0.621-0.626,
0.595-0.601 and 0.648-0.654 in bench.freshness's runs of the same code, and the same
visits a day by class of true rate within a few hundredths (docs/benchmarks.md).

Output: per policy, the mean freshness, its later half, the budget spent and the share of
the oracle's gain over uniform (mean, spread, least, and each web's); the share by six-day
windows (what learning the rates costs early); visits a day and freshness by true rate.
An experiment can patch the crawler's code in each run: RECRAWLSIM_EXPERIMENT=file.py, a
module with install(sim), loaded after the simulation is built (runner.py).
"""

WINDOW_DAYS = 6.0  # simulated days of each by-window freshness (sim.py, the tables of __main__.py)
