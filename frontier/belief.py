"""What the crawler believes about how often a page changes, and how often it visits it
(the optimal recrawl policy, frontier/recrawl.py). Plain Python (stdlib only, no Django, no
database); units as in changerate.py: seconds, and rates and frequencies per second.

Why a belief and not an estimate. A page seen three times says little about its rate, and a
point estimate hides how little: planned by it, a page that changed at each of two visits
looks like one changing every few hours and is dropped as hopeless, and a page seen
unchanged twice looks like one that never changes. What a crawl of many pages does know is
how rates spread over its pages; each page's visits then narrow that spread down.

1. The grid: rates on half-octave steps from a hundredth of a change per longest revisit
   interval to four per shortest, and 0 (never changes): about 40 values.
2. The likelihood of a page's visits (changerate.ChangeStats) at every grid rate λ:
     unchanged for U seconds in all                 -λU
     changed within an interval t (undated)         log(1 - e^(-λt))   (the histogram's means)
     changed τ before the visit (Last-Modified)     log λ - λτ
   A change dated within the date's own second of the visit is recorded as unchanged for
   the part of the interval before that second and changed within the rest
   (recrawl._record), its exact likelihood.
3. The prior: the share of the crawl's pages at each rate, fitted by EM to a sample of the
   pages' likelihoods (the nonparametric maximum-likelihood mixing distribution, Kiefer &
   Wolfowitz 1956), with a tenth of its weight spread evenly over the grid: empirical Bayes.
   A page's posterior is the prior times its likelihood. Measured (bench.recrawlsim,
   docs/benchmarks.md): with a flat prior instead the policy reached 46 % of the oracle's
   gain on 8 webs at budget 0.2, not 52 %. The spread tenth because the maximum-likelihood
   fit is spiky: it gathers the mass on a few rates and leaves the others near 0, where no
   page's evidence can take its posterior (the bench's fastest pages were all believed to
   change a few times a day, and few pages never to change); on 16 webs it moved the share
   at budget 0.2 from 57 % to 58 % (least web 51 % to 54 %; with the responses' lag at 0.4 s
   57 % to 59 %, least 48 % to 55 %), at 0.3 63 % to 64 %, at 0.5 73 % to 75 %; on the
   real bench's one web at 0.2, in expectation (bench.freshness's expected freshness), 55 % to
   56 %.
4. How often: Cho & Garcia-Molina's optimum maximises Σ w·F(λ, f) under the budget, F the
   time-averaged freshness (changerate.freshness). Under a posterior the expected freshness
   E[F(λ, f)] is concave in f as each F is, and its marginal value is E[w·φ(λ/f)/λ]
   (φ(x) = 1 - (1 + x)e^(-x), changerate._gain): a page is visited at the frequency where that
   equals the budget's price μ, within the bounds. Planning by the posterior mean instead
   (certainty equivalence) reached 46 % on the same webs, not 52 %: a mixture of "hopeless"
   and "worth chasing" has a mean that is neither.
5. The price: the μ at which the pages' frequencies spend the budget, solved on a sample of
   pages and scaled to the crawl (at 2,000 pages the spend is known to about 2 %, which the
   release's token bucket absorbs). Each page's marginal value is tabulated at TABLE
   frequencies between the bounds; a visit's frequency is read from the same table, so the
   plan and the visits agree.
6. Hopeless pages, and censored ones (issue 51). The rule: a rate λ is hopeless at this
   budget, past its reach, when even the least frequent visit buys less than the price,
   w·φ(λ/f_min)/λ <= μ (about λ >= w/μ); the optimum gives such a page the least visits
   (every CRAWLER_RECRAWL_MAX_INTERVAL). The price μ is what the budget makes one more
   fetch a second cost (planning.py), so a smaller budget lowers the threshold, and a
   page's importance w (its score: recrawl.weight_of) raises it: a weightier page is
   chased at faster rates. A page changed at every visit and never dated (censored) is
   only known to change at least about once an interval: its likelihood is flat above
   that, so its posterior stays split between "hopeless" and "worth chasing", and planned
   by it the page sits at the interval where the two balance, where no visit ever tells
   them apart (on a web with pages changing every 2-6 s and a 10 s shortest interval: 85
   fetches an hour to such pages, where the optimum gives 15). Such a page, while its
   posterior is split (at least PROBE_SPLIT each side) and would visit it more than the
   least, probes: it is looked at the shortest interval (or as often as the plan's share
   of exploring allows), PROBES times at most, counted as looks however late each came
   (probes()). Seen unchanged, it is planned by its posterior. Changed at every probe too,
   when SHORT_PROBES or more of its changes came at about the shortest interval (within
   twice it), it is at least that fast, and it is hopeless at this budget while
   PROBE_SPLIT of its posterior or more is past the threshold: the least visits (with a
   heavy enough weight, none of it is, and it is planned by its posterior). Changed at
   looks that all came late (on the bench's compressed clock a look planned at the
   shortest interval comes several of them later), it is planned by its posterior: those
   looks say only that it changes at least about once in their longer intervals. Being
   changed at a visit is never itself a reason to come back sooner.
"""

