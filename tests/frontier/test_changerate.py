"""frontier.changerate: the change-rate estimator (simulated Poisson pages with a known rate,
seeded) and the freshness-optimal spending of a recrawl budget. Pure math: no database."""

import math
import random

import pytest

from frontier import changerate
from frontier.changerate import (
    BUCKETS,
    ChangeStats,
    Group,
    Plan,
    adaptive_interval,
    estimate,
    faded,
    freshness,
    from_text,
    interval_for,
    observe,
    solve_price,
    to_text,
    uniform_interval,
)

DAY = 86400.0
HOUR = 3600.0
YEAR = 365 * DAY


# ---------------------------------------------------------------- helpers

def schedule(kind, mean, visits, rng):
    """Revisit intervals averaging `mean` seconds."""
    if kind == "regular":
        return [mean] * visits
    if kind == "exponential":
        return [rng.expovariate(1.0 / mean) for _ in range(visits)]
    if kind == "alternating":  # a short and a long interval, in turn
        return [(0.25 if i % 2 else 1.75) * mean for i in range(visits)]
    raise ValueError(kind)


def simulate(rate, intervals, rng):
    """Visit a page whose changes are a Poisson process of `rate` after each interval in turn.
    Returns (stats without Last-Modified, stats with it, changes seen / time: the naive rate)."""
    plain = dated = ChangeStats()
    now, last_change, next_change = 0.0, None, rng.expovariate(rate)
    for interval in intervals:
        now += interval
        changed = next_change <= now
        while next_change <= now:
            last_change, next_change = next_change, next_change + rng.expovariate(rate)
        plain = observe(plain, interval, changed)
        dated = observe(dated, interval, changed, now - last_change if changed else None)
    return plain, dated, plain.changes / now


def tolerance(rate, intervals):
    """Four standard deviations of the maximum-likelihood estimate (from the Fisher
    information of the intervals actually visited: Σ t² e^(-λt)/(1 - e^(-λt))), relative,
    plus 1% for the histogram's bucket means and the bias-reduction term."""
    information = sum(t * t / math.expm1(rate * t) for t in intervals if rate * t < 700)
    return 4.0 / (rate * math.sqrt(information)) + 0.01


def relative_error(estimated, true):
    return abs(estimated / true - 1.0)


# ---------------------------------------------------------------- 1. estimating the change rate

@pytest.mark.parametrize("kind", ["regular", "exponential", "alternating"])
@pytest.mark.parametrize("changes_per_visit", [0.1, 0.5, 1.0, 3.0])
def test_the_estimate_finds_the_true_rate_within_its_statistical_error(kind, changes_per_visit):
    rng = random.Random(f"{kind}-{changes_per_visit}")
    rate = changes_per_visit / DAY
    intervals = schedule(kind, DAY, 2000, rng)
    plain, _, _ = simulate(rate, intervals, rng)
    tol = tolerance(rate, intervals)
    assert tol < 0.35  # the test has teeth
    assert relative_error(estimate(plain), rate) < tol


@pytest.mark.parametrize("kind", ["regular", "exponential", "alternating"])
def test_a_page_changing_faster_than_visited_is_estimated_far_better_than_changes_per_time(kind):
    rng = random.Random(kind)
    rate = 3.0 / DAY  # about three changes between visits: most visits see "changed"
    plain, _, naive = simulate(rate, schedule(kind, DAY, 2000, rng), rng)
    assert relative_error(estimate(plain), rate) < 0.1
    assert naive < 0.5 * rate  # changes/time cannot see more than one change per visit


