"""The freshness benchmark: how fresh does a continuous crawl keep its copies of a changing
web, for a given recrawl budget, under each recrawl policy?

    python -m bench.freshness                      # 16 hosts x 25 pages, 60 days of 4 s, budget 0.3
    python -m bench.freshness --budget-ratio 0.2 --policies optimal,uniform --out var/bench-fresh-0.2
    python -m bench.freshness --realtime --seconds 240 --budget-ratio 0.3 --policies optimal,uniform

Real time (--realtime, issue 51).  The web's clock is the real one (a simulated day is a day)
and its pages change as on a busy site: 10 % only in noise, 15 % never, 75 % from once per
12 minutes to once every 2 seconds (changeweb's "realtime" profile), many faster than the
shortest revisit interval, which no policy can keep fresh.  The crawler runs with the
intervals scaled as a user would scale them (REALTIME_SETTINGS: shortest revisit 10 s,
longest 4 hours, a plan every 2 s, a release every 0.5 s), the budget is --budget-ratio x
the pages' summed true change rates (0.3: 7.6 revisits a second on the default web), and
the per-class table is by true change period, in fetches per page-hour, beside the oracle's
and uniform's allocations in theory (every visit on time).  Without --realtime the bench
runs on its own compressed clock, described next.

What it measures.  For each policy (CRAWLER_RECRAWL_POLICY), one after the other, it starts a
fresh changing web (webs/changeweb, same seed, so every policy meets the same pages in the same
state relative to its start: a fresh server per policy with a fresh epoch) and runs
`manage.py crawl --continuous` on a fresh SQLite database, seeded with every host's index page.
Every SAMPLE_SECONDS it reads the stored copies (indexer_document, with the sqlite3 module:
the harness does not set up Django), recovers each page's stored version from its text
(version_in_text) and computes freshness (the share of pages whose stored copy is the live
one) and age (how long since the live page left the stored copy, in simulated days) against
the ground truth (changeweb.Truth).  Both are time-averaged over the steady part: the run's
simulated time counted from the crawler's first request (the web's day 0 is a second or so
earlier, the crawler's start-up), without its first WARMUP_SHARE (the initial crawl).  After
the run, the server's request log gives the fetches, the 304s and the share of unchanged
revisits answered 304 on hosts that send validators; the crawler's database gives the
noise-only pages (bytes differ on every response, text does not) it counted as changed,
which must be 0.

Why the settings are scaled.  The web runs in accelerated time: a simulated day lasts
`--day-seconds` real seconds.  Every interval of the crawler that is about how pages change
is a setting in real seconds, so each is given its usual value in simulated time multiplied
by day_seconds / 86400: the revisit bounds (1 hour, 60 days), the interval of a revisit
before the first plan (1 day), the most a first Last-Modified counts as unchanged (30 days), the
recheck of gone pages (30 days) and the failure back-off ladder (1-8 weeks).  `--history-days`
starts the crawl that many simulated days into the web's life, so that, as on a real web, the
first Last-Modified dates reach back before the crawl (by default the web starts with it).
Beat's work runs often enough for that clock: the plan is solved once a simulated day and due
revisits are released every min(0.25 s, day/8), with a plan period's budget (a simulated day)
carried over at most, as by default (CRAWLER_RECRAWL_CARRY_SECONDS = the plan period).  The budget is `--budget-ratio` x pages
fetches per simulated day (0.3: each page could be visited once every 3.3 simulated days on
average), converted to real days for CRAWLER_RECRAWL_BUDGET_PER_DAY.  Politeness is made
cheap (Crawl-delay and CRAWLER_DEFAULT_DELAY of POLITE_DELAY seconds), so the budget, not
politeness, is what limits freshness: the output prints by how much.  What cannot be scaled
shows: HTTP dates have a resolution of one second (a quarter of a 4 s simulated day), so
Last-Modified cannot tell apart pages changing more than a few times a day; the few tenths
of a second between a revisit falling due and its record being written (release period,
leasing, group commit) stretch every interval, so a policy spends somewhat less than its
budget (the "of budget" column); and a host session never fetches a URL twice and holds its
host a quarter of a second after its last response, so a page's first look, planned an
hour after its first fetch, waits for the host's first session to end (25 pages, a second
or two: at 2 s a day, 0.8 simulated days at the soonest).  A larger --day-seconds shrinks
these effects; by default a simulated day lasts MIN_DAY_SECONDS (4 s), or longer when the
budget would ask more than MAX_FETCH_RATE fetches a real second, so that the bench measures
the plan, not the crawler's fixed lags or how many pages a second the machine fetches.

How to read the table (one row per policy).  freshness: the time-averaged share of fresh
pages (1 = every stored copy is the live page).  age: the mean time a page's live version
has differed from the stored one, in simulated days.  fetches/day: page and index requests
(what the budget pays for; robots.txt not counted) per simulated day in the steady part,
and that as a share of the budget.  waiting: revisits due and not made yet (released to
the queue, or held back by the budget), sampled with freshness: a policy that plans more
than the budget releases makes every visit late.  body MB: response bodies of the whole run, sized from
the model (the log has no sizes).  304s: all 304 answers.  304 share: of the revisits of a
page on a validator host whose version had not changed since the previous request, the share
answered 304.  noise changed: noise-only pages the crawler counted as changed.  gain: the
freshness above uniform's, and the share of the oracle's gain over uniform the policy gets
((F - F_uniform) / (F_oracle - F_uniform)).  A second table splits visits and freshness by
true change rate (per simulated day), with the median of the crawler's own estimates at the
end.  Then the later half of the window alone: by then every page has been looked at often, so it
shows how close the plan comes to the oracle once the rates are learnt (the whole window also
counts what learning them costs, a third of the window or more at a small budget).  Then the
expected freshness of each policy's visits (expected_freshness): the same average with each
copy fresh with probability e^(-λ·age) under its page's true rate, which leaves out the luck
of the web's one draw of change times (shared by every run of one seed: it moved the share
of the oracle's gain at budget 0.2 by 10 points against the visits' expectation).  Last,
the theory: Cho & Garcia-Molina's freshness for uniform and for the optimum with the true
rates and exactly this budget, every visit on time (what the uniform and oracle rows approach
when the crawler spends its whole budget on schedule).  A warning follows if
the crawler's source changed between policies (then they are not comparable).
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

from frontier import changerate
from frontier.normalize import normalize
from indexer import textstore

from webs.changeweb.model import ChangeConfig, ChangeWeb, version_in_text
from webs.changeweb.runner import run_server
from webs.changeweb.truth import Truth
from webs.httpserver import stop_process

ROOT = Path(__file__).resolve().parent.parent
CRAWLER_PACKAGES = ("crawlerweb", "fetch", "frontier", "indexer")
DAY = 86400.0
POLICIES = ("optimal", "uniform", "adaptive", "oracle")
POLITE_DELAY = 0.02          # Crawl-delay and CRAWLER_DEFAULT_DELAY, real seconds
SAMPLE_SECONDS = 0.5         # at most; a quarter of a simulated day on faster webs
WARMUP_SHARE = 0.1           # of the simulated time, left out of the averages
EARLY_REVISITS = 3           # a page's first revisits, counted apart (early_revisit_share): learning its rate
READY_TIMEOUT = 30.0         # seconds to wait for the server, and for the crawler's first request
STOP_TIMEOUT = 30.0          # seconds a stopped process may take to exit
# Fetches a real second the budget may ask for by default: a longer simulated day beyond it.
# Lags of a fixed real length (the writer's 0.25 s gather, which a session out of URLs waits
# for twice before its host is free again; the 0.25 s release period) are a larger share of a
# shorter day, and 2 s days at budget 0.5 asked 100 fetches/s, the 2-core machine's whole
# capacity: revisits of pages planned every day or so came a median simulated day late, and
# optimal spent 75 % of its budget (4 s days: 97 %). See docs/benchmarks.md.
MAX_FETCH_RATE = 50.0
# The shortest simulated day by default: those lags, the sessions' above all, cost the plan
# 3 points of the oracle's gain in expectation at 2 s days (budget 0.2, seed 1: 56 % expected,
# 44-46 % measured; three runs at 4 s: 58-59 % expected, 56-60 % measured; the simulator on 16
# webs: 57 % -> 61 %). See docs/benchmarks.md.
MIN_DAY_SECONDS = 4.0
# True change rates per simulated day, for the per-class table: (name, low, high], "never" is 0.
RATE_CLASSES = (("never", -1.0, 0.0), ("< weekly", 0.0, 1 / 7), ("weekly-daily", 1 / 7, 1.0),
                ("1-8 a day", 1.0, 8.0), ("24-48 a day", 8.0, float("inf")))
# --realtime: the crawler's recrawl settings (real seconds, issue 51), the politeness delay,
# and the per-class table's classes: five equal steps of log change period from 2 s to 720 s
# (rates per day, as the web's), slowest first; noise-only pages in a class of their own.
REALTIME_SETTINGS = {"CRAWLER_RECRAWL_MIN_INTERVAL": 10.0, "CRAWLER_RECRAWL_MAX_INTERVAL": 14400.0,
                     "CRAWLER_RECRAWL_EXPLORE_INTERVAL": 60.0, "CRAWLER_RECRAWL_RELEASE_SECONDS": 0.5,
                     "CRAWLER_RECRAWL_PLAN_SECONDS": 2.0, "CRAWLER_RECRAWL_CARRY_SECONDS": 2.0}
REALTIME_DELAY = 0.2
REALTIME_SECONDS = 480.0


def _realtime_classes() -> tuple:
    periods = [2.0 * 360.0 ** (k / 5) for k in range(6)]  # 2, 6.5, 21, 68, 222, 720 s
    steps = tuple((f"{periods[k]:.0f}-{periods[k + 1]:.0f} s", DAY / periods[k + 1], DAY / periods[k])
                  for k in reversed(range(5)))
    return (("never", -1.0, 0.0), ("noise", -1.0, 0.0)) + steps[:-1] + ((steps[-1][0], steps[-1][1], math.inf),)


REALTIME_CLASSES = _realtime_classes()


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.freshness", description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--pages", type=int, default=25, help="pages per host")
    parser.add_argument("--day-seconds", type=float, default=None,
                        help=f"real seconds per simulated day (default: {MIN_DAY_SECONDS:g}, or more when the "
                             f"budget would ask the crawler for more than {MAX_FETCH_RATE:g} fetches a real second)")
    parser.add_argument("--days", type=float, default=60.0, help="simulated days each policy crawls")
    parser.add_argument("--realtime", action="store_true",
                        help="the real clock and a web with pages faster than the shortest revisit interval "
                             "(see above); --seconds per policy, --days and --day-seconds do not apply")
    parser.add_argument("--seconds", type=float, default=REALTIME_SECONDS,
                        help="--realtime: real seconds each policy crawls")
    parser.add_argument("--budget-ratio", type=float, default=0.3,
                        help="revisits per simulated day, as a share of the number of pages")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--seed", type=int, default=1, help="the changing web's seed")
    parser.add_argument("--history-days", type=float, default=0.0,
                        help="simulated days the web has been changing when the crawl starts (0: it starts "
                             "with the crawl; more: the first Last-Modified dates reach that far back, as on "
                             "a real web)")
    parser.add_argument("--out", default="var/bench-freshness")
    parser.add_argument("--set", action="append", default=[], metavar="CRAWLER_NAME=VALUE",
                        help="a crawler setting for every policy (repeatable): to measure one part of the "
                             "policy alone, e.g. --set CRAWLER_RECRAWL_ON_SCHEDULE=false")
    args = parser.parse_args(argv)
    args.set = crawler_settings(parser, args.set)
    args.policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    unknown = set(args.policies) - set(POLICIES)
    if unknown or not args.policies:
        parser.error(f"--policies: choose among {', '.join(POLICIES)}")
    if args.days <= 0 or (args.day_seconds is not None and args.day_seconds <= 0) or args.budget_ratio <= 0:
        parser.error("--days, --day-seconds and --budget-ratio must be > 0")
    if not 0 <= args.history_days <= 1000:
        parser.error("--history-days must be in [0, 1000]")
    realtime(args)
    if args.day_seconds is None:
        args.day_seconds = default_day_seconds(args)
    return args


def realtime(args) -> None:
    """--realtime: a simulated day is a real one, and the run lasts --seconds (args.days)."""
    args.realtime = getattr(args, "realtime", False)
    if args.realtime:
        if args.seconds <= 0:
            raise SystemExit("--seconds must be > 0")
        args.day_seconds, args.days = DAY, args.seconds / DAY


def default_day_seconds(args) -> float:
    """MIN_DAY_SECONDS, or the day over which the budget asks MAX_FETCH_RATE fetches a second."""
    return max(MIN_DAY_SECONDS, budget_per_sim_day(args) / MAX_FETCH_RATE)


def crawler_settings(parser: argparse.ArgumentParser, items: list[str]) -> dict[str, str]:
    """--set's CRAWLER_NAME=VALUE items as a dict (parser.error on anything else)."""
    extra = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.startswith("CRAWLER_"):
            parser.error(f"--set {item!r}: give CRAWLER_NAME=VALUE")
        extra[name] = value
    return extra


