"""Continuous crawling (DESIGN.md section 7): every visit is an observation, each URL's
observations give its change-rate estimate, a budget of revisits is spent where it buys
the most freshness, and beat moves due URLs back into the fetch queue.

    a visit is recorded      records.py calls after_visit(): the observation (304, same
                             text, noise, changed) updates the URL's bounded summary
                             (changerate.py, older visits fading; on a first visit, a
                             Last-Modified long past counts as time watched), its rate
                             is estimated again, and its next visit is planned:
                             next_fetch_at = the response's time + interval - how late
                             this visit came (up to half the interval)
    beat: plan_recrawl       solves the budget's price from every estimate (a few numbers
                             kept in RecrawlPlan): what one more visit must buy to be worth it
    beat: release_due        moves URLs whose visit is due back to "queued", oldest first,
                             at most the budget's worth since the last run (unspent budget
                             carried over, within a bound), in one batch;
                             the dispatcher keeps reading queued URLs only

The interval of a URL, by CRAWLER_RECRAWL_POLICY:
  optimal   Cho & Garcia-Molina (TODS 2003): maximise the weighted freshness under the budget.
            Pages that change too often for it get fewer visits, never more; pages with
            fewer than CRAWLER_RECRAWL_EXPLORE_VISITS observations are explored (revisited at
            least every CRAWLER_RECRAWL_EXPLORE_INTERVAL, within a share of the budget).
  uniform   every page alike: pages / budget (a baseline).
  adaptive  Nutch's AdaptiveFetchSchedule: the interval shrinks 20% on a change, grows 40%
            otherwise (a baseline).
  oracle    optimal, with the true rates (benchmarks only).
Every interval is bounded by CRAWLER_RECRAWL_MIN_INTERVAL and _MAX_INTERVAL. Importance
weighs in through the score (frontier/importance.py): weight = CRAWLER_RECRAWL_PRIORITY_WEIGHT
** (priority / |CRAWLER_SCORE_DEPTH|), i.e. that factor per link of depth's worth of score.
"""

import email.utils
import json
import math
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from crawlerweb.bulksql import in_chunks

from . import changerate, idle, instate, planning
from .models import RecrawlPlan, Url, UrlState
from .normalize import InvalidUrl, normalize
from .vocabulary import Observation

DAY = 86400.0

# Settled states visited again: fetched pages by the schedule, the rest rarely
# (CRAWLER_GONE_RECHECK_SECONDS), failures on the back-off ladder.
REVISITED = (UrlState.FETCHED,)
RECHECKED = (UrlState.GONE, UrlState.DENIED, UrlState.HTTP_ERROR, UrlState.REDIRECTED, UrlState.ROBOTS_BLOCKED)
RELEASED_STATES = (*REVISITED, *RECHECKED, UrlState.BACKOFF)

# What after_visit() needs of the URL row as it was before the visit.
ROW_FIELDS = ("id", "url", "priority", "last_status", "observed_at", "change_stats", "observations",
              "last_change_at", "recrawl_interval", "next_fetch_at")


@dataclass(frozen=True)
class Before:
    """A URL row as it was before the visit being recorded."""

    id: int
    url: str
    priority: int
    last_status: int | None
    observed_at: datetime | None
    change_stats: str
    observations: int
    last_change_at: datetime | None
    recrawl_interval: float | None
    next_fetch_at: datetime | None = None  # when this visit was due


