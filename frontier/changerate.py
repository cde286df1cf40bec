"""The pure math of recrawl scheduling: how often does a page change, and how often should it
be visited. Plain Python (stdlib only, no Django, no database). Units throughout: intervals in
seconds, rates (λ) and visit frequencies (f) per second, budgets in fetches per second.

1. How often does a page change
   J. Cho, H. Garcia-Molina, "Estimating frequency of change", ACM TOIT 3(3), 2003.

   A page changes as a Poisson process with unknown rate λ. A revisit t seconds after the
   previous one only says whether at least one change happened. changes/time is biased low: an
   interval with three changes counts as one. The log-likelihood of one observation:
     unchanged                   P = e^(-λt)                                 -> -λt
     changed                     P = 1 - e^(-λt)                             -> log(1 - e^(-λt))
     changed, Last-Modified τ    the last change was τ seconds before the visit (0 < τ <= t):
     seconds before the visit    a change at that instant (density λ), none since (e^(-λτ)),
                                 anything before it (probability 1)         -> log λ - λτ
   Their derivatives in λ are -t, t/(e^(λt) - 1) and 1/λ - τ; the maximum-likelihood λ solves
       Σ_changed t_i/(e^(λ t_i) - 1) + K/λ = U + Στ + R                           (*)
   with K changes seen with a usable Last-Modified, Στ their τ, U the seconds of unchanged
   intervals, and R = 0.5 · (U + Σt + Στ) / visits, a bias-reduction term of half the mean
   time an observation tells about: a whole interval when it saw no change or an undated one,
   only τ when the change is dated (what came before the last change says nothing about the
   rate: with the whole interval, a page changing hourly and visited monthly came out changing
   less than daily, as R then outweighed every τ). The left side falls from +inf to 0 as λ
   grows and the right side is a positive constant: one root, found by bisection on log λ. It
   is finite even when every visit saw a change, and 0 when none did.
   Regular intervals I, n visits, X changed, no Last-Modified: (*) is X·I/(e^(λI) - 1) =
   (n - X)·I + I/2, so e^(λI) = 1 + X/(n - X + 0.5) = (n + 0.5)/(n - X + 0.5): exactly their
   bias-reduced estimator λ = -log((n - X + 0.5)/(n + 0.5)) / I.

   The state is bounded (it lives on the URL row, no history): counters, sums, and the changed
   intervals as a histogram of half-octave buckets of their length, each bucket keeping (count,
   sum of seconds); (*) uses the bucket mean for each of its intervals, exact when they are equal
   (regular revisits), and a close approximation otherwise (lengths within a factor √2). The
   buckets reach down to 1/32 s: the freshness benchmark runs a day in seconds, and a change
   dated within the date's own second is recorded as one within under a second
   (recrawl._record). A summary without "v" (written before that, or written back by a
   worker of the previous release, which keeps the indices it read) is read into today's
   buckets by each bucket's mean: the likelihood uses means, not indices. Such a worker
   files a new interval by its own index: during an upgrade, one bucket may hold lengths of
   two ranges for a while.
   Older evidence fades (faded(): every count and sum times 2^(-1/h) before each new
   observation, h visits a half-life), so that a page that changes its habits is judged by
   its recent visits; the counts are then fractions, and (*) holds for them unchanged.

2. How often should it be visited
   J. Cho, H. Garcia-Molina, "Effective page refresh policies for Web crawlers", ACM TODS 28(4),
   2003.

   Revisited every 1/f seconds, a page with rate λ is fresh (our copy equals the live page) a
   fraction F(λ, f) = (f/λ)(1 - e^(-λ/f)) of the time (F = 1 when λ = 0). With a budget of B
   fetches per second we maximise Σ w_i F(λ_i, f_i) subject to Σ f_i = B and 1/max_interval <=
   f_i <= 1/min_interval. With x = λ/f, ∂F/∂f = (1 - e^(-x))/λ - e^(-x)/f = φ(x)/λ where
   φ(x) = 1 - (1 + x)e^(-x); F is concave in f, so by Lagrange every page not at a bound has
   the same marginal value μ (the price of one fetch per second):  w·φ(λ/f)/λ = μ.
   φ rises from 0 to 1, so f = λ/φ⁻¹(μλ/w) when μλ/w < 1, and the minimum frequency when
   μλ/w >= 1: a page that changes too often for its weight is not worth chasing; as a function
   of λ at a fixed μ, f rises (≈ sqrt(wλ/2μ) for slow pages) then falls to the minimum. That is
   the paper's result: the optimum gives pages that change too often FEWER visits, and visiting
   in proportion to λ is worse than visiting uniformly. μ is found by bracketed secant search
   (Illinois) on log μ so that the plan spends the budget. (For x > 15, where F ≈ f/λ and φ is
   within 5e-6 of 1, the solver lets 1 - φ shrink like 1/x instead of e^(-x): see TAIL_X.)

   Groups of pages can be marked "exploring": visited at least every explore_interval,
   within a capped share of the budget. Pages never seen changing (λ = 0) are always fresh:
   a visit gains nothing, so they get the minimum frequency unless exploring. (The crawler's
   optimal policy plans by what it believes of each rate, belief.py, which builds on φ; this
   solver plans the oracle's known rates and the benchmarks' theory.)
"""

