"""The recrawl plan (beat, every CRAWLER_RECRAWL_PLAN_SECONDS): what one more revisit must
buy to be worth it, stored in the one RecrawlPlan row that every visit reads (recrawl.py).

optimal  belief.py's plan. A random sample of the observed pages (at most
         CRAWLER_RECRAWL_PLAN_SAMPLE, read by random ids: a few thousand index probes,
         whatever the crawl's size; every page when there are no more) moves the crawl's
         prior over change rates on by EM from the last plan's, and the price is the one at
         which the sample's posterior frequencies, scaled to the pages counted, spend the
         budget. One count of the observed pages (and of those waiting for their first
         look) is the only statement that reads them all.
uniform  pages / budget.
oracle   changerate.solve_price over the true rates (benchmarks only), row by row.
adaptive no price: every page's interval is its own.

Then the visits the new plan wants sooner come sooner: CRAWLER_RECRAWL_RELEASE_BATCH fetched
pages at random (every one, when there are no more) get the interval the new plan gives
them, and those it shortens by more than a tenth are moved, in one statement. A visit's
interval is set with the price of its day; as the plan learns the crawl, the price moves,
and without this a page planned long in a dear hour waits that long (at budget 0.5, moving
every visit by the price's ratio instead spent 95 % of the budget and reached 65 % of the
oracle's gain, this 72–73 %: bench.recrawlsim, docs/benchmarks.md). Visits
the plan wants later keep their time: the release's budget holds them back anyway.
"""

import math
import random
from collections import Counter
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from common import bulksql
from common.bulksql import in_chunks

from . import belief, changerate, recrawl
from .models import RecrawlPlan, Url, UrlState

_URLS = Url._meta.db_table
OBSERVED = (UrlState.FETCHED, UrlState.QUEUED)
EM_ITERATIONS = 20  # a plan's EM steps, from the last plan's prior
SAMPLE_ROUNDS = 4  # random-id draws, each twice the last, before a sample is taken as it is
MOVE_BELOW = 0.9  # visits move sooner when their intervals would shrink below this share


def plan_recrawl(now: datetime | None = None) -> RecrawlPlan:
    """Solve the plan, store it, and move sooner the visits it wants sooner."""
    now = now or timezone.now()
    policy = settings.CRAWLER_RECRAWL_POLICY
    budget = recrawl._budget()
    pages, first_looks = observed_counts()
    # explore_freq: what the previous release's workers read for a page they explore
    prior_text, price, planned, explore_freq = "", 0.0, budget, 1.0 / settings.CRAWLER_RECRAWL_EXPLORE_INTERVAL
    if policy == "optimal":
        before = RecrawlPlan.objects.filter(pk=1).values("prior", "price", "planned").first()
        sampled = sample(settings.CRAWLER_RECRAWL_PLAN_SAMPLE, pages)
        if sampled or not before:
            price, prior, planned, probe = solve(sampled, pages, first_looks, before["prior"] if before else "",
                                                 budget)
            prior_text = belief.prior_to_text(recrawl._grid(), prior, probe)
        else:  # no page found this time (ids far apart): the last plan stands
            price, planned, prior_text = before["price"], before["planned"], before["prior"]
    elif policy == "oracle":
        solved = _oracle_plan(budget)
        price, planned, explore_freq = solved.price, solved.planned, solved.explore_freq
    plan, _ = RecrawlPlan.objects.update_or_create(pk=1, defaults=dict(
        price=price, explore_freq=explore_freq, budget=budget, planned=planned, pages=pages, solved_at=now,
        prior=prior_text, first_looks=first_looks))
    recrawl.forget_plan()
    if policy != "adaptive" and pages:  # adaptive: every page's interval is its own
        move_sooner(now, pages)
    return plan