def after_visit(before: Before, observation: str, last_modified: str, now: datetime) -> dict:
    """The URL's new change-rate fields and next visit, given what this visit saw; `now` is
    when the response came (not when it was recorded: the interval between two visits is
    the interval between their responses)."""
    stats = changerate.from_text(before.change_stats)
    observations = before.observations
    observation = Observation(observation)
    seen = None  # seconds since the previous observation, when this visit is one
    if observation.comparable and before.observed_at is not None:
        seen = (now - before.observed_at).total_seconds()
        if seen > 0:
            stats = changerate.observe(changerate.faded(stats, settings.CRAWLER_RECRAWL_MEMORY_VISITS), seen,
                                       observation.saw_change, _since_last_modified(last_modified, now, seen))
            observations += 1
        else:
            seen = None  # a clock that went back: no observation
    elif before.observed_at is None and _dated_long_ago(last_modified, now):
        # A first visit whose Last-Modified is long past: the page has not changed for that
        # long, which says more than the exploring visits would. It counts as explored, and
        # as watched for CRAWLER_RECRAWL_FIRST_LAST_MODIFIED_AGE (the unchanged prior's time,
        # scheduling_rate), not as an observation: a date that lies then costs one long
        # interval, and the first change a visit sees is judged by the visits alone.
        stats = changerate.ChangeStats(watched_seconds=settings.CRAWLER_RECRAWL_FIRST_LAST_MODIFIED_AGE)
        observations = max(observations, settings.CRAWLER_RECRAWL_EXPLORE_VISITS)
    rate = scheduling_rate(stats)
    interval = plan_interval(before, rate, observations, observation.saw_change, now)
    if seen and _looks_sooner(stats, observations, interval):
        interval = min(interval, max(_bounds()[0], seen / FAST_EXPLORE_DIVISOR))
    fields = {
        "change_stats": changerate.to_text(stats), "change_rate": rate * DAY, "observations": observations,
        "last_observation": str(observation), "observed_at": now, "recrawl_interval": interval,
        "next_fetch_at": now + timedelta(seconds=interval - _late_by(before, now, interval, seen)),
    }
    if observation.saw_change:
        fields["last_change_at"] = now
    return fields


def _late_by(before: Before, now: datetime, interval: float, seen: float | None) -> float:
    """Seconds this revisit came after it was due (release period, queue, session), up to
    half the next interval: the next one counts from when this one was due, so that the
    lag does not stretch every interval and leave the budget unspent
    (CRAWLER_RECRAWL_ON_SCHEDULE)."""
    if not (settings.CRAWLER_RECRAWL_ON_SCHEDULE and seen and before.next_fetch_at is not None):
        return 0.0
    return min(max(0.0, (now - before.next_fetch_at).total_seconds()), interval / 2)


# A page that changed at every visit is looked at next after this fraction of the interval
# that just saw it change: three more visits reach from a week down to a few hours.
FAST_EXPLORE_DIVISOR = 4.0


def _looks_sooner(stats: changerate.ChangeStats, observations: int, interval: float) -> bool:
    """A page that changed at every one of its visits so far, none of them dated by a
    Last-Modified, within its extra exploring visits (CRAWLER_RECRAWL_EXPLORE_FAST_VISITS),
    planned by the optimal policy at less than the longest interval: the next look comes
    sooner (FAST_EXPLORE_DIVISOR). "Changed at every visit" says only that the page changes
    faster than we looked; without a look at a shorter interval, a page changing every hour
    and one changing twice a day look alike (the estimate takes the first for the second,
    and the plan chases a page no budget keeps fresh). `interval` is the plan's for the
    least rate the visits show (changed_every_time_rate): when that alone gets the longest
    interval, a faster page would get no more, and the looks would buy nothing. A dated
    change needs no such look: its Last-Modified says how long ago the page changed."""
    explored, extra = settings.CRAWLER_RECRAWL_EXPLORE_VISITS, settings.CRAWLER_RECRAWL_EXPLORE_FAST_VISITS
    return (settings.CRAWLER_RECRAWL_POLICY == "optimal" and extra > 0
            and explored <= observations <= explored + extra and interval < _bounds()[1]
            and _changed_every_time_undated(stats))


def _changed_every_time_undated(stats: changerate.ChangeStats) -> bool:
    """Every visit saw a change and none was dated by a Last-Modified."""
    return (bool(stats.changed) and stats.lm_changes == 0
            and stats.changes >= stats.visits * (1 - 1e-6))  # faded counts are rounded


def scheduling_rate(stats: changerate.ChangeStats) -> float:
    """The rate (per second) a visit is planned with: the estimate, but a page never seen
    changing counts CRAWLER_RECRAWL_UNCHANGED_PRIOR changes over the time it has been
    watched, not zero: three unchanged visits a day apart do not show a page that changes
    monthly never changes, and it must not wait CRAWLER_RECRAWL_MAX_INTERVAL for the next
    look. The longer it is watched, the lower this floor. Half a change is the posterior
    mean under Jeffreys' prior, which knows nothing of the web; on a web where many pages
    never change, a page seen unchanged for a month most likely is one of them, and the
    posterior mean is lower (a fifth of a change on the freshness benchmark's web, from its
    true rates: docs/benchmarks.md)."""
    rate = changerate.estimate(stats)
    if stats.watched_seconds > 0:  # the whole time watched: the floor keeps falling though evidence fades
        rate = max(rate, settings.CRAWLER_RECRAWL_UNCHANGED_PRIOR / stats.watched_seconds)
    if _changed_every_time_undated(stats):
        rate = max(rate, changed_every_time_rate(stats))
    return rate


