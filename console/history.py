"""The dashboard's time series, read from the metric samples kept for
CRAWLER_METRICS_RETENTION_HOURS (console/metrics.py takes them).

Pages/s has one definition on the whole dashboard, the headline figure and the chart
alike: URLs whose fetch finished (any outcome: a page, an error, a retry) in the minute
before the sample, divided by 60 — the sample's urls.pages_per_second["1m"], counted from
each URL's last_fetched_at. A refetch counts as much as a first fetch; robots.txt
requests are not pages and do not count.
"""

from datetime import timedelta

from django.conf import settings
from django.db.models.fields.json import KT
from django.utils import timezone

from .models import MetricSample

# The time ranges the dashboard offers, in minutes (capped by the retention).
RANGES_MINUTES = (15, 60, 360, 1440)
DEFAULT_RANGE_MINUTES = 60
POINTS = 240  # at most this many points per series: enough for a chart's width


def range_minutes(asked: str | None) -> int:
    """The range asked for if it is one of RANGES_MINUTES and within the retention, else the default."""
    kept = settings.CRAWLER_METRICS_RETENTION_HOURS * 60
    offered = [m for m in RANGES_MINUTES if m <= kept] or [RANGES_MINUTES[0]]
    try:
        minutes = int(asked or DEFAULT_RANGE_MINUTES)
    except ValueError:
        minutes = DEFAULT_RANGE_MINUTES
    return minutes if minutes in offered else min(DEFAULT_RANGE_MINUTES, offered[-1])


def offered_ranges() -> list[int]:
    kept = settings.CRAWLER_METRICS_RETENTION_HOURS * 60
    return [m for m in RANGES_MINUTES if m <= kept] or [RANGES_MINUTES[0]]


def series(minutes: int, points: int = POINTS) -> list[dict]:
    """One point per sample over the last `minutes`, evenly thinned to at most `points`
    (always keeping the newest): time, pages/s (see above; None in a sample that lacks
    it), URLs queued and URLs fetched at least once. At the default sampling (every 15 s)
    24 hours are 5,760 small rows, read from the taken_at index."""
    since = timezone.now() - timedelta(minutes=minutes)
    rows = list(MetricSample.objects.filter(taken_at__gte=since).order_by("taken_at").values_list(
        "taken_at", KT("figures__urls__pages_per_second__1m"), KT("figures__urls__by_state__queued"),
        KT("figures__urls__fetched")))
    step = max(1, -(-len(rows) // points))
    rows = rows[::-1][::step][::-1]
    return [{"t": taken_at.isoformat(), "pages_per_second": _number(rate, float),
             "queued": _number(queued, int), "fetched": _number(fetched, int)}
            for taken_at, rate, queued, fetched in rows]


def _number(text, kind):
    # KT gives text on every database; a sample from an older version may lack the figure.
    try:
        return kind(float(text)) if text is not None else None
    except ValueError:
        return None
