from django.apps import AppConfig


class IndexerConfig(AppConfig):
    name = "indexer"
    verbose_name = "Indexer (documents, search)"

    def ready(self):
        from . import signals  # noqa: F401  (connects the index-cleanup receiver)
        from .backends.postgres import register_binary_tsvector

        register_binary_tsvector()