def changed_every_time_rate(stats: changerate.ChangeStats) -> float:
    """A page that changed at every visit changes at least as fast as its shortest intervals
    alone say: Cho's bias-reduced estimate for c changes in c visits at interval t,
    log(2c + 1) / t. The estimate from every visit says less: its bias term is half the
    MEAN interval, so long intervals (which a page no budget keeps fresh ends up with)
    drag it down, and a page changing every hour would look like one changing twice a day
    and be chased for nothing."""
    _, count, seconds = stats.changed[0]  # buckets are sorted by length: the shortest
    return math.log(2 * count + 1) / (seconds / count)


def recheck_at(now: datetime) -> datetime:
    """When a settled non-2xx URL (gone, denied, …) is checked again."""
    return now + timedelta(seconds=settings.CRAWLER_GONE_RECHECK_SECONDS)


# An HTTP date counts whole seconds (RFC 9110, 5.6.7): a page changed at 10:00:00.9 says
# 10:00:00. The change came within the second after the date.
HTTP_DATE_RESOLUTION = 1.0


def _since_last_modified(value: str, now: datetime, interval: float) -> float | None:
    """Seconds since the page changed by the Last-Modified the server sent, when it is
    inside this interval (then the estimator knows when the change happened). The change
    came within the second after the date, and not after the visit: counted from the
    middle of what is left of that second (a date a tenth of a second old says the page
    changed a twentieth of a second ago, not a second)."""
    stated = _stated_age(value, now)
    if stated is None:
        return None
    since = (max(0.0, stated - HTTP_DATE_RESOLUTION) + stated) / 2
    return since if 0 < since <= interval else None


def _dated_long_ago(value: str, now: datetime) -> bool:
    """Whether a Last-Modified names a time at least CRAWLER_RECRAWL_FIRST_LAST_MODIFIED_AGE
    before `now` (never, when that setting is 0)."""
    age = settings.CRAWLER_RECRAWL_FIRST_LAST_MODIFIED_AGE
    stated = _stated_age(value, now) if age > 0 else None
    return stated is not None and stated >= age


def _stated_age(value: str, now: datetime) -> float | None:
    """Seconds from the date a Last-Modified names to `now`; None for no date or a bad one."""
    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return None if when is None or when.tzinfo is None else (now - when).total_seconds()


def weight_of(priority: int) -> float:
    """The importance a score gives a page's freshness: CRAWLER_RECRAWL_PRIORITY_WEIGHT per
    link of depth's worth of score (|CRAWLER_SCORE_DEPTH| points, frontier/importance.py)."""
    levels = priority / (abs(settings.CRAWLER_SCORE_DEPTH) or 10)
    return settings.CRAWLER_RECRAWL_PRIORITY_WEIGHT ** max(-60.0, min(60.0, levels))


def exploring(observations: int) -> bool:
    return observations < settings.CRAWLER_RECRAWL_EXPLORE_VISITS


def _bounds() -> tuple[float, float]:
    low = settings.CRAWLER_RECRAWL_MIN_INTERVAL
    return low, max(low, settings.CRAWLER_RECRAWL_MAX_INTERVAL)


def plan_interval(before: Before, rate: float, observations: int, changed: bool, now: datetime) -> float:
    """Seconds until the next visit, by CRAWLER_RECRAWL_POLICY."""
    low, high = _bounds()
    policy = settings.CRAWLER_RECRAWL_POLICY
    plan = current_plan()
    uniform = (high if plan.provisional
               else min(max(changerate.uniform_interval(max(plan.pages, 1), _budget()), low), high))
    if policy == "uniform":
        return uniform
    if policy == "adaptive":  # Nutch starts every page at its default interval: here, uniform's,
        # and before the first plan with pages (no uniform interval yet) the exploring one: no
        # plan reschedules adaptive's visits, so a page started at the longest interval stayed there
        start = min(max(settings.CRAWLER_RECRAWL_EXPLORE_INTERVAL, low), high) if plan.provisional else uniform
        return changerate.adaptive_interval(before.recrawl_interval or start, changed,
                                            min_interval=low, max_interval=high)
    explore = exploring(observations)
    if policy == "oracle":
        rate, explore = oracle_rate(before.url, rate), False
    # The rate as plan_recrawl grouped it, so that the URLs spend what the plan counted.
    interval = changerate.interval_for(_rate_class(rate * DAY), weight_of(before.priority), plan,
                                       min_interval=low, max_interval=high, exploring=explore)
    if explore:  # look at short and long intervals alike: a page that changes hourly and
        # one that changes daily both look "changed" at every daily visit
        interval = min(interval, max(low, interval * _EXPLORE_SPREAD[observations % len(_EXPLORE_SPREAD)]))
    return interval