# ------------------------------------------------------------------ setup

def web_config(args) -> ChangeConfig:
    """The changing web's defaults but for the size, the clock and a cheap Crawl-delay; pages
    keep changing well past the end of the run (the horizon)."""
    if getattr(args, "realtime", False):  # the changes of twice the run (a page every 2 s: a few hundred)
        return ChangeConfig(hosts=args.hosts, pages_per_host=args.pages, port=0, seed=args.seed, day_seconds=DAY,
                            horizon_days=2 * args.days + args.history_days, crawl_delay=REALTIME_DELAY,
                            profile="realtime")
    return ChangeConfig(hosts=args.hosts, pages_per_host=args.pages, port=0, seed=args.seed,
                        day_seconds=args.day_seconds, horizon_days=max(400.0, 2 * args.days + args.history_days),
                        crawl_delay=POLITE_DELAY)


def budget_per_sim_day(args) -> float:
    """--budget-ratio x the pages (on the bench's clock), or x the pages' summed true change
    rates (--realtime: a budget that keeps up with a share of the changes)."""
    if getattr(args, "realtime", False):
        web = ChangeWeb(web_config(args))
        return args.budget_ratio * sum(web.rate(h, p) for h in range(args.hosts) for p in range(args.pages))
    return args.budget_ratio * args.hosts * args.pages


