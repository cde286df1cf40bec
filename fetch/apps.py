from django.apps import AppConfig


class FetchConfig(AppConfig):
    name = "fetch"
    verbose_name = "Fetch"
