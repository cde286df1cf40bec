"""One simulated continuous crawl of the changing web, no HTTP and no database (see __init__).

The clock is bench.freshness's: real seconds from the crawler's first request, a simulated
day lasting `day_seconds` of them, every recrawl setting scaled as bench.freshness scales
it (its crawl_settings, set in the environment before Django starts). What runs is the
crawler's own code: frontier.recrawl.after_visit for every visit (the summary, the belief,
the policies, the Last-Modified read from a real HTTP date), frontier.planning.solve for
every plan and frontier.planning.sooner for the visits it moves. What is modelled here:
the beat (the plan every CRAWLER_RECRAWL_PLAN_SECONDS with every observed page as its
sample, release_due's token bucket every CRAWLER_RECRAWL_RELEASE_SECONDS, most overdue
first), the time from a release to the response (`lag`, exponential, and 30 ms more for
each URL of the same host before it in the release), and the store of a changed page a
little after its response; and host sessions: a host's URLs released together are fetched
in one session, which holds the host `session_tail` seconds after its last response (the
writer's commit before the lease is given back) and takes those released meanwhile, but
none it fetched already: those wait for the next session (sessions()); the first crawl of
a host is one session at `first_spacing` seconds a page. That is what bench.freshness's
compressed clock shows of the crawler's sessions: at 2 s a day a page's first look, planned
an hour after its first fetch, came 0.8 simulated days after it at the soonest. Modelled
so, the simulator gave the real bench's expected share of the oracle's gain within 3
points (docs/benchmarks.md); `session_tail` 0 is the model before
(each URL after its own lag, 0.3 s by default then, and 0.035 s a page in the first crawl).
"""
from __future__ import annotations

import bisect
import heapq
import math
import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import formatdate

from django.conf import settings

from webs.changeweb.model import ChangeConfig, ChangeWeb
from bench import freshness
from bench.freshness import WARMUP_SHARE, expected_fresh_seconds  # the real bench's window and arithmetic
from frontier import belief, planning, recrawl
from frontier.vocabulary import Observation

from . import FIRST_SPACING, LAG, SESSION_TAIL, WINDOW_DAYS

DAY = 86400.0
INDEX_PRIORITY = 40    # the seed: depth 0, home page (frontier/importance.py)
PAGE_PRIORITY = -10    # one link below it
STORE_LAG = 0.15       # real seconds from a response to its stored copy (the writer's commit)
REQUEST_SPACING = 0.03  # real seconds between a session's requests (22-35 ms in the real bench's log)


@dataclass
class Page:
    url: str
    host: int
    page: int | None            # None: the host's index page (never changes, not scored)
    rate: float                 # changes per simulated day
    events: tuple[float, ...]   # real seconds (crawl clock) of its changes
    validators: bool
    score: int
    row: dict = field(default_factory=dict)
    state: str = "new"          # new, fetched, queued
    seen_version: int = 0       # the version the last visit saw
    stores: list = field(default_factory=list)  # (real second, version) of the stored copy
    noise: bool = False         # a noise-only page (the crawler's text comparison sees it unchanged)

    def version(self, t: float) -> int:
        return bisect.bisect_right(self.events, t)


@dataclass
class Result:
    freshness: float
    later_freshness: float
    expected_freshness: float  # what the visits buy under the true rates (bench.freshness.expected_freshness)
    fetches_per_day: float
    budget_used: float
    visits_by_class: dict
    later_visits_by_class: dict  # the later half of the window alone: the plan once the rates are learnt
    fresh_by_class: dict
    by_window: list  # freshness in each WINDOW_DAYS of the crawl, from day 0


@dataclass
class HostSession:
    start: float    # its first request (real seconds, crawl clock)
    last: float     # its last request so far
    free: float     # when it gives its host back: `session_tail` after its last response
    taken: set      # the page indices it fetches: it takes none twice


RATE_CLASSES = freshness.RATE_CLASSES  # bench.freshness's classes (REALTIME_CLASSES for the realtime web)


def rate_class(rate_per_day: float, classes: tuple = RATE_CLASSES, noise: bool = False) -> str:
    return freshness.rate_class(rate_per_day, classes, noise)