def rate_classes(args) -> tuple:
    return REALTIME_CLASSES if getattr(args, "realtime", False) else RATE_CLASSES


def crawl_settings(args, policy: str, directory: Path, oracle_file: Path) -> dict[str, str]:
    """The crawler's settings: every interval about change scaled to the simulated clock."""
    scale = args.day_seconds / DAY
    week = 7 * DAY * scale
    values = {
        "CRAWLER_ALLOWED_NETWORKS": "127.0.0.0/8",
        "CRAWLER_WARC_DIR": str(directory / "warc"),
        "CRAWLER_RECRAWL_POLICY": policy,
        "CRAWLER_RECRAWL_ORACLE_RATES": str(oracle_file),   # read by the oracle only
        "CRAWLER_RECRAWL_BUDGET_PER_DAY": budget_per_sim_day(args) / scale,
        "CRAWLER_RECRAWL_MIN_INTERVAL": 3600 * scale,
        "CRAWLER_RECRAWL_MAX_INTERVAL": 60 * DAY * scale,
        "CRAWLER_RECRAWL_EXPLORE_INTERVAL": DAY * scale,
        "CRAWLER_RECRAWL_FIRST_LAST_MODIFIED_AGE": 30 * DAY * scale,
        "CRAWLER_GONE_RECHECK_SECONDS": 30 * DAY * scale,
        "CRAWLER_FAILURE_BACKOFF": ",".join(repr(n * week) for n in (1, 2, 4, 8)),
        "CRAWLER_RECRAWL_RELEASE_SECONDS": min(0.25, args.day_seconds / 8),
        "CRAWLER_RECRAWL_PLAN_SECONDS": args.day_seconds,
        "CRAWLER_RECRAWL_CARRY_SECONDS": args.day_seconds,  # a plan period's budget, as by default
        "CRAWLER_DEFAULT_DELAY": POLITE_DELAY,
    }
    if getattr(args, "realtime", False):
        values |= REALTIME_SETTINGS | {"CRAWLER_DEFAULT_DELAY": REALTIME_DELAY}
    return {name: str(value) for name, value in values.items()} | args.set