import json
import math

from .changerate import ChangeStats, _gain

# Frequencies at which a page's marginal value is tabulated (log-spaced between the bounds);
# between two of them the frequency is interpolated on log scales.
TABLE = 48
# EM: the share of the prior's weight spread evenly over the grid, as pseudo-pages (keeps
# every rate possible for a page whose evidence points there; one pseudo-page in all, as
# before: 57 % of the oracle's gain on 16 webs at budget 0.2, against 58 %).
SMOOTHING = 0.1
# Posterior masses below this are left out of the marginal value (they change nothing).
_NEGLIGIBLE = 1e-9


def grid(min_interval: float, max_interval: float) -> tuple[float, ...]:
    """0 and rates on half-octave steps from 0.01 / max_interval to 4 / min_interval."""
    low = 0.01 / max_interval
    steps = int(math.ceil(2.0 * math.log2(4.0 / min_interval / low))) + 1
    return (0.0,) + tuple(low * 2.0 ** (k / 2.0) for k in range(steps))


def frequencies(min_interval: float, max_interval: float) -> tuple[float, ...]:
    """The TABLE frequencies, from 1 / max_interval to 1 / min_interval."""
    low, high = 1.0 / max_interval, 1.0 / min_interval
    return tuple(low * (high / low) ** (j / (TABLE - 1)) for j in range(TABLE))


def log_likelihood(stats: ChangeStats, rates: tuple[float, ...]) -> list[float]:
    """log P(the page's visits | λ) for every grid rate (-inf where impossible: a page seen
    changing does not have rate 0). Faded counts weigh as they are."""
    means = [(count, seconds / count) for _, count, seconds in stats.changed if count > 0]
    unchanged = stats.unchanged_seconds + stats.lm_seconds
    changed = stats.changes > 1e-9
    out = []
    for rate in rates:
        if rate == 0.0:
            out.append(-math.inf if changed else 0.0)
            continue
        value = -rate * unchanged
        for count, mean in means:
            value += count * math.log(-math.expm1(-rate * mean))
        if stats.lm_changes:
            value += stats.lm_changes * math.log(rate)
        out.append(value)
    return out


def posterior(loglik: list[float], prior: list[float]) -> list[float]:
    """prior × likelihood, normalised. A likelihood the prior gives no room for (every
    possible rate at prior 0) falls back to the likelihood alone."""
    weighted = [(math.log(p) + ll) if p > 0.0 and ll > -math.inf else -math.inf for p, ll in zip(prior, loglik)]
    top = max(weighted)
    if top == -math.inf:
        weighted = list(loglik)
        top = max(weighted)
    masses = [math.exp(w - top) if w > -math.inf else 0.0 for w in weighted]
    total = sum(masses)
    return [m / total for m in masses]


def flat(rates: tuple[float, ...]) -> list[float]:
    return [1.0 / len(rates)] * len(rates)