@pytest.mark.parametrize("visits, changed", [
    (10, 0), (10, 1), (10, 5), (10, 9), (10, 10), (1, 1), (100, 37), (1000, 999), (1000, 1000),
])
@pytest.mark.parametrize("interval", [1.0, HOUR, DAY, 1e9])
def test_regular_intervals_give_exactly_the_bias_reduced_estimator(visits, changed, interval):
    # Cho & Garcia-Molina: λ = -log((n - X + 0.5)/(n + 0.5)) / I
    stats = ChangeStats()
    for i in range(visits):
        stats = observe(stats, interval, i < changed)
    closed_form = -math.log((visits - changed + 0.5) / (visits + 0.5)) / interval
    assert estimate(stats) == pytest.approx(closed_form, rel=1e-9, abs=0.0)


def test_the_histogram_matches_the_exact_estimate_of_irregular_intervals():
    # The bucket mean stands for every interval in a half-octave bucket: check against (*)
    # solved over the full list of intervals.
    rng = random.Random(7)
    rate = 1.0 / DAY
    stats, changed, unchanged, total = ChangeStats(), [], 0.0, 0.0
    for _ in range(3000):
        interval = rng.expovariate(1.0 / DAY) + rng.choice([0.0, 10 * DAY])
        seen = rng.random() < -math.expm1(-rate * interval)
        stats = observe(stats, interval, seen)
        total += interval
        if seen:
            changed.append(interval)
        else:
            unchanged += interval
    assert len(stats.changed) > 10

    def excess(r):
        return sum(t / math.expm1(r * t) for t in changed if r * t < 700) - unchanged - 0.5 * total / 3000

    low, high = 1e-12, 1.0
    for _ in range(200):
        middle = math.sqrt(low * high)
        low, high = (middle, high) if excess(middle) > 0 else (low, middle)
    assert relative_error(estimate(stats), low) < 0.005


# A dated change is worth a lot when visits see several changes, where "changed" says little.
@pytest.mark.parametrize("changes_per_visit, error_ratio", [(0.3, 1.0), (1.0, 1.0), (3.0, 0.9), (10.0, 0.6)])
@pytest.mark.parametrize("kind", ["regular", "exponential"])
def test_last_modified_makes_the_estimate_at_least_as_accurate(changes_per_visit, error_ratio, kind):
    rate = changes_per_visit / DAY
    plain_errors, dated_errors = [], []
    for seed in range(40):
        rng = random.Random(f"{kind}-{changes_per_visit}-{seed}")
        plain, dated, _ = simulate(rate, schedule(kind, DAY, 200, rng), rng)
        plain_errors.append(relative_error(estimate(plain), rate) ** 2)
        dated_errors.append(relative_error(estimate(dated), rate) ** 2)
        assert dated.lm_changes == dated.changes and not dated.changed
    plain_rms, dated_rms = math.sqrt(sum(plain_errors) / 40), math.sqrt(sum(dated_errors) / 40)
    assert dated_rms <= error_ratio * plain_rms


@pytest.mark.parametrize("interval_days", [0.1, 1.0, 5.0, 30.0])
def test_a_dated_fast_page_is_estimated_alike_however_rarely_it_is_visited(interval_days):
    # A page changing hourly, visited every 0.1 to 30 days with a Last-Modified: every visit dates the
    # last change about an hour back. The bias term is half the mean time the visits tell
    # something about (the dated part), not half the mean interval: with the interval's, a
    # page visited every 30 days came out changing less than once a day.
    rate = 1 / HOUR
    estimates = []
    for seed in range(20):
        rng = random.Random(f"dated-fast-{interval_days}-{seed}")
        _, dated, _ = simulate(rate, [interval_days * DAY] * 12, rng)
        estimates.append(estimate(dated))
    assert relative_error(sorted(estimates)[10], rate) < 0.15  # the median


def test_no_visits_or_no_change_is_rate_zero():
    assert estimate(ChangeStats()) == 0.0
    stats = ChangeStats()
    for _ in range(50):
        stats = observe(stats, DAY, False)
    assert stats.visits == 50 and estimate(stats) == 0.0


