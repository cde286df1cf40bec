"""API keys (stored hashed), metric samples (the dashboard's history) and the beat leader.
Process heartbeats are the crawl's (crawl/models.py): the console reads them."""

from django.db import models
from django.utils import timezone


class ApiKey(models.Model):
    """A bearer token for the REST API. Only a SHA-256 of the key is kept: the key itself
    is shown once, when created (keys are 256-bit random, so a fast hash is enough)."""

    name = models.CharField(max_length=100, help_text="who or what uses it")
    prefix = models.CharField(max_length=16, unique=True, editable=False,
                              help_text="the key's public first characters, to tell keys apart")
    key_hash = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked = models.BooleanField(default=False, help_text="a revoked key is refused")

    class Meta:
        verbose_name = "API key"

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"


class MetricSample(models.Model):
    """One snapshot of the crawl's figures (see console/metrics.py), kept for
    CRAWLER_METRICS_RETENTION_HOURS: rates and the dashboard's charts come from these."""

    taken_at = models.DateTimeField(default=timezone.now, db_index=True)
    figures = models.JSONField()

    class Meta:
        get_latest_by = "taken_at"

    def __str__(self):
        return self.taken_at.isoformat()


class BeatLeader(models.Model):
    """Which `celery beat` process sends the periodic tasks (console/beatleader.py): one
    row, held with an expiring lease, so a second beat started by mistake waits."""

    holder = models.CharField(max_length=64, blank=True, default="", help_text="host, pid and a random id")
    until = models.DateTimeField(null=True, blank=True, help_text="the lease ends then unless renewed")
    since = models.DateTimeField(null=True, blank=True, help_text="when this holder took the lead")

    class Meta:
        verbose_name = "beat leader"

    def __str__(self):
        return self.holder or "nobody"