import json
import math
from dataclasses import dataclass, replace

# ---------------------------------------------------------------- 1. change-rate estimation

# Bucket b holds changed intervals of [2^((b - 10)/2), 2^((b - 9)/2)) seconds; bucket 0 also
# holds anything shorter (under 1/32 s), the last (from about 270 days) anything longer.
BUCKETS = 60
BUCKET_OFFSET = 10
FORMAT = 2  # the "v" of to_text; 1 (absent): buckets from 1 s, index = 2·log2(seconds)
# An interval longer than this (about 35,000 years) says nothing more and is counted as this:
# it keeps every sum finite.
LONGEST_INTERVAL = 2.0 ** 40


@dataclass(frozen=True)
class ChangeStats:
    """A bounded summary of every revisit of one URL. The counts are whole numbers until
    older evidence fades (faded()): then each observation counts for less than one."""

    visits: float = 0  # observations (revisits with a usable interval)
    changes: float = 0  # observations that saw a change (with or without Last-Modified)
    unchanged_seconds: float = 0.0  # sum of the intervals that saw no change
    # Intervals that saw a change without a usable Last-Modified: (bucket, count, sum of
    # seconds), sorted by bucket, at most BUCKETS entries.
    changed: tuple[tuple[int, float, float], ...] = ()
    lm_changes: float = 0  # observations that saw a change and a usable Last-Modified
    lm_seconds: float = 0.0  # sum of their τ (seconds from Last-Modified to the visit)
    observed_seconds: float = 0.0  # sum of all intervals (faded like the rest)
    watched_seconds: float = 0.0  # sum of all intervals, never faded: how long the page has been watched


def _bucket(seconds: float) -> int:
    if seconds <= 0.0:
        return 0
    return max(0, min(BUCKETS - 1, math.floor(2.0 * math.log2(seconds)) + BUCKET_OFFSET))


def observe(stats: ChangeStats, interval_seconds: float, changed: bool,
            since_last_modified: float | None = None) -> ChangeStats:
    """`stats` with one more revisit: `interval_seconds` since the previous visit, and whether
    the page changed. `since_last_modified` = seconds from the response's Last-Modified to this
    visit; used only for a change and inside (0, interval] (else the server's clock or its
    Last-Modified is not telling us about this interval). A non-positive or non-finite interval
    is no observation: `stats` comes back unchanged."""
    t = float(interval_seconds)
    if not (t > 0.0 and math.isfinite(t)):
        return stats
    t = min(t, LONGEST_INTERVAL)
    seen = dict(visits=stats.visits + 1, observed_seconds=stats.observed_seconds + t,
                watched_seconds=max(stats.watched_seconds, stats.observed_seconds) + t)
    if not changed:
        return replace(stats, unchanged_seconds=stats.unchanged_seconds + t, **seen)
    tau = since_last_modified
    if tau is not None and 0.0 < tau <= t:
        return replace(stats, changes=stats.changes + 1, lm_changes=stats.lm_changes + 1,
                       lm_seconds=stats.lm_seconds + tau, **seen)
    histogram = {bucket: (count, seconds) for bucket, count, seconds in stats.changed}
    count, seconds = histogram.get(_bucket(t), (0, 0.0))
    histogram[_bucket(t)] = (count + 1, seconds + t)
    buckets = tuple((bucket, count, seconds) for bucket, (count, seconds) in sorted(histogram.items()))
    return replace(stats, changes=stats.changes + 1, changed=buckets, **seen)