def solve(sampled: list[tuple[str, int]], pages: int, first_looks: int, stored_prior: str,
          budget: float) -> tuple[float, list[float], float, float]:
    """The optimal policy's price, prior, planned spend (visits a second) and frequency of
    probes (belief.probing: censored pages looked at the shortest interval) from a sample of
    (change_stats, score) of `pages` observed pages, `first_looks` of them with nothing
    known yet. Those are looked at by recrawl.first_look, not by the price: what their looks
    take (all of them within the shortest interval, at most CRAWLER_RECRAWL_EXPLORE_SHARE of
    the budget) is set aside, and the price spends the rest on the known pages. Probes share
    what the looks leave of CRAWLER_RECRAWL_EXPLORE_SHARE: at the shortest interval when it
    allows, less often when not. Pure: bench.recrawlsim calls it too."""
    rates, freqs = recrawl._grid(), recrawl._frequencies()
    prior = belief.prior_from_text(stored_prior, rates) if stored_prior else belief.flat(rates)
    summaries = {text: changerate.from_text(text) for text, _ in sampled}
    known = [(text, score) for text, score in sampled if recrawl.has_evidence(summaries[text])]
    logliks = {text: belief.log_likelihood(summaries[text], rates) for text, _ in known}
    prior = belief.fit_prior([logliks[text] for text, _ in known], prior, iterations=EM_ITERATIONS)
    low = recrawl._bounds()[0]
    curves = {}
    for text, loglik in logliks.items():  # the curve, and the probe (recrawl.plan_interval)
        post = belief.posterior(loglik, prior)
        curves[text] = (belief.value_curve(post, rates, freqs), belief.probe_for(summaries[text], 1.0, post, rates, freqs, low))
    looks = min(first_looks / low, settings.CRAWLER_RECRAWL_EXPLORE_SHARE * budget)
    scale = (pages - first_looks) / max(1, len(known))
    # the pages that may probe, at any price (their probes not spent)
    probing = scale * sum(1 for text, _ in known if curves[text][1] is not None and curves[text][1][0] > 0.0)
    probe = min(freqs[-1], (settings.CRAWLER_RECRAWL_EXPLORE_SHARE * budget - looks) / probing) if probing else freqs[-1]
    probe = max(probe, freqs[0])
    pairs = [(curves[text][0], recrawl.weight_of(score),
              None if curves[text][1] is None else (probe if curves[text][1][0] > 0.0 else 0.0, curves[text][1][1]))
             for text, score in known]
    price = belief.solve_price(pairs, freqs, max(0.0, budget - looks), scale=scale)
    planned = looks + scale * sum(belief.frequency(curve, freqs, weight, price, p) for curve, weight, p in pairs)
    return price, prior, planned, probe


def observed_counts() -> tuple[int, int]:
    """The pages the plan covers (fetched or queued, visited at least once), and those of
    them with nothing known of their rate yet (waiting for their first look)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT count(*), coalesce(sum(CASE WHEN observations = 0 AND change_stats = '' THEN 1 ELSE 0 END), 0)
                FROM {_URLS} WHERE state IN (%s, %s) AND observed_at IS NOT NULL""", list(OBSERVED))
        pages, first_looks = cursor.fetchone()
    return int(pages), int(first_looks)


def sample(size: int, pages: int) -> list[tuple[str, int]]:
    """(change_stats, score) of up to `size` observed pages (at random past that)."""
    return [row[1:] for row in _at_random(size, pages, OBSERVED, ("change_stats", "score"))]


def _at_random(size: int, pages: int, states: tuple, columns: tuple[str, ...]) -> list[tuple]:
    """(id, *columns) of up to `size` observed pages in `states`: all of them when `pages`
    (how many observed pages there are) is no more, else rows at random ids (ids are dense
    enough: rows are never deleted in bulk), drawn in growing rounds until enough are such
    rows."""
    rows = Url.objects.filter(state__in=states).exclude(observed_at=None)
    if pages <= size:
        return list(rows.values_list("id", *columns)[:size])
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT min(id), max(id) FROM {_URLS}")
        lowest, highest = cursor.fetchone()
    if lowest is None:
        return []
    found: dict[int, tuple] = {}
    span = highest - lowest + 1
    draw = min(span, max(2 * size, math.ceil(1.5 * size * span / max(1, pages))))  # by the rows' density
    for _ in range(SAMPLE_ROUNDS):
        ids = random.sample(range(lowest, highest + 1), min(draw, span))
        for chunk in in_chunks(ids):
            found.update((row[0], row) for row in rows.filter(id__in=chunk).values_list("id", *columns))
        if len(found) >= size or draw >= span:
            break
        draw *= 2
    chosen = list(found.values())  # in the order the database gave them (by state, by id): shuffled
    return random.sample(chosen, size) if len(chosen) > size else chosen