def child_env(database: Path, settings: dict[str, str]) -> dict[str, str]:
    """The parent's environment without any DATABASE_URL or CRAWLER_* of its own (a test's
    database, a developer's limits), plus this run's database and settings."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL" and not k.startswith("CRAWLER_")}
    return env | {"DATABASE_URL": f"sqlite:///{database.resolve()}"} | settings


def migrated_template(out: Path) -> Path:
    """One migrated empty database, copied for every policy (migrating takes seconds)."""
    template = out / "template.sqlite3"
    template.unlink(missing_ok=True)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, check=True, timeout=120,
                   env=child_env(template, {}))
    return template


def crawler_code() -> str:
    """A hash of the crawler's Python source: policies compare only on the same code."""
    digest = hashlib.sha256()
    for path in sorted(p for package in CRAWLER_PACKAGES for p in (ROOT / package).rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def index_urls(truth: Truth) -> list[str]:
    return [normalize(f"http://{netloc}/").url for netloc in truth.web.hosts]


def write_oracle_rates(truth: Truth, path: Path) -> None:
    """True rates per REAL day, keyed by the URL as the crawler stores it (index pages: 0)."""
    per_real_day = DAY / truth.config.day_seconds
    rates = [(normalize(p.url).url, p.rate_per_day * per_real_day) for p in truth.pages()]
    rates += [(url, 0.0) for url in index_urls(truth)]
    path.write_text("".join(json.dumps({"url": url, "rate_per_day": rate}) + "\n" for url, rate in rates))


# ------------------------------------------------------------------ sampling while it runs

def sample_crawl(database: Path) -> tuple[dict[str, int | None], int]:
    """One sample of the crawl's database: URL -> version of the stored copy (None when its
    text carries no single marker), and the revisits waiting: released to the queue, or due and not released yet (the budget,
    the release period)."""
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=10)) as db:
        rows = db.execute("SELECT address, body FROM indexer_document").fetchall()
        now = datetime.now(timezone.utc).replace(tzinfo=None).isoformat(sep=" ")
        waiting = db.execute("SELECT count(*) FROM frontier_url WHERE observed_at IS NOT NULL AND (state = 'queued'"
                             " OR (state = 'fetched' AND next_fetch_at <= ?))", [now]).fetchone()[0]
    versions = {}
    for address, body in rows:
        found = version_in_text(textstore.from_database(body))  # SQLite keeps it compressed
        versions[address] = None if found is None else found[2]
    return versions, waiting


@dataclass
class Samples:
    """Freshness and age samples taken at regular ticks; the averages count the steady window."""

    started: float                                # wall time of the crawl's first request
    later_from: float = math.inf                  # wall time from which a sample is in the later half
    count: int = 0
    last_at: float | None = None                  # wall time of the last steady sample
    freshness: float = 0.0
    age_days: float = 0.0
    fresh_by_url: Counter = field(default_factory=Counter)
    later_count: int = 0                          # steady samples in the later half, and their freshness
    later_freshness: float = 0.0
    series: list = field(default_factory=list)    # (simulated days since the start, freshness)
    waiting: list = field(default_factory=list)   # steady samples of the revisits waiting (sample_crawl)

    def add(self, truth: Truth, stored: dict, wall_time: float, steady: bool, waiting: int = 0) -> None:
        fresh = truth.freshness(stored, wall_time)
        self.series.append((round((wall_time - self.started) / truth.config.day_seconds, 3), round(fresh, 4)))
        if not steady:
            return
        self.count += 1
        self.waiting.append(waiting)
        self.last_at = wall_time
        self.freshness += fresh
        if wall_time >= self.later_from:
            self.later_count += 1
            self.later_freshness += fresh
        self.age_days += truth.age(stored, wall_time) / truth.config.day_seconds
        for page in truth.pages():
            if stored.get(page.url) is not None and stored[page.url] == truth.live_version(page.url, wall_time):
                self.fresh_by_url[page.url] += 1


def crawl_started(log: Path, proc: subprocess.Popen) -> float:
    """The wall time of the crawler's first request (its robots.txt), from the server's log."""
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline and proc.poll() is None:
        with open(log, encoding="utf-8") as lines:
            first = lines.readline()
        if first.endswith("\n"):
            return float(first.split("\t", 1)[0])
        time.sleep(0.05)
    raise RuntimeError(f"the crawler sent no request within {READY_TIMEOUT:g} s")


def sample_until(proc: subprocess.Popen, truth: Truth, database: Path, window: tuple[float, float],
                 started: float) -> Samples:
    """Sample every tick until the window ends or the crawl exits."""
    samples = Samples(started, later_from=(window[0] + window[1]) / 2)
    tick = min(SAMPLE_SECONDS, truth.config.day_seconds / 4)
    next_at = time.time()
    while time.time() < window[1] and proc.poll() is None:
        time.sleep(max(0.0, next_at - time.time()))
        stored, waiting = sample_crawl(database)
        now = time.time()
        samples.add(truth, stored, now, window[0] <= now <= window[1], waiting)
        # The next tick on the grid still ahead: a slow sample skips ticks rather than bunching them.
        next_at += tick * max(1, math.ceil((time.time() - next_at) / tick))
    return samples


# ------------------------------------------------------------------ after the run

class Request(NamedTuple):
    start: float
    netloc: str
    path: str
    status: int
    version: int


def read_requests(log: Path) -> list[Request]:
    requests = []
    for line in log.read_text(encoding="utf-8").splitlines():
        start, _end, netloc, _method, path, status, _connection, version = line.split("\t")
        requests.append(Request(float(start), netloc, path, int(status), int(version)))
    return requests