# A histogram bucket whose count has faded below this is dropped (its evidence is gone).
_FADED_OUT = 1e-6


def faded(stats: ChangeStats, half_life_visits: float) -> ChangeStats:
    """`stats` with every observation so far counting for 2^(-1/half_life_visits) of what it
    did: an observation `half_life_visits` visits old counts half, so a page that changes
    its habits is judged by its recent ones (the estimate's memory is about 1.44 x the half
    life in visits). 0 or less: nothing fades."""
    if half_life_visits <= 0 or stats.visits == 0:
        return stats
    keep = 0.5 ** (1.0 / half_life_visits)
    changed = tuple((bucket, count * keep, seconds * keep) for bucket, count, seconds in stats.changed
                    if count * keep >= _FADED_OUT)
    lm_changes = stats.lm_changes * keep
    return ChangeStats(visits=stats.visits * keep, changes=sum(count for _, count, _ in changed) + lm_changes,
                       unchanged_seconds=stats.unchanged_seconds * keep, changed=changed, lm_changes=lm_changes,
                       lm_seconds=stats.lm_seconds * keep, observed_seconds=stats.observed_seconds * keep,
                       watched_seconds=max(stats.watched_seconds, stats.observed_seconds))


def _changed_term(seconds: float, rate: float) -> float:
    """t/(e^(λt) - 1), written so that a huge λt underflows to 0 instead of overflowing."""
    x = rate * seconds
    return seconds * math.exp(-x) / -math.expm1(-x)


def estimate(stats: ChangeStats) -> float:
    """Maximum-likelihood change rate (per second) with bias reduction: the root of (*) in the
    module docstring. 0.0 when no change was ever seen."""
    hits = sum(count for _, count, _ in stats.changed) + stats.lm_changes
    if hits == 0 or stats.visits == 0:
        return 0.0
    changed_seconds = sum(seconds for _, _, seconds in stats.changed)
    informative = stats.unchanged_seconds + changed_seconds + stats.lm_seconds
    known = stats.unchanged_seconds + stats.lm_seconds + 0.5 * informative / stats.visits
    if not known > 0.0:
        return 0.0  # inconsistent stats (no observed time): nothing to say
    means = [(count, seconds / count) for _, count, seconds in stats.changed]

    def excess(rate: float) -> float:  # left side - right side of (*); decreasing in rate
        return sum(count * _changed_term(mean, rate) for count, mean in means) + stats.lm_changes / rate - known

    # Since x/(e^x - 1) lies in [1 - x/2, 1], each term t/(e^(λt) - 1) lies in [1/λ - t/2, 1/λ]:
    # the root lies in [hits/(known + Σt/2), hits/known], a ratio of at most visits + 1.
    low, high = hits / (known + 0.5 * changed_seconds), hits / known
    for _ in range(100):
        if high <= low * (1.0 + 1e-12):
            break
        middle = low * math.sqrt(high / low)  # the geometric mean: bisection on log λ
        if excess(middle) > 0.0:
            low = middle
        else:
            high = middle
    return low * math.sqrt(high / low)


# Serialization: compact JSON, short keys, 8 significant digits (the estimate does not need
# more). At most BUCKETS histogram entries of ~30 characters: under 2 KB for any realistic
# count (below 10^8 visits).
_FIELDS = (("n", "visits", "count"), ("x", "changes", "count"), ("u", "unchanged_seconds", float),
           ("k", "lm_changes", "count"), ("s", "lm_seconds", float), ("t", "observed_seconds", float))


def _number(value: float) -> str:
    return format(value, ".8g")


def to_text(stats: ChangeStats) -> str:
    """Compact text for a TextField; "" for no visits and no time watched (a first visit
    can bring time known unchanged from its Last-Modified: frontier/recrawl.py)."""
    if stats.visits == 0 and stats.watched_seconds == 0:
        return ""
    fields = ",".join(f'"{key}":{_number(getattr(stats, name))}' for key, name, _ in _FIELDS)
    buckets = ",".join(f"[{bucket},{_number(count)},{_number(seconds)}]" for bucket, count, seconds in stats.changed)
    return f'{{"v":{FORMAT},{fields},"a":{_number(stats.watched_seconds)},"h":[{buckets}]}}'