def move_sooner(now: datetime, pages: int) -> int:
    """Give CRAWLER_RECRAWL_RELEASE_BATCH fetched pages (at random) the plan's interval and
    move those it shortens by more than MOVE_BELOW. Returns how many moved."""
    rows = _at_random(settings.CRAWLER_RECRAWL_RELEASE_BATCH, pages, (UrlState.FETCHED,),
                      ("url", "score", "observed_at", "change_stats", "recrawl_interval", "next_fetch_at"))
    return _moved([move for move in (sooner(*row, now=now) for row in rows) if move])


def sooner(url_id: int, url: str, score: int, observed_at: datetime, change_stats: str,
           interval: float | None, due: datetime | None, now: datetime) -> tuple | None:
    """(id, interval, next visit, the visit it counts from) when the plan in force shortens a
    fetched page's interval by more than MOVE_BELOW and brings its visit forward; None
    otherwise (bench.recrawlsim calls it too)."""
    stats = changerate.from_text(change_stats)
    if not interval or due is None or (settings.CRAWLER_RECRAWL_POLICY == "optimal"
                                       and not recrawl.has_evidence(stats)):
        return None  # not planned, or waiting for its first look (due at once)
    before = recrawl.Before(url_id, url, score, None, observed_at, change_stats, 0, None, interval)
    wanted = recrawl.plan_interval(before, stats, False)
    when = max(now, observed_at + timedelta(seconds=wanted))
    return (url_id, wanted, when, observed_at) if wanted < MOVE_BELOW * interval and when < due else None


def _moved(moves: list[tuple[int, float, datetime, datetime]]) -> int:
    """Set (id, interval, next visit, …) on the rows still fetched, not visited since (the
    visit they count from), and due later than that."""
    if not moves:
        return 0
    moves.sort()
    if connection.vendor == "postgresql":  # the rows locked in id order, tested on the lock's version
        with connection.cursor() as cursor:
            cursor.execute(
                f"""WITH {bulksql.locked(_URLS, columns=("state", "next_fetch_at", "observed_at"))}
                    UPDATE {_URLS} u SET recrawl_interval = v.seconds, next_fetch_at = v.due
                    FROM locked JOIN unnest(%b::bigint[], %b::float8[], %b::timestamptz[], %b::timestamptz[])
                         AS v(id, seconds, due, observed) USING (id)
                    WHERE u.id = locked.id AND locked.state = %s AND locked.next_fetch_at > v.due
                      AND locked.observed_at = v.observed""",
                [[m[0] for m in moves], *([m[i] for m in moves] for i in range(4)), UrlState.FETCHED])
            return cursor.rowcount
    moved = 0
    with transaction.atomic():
        for url_id, seconds, when, observed_at in moves:
            moved += Url.objects.filter(id=url_id, state=UrlState.FETCHED, next_fetch_at__gt=when,
                                        observed_at=observed_at).update(next_fetch_at=when, recrawl_interval=seconds)
    return moved


# --- the oracle (benchmarks): the true rates, row by row ------------------------------------

def _oracle_plan(budget: float) -> changerate.Plan:
    rows = Url.objects.filter(state__in=OBSERVED).exclude(observed_at=None).values_list("url", "score")
    return oracle_solve(rows.iterator(chunk_size=5000), budget)


def oracle_solve(pages, budget: float) -> changerate.Plan:
    """The oracle's plan for (url, score) pairs, by their true rates. Pure:
    bench.recrawlsim calls it too."""
    low, high = recrawl._bounds()
    counts = Counter()
    for url, score in pages:
        counts[(recrawl._rate_class(recrawl.oracle_rate(url, 0.0) * recrawl.DAY), score)] += 1
    groups = [changerate.Group(rate, recrawl.weight_of(score), n) for (rate, score), n in counts.items()]
    return changerate.solve_price(groups, budget, min_interval=low, max_interval=high,
                                  explore_interval=settings.CRAWLER_RECRAWL_EXPLORE_INTERVAL)