def traffic(requests: list[Request], truth: Truth, window: tuple[float, float]) -> dict:
    """Fetches, bytes and 304s from the server's own log.  Fetches are GETs of pages and of
    index pages (what the recrawl budget pays for), not robots.txt."""
    web = truth.web
    fetched = [r for r in requests if r.path != "/robots.txt"]
    steady = [r for r in fetched if window[0] <= r.start <= window[1]]
    sim_days = (window[1] - window[0]) / truth.config.day_seconds
    by_page = defaultdict(list)
    for r in fetched:
        where = web.locate(f"http://{r.netloc}{r.path}")
        if where is not None:
            by_page[where].append(r)
    unchanged = unchanged_304 = early = 0
    for (host, page), visits in by_page.items():
        early += sum(1 for r in visits[1:EARLY_REVISITS + 1] if window[0] <= r.start <= window[1])
        if not web.has_validators(host):
            continue
        for before, after in zip(visits, visits[1:]):
            if before.status in (200, 304) and after.status in (200, 304) and before.version == after.version:
                unchanged += 1
                unchanged_304 += after.status == 304
    page_steady = sum(1 for r in steady if r.path != "/")
    return {
        "fetches": len(fetched),
        "page_fetches": sum(1 for r in fetched if r.path != "/"),
        "index_fetches": sum(1 for r in fetched if r.path == "/"),
        "fetches_per_day": len(steady) / sim_days,
        "page_fetches_per_day": page_steady / sim_days,
        # of the steady page fetches, a page's first EARLY_REVISITS revisits: roughly, learning rates
        "early_revisit_share": early / page_steady if page_steady else 0.0,
        "body_bytes": body_bytes(fetched, web),
        "not_modified": sum(1 for r in fetched if r.status == 304),
        "other_statuses": dict(Counter(r.status for r in fetched if r.status not in (200, 304))),
        "unchanged_revisits": unchanged,
        "unchanged_304_share": unchanged_304 / unchanged if unchanged else None,
    }


def expected_freshness(requests: list[Request], truth: Truth, window: tuple[float, float]) -> float:
    """The freshness the policy's visits buy in expectation: for each page, each copy counted
    from the response that fetched it until the next one, fresh with probability
    e^(-λ (t - visit)) at time t (λ the page's true rate), averaged over the window and all
    pages. Exact in expectation: a page's changes after a visit are independent of when the
    crawler (which cannot see them) comes back. It leaves out the luck of where the web's one
    draw of change times fell against the visits, which the measured freshness keeps and
    which moves one web's share of the oracle's gain by several points between policies that
    visit alike (docs/benchmarks.md); and the writer's lag from a response to its stored
    copy, which costs every policy alike. Pages never fetched count as stale."""
    visits = defaultdict(list)
    for r in requests:
        if r.status in (200, 304) and r.path.startswith("/page/"):
            visits[f"http://{r.netloc}{r.path}"].append(r.start)
    start, end = window
    pages = list(truth.pages())
    total = sum(expected_fresh_seconds(sorted(visits.get(page.url, ())), page.rate_per_day / truth.config.day_seconds,
                                       start, end) for page in pages)  # rates per real second
    return total / len(pages) / (end - start) if pages and end > start else 0.0


def expected_fresh_seconds(times: list[float], rate: float, start: float, end: float) -> float:
    """The seconds of [start, end] a page changing at `rate` (a Poisson process) is expected to
    be fresh, visited at `times` (sorted): each copy from its visit to the next, fresh with
    probability e^(-rate (t - visit)). bench.recrawlsim uses it too."""
    total = 0.0
    for k, at in enumerate(times):
        low, high = max(at, start), min(times[k + 1] if k + 1 < len(times) else end, end)
        if high > low:
            total += (high - low) if rate == 0.0 else (
                math.exp(-rate * (low - at)) - math.exp(-rate * (high - at))) / rate
    return total


def body_bytes(requests: list[Request], web: ChangeWeb) -> int:
    """Response body bytes, computed from the model (the log has no sizes): 200s only, a noise
    page's token and time stamp have a fixed length."""
    sizes = {}
    total = 0
    for r in requests:
        if r.status != 200:
            continue
        host = web.host_index(r.netloc)
        key = (host, r.path, r.version)
        if key not in sizes:
            where = web.locate(f"http://{r.netloc}{r.path}")
            html = web.index_html(host) if where is None else web.page_html(host, where[1], r.version, 0.0, "0" * 32)
            sizes[key] = len(html.encode("utf-8"))
        total += sizes[key]
    return total


class UrlRow(NamedTuple):
    """What the crawler concluded about one URL (frontier_url)."""
    last_change_at: str | None
    change_rate: float | None     # per real day
    changes_seen: int             # visits that saw a change, from the observation summary


def crawler_rows(database: Path) -> dict[str, UrlRow]:
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=10)) as db:
        rows = db.execute("SELECT url, last_change_at, change_rate, change_stats FROM frontier_url").fetchall()
    return {url: UrlRow(changed_at, rate, json.loads(stats)["x"] if stats else 0)
            for url, changed_at, rate, stats in rows}


def crawler_view(rows: dict[str, UrlRow], truth: Truth) -> dict:
    """Noise-only and never-changing pages the crawler counted as changed: a visit saw a
    change (last_change_at, or a change in its observation summary).  A positive change_rate
    alone is not that: the crawler plans pages never seen changing with a small floor rate."""
    pages = list(truth.pages())

    def counted_changed(url):
        row = rows.get(url)
        return row is not None and (row.last_change_at is not None or row.changes_seen > 0)

    return {"noise_pages": sum(p.noise for p in pages),
            "noise_counted_changed": sum(1 for p in pages if p.noise and counted_changed(p.url)),
            "never_changed_counted_changed": sum(1 for p in pages if p.rate_per_day == 0 and counted_changed(p.url)),
            "urls_known": len(rows)}