class Simulation:
    def __init__(self, *, hosts: int, pages: int, seed: int, day_seconds: float, days: float, budget_ratio: float,
                 history_days: float = 0.0, lag: float = LAG, startup: float = 1.0, rng_seed: int = 0,
                 session_tail: float = SESSION_TAIL, first_spacing: float = FIRST_SPACING,
                 profile: str = "days", budget_per_day: float | None = None, classes: tuple = RATE_CLASSES):
        """`profile`: the changing web's spread of rates (webs.changeweb); `budget_per_day`:
        revisits per simulated day (default budget_ratio x the pages); `classes`: the
        per-class table's classes of true rate."""
        self.day_seconds, self.days = day_seconds, days
        self.session_tail, self.first_spacing = session_tail, first_spacing
        self.host_sessions: list[HostSession | None] = [None] * hosts  # each host's latest session
        self.end = days * day_seconds
        self.budget_per_day = budget_ratio * hosts * pages if budget_per_day is None else budget_per_day
        self.classes = classes
        self.lag = lag
        self.rng = random.Random(f"recrawlsim:{seed}:{rng_seed}")
        # The web's day 0 is `startup` real seconds (and history_days) before the first request.
        self.offset = startup + history_days * day_seconds
        self.wall0 = 1_800_000_000.0 + self.rng.random()         # a wall clock with a fraction of a second
        horizon = max(400.0, 2 * days + history_days) if profile == "days" else 2 * days + history_days + 1e-3
        config = ChangeConfig(hosts=hosts, pages_per_host=pages, seed=seed, day_seconds=day_seconds,
                              horizon_days=horizon, profile=profile)
        web = ChangeWeb(config)
        self.pages: list[Page] = []
        for host in range(hosts):
            validators = web.has_validators(host)
            self.pages.append(Page(f"http://h{host}.test/", host, None, 0.0, (), validators, INDEX_PRIORITY))
            for page in range(pages):
                events = tuple(day * day_seconds - self.offset for day in web.events(host, page))
                self.pages.append(Page(f"http://h{host}.test/page/{page}", host, page, web.rate(host, page),
                                       events, validators, PAGE_PRIORITY, noise=web.is_noise(host, page)))
        self.scored = [p for p in self.pages if p.page is not None]
        recrawl._oracle = (settings.CRAWLER_RECRAWL_ORACLE_RATES,
                           {p.url: p.rate / day_seconds for p in self.pages})  # per real second
        self.plan = recrawl.PlanView(0.0, 1.0 / settings.CRAWLER_RECRAWL_EXPLORE_INTERVAL, 0)
        self.prior_text = ""
        recrawl.current_plan = lambda: self.plan
        self.credit, self.released_at = 0.0, None
        self.before_plan = None  # an experiment's hook: called with the observed pages before each plan
        self.fetch_times: list[tuple[float, Page]] = []  # every response: pages and index pages

    # ------------------------------------------------------------- clocks

    def when(self, t: float) -> datetime:
        return datetime.fromtimestamp(self.wall0 + t, timezone.utc)

    def last_modified(self, page: Page, t: float) -> str:
        if not page.validators:
            return ""
        version = page.version(t)
        changed = page.events[version - 1] if version else -self.offset  # the web's day 0 before any change
        return formatdate(self.wall0 + changed, usegmt=True)               # whole seconds, as the server's

    # ------------------------------------------------------------- the crawl

    def run(self) -> Result:
        queue: list[tuple[float, int, int]] = []   # (time, kind, page index): responses
        for i, page in enumerate(self.pages):       # the first crawl: every host's index, then its pages
            first = (0.05 + 0.01 * page.host if page.page is None
                     else 0.2 + self.first_spacing * page.page + 0.005 * page.host)
            heapq.heappush(queue, (first, 0, i))
            session = self.host_sessions[page.host] or HostSession(first, first, first, set())
            session.last = max(session.last, first)
            session.free = session.last + self.session_tail
            session.taken.add(i)
            self.host_sessions[page.host] = session
        plan_every = settings.CRAWLER_RECRAWL_PLAN_SECONDS
        release_every = settings.CRAWLER_RECRAWL_RELEASE_SECONDS
        next_plan, next_release = 0.0, 0.0
        while True:
            t_event = queue[0][0] if queue else math.inf
            t = min(t_event, next_plan, next_release)
            if t > self.end:
                break
            if t == next_plan:
                self.solve_plan(t)
                next_plan += plan_every
            elif t == next_release:
                for i, arrive in self.release(t):
                    heapq.heappush(queue, (arrive, 0, i))
                next_release += release_every
            else:
                _, _, i = heapq.heappop(queue)
                self.visit(self.pages[i], t)
        return self.result()

    def visit(self, page: Page, t: float) -> None:
        version = page.version(t)
        row = page.row
        if page.state == "new":
            observation = Observation.FIRST
        elif version != page.seen_version:
            observation = Observation.CHANGED
        else:
            observation = Observation.NOT_MODIFIED if page.validators else Observation.UNCHANGED
        before = recrawl.Before(id=0, url=page.url, score=page.score, last_status=200,
                                observed_at=row.get("observed_at"), change_stats=row.get("change_stats", ""),
                                observations=row.get("observations", 0), last_change_at=row.get("last_change_at"),
                                recrawl_interval=row.get("recrawl_interval"), next_fetch_at=row.get("next_fetch_at"))
        row.update(recrawl.after_visit(before, str(observation), self.last_modified(page, t), self.when(t)))
        if page.state == "new" or observation is Observation.CHANGED:
            page.stores.append((t + STORE_LAG, version))
        page.seen_version, page.state = version, "fetched"
        self.fetch_times.append((t, page))

    def solve_plan(self, t: float) -> None:
        """planning.plan_recrawl with the sample being every observed page: the same solve,
        the same reschedule."""
        policy = settings.CRAWLER_RECRAWL_POLICY
        budget = recrawl._budget()
        observed = [p for p in self.pages if p.state in ("fetched", "queued") and p.row.get("observed_at")]
        if self.before_plan is not None:
            self.before_plan(observed)
        pages = len(observed)
        first_looks = sum(1 for p in observed if not p.row.get("change_stats"))  # planning.observed_counts
        price, prior, probe = 0.0, (), None
        if policy == "optimal":
            price, fitted, _, probe = planning.solve([(p.row["change_stats"], p.score) for p in observed], pages,
                                              first_looks, self.prior_text, budget)
            self.prior_text = belief.prior_to_text(recrawl._grid(), fitted, probe)
            prior = tuple(fitted)
        elif policy == "oracle":
            price = planning.oracle_solve(((p.url, p.score) for p in observed), budget).price
        self.plan = recrawl.PlanView(math.inf if pages == 0 else price, 0.0, pages, prior, first_looks, probe)
        if policy == "adaptive" or not pages:
            return
        now = self.when(t)
        for p in observed:  # planning.move_sooner: every fetched page (the sim's crawl is small)
            row = p.row
            if p.state != "fetched":
                continue
            move = planning.sooner(0, p.url, p.score, row["observed_at"], row.get("change_stats", ""),
                                   row.get("recrawl_interval"), row.get("next_fetch_at"), now=now)
            if move:
                row.update(recrawl_interval=move[1], next_fetch_at=move[2])

    def release(self, t: float) -> list[tuple[int, float]]:
        """release_due: a token bucket, most overdue first; each released URL answers after a lag."""
        budget = recrawl._budget()
        cap = budget * max(settings.CRAWLER_RECRAWL_CARRY_SECONDS, 2 * settings.CRAWLER_RECRAWL_RELEASE_SECONDS, 1.0)
        elapsed = t - self.released_at if self.released_at is not None else cap / max(budget, 1e-12)
        self.credit = min(cap, self.credit + budget * max(0.0, elapsed))
        self.released_at = t
        wanted = min(settings.CRAWLER_RECRAWL_RELEASE_BATCH, int(self.credit))
        if wanted <= 0:
            return []
        now = self.when(t)
        due = sorted((p.row["next_fetch_at"], i) for i, p in enumerate(self.pages)
                     if p.state == "fetched" and p.row["next_fetch_at"] <= now)[:wanted]
        self.credit -= len(due)
        if self.session_tail > 0:
            return self.sessions(t, [i for _, i in due])
        out, per_host = [], {}
        for _, i in due:
            page = self.pages[i]
            page.state = "queued"
            k = per_host[page.host] = per_host.get(page.host, -1) + 1   # a host's URLs one after another
            out.append((i, t + self.rng.expovariate(1.0 / self.lag) + REQUEST_SPACING * k if self.lag > 0 else t))
        return out

    def sessions(self, t: float, released: list[int]) -> list[tuple[int, float]]:
        """When each released URL is answered, by host session (crawl/session.py): a session
        holding its host (or about to) takes the URLs it has not fetched yet after its own
        (a session out of URLs asks for more before it ends); one it has fetched already
        waits for the next session, which begins when this one gives its host back; with no
        session, one begins after the lag."""
        by_host: dict[int, list[int]] = {}
        for i in released:
            self.pages[i].state = "queued"
            by_host.setdefault(self.pages[i].host, []).append(i)
        out = []
        for host, ids in by_host.items():
            arrive = t + (self.rng.expovariate(1.0 / self.lag) if self.lag > 0 else 0.0)
            session = self.host_sessions[host]
            if session is not None and t < session.free:
                joining = [i for i in ids if i not in session.taken]
                if joining:
                    session.last = _one_after_another(out, joining, max(session.last + REQUEST_SPACING, arrive))
                    session.free = session.last + self.session_tail
                    session.taken.update(joining)
                ids = [i for i in ids if i not in joining]
                if not ids:
                    continue
                arrive = session.free  # the next session: when this one gives the host back
            start = max(arrive, session.free) if session is not None else arrive
            last = _one_after_another(out, ids, start)
            self.host_sessions[host] = HostSession(start, last, last + self.session_tail, set(ids))
        return out

    # ------------------------------------------------------------- freshness

    def result(self) -> Result:
        start, middle = WARMUP_SHARE * self.end, (WARMUP_SHARE * self.end + self.end) / 2
        step = WINDOW_DAYS * self.day_seconds
        windows = [(k * step, min(self.end, (k + 1) * step)) for k in range(int(math.ceil(self.end / step - 1e-9)))]
        fresh = later = 0.0
        by_window = [0.0] * len(windows)
        pages, fresh_by, visits, later_visits = Counter(), Counter(), Counter(), Counter()
        for page in self.scored:
            spans = self.fresh_spans(page)
            fresh += _overlap(spans, start, self.end)
            later += _overlap(spans, middle, self.end)
            for k, (a, b) in enumerate(windows):
                by_window[k] += _overlap(spans, a, b) / (b - a)
            name = rate_class(page.rate, self.classes, page.noise)
            pages[name] += 1
            fresh_by[name] += _overlap(spans, start, self.end) / (self.end - start)
        window_days = (self.end - start) / self.day_seconds
        steady = [page for t, page in self.fetch_times if t >= start]
        visits.update(rate_class(page.rate, self.classes, page.noise) for page in steady if page.page is not None)
        later_visits.update(rate_class(page.rate, self.classes, page.noise) for t, page in self.fetch_times
                            if t >= middle and page.page is not None)
        later_days = (self.end - middle) / self.day_seconds
        n = len(self.scored)
        return Result(freshness=fresh / n / (self.end - start), later_freshness=later / n / (self.end - middle),
                      expected_freshness=self.expected_fresh_time(start) / n / (self.end - start),
                      fetches_per_day=len(steady) / window_days,
                      budget_used=len(steady) / window_days / self.budget_per_day,
                      visits_by_class={name: visits[name] / pages[name] / window_days if pages[name] else None
                                       for name, _, _ in self.classes},
                      later_visits_by_class={name: later_visits[name] / pages[name] / later_days if pages[name] else None
                                             for name, _, _ in self.classes},
                      fresh_by_class={name: fresh_by[name] / pages[name] if pages[name] else None
                                      for name, _, _ in self.classes},
                      by_window=[f / n for f in by_window])

    def expected_fresh_time(self, start: float) -> float:
        """Σ over pages of the expected fresh seconds from `start` to the end, each copy counted
        from its response (bench.freshness.expected_freshness)."""
        visits: dict[int, list[float]] = {}
        for t, page in self.fetch_times:
            if page.page is not None:
                visits.setdefault(id(page), []).append(t)
        return sum(expected_fresh_seconds(visits.get(id(page), []), page.rate / self.day_seconds, start, self.end)
                   for page in self.scored)

    def fresh_spans(self, page: Page) -> list[tuple[float, float]]:
        """Where the stored copy is the live page: from each store to the next store or the
        next change, whichever comes first."""
        spans = []
        for k, (stored_at, version) in enumerate(page.stores):
            until = page.stores[k + 1][0] if k + 1 < len(page.stores) else math.inf
            stale_at = page.events[version] if version < len(page.events) else math.inf
            if stale_at > stored_at:
                spans.append((stored_at, min(until, stale_at)))
        return spans


def _one_after_another(out: list, ids: list[int], begin: float) -> float:
    """Append (id, answer time) for a session's requests from `begin`; the last one's time."""
    out.extend((i, begin + REQUEST_SPACING * k) for k, i in enumerate(ids))
    return begin + REQUEST_SPACING * (len(ids) - 1)


def _overlap(spans, start: float, end: float) -> float:
    return sum(max(0.0, min(b, end) - max(a, start)) for a, b in spans)
