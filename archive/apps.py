from django.apps import AppConfig


class ArchiveConfig(AppConfig):
    """The archive: WARC files, their CDXJ index, replay with pywb, WACZ packages."""

    name = "archive"
    verbose_name = "Archive"