def rate_class(rate_per_day: float, classes: tuple = RATE_CLASSES, noise: bool = False) -> str:
    """The class of a true rate; noise-only pages in "noise" where the classes have one."""
    names = [name for name, _, _ in classes]
    if noise and "noise" in names:
        return "noise"
    return next(name for name, low, high in classes if low < rate_per_day <= high)


def by_rate_class(requests: list[Request], truth: Truth, samples: Samples, window: tuple[float, float],
                  rows: dict[str, UrlRow], classes: tuple = RATE_CLASSES) -> dict:
    """Per true-rate class: pages, visits per page per simulated day (steady window), freshness,
    and the median of the crawler's rate estimates at the end (per simulated day)."""
    sim_days = (window[1] - window[0]) / truth.config.day_seconds
    visits = Counter(f"http://{r.netloc}{r.path}" for r in requests
                     if r.path.startswith("/page/") and window[0] <= r.start <= window[1])
    entries = {name: {"pages": 0, "visits": 0, "fresh": 0, "estimates": []} for name, _, _ in classes}
    for page in truth.pages():
        entry = entries[rate_class(page.rate_per_day, classes, page.noise)]
        entry["pages"] += 1
        entry["visits"] += visits[page.url]
        entry["fresh"] += samples.fresh_by_url[page.url]
        row = rows.get(page.url)
        if row is not None and row.change_rate is not None:
            entry["estimates"].append(row.change_rate * truth.config.day_seconds / DAY)
    return {name: {"pages": e["pages"],
                   "visits_per_page_day": e["visits"] / e["pages"] / sim_days if e["pages"] else None,
                   "freshness": e["fresh"] / e["pages"] / samples.count if e["pages"] and samples.count else None,
                   "estimated_rate_median": statistics.median(e["estimates"]) if e["estimates"] else None}
            for name, e in entries.items()}


# ------------------------------------------------------------------ one policy

def run_policy(policy: str, args, out: Path, template: Path) -> dict:
    directory = out / policy
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    database = directory / "crawl.sqlite3"
    shutil.copyfile(template, database)
    oracle_file = directory / "oracle-rates.jsonl"
    settings = crawl_settings(args, policy, directory, oracle_file)
    code = crawler_code()
    seconds = args.days * args.day_seconds
    # The web's day 0: when its server starts, or that many simulated days before.
    history = ["--epoch", repr(time.time() - args.history_days * args.day_seconds)] if args.history_days else []
    with run_server(directory, *web_config(args).to_argv(), *history,
                    ready_timeout=READY_TIMEOUT) as (truth, _, log, _):
        write_oracle_rates(truth, oracle_file)
        command = [sys.executable, "manage.py", "crawl", "--continuous", "--max-seconds", repr(seconds),
                   "--no-progress", *index_urls(truth)]
        with open(directory / "crawl.out", "w") as stdout, open(directory / "crawl.err", "w") as stderr:
            proc = subprocess.Popen(command, cwd=ROOT, env=child_env(database, settings), stdout=stdout, stderr=stderr)
            try:
                started = crawl_started(log, proc)
                window = (started + WARMUP_SHARE * seconds, started + seconds)
                samples = sample_until(proc, truth, database, window, started)
            finally:
                stop_process(proc, STOP_TIMEOUT)
        if proc.returncode not in (0, -signal.SIGTERM):
            raise RuntimeError(f"{policy}: the crawl exited with {proc.returncode}; see {directory / 'crawl.err'}")
    requests, rows = read_requests(log), crawler_rows(database)
    window = (window[0], samples.last_at or window[1])   # the crawl stops a little before started + seconds
    result = {
        "policy": policy,
        "freshness": samples.freshness / samples.count if samples.count else None,
        "later_freshness": samples.later_freshness / samples.later_count if samples.later_count else None,
        "expected_freshness": expected_freshness(requests, truth, window),
        "age_days": samples.age_days / samples.count if samples.count else None,
        "samples": samples.count,
        # revisits due and not made yet, in the steady window: mean, and as days of budget
        "waiting_mean": statistics.mean(samples.waiting) if samples.waiting else None,
        "waiting_max": max(samples.waiting, default=None),
        **traffic(requests, truth, window),
        **crawler_view(rows, truth),
        "by_rate_class": by_rate_class(requests, truth, samples, window, rows, rate_classes(args)),
        "series": samples.series,
        "settings": settings,
        "crawler_code": code,
        "startup_sim_days": (started - truth.epoch) / args.day_seconds - args.history_days,
        "window": window,
    }
    result["budget_used"] = result["fetches_per_day"] / budget_per_sim_day(args)
    return result


# ------------------------------------------------------------------ report

