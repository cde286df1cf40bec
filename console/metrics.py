"""The crawl's figures: one snapshot, sampled at most every CRAWLER_METRICS_MAX_AGE seconds.

Counting a million-row URL table takes a scan, so /metrics does not count on every scrape:
beat's `console.sample_metrics` (and a request that finds the newest sample too old) takes
a snapshot and stores it as a MetricSample. The JSON's rates come from two samples; the
dashboard's charts are the samples' history.

In Prometheus format these are the global figures of the frontier, the same whichever web
instance answers: scrape one. What the crawling processes did (requests, bytes, retries,
durations) is counted by them and served by each machine's exporter (crawl/instruments.py).
"""

from datetime import timedelta

from django.conf import settings
from django.db.models.fields.json import KT
from django.utils import timezone
from prometheus_client.core import CollectorRegistry, GaugeMetricFamily
from prometheus_client.exposition import choose_encoder

from crawl import queues
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
    """What grew per second since an earlier sample (the one closest to RATE_WINDOW_SECONDS
    before), or None with no earlier sample: URLs discovered (admitted), URLs fetched for
    the first time, URLs dead-lettered. Only counts that grow are rated, and a drop (an
    admin deleting URLs) reads as 0: counts by state go up and down as URLs move on, and
    their difference is no rate. Prometheus users rate the processes' counters instead
    (crawl/instruments.py)."""
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
    now, then = row.figures, earlier.figures

    def per_second(figure):
        return round(max(0, figure(now) - figure(then)) / seconds, 3)

    return {
        "window_seconds": round(seconds, 3),
        "discovered": per_second(lambda f: f.get("urls", {}).get("total", 0)),
        "fetched": per_second(lambda f: f.get("urls", {}).get("fetched", 0)),
        "dead_lettered": per_second(lambda f: f.get("dead_letters", 0)),
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


# One state per host (frontier.stats.host_figures) and one robots.txt verdict per host:
# each family adds up to the hosts, so sum() over it counts every host once.
HOST_STATES = ("leased", "paused", "backing_off", "ready", "idle")
ROBOTS_VERDICTS = ("never", "ok", "allow_all", "unavailable")


class _Collector:
    """The frontier's figures as gauges. No family mixes a total or an overlapping subset
    into its label values (each is a partition, or a gauge of its own), and no rate is
    precomputed: rates come from the processes' counters (crawl/instruments.py)."""

    def __init__(self, figures: dict):
        self.figures = figures

    def collect(self):
        f, urls = self.figures, self.figures["urls"]
        hosts, robots, documents = f["hosts"], f["robots"], f["documents"]
        yield _labelled("crawlerweb_urls", "URLs in the frontier by state", "state", urls["by_state"])
        yield _labelled("crawlerweb_urls_by_status", "URLs by the HTTP status of their last fetch",
                        "status", urls["by_status"])
        yield _plain("crawlerweb_urls_fetched", "URLs fetched at least once", urls["fetched"])
        yield _labelled("crawlerweb_queued_urls", "queued URLs by score (frontier/importance.py; higher goes first)",
                        "score", urls["queued_by_score"])
        yield _labelled("crawlerweb_queued_urls_by_band", "queued URLs by score band (dispatch draws hosts by band)",
                        "band", urls["queued_by_band"])
        yield _plain("crawlerweb_queued_due_urls", "queued URLs due now", urls["queued_due_now"])
        yield _plain("crawlerweb_retrying_urls", "queued URLs waiting for a retry", urls["retrying"])
        yield _labelled("crawlerweb_errors", "URLs whose last attempt failed, by kind", "kind",
                        urls["errors_by_kind"])
        yield _labelled("crawlerweb_hosts", "hosts by state, one state per host (they add up to the hosts)",
                        "state", {state: hosts.get(state, 0) for state in HOST_STATES})
        yield _plain("crawlerweb_hosts_circuit_open", "hosts whose circuit breaker is open, whatever their state",
                     hosts.get("circuit_open", 0))
        yield _labelled("crawlerweb_robots_hosts", "hosts by robots.txt verdict, one per host", "state",
                        {verdict: robots.get(verdict, 0) for verdict in ROBOTS_VERDICTS})
        yield _plain("crawlerweb_robots_cached_hosts", "hosts whose robots.txt is cached and fresh",
                     robots.get("cached", 0))
        yield _plain("crawlerweb_dead_letters", "URLs in the dead-letter table", f["dead_letters"])
        yield _plain("crawlerweb_documents", "documents stored", documents.get("documents", 0))
        yield _plain("crawlerweb_documents_indexed", "documents in the full-text index", documents.get("indexed", 0))
        yield _plain("crawlerweb_documents_duplicate", "documents found to duplicate another",
                     documents.get("duplicates", 0))
        yield _plain("crawlerweb_documents_noindex", "documents whose page said noindex", documents.get("noindex", 0))
        if f.get("fetch_queues") is not None:
            yield _labelled("crawlerweb_fetch_queue_messages", "messages waiting per Celery fetch queue",
                            "queue", f["fetch_queues"])
        yield _plain("crawlerweb_fetch_queue_high_water_messages",
                     "messages in all fetch queues at which dispatchers stop sending (back-pressure)",
                     int(settings.CRAWLER_MAX_QUEUED_MESSAGES * 0.8))  # crawl.queues.dispatch_room's rule
        yield _plain("crawlerweb_metrics_age_seconds", "age of the sample these figures come from",
                     f["age_seconds"])


def _plain(name, documentation, value):
    return GaugeMetricFamily(name, documentation, value=value)


def _labelled(name, documentation, label, values: dict):
    family = GaugeMetricFamily(name, documentation, labels=[label])
    for key, value in values.items():
        family.add_metric([str(key)], value)
    return family