def fit_prior(logliks: list[list[float]], start: list[float], iterations: int = 20,
              smoothing: float = SMOOTHING) -> list[float]:
    """EM for the mixing distribution over the grid, from `start` (the last plan's prior:
    a few iterations a plan keep it current), with `smoothing` × the pages as pseudo-pages
    spread evenly over the grid."""
    n = len(start)
    rows = []
    for loglik in logliks:
        top = max(loglik)
        if top > -math.inf:
            rows.append([math.exp(ll - top) if ll > -math.inf else 0.0 for ll in loglik])
    if not rows:
        return list(start)
    prior = list(start)
    pseudo = smoothing * len(rows) / n
    for _ in range(iterations):
        shares = [pseudo] * n
        for row in rows:
            total = sum(p * l for p, l in zip(prior, row))
            if total > 0.0:
                for k in range(n):
                    if row[k]:
                        shares[k] += prior[k] * row[k] / total
        whole = sum(shares)
        prior = [s / whole for s in shares]
    return prior


_tables: dict = {}


def _marginal_table(rates: tuple[float, ...], freqs: tuple[float, ...]) -> list[list[float]]:
    """φ(λ/f)/λ for every grid rate (rows) and table frequency (columns); 0 for λ = 0."""
    key = (rates, freqs)
    table = _tables.get(key)
    if table is None:
        table = [[_gain(rate / f) / rate if rate > 0.0 else 0.0 for f in freqs] for rate in rates]
        if len(_tables) > 8:
            _tables.clear()
        _tables[key] = table
    return table


def value_curve(post: list[float], rates: tuple[float, ...], freqs: tuple[float, ...]) -> list[float]:
    """The expected marginal value E[φ(λ/f)/λ] at each table frequency (weight 1):
    decreasing in f."""
    table = _marginal_table(rates, freqs)
    curve = [0.0] * len(freqs)
    for mass, row in zip(post, table):
        if mass > _NEGLIGIBLE:
            for j, v in enumerate(row):
                curve[j] += mass * v
    return curve


def frequency(curve: list[float], freqs: tuple[float, ...], weight: float, price: float,
              probe: tuple[float, list[tuple[float, float]]] | None = None) -> float:
    """The frequency at which weight × curve equals the price, within the table's bounds.
    A censored page (censored()) passes `probe` = (its frequency of probes, probe_of(post)):
    while it may probe (a frequency > 0), that frequency (if more) when its posterior is split
    at this price, at least PROBE_SPLIT of it past the budget's reach and as much within it
    (hopeless_share), and would visit it more than the least. Once its probes are spent (a
    frequency of 0: probes()), the least visits when PROBE_SPLIT of its posterior or more is
    past the budget's reach: changed at every look, it is taken to be as fast as those looks
    could show, hopeless at this price (module docstring, 6). A page surely hopeless gets the
    least visits at once, one surely worth chasing its own. Both are counted smoothly in the
    price (the split over a half-octave of it, the least visits up to twice them), so that a
    group of alike pages does not start or stop probing all at one price: the plan's spend
    stays continuous."""
    wanted = _frequency(curve, freqs, weight, price)
    if probe is None:
        return wanted
    if price <= 0.0 or weight <= 0.0 or curve[0] <= 0.0:
        return wanted
    share = _share(probe[1], weight, price)
    if probe[0] <= 0.0:  # probes spent, still changed at every look
        gate = min(1.0, max(0.0, 2.0 * share / PROBE_SPLIT - 1.0))  # 0 below split/2, 1 from split
        return wanted * (freqs[0] / wanted) ** gate
    gate = min(1.0, max(0.0, 2.0 * min(share, 1.0 - share) / PROBE_SPLIT - 1.0))  # 0 below split/2, 1 from split
    # and only while the posterior would visit it more than the least (fully from twice that)
    gate *= min(1.0, max(0.0, math.log2(wanted / freqs[0])))
    return wanted + gate * max(0.0, min(probe[0], freqs[-1]) - wanted)