# Exploring revisits come at these fractions of the exploration interval, in turn.
_EXPLORE_SPREAD = (0.125, 0.5, 1.0)


def _budget() -> float:
    """Revisits per second."""
    return settings.CRAWLER_RECRAWL_BUDGET_PER_DAY / DAY


# --- the plan: the budget's price, solved from every estimate (beat) --------------------

_plan_cache: tuple[float, "PlanView"] | None = None  # (read at, plan)
_plan_lock = threading.Lock()
PLAN_CACHE_SECONDS = 5.0


@dataclass(frozen=True)
class PlanView:
    """What interval_for needs of the stored plan (changerate.Plan's price and explore_freq)."""

    price: float
    explore_freq: float
    pages: int

    @property
    def provisional(self) -> bool:
        """Solved before any page was fetched: no price yet (current_plan)."""
        return self.pages == 0 and self.price == math.inf


def current_plan() -> PlanView:
    """The plan in force (re-read every few seconds: records run in every worker)."""
    global _plan_cache
    with _plan_lock:
        if _plan_cache is not None and time.monotonic() - _plan_cache[0] < PLAN_CACHE_SECONDS:
            return _plan_cache[1]
    row = RecrawlPlan.objects.filter(pk=1).values_list("price", "explore_freq", "pages", "solved_at").first()
    if row is None or row[3] is None:  # never solved (no beat): spend as if the budget were plentiful
        view = PlanView(0.0, 1.0 / settings.CRAWLER_RECRAWL_EXPLORE_INTERVAL, 0)
    elif row[2] == 0:
        # Solved before any page was fetched (a crawl's first minutes): no price yet. Planned at
        # the shortest interval, every page of those minutes would be due again within the hour,
        # ahead of every later page and spending the budget's first hours (or day) on them.
        # Planned long instead (exploring pages at the exploring interval); the next plan's
        # reschedule brings sooner what it wants sooner (it never moves a visit later).
        view = PlanView(math.inf, row[1], 0)
    else:
        view = PlanView(row[0], row[1], row[2])
    with _plan_lock:
        _plan_cache = (time.monotonic(), view)
    return view


def forget_plan() -> None:
    global _plan_cache
    with _plan_lock:
        _plan_cache = None


# Rates are grouped on a quarter-octave grid: 1M pages become a few hundred groups.
_GRID = 4.0


def _rate_class(rate_per_day: float | None) -> float:
    if not rate_per_day or rate_per_day <= 0:
        return 0.0
    return 2.0 ** (round(math.log2(rate_per_day) * _GRID) / _GRID) / DAY


def plan_recrawl(now: datetime | None = None) -> RecrawlPlan:
    """Solve the budget's price from every fetched page's estimate and store it."""
    now = now or timezone.now()
    low, high = _bounds()
    explore_visits = settings.CRAWLER_RECRAWL_EXPLORE_VISITS
    counts = Counter()
    oracle = settings.CRAWLER_RECRAWL_POLICY == "oracle"
    grouped = None
    if planning.set_based() and not oracle:  # one GROUP BY in the database (frontier/planning.py)
        grouped = planning.group_counts(explore_visits)
        for k, priority, bucket, n in grouped:
            counts[(_class_rate(k), priority, bucket >= 0)] += n
    else:
        rows = Url.objects.filter(state__in=(UrlState.FETCHED, UrlState.QUEUED)).exclude(observed_at=None)
        for url, rate, priority, observations in rows.values_list(
                "url", "change_rate", "priority", "observations").iterator(chunk_size=5000):
            if oracle:
                counts[(_rate_class(oracle_rate(url, 0.0) * DAY), priority, False)] += 1
            else:
                counts[(_rate_class(rate), priority, observations < explore_visits)] += 1
    groups = [changerate.Group(rate, weight_of(priority), n, explore) for (rate, priority, explore), n in counts.items()]
    solved = changerate.solve_price(groups, _budget(), min_interval=low, max_interval=high,
                                    explore_interval=settings.CRAWLER_RECRAWL_EXPLORE_INTERVAL,
                                    max_explore_share=settings.CRAWLER_RECRAWL_EXPLORE_SHARE)
    plan, _ = RecrawlPlan.objects.update_or_create(pk=1, defaults=dict(
        price=solved.price, explore_freq=solved.explore_freq, budget=solved.budget, planned=solved.planned,
        pages=sum(counts.values()), solved_at=now))
    forget_plan()
    if grouped is not None:
        _reschedule_groups(grouped, now)
    else:
        _reschedule(now)
    return plan


