"""The crawl's figures: one snapshot, sampled at most every CRAWLER_METRICS_MAX_AGE seconds.

Counting a million-row URL table takes a scan, so /metrics does not count on every scrape:
beat's `console.sample_metrics` (and a request that finds the newest sample too old) takes
a snapshot and stores it as a MetricSample. Rates come from two samples, the way
Prometheus' rate() does it; the dashboard's charts are the samples' history.
"""

from datetime import timedelta

from django.conf import settings
from django.db.models.fields.json import KT
from django.utils import timezone
from prometheus_client.core import CollectorRegistry, GaugeMetricFamily
from prometheus_client.exposition import choose_encoder

from fetch import queues
from frontier import service as frontier
from indexer import service as indexer

from .models import MetricSample

RATE_WINDOW_SECONDS = 300  # rates compare with the sample about this long ago


def collect() -> dict:
    from crawlerweb.celery import app  # the web process needs the broker only here

    figures = {"urls": frontier.url_figures(), **frontier.host_figures()}
    figures["dead_letters"] = frontier.dead_letter_count()
    figures["documents"] = indexer.document_counts()
    figures["fetch_queues"] = queues.queue_depths(app)
    figures["top_hosts"] = frontier.top_hosts()
    figures["recent_errors"] = frontier.recent_errors()
    return figures


def sample() -> MetricSample:
    """Take a snapshot, keep it, and drop samples past the retention period."""
    now = timezone.now()
    row = MetricSample.objects.create(taken_at=now, figures=collect())
    cutoff = now - timedelta(hours=settings.CRAWLER_METRICS_RETENTION_HOURS)
    MetricSample.objects.filter(taken_at__lt=cutoff).delete()
    return row


def latest(max_age: float | None = None) -> MetricSample:
    """The newest sample, taken now if the newest is older than max_age seconds."""
    max_age = settings.CRAWLER_METRICS_MAX_AGE if max_age is None else max_age
    row = MetricSample.objects.order_by("-taken_at").first()
    if row is None or (timezone.now() - row.taken_at).total_seconds() > max_age:
        row = sample()
    return row


def snapshot(max_age: float | None = None) -> dict:
    """What GET /metrics answers: the figures, their age, and rates."""
    row = latest(max_age)
    figures = dict(row.figures)
    figures["rates_per_second"] = _rates(row)
    figures["sampled_at"] = row.taken_at.isoformat()
    figures["age_seconds"] = round((timezone.now() - row.taken_at).total_seconds(), 3)
    return figures


def _rates(row: MetricSample) -> dict | None:
    """Per-second change of the URL counts by state and by status since an earlier sample
    (the one closest to RATE_WINDOW_SECONDS before), or None with no earlier sample."""
    target = row.taken_at - timedelta(seconds=RATE_WINDOW_SECONDS)
    earlier = (MetricSample.objects.filter(taken_at__lt=row.taken_at, taken_at__gte=target)
               .order_by("taken_at").first()) or (
        MetricSample.objects.filter(taken_at__lt=target).order_by("-taken_at").first())
    if earlier is None:
        return None
    seconds = (row.taken_at - earlier.taken_at).total_seconds()
    if seconds <= 0:
        return None
    # .get throughout: a sample kept from an older version may lack a figure.
    now_urls, then_urls = row.figures.get("urls", {}), earlier.figures.get("urls", {})

    def per_second(key):
        now, then = now_urls.get(key, {}), then_urls.get(key, {})
        return {k: round((now.get(k, 0) - then.get(k, 0)) / seconds, 3) for k in sorted(set(now) | set(then))}

    return {
        "window_seconds": round(seconds, 3),
        "fetched": round((now_urls.get("fetched", 0) - then_urls.get("fetched", 0)) / seconds, 3),
        "by_state": per_second("by_state"),
        "by_status": per_second("by_status"),
    }


def history(minutes: int = 60, points: int = 180) -> list[dict]:
    """(time, URLs fetched, queued, pages/s since the previous point) for the charts."""
    since = timezone.now() - timedelta(minutes=minutes)
    rows = list(MetricSample.objects.filter(taken_at__gte=since).order_by("taken_at").values_list(
        "taken_at", KT("figures__urls__fetched"), KT("figures__urls__by_state__queued")))
    step = max(1, len(rows) // points)
    rows = rows[::-1][::step][::-1]  # thin evenly, always keeping the newest
    series, previous = [], None
    for taken_at, fetched, queued in rows:
        fetched, queued = int(fetched or 0), int(queued or 0)
        rate = None
        if previous is not None:
            seconds = (taken_at - previous[0]).total_seconds()
            rate = round(max(0, fetched - previous[1]) / seconds, 3) if seconds > 0 else None
        series.append({"t": taken_at.isoformat(), "fetched": fetched, "queued": queued, "pages_per_second": rate})
        previous = (taken_at, fetched)
    return series


# --- Prometheus text format --------------------------------------------------------------

def prometheus(figures: dict, accept: str) -> tuple[bytes, str]:
    """The figures in the exposition format the scraper asked for (text or OpenMetrics)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(figures))
    encoder, content_type = choose_encoder(accept)
    return encoder(registry), content_type


class _Collector:
    def __init__(self, figures: dict):
        self.figures = figures

    def collect(self):
        f, urls = self.figures, self.figures["urls"]
        yield _labelled("crawlerweb_urls", "URLs in the frontier by state", "state", urls["by_state"])
        yield _labelled("crawlerweb_urls_by_status", "URLs by the HTTP status of their last fetch",
                        "status", urls["by_status"])
        yield _plain("crawlerweb_urls_fetched", "URLs fetched at least once", urls["fetched"])
        yield _labelled("crawlerweb_urls_fetched_recently", "URLs whose last fetch falls in the window",
                        "window", urls["fetched_recently"])
        yield _labelled("crawlerweb_pages_per_second", "pages fetched per second over the window",
                        "window", urls["pages_per_second"])
        yield _labelled("crawlerweb_queued_urls", "queued URLs by priority (higher goes first)",
                        "priority", urls["queued_by_priority"])
        yield _plain("crawlerweb_queued_due_urls", "queued URLs due now", urls["queued_due_now"])
        yield _plain("crawlerweb_retrying_urls", "queued URLs waiting for a retry", urls["retrying"])
        yield _labelled("crawlerweb_errors", "URLs whose last attempt failed, by kind", "kind",
                        urls["errors_by_kind"])
        yield _labelled("crawlerweb_hosts", "hosts by politeness state", "state", f["hosts"])
        yield _labelled("crawlerweb_robots_hosts", "hosts by robots.txt cache state", "state", f["robots"])
        yield _plain("crawlerweb_dead_letters", "URLs in the dead-letter table", f["dead_letters"])
        yield _labelled("crawlerweb_documents", "documents by kind", "kind", f["documents"])
        if f.get("fetch_queues") is not None:
            yield _labelled("crawlerweb_fetch_queue_messages", "messages waiting per Celery fetch queue",
                            "queue", f["fetch_queues"])
        yield _plain("crawlerweb_metrics_age_seconds", "age of the sample these figures come from",
                     f["age_seconds"])


def _plain(name, documentation, value):
    return GaugeMetricFamily(name, documentation, value=value)


def _labelled(name, documentation, label, values: dict):
    family = GaugeMetricFamily(name, documentation, labels=[label])
    for key, value in values.items():
        family.add_metric([str(key)], value)
    return family