def _share(probe: list[tuple[float, float]], weight: float, price: float) -> float:
    """Σ mass over rates whose value at the least frequency is below the price, each rate's
    step spread over a half-octave of price."""
    if price <= 0.0 or weight <= 0.0:
        return 0.0 if price <= 0.0 else 1.0
    total = 0.0
    for value, mass in probe:
        if value <= 0.0:
            total += mass
            continue
        total += mass * min(1.0, max(0.0, 0.5 + math.log(price / (weight * value)) / _HALF_OCTAVE))
    return total


_HALF_OCTAVE = 0.5 * math.log(2.0)


def probe_of(post: list[float], rates: tuple[float, ...], freqs: tuple[float, ...]) -> list[tuple[float, float]]:
    """(φ(λ/f_min)/λ, posterior mass) of every changing grid rate: hopeless_share at any
    weight and price."""
    table = _marginal_table(rates, freqs)
    return [(row[0], mass) for mass, rate, row in zip(post, rates, table) if rate > 0.0 and mass > _NEGLIGIBLE]


def _frequency(curve: list[float], freqs: tuple[float, ...], weight: float, price: float) -> float:
    if weight <= 0.0 or curve[0] <= 0.0:
        return freqs[0]  # worthless, or always fresh: the least visits
    target = price / weight
    if curve[-1] >= target:
        return freqs[-1]
    if curve[0] <= target:
        return freqs[0]
    low, high = 0, len(freqs) - 1  # curve[low] > target >= curve[high]
    while high - low > 1:
        middle = (low + high) // 2
        if curve[middle] > target:
            low = middle
        else:
            high = middle
    a, b = curve[low], curve[high]
    share = (math.log(a) - math.log(target)) / (math.log(a) - math.log(b)) if b > 0.0 else 0.0
    return freqs[low] * (freqs[high] / freqs[low]) ** min(1.0, max(0.0, share))


def hopeless_share(post: list[float], rates: tuple[float, ...], freqs: tuple[float, ...], weight: float,
                   price: float) -> float:
    """The posterior mass at rates the budget cannot follow: where even the least frequent
    visit buys less than the price (w·φ(λ/f_min)/λ <= μ, about λ >= w/μ), so that Cho &
    Garcia-Molina's optimum gives the page the least visits (each rate's step spread over a
    half-octave of price). A weightier page has a higher threshold: importance is what may
    make a fast page worth chasing."""
    return _share(probe_of(post, rates, freqs), weight, price)


# A page whose visits all saw a change, undated (censored), is looked at the shortest
# interval (the plan's frequency of probes), PROBES times at most (probes), while its
# posterior leaves at least PROBE_SPLIT of its mass both past the budget's reach and within
# it (frequency); its probes spent, it gets the least visits while PROBE_SPLIT of its
# posterior is past that reach.
PROBES = 4
PROBE_SPLIT = 0.1
SHORT_PROBES = 2  # changes seen at about the shortest interval for the hopeless verdict (probe_for)


def censored(stats) -> bool:
    """Whether every observation of a page saw a change and none was dated (no Last-Modified,
    no interval seen unchanged): its likelihood then rises with the rate all the way up, a
    lower bound and nothing more (changed at every visit every t seconds: a rate of at least
    about 1/t, however much faster)."""
    return (stats.visits > 0 and stats.changes >= stats.visits * (1.0 - 1e-6) and stats.lm_changes <= 1e-9
            and stats.unchanged_seconds <= 1e-9)


def probes(stats) -> float:
    """How many looks a censored page has had after its first changed one (each planned as a
    probe), however long each took. Counting only looks near the shortest interval, a real
    crawl's lag (a release, a queue, a busy host) stretched them past it and the page probed
    forever: on the real-time web, pages changing every 2-6 s were looked at every 40 s or so
    for the whole run, and the plan counted them at the shortest interval (issue 51)."""
    return max(0.0, stats.changes - 1.0)


def short_probes(stats, min_interval: float) -> float:
    """How many of a page's changed, undated observations came at about the shortest
    interval (at most twice as long: a release's, a queue's and a session's lag)."""
    return sum(count for _, count, seconds in stats.changed if count > 0 and seconds / count <= 2.0 * min_interval)


