from django.apps import AppConfig


class FetchConfig(AppConfig):
    name = "fetch"
    verbose_name = "Fetch"

    def ready(self):
        from . import crawllog, observe

        observe.listen(crawllog.record_request)  # one line per request: the crawl log
