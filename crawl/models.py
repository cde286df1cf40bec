"""The crawl's own tables: the crawl log's recent past and the crawling processes' heartbeats.

Both tables keep the names they had in the apps they came from (fetch_crawllogentry,
console_processheartbeat): moving a model between apps moved no data (migrations crawl 0001).

The crawl log's recent past in the database (crawl/crawllog.py writes it, crawl/admin.py
shows it): what the admin browses across machines. The file is the full record; these rows
are kept CRAWLER_CRAWL_LOG_RETENTION_HOURS.

The host is kept as its id and origin, without a foreign key: an entry must outlive any
change to the frontier, inserting it must cost no lookup, and a million-row log must not
slow down deleting a host."""

from django.db import models
from django.utils import timezone


class CrawlLogEntry(models.Model):
    at = models.DateTimeField(help_text="when the request started")
    kind = models.CharField(max_length=8, help_text="page or robots")
    url = models.TextField()
    url_id = models.BigIntegerField(null=True, blank=True, help_text="the frontier URL (none for robots.txt)")
    host_id = models.BigIntegerField(help_text="the frontier host")
    origin = models.TextField(help_text="the host's origin")
    status = models.PositiveSmallIntegerField(null=True, blank=True, help_text="none: no response")
    error = models.CharField(max_length=40, blank=True, help_text="why there was no usable response")
    outcome = models.CharField(max_length=40, help_text="what the request brought (crawl/observe.py outcome_of)")
    bytes = models.PositiveBigIntegerField(default=0, help_text="body bytes received, decompressed")
    ms = models.PositiveIntegerField(default=0, help_text="milliseconds from request start to end of body")
    attempt = models.PositiveSmallIntegerField(default=1, help_text="1: the URL's first try; 2+: a retry")
    retry_after = models.FloatField(null=True, blank=True, help_text="seconds the server asked to wait (capped)")
    address = models.CharField(max_length=64, blank=True, help_text="the server address connected to")
    content_type = models.CharField(max_length=100, blank=True)
    worker = models.CharField(max_length=200, blank=True, help_text="the process that sent the request")
    lease = models.CharField(max_length=100, blank=True, help_text="the host session's lease token")

    class Meta:
        db_table = "fetch_crawllogentry"
        verbose_name = "crawl log entry"
        verbose_name_plural = "crawl log"
        indexes = [
            # Newest first, time ranges, and pruning; then one host's requests over time.
            models.Index(fields=["at"], name="fetch_crawllog_at"),
            models.Index(fields=["host_id", "at"], name="fetch_crawllog_host_at"),
        ]

    def __str__(self):
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.status or self.error} {self.url}"

    @property
    def retry(self) -> bool:
        return self.attempt > 1

    @property
    def not_modified(self) -> bool:
        return self.status == 304


class ProcessKind(models.TextChoices):
    WORKER = "worker", "fetch worker (a Celery worker process's session engine)"
    EMBEDDED = "embedded", "embedded crawler (manage.py crawl)"
    DISPATCHER = "dispatcher", "dispatcher (manage.py dispatch)"


class ProcessHeartbeat(models.Model):
    """One running process that crawls or dispatches, as it last reported itself
    (crawl/liveness.py): written every CRAWLER_HEARTBEAT_SECONDS, so a process that died
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
        db_table = "console_processheartbeat"
        constraints = [models.UniqueConstraint(fields=["kind", "hostname", "pid", "name"], name="heartbeat_process")]

    def __str__(self):
        return f"{self.kind} {self.name} ({self.hostname}, pid {self.pid})"