def _merged(buckets) -> list[tuple[int, float, float]]:
    """Buckets with one index summed into one."""
    merged: dict[int, tuple[float, float]] = {}
    for bucket, count, seconds in buckets:
        old_count, old_seconds = merged.get(bucket, (0, 0.0))
        merged[bucket] = (old_count + count, old_seconds + seconds)
    return [(bucket, count, seconds) for bucket, (count, seconds) in merged.items()]


def _no_constant(name: str):
    raise ValueError(name)  # JSON's NaN and Infinity


def _checked(value, kind):
    # bool is an int to Python, not to us; 1e999 parses as an infinite float.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise ValueError(value)
    if kind is int:
        if not isinstance(value, int):
            raise ValueError(value)
        return value
    if kind == "count":  # whole until faded
        return value if isinstance(value, int) else float(value)
    return float(value)


def from_text(text: str) -> ChangeStats:
    """The inverse of to_text. Empty, malformed or inconsistent text is empty stats: the stored
    value is only a summary, starting over is always safe, so this never raises."""
    if not text:
        return ChangeStats()
    try:
        document = json.loads(text, parse_constant=_no_constant)
        values = {name: _checked(document[key], kind) for key, name, kind in _FIELDS}
        buckets = []
        for bucket, count, seconds in document["h"]:
            buckets.append((_checked(bucket, int), _checked(count, "count"), _checked(seconds, float)))
        changes = sum(count for _, count, _ in buckets) + values["lm_changes"]
        slack = 1e-6 * max(1.0, changes)  # faded counts are stored to 8 significant digits
        if (any(bucket >= BUCKETS or count <= 0 for bucket, count, _ in buckets)
                or len({bucket for bucket, _, _ in buckets}) != len(buckets)
                or abs(values["changes"] - changes) > slack
                or values["visits"] < values["changes"] - slack):
            raise ValueError("inconsistent")
        version = document.get("v", 1)
        if version == 1 and not isinstance(version, bool):
            # Buckets from 1 s, or this format written back by the previous release (which
            # keeps the indices and drops "v"): either way each bucket's mean says where it goes.
            buckets = _merged((_bucket(seconds / count), count, seconds) for _, count, seconds in buckets)
            if values["visits"] == 0 and document.get("a", 0) > 0:
                # The previous release kept a first Last-Modified as time watched, not seen:
                # today it is one observation of that much unchanged time (recrawl._first_date).
                watched = _checked(document["a"], float)
                values |= dict(visits=1, unchanged_seconds=watched, observed_seconds=watched)
        elif version != FORMAT or isinstance(version, bool):
            raise ValueError("unknown format")
        buckets.sort()
        # "a" came later: a summary without it has been watched for what it observed.
        watched = _checked(document.get("a", values["observed_seconds"]), float)
        return ChangeStats(changed=tuple(buckets), watched_seconds=max(watched, values["observed_seconds"]), **values)
    except Exception:  # anything at all wrong with stored text means: no knowledge
        return ChangeStats()


# ---------------------------------------------------------------- 2. spending a recrawl budget

def freshness(rate: float, freq: float) -> float:
    """Time-averaged freshness of a page changing at `rate` revisited every 1/`freq` seconds."""
    if rate <= 0.0:
        return 1.0
    if freq <= 0.0:
        return 0.0
    x = rate / freq
    return 1.0 if x == 0.0 else -math.expm1(-x) / x


# Beyond x = λ/f = TAIL_X a page is visited so rarely that F ≈ f/λ: the marginal value is w/λ
# to within TAIL_GAP = (1 + TAIL_X)e^(-TAIL_X) ≈ 5e-6, and an exact φ approaches 1 too fast
# for a double price to tell apart how much such pages should get: the plan could not spend
# its budget when one large group sits at that price. There the solver uses a gap shrinking
# like 1/x instead, 1 - φ(x) = TAIL_GAP·TAIL_X/x, which changes no marginal value by more
# than TAIL_GAP (relative) and keeps those pages' frequency a smooth function of the price.
TAIL_X = 15.0
TAIL_GAP = (1.0 + TAIL_X) * math.exp(-TAIL_X)