def _class_rate(k: int) -> float:
    """The rate (changes a second) of rate class k: 2^(k/4) changes a day (planning.NO_RATE: 0)."""
    return 0.0 if k == planning.NO_RATE else 2.0 ** (k / _GRID) / DAY


def _reschedule_groups(grouped: list[tuple[int, int, int, int]], now: datetime) -> int:
    """_reschedule set-based: each group's wanted interval, then one UPDATE."""
    if settings.CRAWLER_RECRAWL_POLICY == "adaptive":
        return 0
    explore_visits = settings.CRAWLER_RECRAWL_EXPLORE_VISITS
    wanted = {}
    for k, priority, bucket, _ in grouped:
        observations = bucket if bucket >= 0 else explore_visits
        before = Before(0, "", priority, None, now, "", observations, None, None)
        wanted[(k, priority, bucket)] = plan_interval(before, _class_rate(k), observations, False, now)
    return planning.move_sooner(wanted, explore_visits, now, settings.CRAWLER_RECRAWL_RELEASE_BATCH)


def _reschedule(now: datetime) -> int:
    """Move the planned visits the new plan wants sooner (by more than a tenth) earlier,
    at most CRAWLER_RECRAWL_RELEASE_BATCH of them per plan: a larger budget, or a price
    that fell, takes effect before each page's next visit. (Visits it wants later keep
    their time: the release task's budget holds them back anyway.)"""
    moved = []
    rows = Url.objects.filter(state=UrlState.FETCHED).exclude(observed_at=None).values_list(
        "id", "url", "priority", "change_rate", "observations", "observed_at", "next_fetch_at", "recrawl_interval")
    for url_id, url, priority, rate, observations, observed_at, next_at, interval in rows.iterator(chunk_size=5000):
        before = Before(url_id, url, priority, None, observed_at, "", observations, None, interval)
        wanted = plan_interval(before, (rate or 0.0) / DAY, observations, False, now)
        if settings.CRAWLER_RECRAWL_POLICY == "adaptive" or interval is None or wanted >= 0.9 * interval:
            continue
        moved.append((url_id, wanted, max(now, observed_at + timedelta(seconds=wanted))))
        if len(moved) >= settings.CRAWLER_RECRAWL_RELEASE_BATCH:
            break
    with transaction.atomic():
        for url_id, wanted, when in moved:
            Url.objects.filter(id=url_id, state=UrlState.FETCHED, next_fetch_at__gt=when).update(
                next_fetch_at=when, recrawl_interval=wanted)
    return len(moved)


# --- releasing due URLs (beat) ---------------------------------------------------------------

def release_due(now: datetime | None = None, limit: int | None = None) -> int:
    """Move URLs whose next visit is due back into the fetch queue, most overdue first, at
    most the budget's worth of revisits since the last release and at most `limit`
    (CRAWLER_RECRAWL_RELEASE_BATCH). Returns how many were released. Safe to run from
    several places at once: the plan row is locked while the account is settled.

    The account is a token bucket: budget a quiet moment leaves unspent is carried over,
    up to CRAWLER_RECRAWL_CARRY_SECONDS of budget (at least two release periods). The plan
    spends the whole budget on average, so visits fall due unevenly around it; a bucket
    of a few release periods would hold back every bunch of them, and a revisit held back
    makes all later ones late too (most overdue first)."""
    now = now or timezone.now()
    limit = settings.CRAWLER_RECRAWL_RELEASE_BATCH if limit is None else limit
    budget = _budget()
    cap = budget * max(settings.CRAWLER_RECRAWL_CARRY_SECONDS, 2 * settings.CRAWLER_RECRAWL_RELEASE_SECONDS, 1.0)
    with transaction.atomic():
        RecrawlPlan.objects.get_or_create(pk=1)
        plan = RecrawlPlan.objects.select_for_update().get(pk=1)
        elapsed = (now - plan.released_at).total_seconds() if plan.released_at else cap / max(budget, 1e-12)
        credit = min(cap, plan.credit + budget * max(0.0, elapsed))
        wanted = min(limit, int(credit))
        ids = _most_overdue(now, wanted) if wanted > 0 else []
        queued = instate.update_in_state(RELEASED_STATES, dict(state=UrlState.QUEUED, attempts=0), ids=ids)
        released = len(queued)
        if queued:
            idle.wake(url_ids=queued)
        RecrawlPlan.objects.filter(pk=1).update(credit=credit - released, released_at=now,
                                                released_total=plan.released_total + released)
    return released