def test_every_visit_changed_is_a_finite_rate():
    stats = ChangeStats()
    for interval in [HOUR, DAY, 1.0, YEAR, 1e-3]:
        stats = observe(stats, interval, True)
    assert 0.0 < estimate(stats) < math.inf


@pytest.mark.parametrize("interval", [0.0, -5.0, math.nan, math.inf, -math.inf])
def test_a_useless_interval_is_no_observation(interval):
    stats = observe(ChangeStats(), DAY, True)
    assert observe(stats, interval, True) == stats
    assert observe(stats, interval, False, since_last_modified=1.0) == stats


def test_huge_intervals_and_huge_rates_stay_finite():
    stats = ChangeStats()
    for _ in range(10):
        stats = observe(stats, 1e300, True)
        stats = observe(stats, 1e300, False)
    assert 0.0 < estimate(stats) < 1.0 and math.isfinite(stats.observed_seconds)
    fast = ChangeStats()
    for _ in range(1000):  # changed after every second, and after 10^7 seconds: λt ≈ 10^6
        fast = observe(fast, 1.0, True)
    fast = observe(fast, 1e7, True)
    assert 0.1 < estimate(fast) < 10.0
    assert from_text(to_text(stats)).visits == 20


@pytest.mark.parametrize("since, counted", [
    (None, False), (0.0, False), (-1.0, False), (DAY + 1, False), (math.nan, False), (DAY, True), (5.0, True),
])
def test_last_modified_is_used_only_inside_the_interval(since, counted):
    stats = observe(ChangeStats(), DAY, True, since_last_modified=since)
    assert stats.visits == stats.changes == 1
    assert stats.lm_changes == int(counted)
    assert len(stats.changed) == 1 - int(counted)
    unchanged = observe(ChangeStats(), DAY, False, since_last_modified=since)
    assert unchanged.changes == unchanged.lm_changes == 0 and unchanged.unchanged_seconds == DAY


def test_the_summary_stays_bounded():
    rng = random.Random(3)
    stats = ChangeStats()
    for _ in range(20000):
        stats = observe(stats, math.exp(rng.uniform(-5, 60)), rng.random() < 0.5)
    assert len(stats.changed) <= BUCKETS
    assert sum(count for _, count, _ in stats.changed) + stats.lm_changes == stats.changes
    assert len(to_text(stats)) < 2048


def test_text_round_trip():
    rng = random.Random(5)
    plain, dated, _ = simulate(1.0 / DAY, schedule("exponential", DAY, 500, rng), rng)
    for stats in (plain, dated, observe(plain, 7.0, True, since_last_modified=3.0)):
        text = to_text(stats)
        back = from_text(text)
        assert (back.visits, back.changes, back.lm_changes) == (stats.visits, stats.changes, stats.lm_changes)
        assert [(b, c) for b, c, _ in back.changed] == [(b, c) for b, c, _ in stats.changed]
        assert estimate(back) == pytest.approx(estimate(stats), rel=1e-7)
        assert to_text(back) == text


