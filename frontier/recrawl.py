"""Continuous crawling (DESIGN.md section 7): every visit is an observation, what the
crawler believes of each URL's change rate follows from its observations, a budget of
revisits is spent where it buys the most freshness, and beat moves due URLs back into the
fetch queue.

    a visit is recorded      records.py calls after_visit(): the observation (304, same
                             text, noise, changed) goes into the URL's bounded summary
                             (changerate.py, older visits fading slowly; a first visit's
                             Last-Modified counts as time seen unchanged), and the next
                             visit is planned: next_fetch_at = the response's time +
                             interval - how late this visit came (up to half the interval)
    beat: plan_recrawl       planning.py: fits the crawl's prior over change rates and
                             solves the budget's price on a sample of pages: what one more
                             visit must buy to be worth it
    beat: release_due        moves URLs whose visit is due back to "queued", oldest first,
                             at most the budget's worth since the last run (unspent budget
                             carried over, within a bound), in one batch;
                             the dispatcher keeps reading queued URLs only

The interval of a URL, by CRAWLER_RECRAWL_POLICY:
  optimal   Cho & Garcia-Molina's freshness optimum (TODS 2003) under what the crawler
            believes (belief.py): the posterior over the page's rate, under a prior fitted to
            the whole crawl; a visit comes when its expected marginal freshness equals the
            budget's price. Pages that change too often for the budget get fewer visits,
            never more. Hopeless at this budget: a rate past the budget's reach, where even
            the least visits buy less than the price (w·φ(λ/f_min)/λ <= μ, about λ >= w/μ,
            w the page's importance): such a page gets the least visits (every
            CRAWLER_RECRAWL_MAX_INTERVAL). A page changed at every visit and never dated is
            looked at the shortest interval a few times (belief.PROBES, however late each
            comes), which tells a page worth chasing from one past the budget's reach;
            changed at every one of them too, twice or more at about the shortest
            interval, it is hopeless while a tenth of its posterior or more is past that
            reach (belief.py, 6). A page with no observation yet gets
            its first look as soon as the budget allows (within
            CRAWLER_RECRAWL_EXPLORE_SHARE of it when many wait).
  uniform   every page alike: pages / budget (a baseline).
  adaptive  Nutch's AdaptiveFetchSchedule: the interval shrinks 20% on a change, grows 40%
            otherwise (a baseline).
  oracle    Cho & Garcia-Molina's optimum with the true rates (benchmarks only).
Every interval is bounded by CRAWLER_RECRAWL_MIN_INTERVAL and _MAX_INTERVAL. Importance
weighs in through the score (frontier/importance.py): weight = CRAWLER_RECRAWL_PRIORITY_WEIGHT
** (score / |CRAWLER_SCORE_DEPTH|), i.e. that factor per link of depth's worth of score.
"""

import email.utils
import functools
import hashlib
import json
import math
import threading
import time
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from common.bulksql import in_chunks

from . import belief, changerate, idle, instate, wakeups
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
ROW_FIELDS = ("id", "url", "score", "last_status", "observed_at", "change_stats", "observations",
              "last_change_at", "recrawl_interval", "next_fetch_at")


@dataclass(frozen=True)
class Before:
    """A URL row as it was before the visit being recorded."""

    id: int
    url: str
    score: int
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
    known = has_evidence(stats)  # before this visit
    observations = before.observations
    observation = Observation(observation)
    seen = None  # seconds since the previous observation, when this visit is one
    if observation.comparable and before.observed_at is not None:
        seen = (now - before.observed_at).total_seconds()
        if seen > 0:
            stats = _record(changerate.faded(stats, settings.CRAWLER_RECRAWL_MEMORY_VISITS), seen,
                            observation.saw_change, last_modified, now)
            observations += 1
        else:
            seen = None  # a clock that went back: no observation
    elif before.observed_at is None:
        stats = _first_date(stats, last_modified, now)
    post = believed(stats) if has_evidence(stats) else None  # nothing to believe yet: no posterior
    interval = plan_interval(before, stats, observation.saw_change, post)
    first_look = settings.CRAWLER_RECRAWL_POLICY == "optimal" and not known
    late = 0.0 if first_look else _late_by(before, now, interval, seen)
    fields = {
        "change_stats": changerate.to_text(stats),
        "change_rate": belief.mean_rate(post, _grid()) * DAY if post is not None else None,  # not the prior's
        "observations": observations, "last_observation": str(observation), "observed_at": now,
        "recrawl_interval": interval, "next_fetch_at": now + timedelta(seconds=interval - late),
    }
    if observation.saw_change:
        fields["last_change_at"] = now
    return fields


