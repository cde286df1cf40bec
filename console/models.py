"""API keys (stored hashed) and metric samples (the dashboard's history)."""

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