def _gain(x: float) -> float:
    """φ(x) = 1 - (1 + x)e^(-x), x = λ/f: the marginal freshness of a fetch, times λ."""
    if x < 1e-2:  # the closed form cancels; the series is exact to ~1e-10 here
        return x * x * (0.5 - x * (1.0 / 3.0 - x * (1.0 / 8.0 - x / 30.0)))
    if x > TAIL_X:
        return 1.0 - TAIL_GAP * TAIL_X / x
    return -math.expm1(-x) - x * math.exp(-x)


def _gain_inverse(y: float) -> float:
    """The x > 0 with φ(x) = y, for 0 < y < 1."""
    if 1.0 - y < TAIL_GAP:
        return TAIL_GAP * TAIL_X / (1.0 - y)
    r = math.sqrt(2.0 * y)
    if y < 1e-10:  # series inversion of φ(x) = x²/2 - x³/3 + x⁴/8 - ...
        return r * (1.0 + r / 3.0 + 11.0 * r * r / 72.0)
    # Newton on h(x) = log(1 + x) - x - log(1 - y), zero where (1 + x)e^(-x) = 1 - y. h is
    # concave and decreasing, so from the first step on Newton closes in on the root from above.
    log_q = math.log1p(-y)
    x = r * (1.0 + r / 3.0) if y < 0.5 else -log_q + math.log1p(-log_q)
    for _ in range(40):
        step = (math.log1p(x) - x - log_q) * (1.0 + x) / x
        x += step
        if abs(step) <= 1e-10 * x:
            break
    return x


def _optimal_freq(rate: float, weight: float, price: float, min_freq: float, max_freq: float) -> float:
    """The frequency at which a page's marginal value (w/λ)·φ(λ/f) equals the price, within the
    bounds. (solve_price's spend() is the same, inlined.)"""
    if rate <= 0.0 or weight <= 0.0:
        return min_freq  # always fresh, or worthless: a visit gains nothing
    y = price * (rate / weight)
    if y <= _gain(rate / max_freq):  # worth more than the price even at max_freq
        return max_freq
    if y >= _gain(rate / min_freq):  # worth less even at min_freq (always when y >= 1)
        return min_freq
    return min(max(rate / _gain_inverse(y), min_freq), max_freq)


@dataclass(frozen=True)
class Group:
    """`count` URLs sharing (after the caller's quantization) a change rate (per second) and a
    weight (importance); exploring = their rate estimate is still unreliable."""

    rate: float
    weight: float
    count: int
    exploring: bool = False


@dataclass(frozen=True)
class Plan:
    """price: μ, the marginal freshness-weight of one fetch per second (math.inf: the budget
    cannot even pay for max_interval everywhere; 0: it pays for min_interval everywhere).
    budget and planned: fetches per second available and spent by the plan. explore_freq:
    the least frequency (per second) of an exploring URL."""

    price: float
    budget: float
    planned: float
    explore_freq: float


def _bounds(min_interval: float, max_interval: float) -> tuple[float, float]:
    if not 0.0 < min_interval <= max_interval < math.inf:
        raise ValueError(f"need 0 < min_interval <= max_interval < inf, got {min_interval}, {max_interval}")
    return 1.0 / max_interval, 1.0 / min_interval


