"""frontier.belief: the posterior over a page's change rate under a prior fitted to the crawl,
the visit frequency it buys, and the price that spends a budget. Pure math: no database;
simulated Poisson pages with known rates, seeded."""

import math
import random

import pytest

from frontier import belief, changerate
from frontier.changerate import ChangeStats, observe

DAY = 86400.0
RATES = belief.grid(3600.0, 60 * DAY)
FREQS = belief.frequencies(3600.0, 60 * DAY)


def _watched(rate: float, interval: float, visits: int, rng: random.Random, dated: bool = False) -> ChangeStats:
    """A page changing at `rate` (per second), visited every `interval` seconds."""
    stats = ChangeStats()
    for _ in range(visits):
        changed = rng.random() < -math.expm1(-rate * interval)
        since = rng.expovariate(rate) if changed and dated else None
        stats = observe(stats, interval, changed, since if since is not None and since <= interval else None)
    return stats


def _expected_freshness(post, freq):
    return sum(p * changerate.freshness(r, freq) for p, r in zip(post, RATES))


def test_the_grid_spans_the_bounds_on_half_octaves():
    assert RATES[0] == 0.0
    assert RATES[1] == pytest.approx(0.01 / (60 * DAY)) and RATES[-1] >= 4 / 3600.0 > RATES[-2]
    assert all(b / a == pytest.approx(math.sqrt(2)) for a, b in zip(RATES[1:], RATES[2:]))
    assert FREQS[0] == pytest.approx(1 / (60 * DAY)) and FREQS[-1] == pytest.approx(1 / 3600.0)


def test_the_posterior_of_a_page_watched_long_finds_its_rate():
    rng = random.Random(3)
    for rate_per_day in (0.05, 0.5, 3.0):
        stats = _watched(rate_per_day / DAY, 0.5 / rate_per_day * DAY, 200, rng)
        post = belief.posterior(belief.log_likelihood(stats, RATES), belief.flat(RATES))
        assert belief.mean_rate(post, RATES) * DAY == pytest.approx(rate_per_day, rel=0.25), rate_per_day


def test_a_page_seen_changing_does_not_have_rate_zero_and_one_never_seen_changing_may():
    changed = observe(ChangeStats(), DAY, True)
    assert belief.log_likelihood(changed, RATES)[0] == -math.inf
    unchanged = observe(ChangeStats(), DAY, False)
    post = belief.posterior(belief.log_likelihood(unchanged, RATES), belief.flat(RATES))
    assert post[0] > 0 and belief.mean_rate(post, RATES) > 0  # unchanged once: maybe slow, maybe never
    longer = observe(unchanged, 30 * DAY, False)
    assert belief.mean_rate(belief.posterior(belief.log_likelihood(longer, RATES), belief.flat(RATES)), RATES) < \
        belief.mean_rate(post, RATES)  # the longer it is watched unchanged, the slower it is believed


def test_em_finds_the_crawls_mixture_of_rates():
    """Half the pages change twice a day, half every twenty days; each is seen five times, a
    day apart: too few visits to tell one page apart for sure, enough for the crawl."""
    rng = random.Random(11)
    logliks = []
    for i in range(600):
        rate = (2.0 if i % 2 else 0.05) / DAY
        logliks.append(belief.log_likelihood(_watched(rate, DAY, 5, rng), RATES))
    prior = belief.fit_prior(logliks, belief.flat(RATES), iterations=200, smoothing=0.1)
    near = lambda center: sum(p for p, r in zip(prior, RATES) if r and abs(math.log2(r * DAY / center)) <= 1.5)
    assert near(2.0) == pytest.approx(0.5, abs=0.15) and near(0.05) + prior[0] + sum(
        p for p, r in zip(prior, RATES) if 0 < r * DAY < 0.05 / 2 ** 1.5) == pytest.approx(0.5, abs=0.15)
    assert sum(prior) == pytest.approx(1.0)


def test_the_fitted_prior_leaves_room_for_every_rate():
    """A crawl of pages changing four times a day and monthly, visited daily for a week: the
    maximum-likelihood fit, warm-started plan after plan, gathers the mass on a few rates and
    leaves the rest near 0, where no page's own evidence can take its posterior. A tenth of
    the prior's weight spread evenly keeps every rate possible (bench.recrawlsim, 16 webs at
    budget 0.2: 57 % of the oracle's gain with one pseudo-page in all, 58 % with a tenth)."""
    rng = random.Random(5)
    logliks = [belief.log_likelihood(_watched((4.0 if i % 2 else 1 / 30) / DAY, DAY, 7, rng), RATES)
               for i in range(600)]
    floor = belief.SMOOTHING / (1 + belief.SMOOTHING) / len(RATES)

    def fitted(smoothing):
        return belief.fit_prior(logliks, belief.flat(RATES), iterations=1000, smoothing=smoothing)

    prior, spiky = fitted(belief.SMOOTHING), fitted(1 / 600)  # a tenth; one pseudo-page in all (before)
    assert max(spiky) > 0.4 and min(spiky) < floor / 10  # a spike at one rate; others ruled out
    assert max(prior) < 0.15 and min(prior) >= floor
    faster, slower = (sum(p for p, r in zip(prior, RATES) if test(r * DAY)) for test in (lambda r: r >= 2,
                                                                                       lambda r: r <= 1 / 7))
    assert faster == pytest.approx(0.5, abs=0.15) and slower == pytest.approx(0.5, abs=0.15)  # the mixture


