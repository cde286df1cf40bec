from django.apps import AppConfig


class FrontierConfig(AppConfig):
    name = "frontier"
    verbose_name = "Frontier (hosts, URLs, limits)"