def predicted_freshness(args) -> dict:
    """Cho & Garcia-Molina's time-averaged freshness with the true rates and exactly this budget,
    every visit on time (in simulated days): the best uniform and optimal (the oracle) can do,
    in all and by class of true rate ("by_class": visits per page per simulated day and
    freshness of each). Index pages (rate 0) share the budget, as in the crawler; the bounds
    are the crawler's revisit intervals."""
    pages = list(Truth(web_config(args), 0.0).pages())
    rates = [page.rate_per_day for page in pages]
    scaled = crawl_settings(args, "oracle", Path("."), Path("."))
    bounds = tuple(float(scaled[name]) / args.day_seconds
                   for name in ("CRAWLER_RECRAWL_MIN_INTERVAL", "CRAWLER_RECRAWL_MAX_INTERVAL"))
    budget = budget_per_sim_day(args)
    groups = [changerate.Group(rate, 1.0, n) for rate, n in Counter(rates + [0.0] * args.hosts).items()]
    plan = changerate.solve_price(groups, budget, *bounds, explore_interval=bounds[0])
    uniform_freq = budget / (len(rates) + args.hosts)
    freqs = {"uniform": lambda r: uniform_freq,
             "optimal": lambda r: 1 / changerate.interval_for(r, 1.0, plan, *bounds)}
    out = {name: sum(changerate.freshness(r, freq(r)) for r in rates) / len(rates) for name, freq in freqs.items()}
    by_class = {}
    for name, _, _ in rate_classes(args):
        members = [p.rate_per_day for p in pages if rate_class(p.rate_per_day, rate_classes(args), p.noise) == name]
        by_class[name] = {policy: (statistics.mean(freq(r) for r in members),
                                   statistics.mean(changerate.freshness(r, freq(r)) for r in members))
                          if members else None for policy, freq in freqs.items()}
    return out | {"by_class": by_class}


def add_gains(results: dict[str, dict]) -> None:
    """Freshness gained over uniform, and its share of the oracle's gain over uniform; the
    same share for the later half of the window alone, and for the expected freshness."""
    for key, gain, share in (("freshness", "gain_over_uniform", "share_of_oracle_gain"),
                             ("later_freshness", "later_gain_over_uniform", "later_share_of_oracle_gain"),
                             ("expected_freshness", "expected_gain_over_uniform", "expected_share_of_oracle_gain")):
        uniform = results.get("uniform", {}).get(key)
        oracle = results.get("oracle", {}).get(key)
        for result in results.values():
            fresh = result.get(key)
            result[gain] = None if uniform is None or fresh is None else fresh - uniform
            result[share] = (None if None in (uniform, oracle, fresh) or oracle <= uniform
                             else (fresh - uniform) / (oracle - uniform))


def later_half(results: dict[str, dict], args) -> str:
    """The later half of the window alone: once every page has been looked at often, how close the
    plan comes to the oracle (the whole window also counts what learning the rates costs)."""
    start = (WARMUP_SHARE * args.days + args.days) / 2
    return (f"Later half of the window (simulated days {start:g} to {args.days:g}): freshness "
            + _policy_cells(results, "later_freshness", "later_share_of_oracle_gain") + ".")


def expected_line(results: dict[str, dict]) -> str:
    """The expected freshness of each policy's visits (expected_freshness)."""
    return ("Expected freshness of the visits made (the true rates; each copy from its response, the change"
            " times' luck and the writer's lag left out): "
            + _policy_cells(results, "expected_freshness", "expected_share_of_oracle_gain") + ".")


def theory_share_line(results: dict[str, dict], predicted: dict) -> str:
    """Each policy's freshness above the uniform run's, as a share of the theory's gap
    (the oracle's optimum over uniform, every visit on time): the yardstick of a run
    without an oracle policy (--realtime, issue 51: ≥ 50 %), measured and expected."""
    gap = predicted["optimal"] - predicted["uniform"]
    uniform = results["uniform"]
    cells = []
    for p, r in results.items():
        if p == "uniform" or gap <= 0:
            continue
        shares = [None if r.get(key) is None or uniform.get(key) is None else (r[key] - uniform[key]) / gap
                  for key in ("freshness", "expected_freshness")]
        cells.append(f"{p} {_fmt(shares[0], '+.0%')} measured, {_fmt(shares[1], '+.0%')} expected")
    return ("Over uniform, as a share of the theory's gain (oracle - uniform, "
            f"{gap:+.3f}): " + "; ".join(cells) + ".")