def probe_for(stats, probe_freq: float, post: list[float], rates: tuple[float, ...],
              freqs: tuple[float, ...], min_interval: float) -> tuple[float, list[tuple[float, float]]] | None:
    """frequency()'s `probe` for a page: None unless censored; (probe_freq, …) while it
    may probe (fewer than PROBES probes, with a little room for faded counts); once they
    are spent, (0.0, …) when at least SHORT_PROBES of its changes came at about the
    shortest interval (short_probes: evidence of a rate at least that fast, the hopeless
    verdict's condition), else None: looks that came late say only that the page changes
    at least about once in their longer intervals, and it is planned by its posterior."""
    if not censored(stats):
        return None
    if probes(stats) <= PROBES - 0.5:
        return probe_freq, probe_of(post, rates, freqs)
    if short_probes(stats, min_interval) >= SHORT_PROBES - 0.5:
        return 0.0, probe_of(post, rates, freqs)
    return None


def mean_rate(post: list[float], rates: tuple[float, ...]) -> float:
    return sum(p * r for p, r in zip(post, rates))


PRICE_TOLERANCE = 1e-3  # of log price: solve_price's precision


def solve_price(curves: list[tuple], freqs: tuple[float, ...], budget: float, scale: float = 1.0) -> float:
    """The price at which `scale` × Σ frequency(curve, weight[, probe]) over (curve, weight)
    pairs (or triples with a probe) spends `budget`; 0 when even every page at the most
    frequent visits fits in it, and the largest marginal value there is when not even the
    least frequent ones do (then every page gets the least)."""
    if not curves:
        return 0.0

    def spend(price: float) -> float:
        return scale * sum(frequency(curve, freqs, weight, price, *probe) for curve, weight, *probe in curves)

    values = [weight * v for curve, weight, *_ in curves for v in (curve[0], curve[-1]) if weight * v > 0.0]
    if not values or spend(0.0) <= budget:
        return 0.0
    low, high = math.log(min(values)) - 1.0, math.log(max(values)) + 1.0
    if spend(math.exp(high)) > budget:
        return math.exp(high)
    # bisection on log price (spend falls as the price rises), to a thousandth of the price:
    # each step is every page's frequency, and the plan runs in the crawl's loop (runners)
    while high - low > PRICE_TOLERANCE:
        middle = (low + high) / 2.0
        if spend(math.exp(middle)) > budget:
            low = middle
        else:
            high = middle
    return math.exp(high)


# The prior as stored on the plan row: the grid it is for, and the shares.

def prior_to_text(rates: tuple[float, ...], prior: list[float], probe: float | None = None) -> str:
    """The stored prior, and with it the plan's frequency of probes ("f", when given)."""
    document = {"low": rates[1], "n": len(rates), "p": [float(format(p, ".6g")) for p in prior]}
    if probe is not None:
        document["f"] = float(format(probe, ".6g"))
    return json.dumps(document, separators=(",", ":"))


def probe_from_text(text: str) -> float | None:
    """The plan's frequency of probes from a stored prior; None when it has none (a plan of
    the previous release: then probes come at the shortest interval)."""
    try:
        value = float(json.loads(text)["f"])
        return value if 0.0 < value < math.inf else None
    except Exception:  # no such plan: the default
        return None


def prior_from_text(text: str, rates: tuple[float, ...]) -> list[float]:
    """The stored prior if it is for this grid (the interval bounds did not change), else a
    flat one. Never raises: a prior is only a starting point."""
    try:
        document = json.loads(text)
        shares = [float(p) for p in document["p"]]
        if (document["n"] != len(rates) or len(shares) != len(rates)
                or not math.isclose(document["low"], rates[1], rel_tol=1e-6)
                or any(not 0.0 <= p < math.inf for p in shares) or sum(shares) <= 0.0):
            raise ValueError("another grid")
        total = sum(shares)
        return [p / total for p in shares]
    except Exception:  # anything wrong with it: start from nothing known
        return flat(rates)