def test_the_worst_case_text_is_under_2kb():
    full = ChangeStats(visits=10**8 - 1, changes=10**8 - 1, unchanged_seconds=math.pi * 1e15,
                       changed=tuple((b, 10**8 // 100 - 1, math.pi * 1e15) for b in range(BUCKETS)),
                       lm_changes=10**8 - 1 - BUCKETS * (10**8 // 100 - 1), lm_seconds=math.e * 1e14,
                       observed_seconds=math.pi * 1e16)
    assert from_text(to_text(full)).visits == full.visits
    assert len(to_text(full)) < 2048


@pytest.mark.parametrize("text", [
    None, "", "{", "null", "[1, 2]", "42", '"text"', '{"n": 1}',
    '{"n":1,"x":1,"u":0,"k":0,"s":0,"t":5,"h":[[3,1,NaN]]}',
    '{"n":1,"x":1,"u":0,"k":0,"s":0,"t":5,"h":[[3,1,1e999]]}',
    '{"n":1,"x":1,"u":0,"k":0,"s":0,"t":5,"h":[[60,1,5]]}',  # no such bucket
    '{"n":1,"x":1,"u":0,"k":0,"s":0,"t":5,"h":[[3,0,5]]}',  # an empty bucket
    '{"n":2,"x":2,"u":0,"k":0,"s":0,"t":5,"h":[[3,1,2],[3,1,3]]}',  # the same bucket twice
    '{"n":1,"x":2,"u":0,"k":0,"s":0,"t":5,"h":[[3,2,5]]}',  # more changes than visits
    '{"n":2,"x":1,"u":0,"k":0,"s":0,"t":5,"h":[[3,2,5]]}',  # changes do not add up
    '{"n":-1,"x":0,"u":0,"k":0,"s":0,"t":5,"h":[]}',
    '{"n":true,"x":0,"u":0,"k":0,"s":0,"t":5,"h":[]}',
    '{"n":0.5,"x":1.5,"u":0,"k":0,"s":0,"t":5,"h":[[3,1.5,5]]}',  # faded, but more changes than visits
    '{"n":1,"x":0,"u":"5","k":0,"s":0,"t":5,"h":[]}',
    '{"n":1,"x":0,"u":0,"k":0,"s":0,"t":5,"h":[[1,2]]}',
    "[" * 100000,
])
def test_malformed_text_is_empty_stats(text):
    assert from_text(text) == ChangeStats()


def test_valid_text_is_read():
    stats = from_text('{"v":2,"n":3,"x":2,"u":86400,"k":1,"s":60,"t":259200,"h":[[42,1,86400]]}')
    assert stats == ChangeStats(3, 2, 86400.0, ((42, 1, 86400.0),), 1, 60.0, 259200.0, 259200.0)


def test_a_summary_written_before_the_sub_second_buckets_is_read_into_them_by_its_means():
    # format 1 (no "v"): bucket b held [2^(b/2), 2^((b+1)/2)) s, everything under a second in 0
    old = from_text('{"n":4,"x":3,"u":86400,"k":0,"s":0,"t":259200,"h":[[0,1,0.5],[32,1,86400],[59,1,9e9]]}')
    assert old.changed == ((8, 1, 0.5), (42, 1, 86400.0), (59, 1, 9e9))  # today's index of each mean
    assert [changerate._bucket(s) for s in (0.5, 86400.0, 9e9)] == [8, 42, 59]
    assert estimate(old) == pytest.approx(estimate(ChangeStats(4, 3, 86400.0, ((0, 1, 0.5), (32, 1, 86400.0),
                                                                               (59, 1, 9e9)), 0, 0.0, 259200.0)))
    # buckets that land on one index are summed
    assert from_text('{"n":2,"x":2,"u":0,"k":0,"s":0,"t":2e10,"h":[[50,1,1e10],[59,1,1e10]]}').changed == \
        ((59, 2, 2e10),)
    assert from_text(to_text(old)) == old  # written as format 2, read back as it is
    # A worker of the previous release writes today's summary back without "v", keeping its
    # indices: read by their means, they stay where they are (not ten half-octaves up)
    today = to_text(observe(observe(ChangeStats(), DAY, True), 7 * DAY, True))
    assert from_text(today.replace('"v":2,', "")).changed == from_text(today).changed
    # The previous release kept an old first Last-Modified as a month watched, not seen: one
    # observation of a month unchanged today (recrawl._first_date)
    dated = from_text('{"n":0,"x":0,"u":0,"k":0,"s":0,"t":0,"a":2592000,"h":[]}')
    assert (dated.visits, dated.unchanged_seconds, dated.observed_seconds) == (1, 2592000.0, 2592000.0)
    later = '{"v":3,"n":4,"x":3,"u":86400,"k":0,"s":0,"t":259200,"a":259200,"h":[[42,3,172800]]}'
    assert from_text(later) == ChangeStats()  # a later format: nothing known, rather than misread
    assert from_text(later.replace('"v":3', '"v":2')) != ChangeStats()
    # under a second, the buckets go on by half octaves down to 1/32 s
    assert [changerate._bucket(s) for s in (0.01, 1 / 32, 0.5, 0.99, 1.0, 86400.0)] == [0, 0, 8, 9, 10, 42]


def test_faded_stats_survive_their_text():
    stats = ChangeStats()
    for day in range(30):
        stats = observe(faded(stats, 20.0), DAY, changed=day % 3 == 0, since_last_modified=3600.0 if day % 6 == 0 else None)
    back = from_text(to_text(stats))
    assert back.visits == pytest.approx(stats.visits, rel=1e-7) and 0 < back.visits < 30
    assert back.changes == pytest.approx(stats.changes, rel=1e-7)
    assert estimate(back) == pytest.approx(estimate(stats), rel=1e-6)


def test_the_time_watched_never_fades():
    # what a page never seen changing is planned with (a share of a change over the time watched)
    # keeps falling, though the evidence it is estimated from fades
    stats = ChangeStats()
    for _ in range(100):
        stats = observe(faded(stats, 20.0), DAY, False)
    assert stats.observed_seconds == pytest.approx(DAY / (1 - 0.5 ** (1 / 20)), rel=0.05)  # ~29 days
    assert stats.watched_seconds == pytest.approx(100 * DAY)
    assert from_text(to_text(stats)).watched_seconds == pytest.approx(100 * DAY)
    # a summary written before the field existed has been watched for what it observed
    assert from_text('{"n":2,"x":0,"u":172800,"k":0,"s":0,"t":172800,"h":[]}').watched_seconds == 172800


def test_nothing_fades_with_no_memory_setting():
    stats = observe(observe(ChangeStats(), DAY, True), DAY, False)
    assert faded(stats, 0) is stats and faded(ChangeStats(), 20.0) == ChangeStats()


def test_a_page_that_changes_its_habits_is_judged_by_its_recent_visits():
    # 60 daily visits that saw nothing, then 10 that each saw a change: the page now
    # changes at least daily. Remembering everything, it still looks like a page of one
    # change a week; with a memory of 20 visits its estimate rises more than twice as fast.
    def after(memory):
        stats = ChangeStats()
        for changed in [False] * 60 + [True] * 10:
            stats = observe(faded(stats, memory), DAY, changed)
        return estimate(stats) * DAY

    assert after(0) < 0.2
    assert after(20.0) > 2 * after(0) and after(10.0) > after(20.0)


def test_fading_keeps_a_steady_page_estimate_close():
    rng = random.Random(7)
    rate, stats = 0.5 / DAY, ChangeStats()
    for _ in range(400):
        interval = DAY * rng.choice((0.5, 1.0, 2.0))
        stats = observe(faded(stats, 20.0), interval, rng.random() < 1 - math.exp(-rate * interval))
    assert estimate(stats) == pytest.approx(rate, rel=0.35)


# ---------------------------------------------------------------- 2. spending the budget

def spent(groups, plan, min_interval, max_interval):
    return sum(g.count / interval_for(g.rate, g.weight, plan, min_interval, max_interval, g.exploring)
               for g in groups)


def random_groups(seed, size, exploring_share=0.1, zero_share=0.1):
    rng = random.Random(seed)
    return [Group(rate=0.0 if rng.random() < zero_share else math.exp(rng.uniform(math.log(1 / YEAR), math.log(24 / DAY))),
                  weight=math.exp(rng.uniform(0.0, 3.0)), count=rng.randint(1, 1000),
                  exploring=rng.random() < exploring_share)
            for _ in range(size)]


def test_freshness():
    assert freshness(0.0, 1.0) == freshness(0.0, 0.0) == 1.0
    assert freshness(1.0, 0.0) == 0.0
    assert freshness(1.0, 1.0) == pytest.approx(1 - math.exp(-1))
    assert freshness(1.0, 1e300) == pytest.approx(1.0)
    assert freshness(1e300, 1e-300) == 0.0
    assert freshness(9.0, 1.8) == pytest.approx(0.2 * (1 - math.exp(-5)))


def test_the_papers_five_pages():
    # Cho & Garcia-Molina (TODS 2003): pages changing 1..5 times a day, 5 visits a day in all:
    # the optimum is 1.15, 1.36, 1.35, 1.14 and 0.00 visits a day.
    groups = [Group(rate=i / DAY, weight=1.0, count=1) for i in range(1, 6)]
    plan = solve_price(groups, 5 / DAY, 1.0, 1e4 * DAY, DAY)
    per_day = [DAY / interval_for(g.rate, g.weight, plan, 1.0, 1e4 * DAY) for g in groups]
    assert per_day == pytest.approx([1.15, 1.36, 1.35, 1.14, 0.0], abs=0.006)


@pytest.mark.parametrize("seed, size", [(1, 1), (2, 10), (3, 200), (4, 2000)])
@pytest.mark.parametrize("visits_per_page_per_day", [0.01, 0.1, 1.0, 10.0])
def test_the_plan_spends_the_budget_within_the_bounds(seed, size, visits_per_page_per_day):
    groups = random_groups(seed, size)
    budget = sum(g.count for g in groups) * visits_per_page_per_day / DAY
    if budget <= sum(g.count for g in groups) / YEAR:
        budget *= 10  # keep it feasible
    plan = solve_price(groups, budget, HOUR, YEAR, 7 * DAY)
    assert 0.0 < plan.price < math.inf
    assert plan.planned == pytest.approx(budget, rel=0.01)
    assert spent(groups, plan, HOUR, YEAR) == pytest.approx(plan.planned, rel=1e-9)
    for g in groups:
        assert HOUR * (1 - 1e-12) <= interval_for(g.rate, g.weight, plan, HOUR, YEAR, g.exploring) <= YEAR * (1 + 1e-12)


def test_a_higher_weight_never_gets_fewer_visits():
    rates = [0.0] + [math.exp(e) / DAY for e in (-6, -3, -1, 0, 1, 2, 4)]
    weights = [0.1, 0.5, 1.0, 2.0, 5.0, 50.0]
    groups = [Group(rate, weight, 10) for rate in rates for weight in weights]
    for per_day in (0.05, 0.5, 5.0):
        plan = solve_price(groups, len(groups) * 10 * per_day / DAY, 60.0, YEAR, DAY)
        for rate in rates:
            intervals = [interval_for(rate, weight, plan, 60.0, YEAR) for weight in weights]
            assert intervals == sorted(intervals, reverse=True)


def test_at_a_fixed_price_visits_rise_then_fall_with_the_rate():
    plan = Plan(price=1.0, budget=0.0, planned=0.0, explore_freq=0.0)
    rates = [10 ** (e / 10) for e in range(-60, 11)]  # λ/w up to 10 > 1/μ: beyond it, not worth it
    freqs = [1.0 / interval_for(rate, 1.0, plan, 1e-9, 1e12) for rate in rates]
    peak = freqs.index(max(freqs))
    assert 10 < peak < len(rates) - 10
    assert freqs[:peak + 1] == sorted(freqs[:peak + 1])
    assert freqs[peak:] == sorted(freqs[peak:], reverse=True)
    assert freqs[-1] == pytest.approx(1e-12)  # the minimum frequency
    assert freqs[0] == pytest.approx(math.sqrt(rates[0] / 2), rel=0.01)  # the slow-page limit


def test_at_a_tight_budget_a_very_fast_page_gets_the_minimum():
    groups = [Group(1 / DAY, 1.0, 100), Group(1 / (7 * DAY), 1.0, 100), Group(100 / DAY, 1.0, 10)]
    plan = solve_price(groups, 100 / DAY, 60.0, 30 * DAY, DAY)
    assert interval_for(100 / DAY, 1.0, plan, 60.0, 30 * DAY) == 30 * DAY
    assert interval_for(1 / DAY, 1.0, plan, 60.0, 30 * DAY) < 2 * DAY
    # with plenty of budget the same page is visited as often as allowed
    rich = solve_price(groups, 1e4 / DAY, 60.0, 30 * DAY, DAY)
    assert interval_for(100 / DAY, 1.0, rich, 60.0, 30 * DAY) < HOUR


def total_freshness(rates, freqs):
    return sum(freshness(rate, freq) for rate, freq in zip(rates, freqs))


def lognormal_rates(seed, size, sigma):
    rng = random.Random(seed)
    return [math.exp(rng.gauss(0.0, sigma)) / DAY for _ in range(size)]


@pytest.mark.parametrize("rates, budget", [
    ([9 / DAY, 1 / DAY], 2 / DAY),  # a page changing 9 times a day, one once a day, 2 visits a day
    ([9 / DAY, 1 / DAY], 10 / DAY),
    ([i / DAY for i in range(1, 6)], 5 / DAY),
    (lognormal_rates(11, 1000, 1.5), 1000 / DAY),
    (lognormal_rates(12, 1000, 0.5), 300 / DAY),
    (lognormal_rates(13, 1000, 2.5), 3000 / DAY),
])
def test_optimal_beats_uniform_beats_proportional(rates, budget):
    low, high = 1e-3, 1e9  # bounds wide enough not to matter
    groups = [Group(rate, 1.0, 1) for rate in rates]
    plan = solve_price(groups, budget, low, high, DAY)
    optimal = [1.0 / interval_for(rate, 1.0, plan, low, high) for rate in rates]
    assert sum(optimal) == pytest.approx(budget, rel=1e-3)
    uniform = [1.0 / uniform_interval(len(rates), budget)] * len(rates)
    proportional = [budget * rate / sum(rates) for rate in rates]
    best, even, chasing = (total_freshness(rates, f) for f in (optimal, uniform, proportional))
    assert best >= even >= chasing
    assert best > 1.01 * chasing


def test_exploration_is_capped_at_its_share_of_the_budget():
    groups = [Group(0.0, 1.0, 1000, exploring=True), Group(1 / DAY, 1.0, 1000)]
    # a cheap exploration: every week, well inside half of 1000 visits a day
    plan = solve_price(groups, 1000 / DAY, HOUR, YEAR, 7 * DAY)
    assert plan.explore_freq == pytest.approx(1 / (7 * DAY))
    assert interval_for(0.0, 1.0, plan, HOUR, YEAR, exploring=True) == pytest.approx(7 * DAY)
    assert interval_for(0.0, 1.0, plan, HOUR, YEAR, exploring=False) == YEAR
    assert plan.planned == pytest.approx(1000 / DAY, rel=0.01)
    # an expensive one: every hour would be 24,000 visits a day; it gets half of 1000
    for share in (0.5, 0.2):
        plan = solve_price(groups, 1000 / DAY, HOUR, YEAR, HOUR, max_explore_share=share)
        assert 1000 * plan.explore_freq == pytest.approx(share * 1000 / DAY)
        assert plan.planned == pytest.approx(1000 / DAY, rel=0.01)
        assert 1000 / interval_for(0.0, 1.0, plan, HOUR, YEAR, exploring=True) <= share * 1000 / DAY * (1 + 1e-9)


@pytest.mark.parametrize("budget", [20 / DAY, 200 / DAY, 2000 / DAY])
def test_an_exploring_page_gets_its_optimum_or_the_exploration_interval_whichever_is_shorter(budget):
    rates = [0.0, 1 / YEAR, 1 / (30 * DAY), 1 / DAY, 10 / DAY]
    groups = [Group(rate, 1.0, 10, exploring) for rate in rates for exploring in (False, True)]
    plan = solve_price(groups, budget, 60.0, YEAR, 7 * DAY)
    assert plan.explore_freq == pytest.approx(1 / (7 * DAY))  # 50 pages every week fit in half of any of these
    assert plan.planned == pytest.approx(budget, rel=0.01)
    shortened = 0
    for rate in rates:
        optimum = interval_for(rate, 1.0, plan, 60.0, YEAR)
        assert interval_for(rate, 1.0, plan, 60.0, YEAR, exploring=True) == min(optimum, 1 / plan.explore_freq)
        shortened += optimum > 7 * DAY
    assert shortened >= 1


def test_no_groups():
    plan = solve_price([], 1.0, HOUR, YEAR, DAY)
    assert (plan.price, plan.planned) == (0.0, 0.0)
    assert solve_price([Group(1.0, 1.0, 0)], 1.0, HOUR, YEAR, DAY).planned == 0.0


@pytest.mark.parametrize("budget", [0.0, -1.0, 999 / YEAR])
def test_a_budget_that_cannot_pay_for_max_interval_says_so(budget):
    groups = [Group(1 / DAY, 1.0, 500, exploring=True), Group(0.0, 1.0, 500)]
    plan = solve_price(groups, budget, HOUR, YEAR, DAY)
    assert plan.price == math.inf
    assert plan.planned == pytest.approx(1000 / YEAR) and plan.planned > plan.budget
    for g in groups:
        assert interval_for(g.rate, g.weight, plan, HOUR, YEAR, g.exploring) == YEAR


def test_a_budget_that_pays_for_everything_at_min_interval():
    groups = [Group(1 / DAY, 1.0, 10), Group(0.0, 1.0, 10), Group(0.0, 1.0, 10, exploring=True),
              Group(1 / YEAR, 0.0, 10)]
    plan = solve_price(groups, 1.0, HOUR, YEAR, DAY)
    assert plan.price == 0.0
    assert interval_for(1 / DAY, 1.0, plan, HOUR, YEAR) == HOUR
    assert interval_for(0.0, 1.0, plan, HOUR, YEAR) == YEAR  # never seen changing: nothing to gain
    assert interval_for(0.0, 1.0, plan, HOUR, YEAR, exploring=True) == DAY
    assert interval_for(1 / YEAR, 0.0, plan, HOUR, YEAR) == YEAR  # worthless
    assert plan.planned == pytest.approx(10 / HOUR + 20 / YEAR + 10 / DAY)


def test_all_rates_zero():
    groups = [Group(0.0, 1.0, 100), Group(0.0, 5.0, 100, exploring=True)]
    plan = solve_price(groups, 1.0, HOUR, YEAR, DAY)
    assert plan.price == 0.0 and plan.planned == pytest.approx(100 / YEAR + 100 / DAY)


def test_bad_bounds_are_refused():
    for low, high in [(0.0, DAY), (DAY, HOUR), (HOUR, math.inf)]:
        with pytest.raises(ValueError):
            solve_price([Group(1.0, 1.0, 1)], 1.0, low, high, DAY)


# ---------------------------------------------------------------- baselines

def test_uniform_interval():
    assert uniform_interval(1000, 1000 / DAY) == pytest.approx(DAY)
    assert uniform_interval(10, 0.0) == math.inf


@pytest.mark.parametrize("previous, changed, expected", [
    (DAY, True, 0.8 * DAY), (DAY, False, 1.4 * DAY), (HOUR, True, HOUR), (YEAR, False, YEAR),
])
def test_adaptive_interval(previous, changed, expected):
    assert adaptive_interval(previous, changed, min_interval=HOUR, max_interval=YEAR) == pytest.approx(expected)