def _policy_cells(results: dict[str, dict], value: str, share: str) -> str:
    """"optimal 0.640 (55% of the oracle's gain), uniform 0.610, …": the share for the
    policies measured against the two baselines."""
    return ", ".join(f"{p} {_fmt(r.get(value), '.3f')}"
                     + (f" ({_fmt(r[share], '.0%')} of the oracle's gain)"
                        if r.get(share) is not None and p not in ("uniform", "oracle") else "")
                     for p, r in results.items())


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table(results: dict[str, dict]) -> str:
    lines = ["| policy | freshness | age (days) | fetches/day | of budget | waiting (mean, max) | body MB | 304s"
             " | 304 share of unchanged | noise changed | gain over uniform | of oracle's gain |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results.values():
        lines.append(f"| {r['policy']} | {_fmt(r['freshness'], '.3f')} | {_fmt(r['age_days'], '.2f')}"
                     f" | {r['fetches_per_day']:.1f} | {r['budget_used']:.0%}"
                     f" | {_fmt(r['waiting_mean'], '.0f')}, {_fmt(r['waiting_max'], 'd')} | {r['body_bytes'] / 1e6:.1f}"
                     f" | {r['not_modified']}"
                     f" | {_fmt(r['unchanged_304_share'], '.1%')} | {r['noise_counted_changed']}"
                     f" | {_fmt(r['gain_over_uniform'], '+.3f')} | {_fmt(r['share_of_oracle_gain'], '.0%')} |")
    return "\n".join(lines)


def class_table(results: dict[str, dict], args=None, predicted: dict | None = None) -> str:
    """Visits and freshness by class of true rate, per policy; on --realtime, visits per page
    and real hour, the crawler's estimate as a change period (median, seconds), and the
    theory's uniform and oracle beside."""
    policies = list(results)
    realtime = getattr(args, "realtime", False)
    if not realtime:
        lines = ["| true rate (per day) | pages | " + " | ".join(f"{p} visits/day, F, est. rate" for p in policies)
                 + " |", "|---|---|" + "---|" * len(policies)]
        for name, _, _ in RATE_CLASSES:
            cells = [", ".join(_fmt(results[p]["by_rate_class"][name][key], ".2f")
                               for key in ("visits_per_page_day", "freshness", "estimated_rate_median"))
                     for p in policies]
            pages = results[policies[0]]["by_rate_class"][name]["pages"]
            lines.append(f"| {name} | {pages} | " + " | ".join(cells) + " |")
        return "\n".join(lines)
    per_hour = 3600.0 / args.day_seconds
    theory = ("uniform", "optimal") if predicted else ()
    lines = ["| changes every | pages | " + " | ".join(f"{p}: fetches/h, F, est. period" for p in policies)
             + "".join(f" | {'oracle' if t == 'optimal' else t} (theory): fetches/h, F" for t in theory) + " |",
             "|---|---|" + "---|" * (len(policies) + len(theory))]
    for name, _, _ in REALTIME_CLASSES:
        cells = []
        for p in policies:
            entry = results[p]["by_rate_class"][name]
            visits, estimate = entry["visits_per_page_day"], entry["estimated_rate_median"]
            cells.append(f"{_fmt(None if visits is None else visits * per_hour, '.0f')}, "
                         f"{_fmt(entry['freshness'], '.2f')}, "
                         f"{'-' if not estimate else format(DAY / estimate, '.0f') + ' s'}")
        for t in theory:
            value = predicted["by_class"][name][t]
            cells.append("-" if value is None else f"{value[0] * per_hour:.0f}, {value[1]:.2f}")
        pages = results[policies[0]]["by_rate_class"][name]["pages"]
        lines.append(f"| {name} | {pages} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def preamble(args) -> str:
    pages = args.hosts * args.pages
    budget = budget_per_sim_day(args)
    if getattr(args, "realtime", False):
        return (f"Changing web, real time: {args.hosts} hosts x {args.pages} pages (seed {args.seed}), pages "
                f"changing every 2 s to 12 min (changeweb's realtime profile), {args.seconds:g} s per policy.\n"
                f"Budget: {args.budget_ratio:g} x the summed true change rates = {budget / DAY:.2f} fetches a second "
                f"(each page once every {pages * DAY / budget:.0f} s on average).\n"
                f"Settings: " + ", ".join(f"{k}={v:g}" for k, v in REALTIME_SETTINGS.items())
                + f", CRAWLER_DEFAULT_DELAY and Crawl-delay {REALTIME_DELAY:g}.\n"
                f"Averages over the steady window: from {WARMUP_SHARE * args.seconds:g} s to {args.seconds:g} s."
                + "".join(f"\nSet: {name}={value}" for name, value in args.set.items()))
    polite = args.hosts / POLITE_DELAY * args.day_seconds
    seconds = args.days * args.day_seconds
    return (f"Changing web: {args.hosts} hosts x {args.pages} pages (seed {args.seed}), a simulated day = "
            f"{args.day_seconds:g} s, {args.days:g} days = {seconds:g} s per policy.\n"
            f"Budget: {args.budget_ratio:g} x {pages} pages = {budget:g} fetches per simulated day (each page "
            f"once every {pages / budget:.1f} days on average) = CRAWLER_RECRAWL_BUDGET_PER_DAY "
            f"{budget * DAY / args.day_seconds:.0f} per real day, {budget / args.day_seconds:.0f} a real second.\n"
            f"Politeness: Crawl-delay and CRAWLER_DEFAULT_DELAY {POLITE_DELAY} s allow {polite:.0f} fetches per "
            f"simulated day, {polite / budget:.0f}x the budget: politeness does not limit freshness.\n"
            f"Averages over the steady window: simulated days {WARMUP_SHARE * args.days:g} to {args.days:g} "
            f"(the first {WARMUP_SHARE:.0%}, the initial crawl, left out). Fetches: GETs of pages and index "
            f"pages, not robots.txt."
            + (f"\nHistory: the web has been changing for {args.history_days:g} simulated days when the crawl "
               f"starts." if args.history_days else "")
            + "".join(f"\nSet: {name}={value}" for name, value in args.set.items()))


def main(argv=None) -> int:
    args = parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    print(preamble(args), flush=True)
    template = migrated_template(out)
    results = {}
    for policy in args.policies:
        started = time.monotonic()
        results[policy] = run_policy(policy, args, out, template)
        print(f"{policy}: freshness {_fmt(results[policy]['freshness'], '.3f')}, "
              f"{results[policy]['fetches']} fetches, {time.monotonic() - started:.0f} s", flush=True)
    template.unlink(missing_ok=True)
    add_gains(results)
    predicted = predicted_freshness(args)
    report = {"config": vars(args), "web": asdict(web_config(args)), "budget_per_sim_day": budget_per_sim_day(args),
              "window_sim_days": [WARMUP_SHARE * args.days, args.days], "predicted_freshness": predicted,
              "policies": results}
    (out / "freshness.json").write_text(json.dumps(report, indent=1))
    print("\n" + table(results) + "\n\n" + class_table(results, args, predicted))
    print("\n" + later_half(results, args))
    print("\n" + expected_line(results))
    print(f"\nTheory (true rates, this budget, every visit on time): uniform {predicted['uniform']:.3f}, "
          f"optimal {predicted['optimal']:.3f}.")
    if "uniform" in results:
        print("\n" + theory_share_line(results, predicted))
    if len({r["crawler_code"] for r in results.values()}) > 1:
        print("WARNING: the crawler's code changed between policies; compare them after a run on one version.")
    print(f"\nJSON, server logs and crawl output: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
