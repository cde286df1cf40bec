from django.apps import AppConfig


class FetchConfig(AppConfig):
    """Getting bytes safely: HTTP, Gemini, DNS, robots.txt as RFC 9309 reads it. No models
    (its migrations keep the history of the crawl log's table, now the crawl app's)."""

    name = "fetch"
    verbose_name = "Fetch"
