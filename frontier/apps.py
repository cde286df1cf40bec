from django.apps import AppConfig


class FrontierConfig(AppConfig):
    name = "frontier"
    verbose_name = "Frontier (hosts, URLs, limits)"

    def ready(self):
        from . import limits  # noqa: F401  (drops this process's limits when they change)