def test_the_posterior_frequency_beats_planning_by_the_posterior_mean():
    """A page whose belief is split between "hopeless" (an hour's changes) and "slow" (a
    change a week): the mean rate is neither, and its certainty-equivalent frequency buys less
    expected freshness, at the same price, than the posterior's own."""
    post = [0.0] * len(RATES)
    fast = min(range(1, len(RATES)), key=lambda k: abs(math.log(RATES[k] * 3600)))
    slow = min(range(1, len(RATES)), key=lambda k: abs(math.log(RATES[k] * 7 * DAY)))
    post[fast], post[slow] = 0.5, 0.5
    price = 2e5  # about a visit every few days for a weekly page
    f_post = belief.frequency(belief.value_curve(post, RATES, FREQS), FREQS, 1.0, price)
    f_mean = changerate._optimal_freq(belief.mean_rate(post, RATES), 1.0, price, FREQS[0], FREQS[-1])

    def net(freq):  # what a plan maximises: freshness less the visits' price
        return _expected_freshness(post, freq) - price * freq

    assert net(f_post) > net(f_mean)
    assert FREQS[0] < f_post < FREQS[-1]


def test_the_frequency_is_where_the_marginal_value_meets_the_price():
    post = belief.posterior(belief.log_likelihood(_watched(0.3 / DAY, DAY, 20, random.Random(5)), RATES),
                            belief.flat(RATES))
    curve = belief.value_curve(post, RATES, FREQS)
    assert all(a > b for a, b in zip(curve, curve[1:]))  # more visits, less each
    for weight, price in ((1.0, 1e4), (1.0, 1e5), (5.0, 1e5)):
        f = belief.frequency(curve, FREQS, weight, price)
        exact = weight * sum(p * changerate._gain(r / f) / r for p, r in zip(post, RATES) if r)
        assert exact == pytest.approx(price, rel=0.02)
    assert belief.frequency(curve, FREQS, 1.0, 1e-9) == FREQS[-1]  # cheap: the most visits
    assert belief.frequency(curve, FREQS, 1.0, 1e12) == FREQS[0]  # dear: the least
    assert belief.frequency([0.0] * len(FREQS), FREQS, 1.0, 1e4) == FREQS[0]  # never changes
    assert belief.frequency(curve, FREQS, 5.0, 1e5) > belief.frequency(curve, FREQS, 1.0, 1e5)  # weight buys visits


@pytest.mark.parametrize("budget_per_day", [100.0, 400.0, 3000.0])
def test_the_price_spends_the_budget(budget_per_day):
    rng = random.Random(int(budget_per_day))
    curves = []
    for _ in range(300):
        rate = rng.choice((0.0, 0.01, 0.2, 1.0, 10.0)) / DAY
        post = belief.posterior(belief.log_likelihood(_watched(rate, 2 * DAY, 4, rng), RATES), belief.flat(RATES))
        curves.append((belief.value_curve(post, RATES, FREQS), rng.choice((1.0, 1.5, 5.0))))
    budget = budget_per_day / DAY
    price = belief.solve_price(curves, FREQS, budget, scale=10.0)  # 300 sampled of 3,000
    spent = 10.0 * sum(belief.frequency(curve, FREQS, weight, price) for curve, weight in curves)
    floor, ceiling = 3000 * FREQS[0], 3000 * FREQS[-1]
    assert floor < budget < ceiling
    assert spent == pytest.approx(budget, rel=0.01)
    assert belief.solve_price(curves, FREQS, 2 * ceiling, scale=10.0) == 0.0  # enough for everything
    dear = belief.solve_price(curves, FREQS, floor / 2, scale=10.0)  # not even the least for all
    assert sum(belief.frequency(c, FREQS, w, dear) for c, w in curves) == pytest.approx(300 * FREQS[0])
    assert belief.solve_price([], FREQS, budget) == 0.0


def test_the_prior_survives_its_text_and_a_changed_grid_starts_flat():
    prior = belief.fit_prior([belief.log_likelihood(observe(ChangeStats(), DAY, True), RATES)], belief.flat(RATES))
    text = belief.prior_to_text(RATES, prior)
    assert belief.prior_from_text(text, RATES) == pytest.approx(prior, rel=1e-5)
    other = belief.grid(600.0, 30 * DAY)  # the interval bounds changed
    assert belief.prior_from_text(text, other) == belief.flat(other)
    for bad in ("", "[]", '{"low":1}', "{", '{"low":1e-9,"n":2,"p":[-1,2]}'):
        assert belief.prior_from_text(bad, RATES) == belief.flat(RATES), bad
