from django.apps import AppConfig


class CrawlConfig(AppConfig):
    """The conductor: host sessions, the engine and writer, the page pipeline, runners, the
    parse pool, recovery and heartbeats, the crawl log, the crawl/dispatch commands."""

    name = "crawl"
    verbose_name = "Crawl"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import crawllog, instruments, observe, tasks  # noqa: F401  (tasks: Celery's signals connected)

        observe.listen(crawllog.record_request)  # one line per request: the crawl log
        # Every process that sends requests counts them (Prometheus counters, in memory or,
        # in multiprocess mode, in this machine's metric files).
        observe.listen(instruments.record_request)