def _record(stats: changerate.ChangeStats, seen: float, changed: bool, last_modified: str,
            now: datetime) -> changerate.ChangeStats:
    """`stats` with this visit's observation: `seen` seconds since the last one, changed or
    not, dated by the Last-Modified when it names a time inside the interval. A date counts
    whole seconds (RFC 9110, 5.6.7): the change came within the second it names. Dated well
    before the visit, τ (seconds from the change to the visit) is counted from the middle of
    that second. Dated within a second or so of the visit, that second is most of what the
    date says: the observation is then "unchanged until that second began, changed within
    what is left of it", its exact likelihood (a page changing every few seconds and one
    changing hourly must not look alike: belief.py)."""
    stated = _stated_age(last_modified, now) if changed else None
    if stated is None or not 0.0 < stated <= seen + HTTP_DATE_RESOLUTION:
        return changerate.observe(stats, seen, changed)
    newest = min(stated, seen)  # τ is at most this …
    oldest = max(0.0, stated - HTTP_DATE_RESOLUTION)  # … and at least this
    if oldest >= newest:
        return changerate.observe(stats, seen, changed)  # a date the visits contradict: undated
    if oldest > CENSOR_RESOLUTIONS * HTTP_DATE_RESOLUTION:
        return changerate.observe(stats, seen, True, since_last_modified=(oldest + newest) / 2)
    within = changerate.observe(stats, newest - oldest, True)  # one visit, changed within that
    return replace(within, unchanged_seconds=within.unchanged_seconds + oldest,
                   observed_seconds=within.observed_seconds + oldest, watched_seconds=within.watched_seconds + oldest)


# An HTTP date counts whole seconds (RFC 9110, 5.6.7): a page changed at 10:00:00.9 says
# 10:00:00. The change came within the second after the date.
HTTP_DATE_RESOLUTION = 1.0
# A dated change this many date resolutions or more before the visit is a point τ (the
# second's middle): the likelihood λe^(-λτ), exact to a second in hours. Nearer, the second
# is recorded as an interval (_record).
CENSOR_RESOLUTIONS = 10


def _first_date(stats: changerate.ChangeStats, last_modified: str, now: datetime) -> changerate.ChangeStats:
    """A first visit's Last-Modified: the page has not changed since the date it names (or
    was made then), which is time seen unchanged, up to CRAWLER_RECRAWL_FIRST_LAST_MODIFIED_AGE
    (a date can lie: then it costs one long interval, and the first change a visit sees is
    judged by the visits). Not a change at that date: a first date may be the page's birth.
    Most of the web changes rarely (Fetterly et al. 2003), and its dates say so before any
    revisit."""
    stated = _stated_age(last_modified, now)
    cap = settings.CRAWLER_RECRAWL_FIRST_LAST_MODIFIED_AGE
    if (stated is None or stated < settings.CRAWLER_RECRAWL_MIN_INTERVAL or cap <= 0.0
            or stats.visits or stats.watched_seconds):
        return stats  # no date, or one too recent to say what a plan could act on (a dynamic page's "now")
    return changerate.observe(stats, min(stated, cap), False)


