from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ConsoleConfig(AppConfig):
    """The operator's console: REST API, API keys, metrics, dashboard, beat schedules."""

    name = "console"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from fetch import observe

        from . import instruments
        from .schedules import ensure_periodic_tasks

        post_migrate.connect(ensure_periodic_tasks, sender=self)
        # Every process that sends requests counts them (Prometheus counters, in memory or,
        # in multiprocess mode, in this machine's metric files).
        observe.listen(instruments.record_request)