def solve_price(groups: list[Group], budget: float, min_interval: float, max_interval: float,
                explore_interval: float, max_explore_share: float = 0.5) -> Plan:
    """The plan that maximises the weighted freshness of `groups` for `budget` fetches per
    second, every URL revisited between every `min_interval` and every `max_interval` seconds,
    exploring ones at least every `explore_interval` seconds within `max_explore_share` of the
    budget."""
    min_freq, max_freq = _bounds(min_interval, max_interval)
    budget = max(0.0, budget)
    groups = [group for group in groups if group.count > 0]
    explore_freq = min(max(1.0 / explore_interval if explore_interval > 0 else math.inf, min_freq), max_freq)
    floor = sum(group.count for group in groups) * min_freq
    if not groups:
        return Plan(0.0, budget, 0.0, explore_freq)
    if floor >= budget:  # not even max_interval everywhere fits: say so, and ask for nothing more
        return Plan(math.inf, budget, floor, min_freq)
    explorers = sum(group.count for group in groups if group.exploring)
    if explorers:
        # Exploration gets at most its share of the budget, and never so much that the others
        # could not have the minimum frequency.
        cap = min(min(max(max_explore_share, 0.0), 1.0) * budget, budget - floor + explorers * min_freq)
        explore_freq = max(min_freq, min(explore_freq, cap / explorers))

    passive = 0.0  # spend that does not depend on the price: pages that gain nothing from visits
    active = []  # (count, least frequency, rate, λ/w, y_fastest, y_slowest)
    for group in groups:
        least = explore_freq if group.exploring else min_freq
        if group.rate <= 0.0 or group.weight <= 0.0:
            passive += group.count * least
        else:
            active.append((group.count, least, group.rate, group.rate / group.weight,
                           _gain(group.rate / max_freq), _gain(group.rate / min_freq)))

    def spend(price: float) -> float:  # _optimal_freq inlined: this loop is where solving spends its time
        total = passive
        for count, least, rate, ratio, fastest, slowest in active:
            y = price * ratio
            if y <= fastest:
                freq = max_freq
            elif y >= slowest:
                freq = least
            else:
                freq = max(min(rate / _gain_inverse(y), max_freq), least)
            total += count * freq
        return total

    most = spend(0.0)
    if most <= budget:
        return Plan(0.0, budget, most, explore_freq)
    # Now active is not empty (passive spend fits by the exploration cap) and the price lies
    # between where the first page leaves max_freq and where the last one reaches min_freq.
    # Secant search (Illinois) on log price against log spend: nearly linear (f ~ μ^-1/2 for
    # slow pages), bracketed, so it converges in a handful of steps where bisection needs dozens.
    # (Widened a little so that rounding cannot put a page on the wrong side of its bound.)
    low = max(min(fastest / ratio for _, _, _, ratio, fastest, _ in active) * (1.0 - 1e-9), 1e-300)
    high = max(slowest / ratio for _, _, _, ratio, _, slowest in active) * (1.0 + 1e-9)
    u_low, u_high = math.log(low), math.log(high)
    g_low, g_high = math.log(spend(low) / budget), math.log(spend(high) / budget)
    if g_high >= 0.0:  # the least frequencies alone spend it all (a binding exploration cap)
        return Plan(high, budget, spend(high), explore_freq)
    price, kept = high, 0
    if g_low <= 0.0:  # only when low had to be raised to 1e-300: prices are beyond floats
        price, g_high = low, 0.0
    for _ in range(100):
        if g_high == 0.0 or u_high - u_low <= 1e-12 * max(1.0, abs(u_low)):
            break
        u = (u_low * g_high - u_high * g_low) / (g_high - g_low)
        g = math.log(spend(math.exp(u)) / budget)
        if abs(g) <= 1e-6:  # spends the budget to a millionth
            price = math.exp(u)
            break
        if g > 0.0:
            u_low, g_low = u, g
            if kept == 1:  # the same end kept twice: halve its value (Illinois) to keep moving
                g_high /= 2.0
            kept = 1
        else:
            u_high, g_high = u, g
            if kept == -1:
                g_low /= 2.0
            kept = -1
        price = math.exp(u_high)  # if we stop here, the side that does not overspend
    return Plan(price, budget, spend(price), explore_freq)


def interval_for(rate: float, weight: float, plan: Plan, min_interval: float, max_interval: float,
                 exploring: bool = False) -> float:
    """Seconds until the next visit of one URL under `plan` (the answer solve_price's spend
    counts for its group)."""
    min_freq, max_freq = _bounds(min_interval, max_interval)
    freq = _optimal_freq(rate, weight, plan.price, min_freq, max_freq)
    if exploring:
        freq = max(freq, min(plan.explore_freq, max_freq))
    return 1.0 / freq


# ---------------------------------------------------------------- baselines for the benchmark

def uniform_interval(pages: int, budget: float) -> float:
    """Every page visited equally often: `pages` / `budget` seconds (inf without a budget)."""
    return math.inf if budget <= 0.0 else max(0, pages) / budget


def adaptive_interval(previous: float, changed: bool, *, shrink: float = 0.2, grow: float = 0.4,
                      min_interval: float, max_interval: float) -> float:
    """Nutch's AdaptiveFetchSchedule: the interval shrinks by `shrink` after a change and grows
    by `grow` otherwise, clamped to [min_interval, max_interval] seconds."""
    interval = previous * (1.0 - shrink) if changed else previous * (1.0 + grow)
    return min(max(interval, min_interval), max_interval)