def _late_by(before: Before, now: datetime, interval: float, seen: float | None) -> float:
    """Seconds this revisit came after it was due (release period, queue, session), up to
    half the next interval: the next one counts from when this one was due, so that the
    lag does not stretch every interval and leave the budget unspent
    (CRAWLER_RECRAWL_ON_SCHEDULE). Not for a page's first look (after_visit): that was due
    at once, and its lateness is the queue of the crawl's new pages, not a lag."""
    if not (settings.CRAWLER_RECRAWL_ON_SCHEDULE and seen and before.next_fetch_at is not None):
        return 0.0
    return min(max(0.0, (now - before.next_fetch_at).total_seconds()), interval / 2)


def believed(stats: changerate.ChangeStats) -> list[float]:
    """The posterior over the grid's rates under the plan's prior."""
    rates = _grid()
    return belief.posterior(belief.log_likelihood(stats, rates), list(current_plan().prior) or belief.flat(rates))


def has_evidence(stats: changerate.ChangeStats) -> bool:
    """Whether anything at all is known of the page's rate (a revisit, or a first date)."""
    return bool(stats.visits or stats.watched_seconds)


def recheck_at(now: datetime) -> datetime:
    """When a settled non-2xx URL (gone, denied, …) is checked again."""
    return now + timedelta(seconds=settings.CRAWLER_GONE_RECHECK_SECONDS)


def _stated_age(value: str, now: datetime) -> float | None:
    """Seconds from the date a Last-Modified names to `now`; None for no date or a bad one."""
    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return None if when is None or when.tzinfo is None else (now - when).total_seconds()


def weight_of(score: int) -> float:
    """The importance a score gives a page's freshness: CRAWLER_RECRAWL_PRIORITY_WEIGHT per
    link of depth's worth of score (|CRAWLER_SCORE_DEPTH| points, frontier/importance.py)."""
    levels = score / (abs(settings.CRAWLER_SCORE_DEPTH) or 10)
    return settings.CRAWLER_RECRAWL_PRIORITY_WEIGHT ** max(-60.0, min(60.0, levels))


def _bounds() -> tuple[float, float]:
    low = settings.CRAWLER_RECRAWL_MIN_INTERVAL
    return low, max(low, settings.CRAWLER_RECRAWL_MAX_INTERVAL)


def _grid() -> tuple[float, ...]:
    """The rates beliefs are held over (belief.grid), for the interval bounds in force."""
    return _grid_for(*_bounds())


def _frequencies() -> tuple[float, ...]:
    """The frequencies marginal values are tabulated at (belief.frequencies), for the bounds."""
    return _frequencies_for(*_bounds())


_grid_for = functools.lru_cache(maxsize=8)(belief.grid)
_frequencies_for = functools.lru_cache(maxsize=8)(belief.frequencies)


def plan_interval(before: Before, stats: changerate.ChangeStats, changed: bool,
                  post: list[float] | None = None) -> float:
    """Seconds until the next visit, by CRAWLER_RECRAWL_POLICY (`post`: the page's
    posterior, when the caller has it)."""
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
    if policy == "oracle":
        rate = _rate_class(oracle_rate(before.url, 0.0) * DAY)
        return changerate.interval_for(rate, weight_of(before.score), plan, min_interval=low, max_interval=high)
    if not has_evidence(stats):
        return first_look(before.url, plan)
    if plan.provisional:  # no price yet (the crawl's first minutes): a day, until the first plan
        return min(max(settings.CRAWLER_RECRAWL_EXPLORE_INTERVAL, low), high)
    post = post if post is not None else believed(stats)
    weight = weight_of(before.score)
    curve = belief.value_curve(post, _grid(), _frequencies())
    # Changed at every visit, undated (censored): a rate of at least about 1/interval, and no
    # more is known. Planned by its posterior, such a page stays at the interval where
    # "hopeless" and "worth chasing" balance, and no visit there ever tells them apart (issue
    # 51). So it probes: PROBES looks at the plan's frequency of probes (the shortest
    # interval when the exploring share allows). Seen unchanged, it is planned by its
    # posterior; changed at every probe too, and at least twice at about the shortest
    # interval, it is at least that fast, and while PROBE_SPLIT of its posterior is past the
    # budget's reach (λ above about w/μ: belief.hopeless_share) it is hopeless at this
    # budget and gets the least visits (probes that all came late: its posterior). Being
    # changed at a visit is never itself a reason to come back sooner (belief.py, 6).
    probe = belief.probe_for(stats, plan.probe_freq or _frequencies()[-1], post, _grid(), _frequencies(), _bounds()[0])
    return 1.0 / belief.frequency(curve, _frequencies(), weight, plan.price, probe)


