"""API keys (stored hashed), metric samples (the dashboard's history) and process heartbeats."""

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


class ProcessKind(models.TextChoices):
    WORKER = "worker", "fetch worker (a Celery worker process's session engine)"
    EMBEDDED = "embedded", "embedded crawler (manage.py crawl)"
    DISPATCHER = "dispatcher", "dispatcher (manage.py dispatch)"


class ProcessHeartbeat(models.Model):
    """One running process that crawls or dispatches, as it last reported itself
    (console/liveness.py): written every CRAWLER_HEARTBEAT_SECONDS, so a process that died
    shows as a row that stopped being written, and one that stopped cleanly says so."""

    kind = models.CharField(max_length=12, choices=ProcessKind.choices)
    name = models.CharField(max_length=120, help_text="the engine's or dispatcher's name")
    hostname = models.CharField(max_length=120)
    pid = models.IntegerField()
    started_at = models.DateTimeField(default=timezone.now)
    seen_at = models.DateTimeField(default=timezone.now, db_index=True, help_text="its last heartbeat")
    stopped_at = models.DateTimeField(null=True, blank=True, help_text="it stopped cleanly")
    sessions = models.IntegerField(default=0, help_text="host sessions open (workers)")
    requests = models.BigIntegerField(default=0, help_text="requests sent so far (workers)")
    last_request_at = models.DateTimeField(null=True, blank=True, help_text="when it last sent a request "
                                           "(to the heartbeat's precision)")
    leases = models.BigIntegerField(default=0, help_text="host sessions handed out so far (dispatchers)")
    last_lease_at = models.DateTimeField(null=True, blank=True, help_text="when it last handed one out")
    holder = models.CharField(max_length=32, blank=True, default="", db_default="",
                              help_text="this run's id in the host leases it holds (Host.lease_holder)")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "hostname", "pid", "name"], name="heartbeat_process")]

    def __str__(self):
        return f"{self.kind} {self.name} ({self.hostname}, pid {self.pid})"


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
