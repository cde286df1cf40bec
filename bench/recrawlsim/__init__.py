"""Recrawl policies offline: bench.freshness's changing web and clock without HTTP, in a few
seconds a run (`python -m bench.recrawlsim`; every seed's web, each policy on each).

bench.freshness runs the real crawler against one web (seed 1) in real time: 3 minutes a
policy, and its share of the oracle's gain moves by ±3-5 points from run to run (the
machine's timing), so one run cannot tell a change of a few points from noise, and one web
cannot tell a better policy from a lucky one. This runs the crawler's own recrawl code
(sim.py says which parts, and what is modelled instead) on as many webs as asked, paired:
each web's share is against its own uniform and oracle. It reproduces bench.freshness:
with host sessions modelled (sim.py), the expected freshness's share of the oracle's gain at
budget 0.2 came out 56 % and 55 % on seeds 1 and 2 at 2 s days (the real bench: 56 %, 52 %)
and 59 % on seed 1 at 4 s days (the real bench: 59 %, 58 %, 59 %); the same visits a day by
class of true rate within a few hundredths (docs/benchmarks.md).

Output: per policy, the mean freshness, its later half, the budget spent and the share of
the oracle's gain over uniform (mean, spread, least, and each web's); the share by six-day
windows (what learning the rates costs early); visits a day and freshness by true rate.
An experiment can patch the crawler's code in each run: RECRAWLSIM_EXPERIMENT=file.py, a
module with install(sim), loaded after the simulation is built (runner.py).

--realtime: bench.freshness's real-time web and settings (issue 51: pages changing every 2 s
to 12 min, the shortest revisit 10 s, the budget a share of the summed true rates), for
--seconds of real time; the per-class tables then give fetches per page-hour by change
period, over the window and over its later half (the plan once the rates are learnt).
"""

WINDOW_DAYS = 6.0  # simulated days of each by-window freshness (sim.py, the tables of __main__.py)
# Measured on bench.freshness's server log (budget 0.2, 2 s days): a host is asked again 0.26 s
# after its last session's last response at the soonest (5th percentile of the gaps between
# sessions), a session's requests 22-35 ms apart, the first crawl 55 ms a page (the machine's
# pace, 16 hosts at once); a session starts within a release period of its URLs' release.
SESSION_TAIL = 0.27
FIRST_SPACING = 0.055
LAG = 0.1