def first_look(url: str, plan: "PlanView") -> float:
    """Seconds until a new page's first look: as soon as the budget allows, and when many
    new pages wait for theirs (plan.first_looks), spread over the time their share of the
    budget (CRAWLER_RECRAWL_EXPLORE_SHARE) takes to look at them all, so that known pages
    keep their visits. Without a look nothing is known of a page; the plan prices the
    pages that wait for theirs by the crawl's prior."""
    low, high = _bounds()
    share = settings.CRAWLER_RECRAWL_EXPLORE_SHARE * _budget()
    if plan.first_looks <= 0 or share <= 0.0:
        return low
    spread = _uniform(url) * plan.first_looks / share
    return min(max(spread, low), high)


def _uniform(url: str) -> float:
    """A number in (0, 1] fixed by the URL."""
    digest = hashlib.blake2b(url.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return (int.from_bytes(digest, "big") + 1) / 2.0 ** 64


def _budget() -> float:
    """Revisits per second."""
    return settings.CRAWLER_RECRAWL_BUDGET_PER_DAY / DAY


# Rates are grouped on a quarter-octave grid (the oracle's plan: planning.py).
_GRID = 4.0


def _rate_class(rate_per_day: float | None) -> float:
    if not rate_per_day or rate_per_day <= 0:
        return 0.0
    return 2.0 ** (round(math.log2(rate_per_day) * _GRID) / _GRID) / DAY


# --- the plan in force: what beat solved last (planning.py) ---------------------------------

_plan_cache: tuple[float, "PlanView"] | None = None  # (read at, plan)
_plan_lock = threading.Lock()
PLAN_CACHE_SECONDS = 5.0


@dataclass(frozen=True)
class PlanView:
    """What a visit needs of the stored plan: the budget's price, the pages it covers, the
    crawl's prior over change rates (belief.py; empty: none fitted yet), the pages waiting
    for their first look, the oracle's least exploring frequency (changerate.Plan), and how
    often a page that probes is looked at (stored with the prior: belief.prior_to_text)."""

    price: float
    explore_freq: float
    pages: int
    prior: tuple[float, ...] = ()
    first_looks: int = 0
    probe_freq: float | None = None  # how often a page probes (belief.probing); None: the shortest interval

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
    row = RecrawlPlan.objects.filter(pk=1).values_list("price", "explore_freq", "pages", "solved_at", "prior",
                                                      "first_looks").first()
    if row is None or row[3] is None:  # never solved (no beat): spend as if the budget were plentiful
        view = PlanView(0.0, 1.0 / settings.CRAWLER_RECRAWL_EXPLORE_INTERVAL, 0)
    elif row[2] == 0:
        # Solved before any page was fetched (a crawl's first minutes): no price yet. Pages
        # planned then are planned long, and the next plan brings sooner what it wants sooner.
        view = PlanView(math.inf, row[1], 0)
    else:
        prior = belief.prior_from_text(row[4], _grid()) if row[4] else []
        view = PlanView(row[0], row[1], row[2], tuple(prior), row[5], belief.probe_from_text(row[4]) if row[4] else None)
    with _plan_lock:
        _plan_cache = (time.monotonic(), view)
    return view


def forget_plan() -> None:
    global _plan_cache
    with _plan_lock:
        _plan_cache = None



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
            wakeups.announce()
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