def _most_overdue(now: datetime, n: int) -> list[int]:
    """Ids of the n URLs due longest ago: one index range scan per state (url_state_due),
    merged here, so the cost follows n, not the number of URLs known."""
    due = []
    for state in RELEASED_STATES:
        due.extend(Url.objects.filter(state=state, next_fetch_at__lte=now).order_by("next_fetch_at")
                   .values_list("next_fetch_at", "id")[:n])
    due.sort()
    return [url_id for _, url_id in due[:n]]


def sitemap_changes(changes: list[tuple[str, float]], base: str | None = None, now: datetime | None = None) -> int:
    """A sitemap's <lastmod>s, (link, Unix seconds) each: a fetched page the sitemap says
    changed after our last visit is visited sooner, at its next allowed time (the last visit
    plus CRAWLER_RECRAWL_MIN_INTERVAL, not before now) if that is earlier than planned. The
    visit itself is the observation the estimator learns from (a lastmod says when the page
    changed, the visit says what changed). A lastmod in the future, or no later than our
    last visit, says nothing; each one brings a visit forward once (after the visit it is
    older than the visit), and release_due still spends no more than the budget. Returns
    how many visits were brought forward."""
    now = now or timezone.now()
    latest = now.timestamp() + 300.0  # a server's clock a little ahead is no lie
    keys: dict[int, float] = {}
    for link, lastmod in changes:
        if lastmod is None or lastmod > latest:
            continue
        try:
            key = normalize(link, base).key
        except InvalidUrl:
            continue
        keys[key] = max(lastmod, keys.get(key, lastmod))
    soonest = timedelta(seconds=settings.CRAWLER_RECRAWL_MIN_INTERVAL)
    moves = []
    for chunk in in_chunks(sorted(keys)):
        for url_id, key, fetched_at, due_at, state in Url.objects.filter(url_key__in=chunk).values_list(
                "id", "url_key", "last_fetched_at", "next_fetch_at", "state"):  # by key; the state tested here
            if state != UrlState.FETCHED or fetched_at is None or keys[key] <= fetched_at.timestamp():
                continue
            when = max(now, fetched_at + soonest)
            if when < due_at:
                moves.append((url_id, when))
    for url_id, when in moves:  # one by one, each still conditional on its state (a few per sitemap read)
        Url.objects.filter(id=url_id, state=UrlState.FETCHED).update(next_fetch_at=when)
    return len(moves)


def has_revisits_due(now: datetime | None = None) -> bool:
    """Whether some settled URL's next visit is due and waits for release_due (beat, or
    `crawl --continuous`): the dashboard's "start beat" advice. Stops at the first one
    (url_state_due)."""
    return Url.objects.filter(state__in=RELEASED_STATES, next_fetch_at__lte=now or timezone.now()).exists()


def due_counts(now: datetime | None = None) -> dict:
    """Revisits due now and later, for the status line and `status`."""
    now = now or timezone.now()
    waiting = Url.objects.filter(state__in=RELEASED_STATES)
    return {"due": waiting.filter(next_fetch_at__lte=now).count(), "scheduled": waiting.count(),
            "backoff": Url.objects.filter(state=UrlState.BACKOFF).count()}


# --- the oracle (benchmarks): true rates from a file -------------------------------------------

_oracle: tuple[str, dict[str, float]] | None = None


def oracle_rate(url: str, default: float) -> float:
    """The true rate (per second) of a URL from CRAWLER_RECRAWL_ORACLE_RATES."""
    global _oracle
    path = settings.CRAWLER_RECRAWL_ORACLE_RATES
    if _oracle is None or _oracle[0] != path:
        rates = {}
        if path:
            with open(path, encoding="utf-8") as lines:
                for line in lines:
                    if line.strip():
                        item = json.loads(line)
                        rates[item["url"]] = float(item["rate_per_day"]) / DAY
        _oracle = (path, rates)
    return _oracle[1].get(url, default)
