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
and without this a page planned long in a dear hour waits that long (at budget 0.5 the
crawl spent 95 % of its budget and lost a fifth of its gain: docs/benchmarks.md). Visits
the plan wants later keep their time: the release's budget holds them back anyway.
"""

import random
from collections import Counter
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from crawlerweb import bulksql
from crawlerweb.bulksql import in_chunks

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
    prior_text, price, planned, explore_freq = "", 0.0, budget, 0.0
    if policy == "optimal":
        stored = RecrawlPlan.objects.filter(pk=1).values_list("prior", flat=True).first() or ""
        price, prior = solve(sample(settings.CRAWLER_RECRAWL_PLAN_SAMPLE, pages), pages, stored, budget)
        prior_text = belief.prior_to_text(recrawl._grid(), prior)
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


def solve(sampled: list[tuple[str, int]], pages: int, stored_prior: str, budget: float) -> tuple[float, list[float]]:
    """The optimal policy's price and prior from a sample of (change_stats, priority) of
    `pages` observed pages. Pure: bench.recrawlsim calls it too."""
    rates, freqs = recrawl._grid(), recrawl._frequencies()
    prior = belief.prior_from_text(stored_prior, rates) if stored_prior else belief.flat(rates)
    summaries = {text: changerate.from_text(text) for text, _ in sampled}
    logliks = {text: belief.log_likelihood(stats, rates) for text, stats in summaries.items()}
    prior = belief.fit_prior([logliks[text] for text, _ in sampled if recrawl.has_evidence(summaries[text])],
                             prior, iterations=EM_ITERATIONS)
    curves = {text: belief.value_curve(belief.posterior(loglik, prior), rates, freqs)
              for text, loglik in logliks.items()}
    pairs = [(curves[text], recrawl.weight_of(priority)) for text, priority in sampled]
    return belief.solve_price(pairs, freqs, budget, scale=pages / max(1, len(sampled))), prior


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
    """(change_stats, priority) of up to `size` observed pages (at random past that)."""
    return [row[1:] for row in _at_random(size, pages, OBSERVED, ("change_stats", "priority"))]


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
    draw, span = 2 * size, highest - lowest + 1
    for _ in range(SAMPLE_ROUNDS):
        ids = random.sample(range(lowest, highest + 1), min(draw, span))
        for chunk in in_chunks(ids):
            found.update((row[0], row) for row in rows.filter(id__in=chunk).values_list("id", *columns))
        if len(found) >= size or draw >= span:
            break
        draw *= 2
    return list(found.values())[:size]


def move_sooner(now: datetime, pages: int) -> int:
    """Give CRAWLER_RECRAWL_RELEASE_BATCH fetched pages (at random) the plan's interval and
    move those it shortens by more than MOVE_BELOW. Returns how many moved."""
    rows = _at_random(settings.CRAWLER_RECRAWL_RELEASE_BATCH, pages, (UrlState.FETCHED,),
                      ("url", "priority", "observed_at", "change_stats", "recrawl_interval", "next_fetch_at"))
    return _moved([move for move in (sooner(*row, now=now) for row in rows) if move])


def sooner(url_id: int, url: str, priority: int, observed_at: datetime, change_stats: str,
           interval: float | None, due: datetime | None, now: datetime) -> tuple[int, float, datetime] | None:
    """(id, interval, next visit) when the plan in force shortens a fetched page's interval
    by more than MOVE_BELOW and brings its visit forward; None otherwise (bench.recrawlsim
    calls it too)."""
    stats = changerate.from_text(change_stats)
    if not interval or due is None or (settings.CRAWLER_RECRAWL_POLICY == "optimal"
                                       and not recrawl.has_evidence(stats)):
        return None  # not planned, or waiting for its first look (due at once)
    before = recrawl.Before(url_id, url, priority, None, observed_at, change_stats, 0, None, interval)
    wanted = recrawl.plan_interval(before, stats, False)
    when = max(now, observed_at + timedelta(seconds=wanted))
    return (url_id, wanted, when) if wanted < MOVE_BELOW * interval and when < due else None


def _moved(moves: list[tuple[int, float, datetime]]) -> int:
    """Set (id, interval, next visit) on the rows still fetched and due later than that."""
    if not moves:
        return 0
    moves.sort()
    if connection.vendor == "postgresql":  # the rows locked in id order, their state tested on the lock's version
        with connection.cursor() as cursor:
            cursor.execute(
                f"""WITH {bulksql.locked(_URLS, columns=("state", "next_fetch_at"))}
                    UPDATE {_URLS} u SET recrawl_interval = v.seconds, next_fetch_at = v.due
                    FROM locked JOIN unnest(%b::bigint[], %b::float8[], %b::timestamptz[]) AS v(id, seconds, due)
                         USING (id)
                    WHERE u.id = locked.id AND locked.state = %s AND locked.next_fetch_at > v.due""",
                [[m[0] for m in moves], [m[0] for m in moves], [m[1] for m in moves], [m[2] for m in moves],
                 UrlState.FETCHED])
            return cursor.rowcount
    moved = 0
    with transaction.atomic():
        for url_id, seconds, when in moves:
            moved += Url.objects.filter(id=url_id, state=UrlState.FETCHED, next_fetch_at__gt=when).update(
                next_fetch_at=when, recrawl_interval=seconds)
    return moved


# --- the oracle (benchmarks): the true rates, row by row ------------------------------------

def _oracle_plan(budget: float) -> changerate.Plan:
    low, high = recrawl._bounds()
    counts = Counter()
    rows = Url.objects.filter(state__in=OBSERVED).exclude(observed_at=None).values_list("url", "priority")
    for url, priority in rows.iterator(chunk_size=5000):
        counts[(recrawl._rate_class(recrawl.oracle_rate(url, 0.0) * recrawl.DAY), priority)] += 1
    groups = [changerate.Group(rate, recrawl.weight_of(priority), n) for (rate, priority), n in counts.items()]
    return changerate.solve_price(groups, budget, min_interval=low, max_interval=high,
                                  explore_interval=settings.CRAWLER_RECRAWL_EXPLORE_INTERVAL)
