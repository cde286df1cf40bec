from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ConsoleConfig(AppConfig):
    """The operator's console: REST API, API keys, metrics, dashboard, beat schedules. It
    reads the other apps; none depends on it."""

    name = "console"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from .schedules import ensure_periodic_tasks

        post_migrate.connect(ensure_periodic_tasks, sender=self)
