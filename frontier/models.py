"""Frontier state: hosts (politeness, robots cache, leases), URLs, seeds, limits, dead letters.

The database is the single source of truth for what to crawl next; Celery messages only
carry (host id, lease token, URL ids) and are safe to lose.
"""

from django.contrib.admin import display as admin_display
from django.db import models
from django.dispatch import Signal
from django.utils import timezone

from .sketches import referring_hosts

# Sent after the limits or exclusions changed (a save of CrawlLimits or bump_version): this
# process drops its snapshot at once (frontier/limits.py); others notice the version.
limits_changed = Signal()


class Host(models.Model):
    """One origin (scheme://host:port): the unit of politeness and of robots.txt."""

    origin = models.CharField(max_length=300, unique=True)
    # Politeness: no request to this host before next_fetch_at. Set after every request to
    # end-of-response + delay, and pushed further by Retry-After. Never a Celery ETA.
    next_fetch_at = models.DateTimeField(default=timezone.now)
    crawl_delay = models.FloatField(
        null=True, blank=True, help_text="Crawl-delay from robots.txt (capped), seconds"
    )
    # Lease: the one dispatcher/worker allowed to send requests to this host right now.
    lease_owner = models.CharField(max_length=80, blank=True, default="")
    leased_until = models.DateTimeField(null=True, blank=True)
    # The crawling process running the lease (its heartbeat's holder id, crawl/liveness.py),
    # written when it begins the session: a process whose heartbeat goes stale has its
    # leases released by the others (crawl/recovery.py) instead of after leased_until.
    lease_holder = models.CharField(max_length=32, blank=True, default="", db_default="",
                                    help_text="the crawling process running the lease (its heartbeat's holder id)")
    # robots.txt cache (RFC 9309): body as fetched (capped), HTTP status or null on a
    # network error, and when it must be fetched again.
    robots_status = models.IntegerField(null=True, blank=True)
    robots_body = models.TextField(blank=True, default="")
    robots_error = models.CharField(max_length=40, blank=True, default="")
    robots_fetched_at = models.DateTimeField(null=True, blank=True)
    robots_expires_at = models.DateTimeField(null=True, blank=True)
    robots_sitemaps = models.TextField(blank=True, default="", db_default="", help_text="Sitemap: URLs the robots.txt lists, "
                                       "one per line (collected, not crawled yet)")
    url_count = models.IntegerField(default=0, help_text="URLs admitted (per-host quota)")
    # Its standing when hosts compete: the distinct other hosts seen linking to its pages,
    # in two sketches only ever OR-ed (importance.referring_hosts reads them).
    referrer_bits = models.BigIntegerField(default=0, db_default=0, help_text="a bit per other host seen linking to "
                                           "its pages (linear counting, frontier/importance.py)")
    referrer_ranks = models.BigIntegerField(default=0, db_default=0, help_text="the same hosts' hashes' ranks in "
                                            "four bitmaps (probabilistic counting, past a hundred hosts)")
    # Not written since 2026-12-06 (the sketches above count them); the previous release's
    # workers write it during a rolling upgrade. Dropped in the next release.
    inlink_hosts = models.IntegerField(default=0, db_default=0, help_text="no longer written: see referrer_bits")
    # The registered domain (eTLD+1), for the per-domain quota: a trap of endless subdomains
    # is one domain. "" for hosts the previous release created (no domain quota for them).
    domain = models.CharField(max_length=253, blank=True, default="", db_default="", db_index=True,
                              help_text="registered domain (per-domain quota)")
    # The server address last connected to: hosts sharing one are one server to be polite to.
    address = models.GenericIPAddressField(null=True, blank=True, unpack_ipv4=True)
    response_time = models.FloatField(
        null=True, blank=True, help_text="running average of response times, seconds (adaptive delay)"
    )
    failures = models.SmallIntegerField(
        default=0, db_default=0, help_text="network failures in a row; the circuit breaker pauses the host past a threshold"
    )
    # db_default as well: during a rolling upgrade, workers of the previous release insert
    # hosts without this column, and the database must fill it for them.
    wait_reason = models.CharField(max_length=24, blank=True, default="", db_default="", help_text="why next_fetch_at is "
                                   "where it is: crawl_delay, adaptive, default_delay, retry_after_429/503, "
                                   "breaker, dns, robots_unavailable")
    paused_at = models.DateTimeField(null=True, blank=True, help_text="an operator paused this host: nothing "
                                     "is fetched from it until it is resumed")
    band = models.SmallIntegerField(default=2, db_default=2, help_text="score band of the best URL it is known to "
                                    "have waiting: 0 best, 2 least (frontier/importance.py); dispatch draws by band; "
                                    "3: nothing waiting, not read by dispatch (frontier/idle.py)")
    # Gemini's trust on first use (fetch/gemini.py): the certificate the host showed, and a
    # change seen while the one before had not expired yet (recorded, not refused).
    tls_fingerprint = models.CharField(max_length=64, blank=True, default="", db_default="",
                                       help_text="SHA-256 of the certificate last seen (gemini://), hex")
    tls_not_after = models.DateTimeField(null=True, blank=True, help_text="when that certificate expires")
    tls_previous_fingerprint = models.CharField(max_length=64, blank=True, default="", db_default="",
                                                help_text="the certificate seen before it")
    tls_changed_early_at = models.DateTimeField(
        null=True, blank=True, help_text="when the certificate last changed before the previous one expired "
        "(a renewal, or someone in between: trust on first use notes it, the crawl goes on)")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["band", "next_fetch_at"], name="host_band_next_fetch"),
            models.Index(fields=["next_fetch_at"], name="host_next_fetch"),
            models.Index(fields=["address"], name="host_address"),
            models.Index(fields=["paused_at"], name="host_paused", condition=models.Q(paused_at__isnull=False)),
            # The hosts leased now (a release clears leased_until), counted each dispatch
            # round (leases.leases_held) without reading every host a crawl has known.
            models.Index(fields=["leased_until"], name="host_leased", condition=models.Q(leased_until__isnull=False)),
        ]

    def __str__(self):
        return self.origin

    @property
    @admin_display(description="other hosts linking to its pages (estimated: its standing)")
    def referring_hosts(self) -> int:
        """Distinct other hosts seen linking to its pages (an estimate: importance.referring_hosts)."""
        return referring_hosts(self.referrer_bits, self.referrer_ranks)


class HostReferrer(models.Model):
    """Another host seen linking to this host's pages, once, as the release before
    2026-12-06 counted them (`Host.inlink_hosts`). Not written since (Host.referrer_bits
    and referrer_ranks count them, a row per edge of the host graph cost too much); the
    previous release's workers write it during a rolling upgrade. Dropped in the next
    release."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="+", db_index=False)
    referrer_key = models.BigIntegerField(help_text="the referring origin's 63-bit hash (importance.referrer_key)")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["host", "referrer_key"], name="host_referrer_once")]


class ServerAddress(models.Model):
    """One server (IP address) several hosts may share: politeness per IP (virtual hosting).

    Leased together with a host when CRAWLER_POLITENESS_SCOPE is "ip" or "both", so one
    server never has two requests in flight, whatever names it answers to."""

    address = models.GenericIPAddressField(unique=True, unpack_ipv4=True)
    next_fetch_at = models.DateTimeField(default=timezone.now)
    lease_owner = models.CharField(max_length=80, blank=True, default="")
    leased_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "server address"
        verbose_name_plural = "server addresses"

    def __str__(self):
        return self.address


class UrlKind(models.TextChoices):
    """What a URL is read for: a page (indexed, its links followed) or a link source,
    read for its links only (indexer/linksources.py)."""

    PAGE = "page", "page"
    SITEMAP = "sitemap", "sitemap (robots.txt or /sitemap.xml; may be a sitemap index)"
    NESTED_SITEMAP = "nested_sitemap", "sitemap listed by a sitemap index (its own index entries not followed)"
    FEED = "feed", "RSS or Atom feed a page announced"


class UrlState(models.TextChoices):
    QUEUED = "queued", "queued"
    FETCHED = "fetched", "fetched (2xx)"
    REDIRECTED = "redirected", "redirected"
    GONE = "gone", "gone (404/410)"
    DENIED = "denied", "denied (401/403)"
    HTTP_ERROR = "http_error", "other 4xx"
    ROBOTS_BLOCKED = "robots_blocked", "blocked by robots.txt"
    EXCLUDED = "excluded", "excluded by an admin"
    BACKOFF = "backoff", "backing off (retries spent: 1, 2, 4, 8 weeks)"
    FAILED = "failed", "failed (dead letter)"


class Url(models.Model):
    """A normalized URL. url_key is the unique key (frontier.normalize.url_key): a btree
    over long text breaks."""

    url_key = models.BigIntegerField(unique=True, help_text="the first 8 bytes of the URL's blake2b-128")
    # Written by the previous release only (the key before url_key); PostgreSQL derives
    # url_key from it for that release's inserts during an upgrade. Unique where present
    # (the rows this release writes leave it empty and cost its index nothing). Dropped in
    # the next release.
    url_hash = models.CharField(max_length=32, null=True, blank=True, editable=False)
    url = models.TextField()
    # No index of its own: url_host_due starts with the host.
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="urls", db_index=False)
    depth = models.SmallIntegerField(default=0)
    redirect_hops = models.SmallIntegerField(default=0)
    # The column keeps its first name, `priority` (the raw SQL of frontier/bulk.py and
    # leases.py says so): renaming it would break the previous release's workers while an
    # upgrade rolls out (STYLE.md 15); a later release may rename it, expand then contract.
    score = models.SmallIntegerField(default=0, db_column="priority",
                                     help_text="the importance score: higher goes first (frontier/importance.py)")
    inlink_hosts = models.IntegerField(default=0, db_default=0, help_text="distinct other hosts seen linking here")
    inlink_bits = models.BigIntegerField(default=0, db_default=0, help_text="a bit per other host seen linking here "
                                         "(its hash): counted once whichever process sees the link")
    hint = models.SmallIntegerField(default=0, db_default=0, help_text="score points a sitemap gave it")
    state = models.CharField(max_length=16, choices=UrlState.choices, default=UrlState.QUEUED)
    # A database default too: the previous release's inserts do not name it.
    kind = models.CharField(max_length=16, choices=UrlKind.choices, default=UrlKind.PAGE, db_default=UrlKind.PAGE)
    outcome = models.CharField(max_length=40, blank=True, default="", help_text="why: the detail")
    attempts = models.SmallIntegerField(default=0)
    next_fetch_at = models.DateTimeField(default=timezone.now)
    last_status = models.SmallIntegerField(null=True, blank=True)
    last_fetched_at = models.DateTimeField(null=True, blank=True)
    content_hash = models.CharField(max_length=64, blank=True, default="",
                                    help_text="SHA-256 of the last full 2xx response archived")
    # Revisits (frontier/recrawl.py). Validators echoed as If-None-Match / If-Modified-Since.
    etag = models.CharField(max_length=200, blank=True, default="", db_default="")
    last_modified = models.CharField(max_length=64, blank=True, default="", db_default="", help_text="as the server sent it")
    payload_at = models.DateTimeField(null=True, blank=True, help_text="when the response content_hash names "
                                      "arrived (what a WARC revisit record refers to)")
    text_hash = models.CharField(max_length=32, blank=True, default="", db_default="", help_text="hash of the normalized text")
    simhash = models.BigIntegerField(null=True, blank=True, help_text="64-bit SimHash of the text")
    last_observation = models.CharField(max_length=16, blank=True, default="", db_default="",
                                        help_text="what the last visit saw: first, not_modified, unchanged, "
                                        "noise, changed")
    last_change_at = models.DateTimeField(null=True, blank=True, help_text="last visit that saw a change")
    observed_at = models.DateTimeField(null=True, blank=True, help_text="last visit that saw the page (2xx, 304)")
    observations = models.IntegerField(default=0, db_default=0, help_text=(
        "revisits that observed change or no change"))
    change_stats = models.TextField(blank=True, default="", db_default="", help_text="what the change-rate estimator needs "
                                    "(frontier/changerate.py): a bounded summary, not a history")
    change_rate = models.FloatField(null=True, blank=True, help_text=(
        "estimated changes per day: the mean of what the crawler believes (frontier/belief.py)"))
    recrawl_interval = models.FloatField(null=True, blank=True, help_text="seconds to the next planned visit")
    backoff_level = models.SmallIntegerField(default=0, db_default=0, help_text="steps taken on the failure back-off ladder")
    # The scopes this URL was found under, "3" or "3,7" ("" = unscoped: the open web).
    # Its links are admitted if one of them allows them (frontier/scope.py).
    scopes = models.CharField(max_length=64, blank=True, default="", db_default="")
    referrer = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        db_constraint=False, db_index=False,
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            # Dispatch: due URLs of one host, best first.
            models.Index(fields=["host", "state", "next_fetch_at"], name="url_host_due"),
            models.Index(fields=["state", "next_fetch_at"], name="url_state_due"),
            # Dispatch: a host's best queued URLs, read from the top (see _best_urls).
            models.Index(fields=["host", "-score", "id"], name="url_host_queue",
                         condition=models.Q(state="queued")),
        ]
        constraints = [
            models.UniqueConstraint(fields=["url_hash"], name="url_hash_unique",
                                    condition=models.Q(url_hash__isnull=False)),
        ]

    def __str__(self):
        return self.url


class ScopeKind(models.TextChoices):
    HOST = "host", "the seed's host"
    DOMAIN = "domain", "the seed's registered domain and its subdomains"
    PREFIX = "prefix", "URLs under the seed's path"
    WEB = "web", "the open web"


class CrawlScope(models.Model):
    """Where links found from a seed may lead (frontier/scope.py). One row per distinct
    definition: the seeds of one site with the same patterns share it."""

    key = models.CharField(max_length=64, unique=True, help_text="hash of kind, anchor and patterns")
    kind = models.CharField(max_length=8, choices=ScopeKind.choices)
    anchor = models.TextField(blank=True, default="", help_text="host, registered domain or URL prefix")
    include = models.TextField(blank=True, default="", help_text="regular expressions, one per line: URLs "
                               "matching one are in scope wherever they are")
    exclude = models.TextField(blank=True, default="", help_text="regular expressions, one per line: URLs "
                               "matching one are out of scope")
    out_of_scope = models.BigIntegerField(default=0, help_text="links found under this scope and left out")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "crawl scope"

    def __str__(self):
        return f"{self.kind} {self.anchor}".strip()


class Seed(models.Model):
    url = models.TextField()
    scope = models.ForeignKey(CrawlScope, null=True, blank=True, on_delete=models.PROTECT, related_name="seeds",
                              help_text="empty: unscoped (the open web), as seeds were before scopes existed")
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return self.url


class ExcludedDomain(models.Model):
    """A domain never crawled, with all its subdomains."""

    domain = models.CharField(max_length=253, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    def save(self, *args, **kwargs):
        self.domain = self.domain.strip().lower().rstrip(".")
        super().save(*args, **kwargs)
        CrawlLimits.bump_version()

    def delete(self, *args, **kwargs):
        result = super().delete(*args, **kwargs)
        CrawlLimits.bump_version()
        return result

    def __str__(self):
        return self.domain


class UrlPattern(models.Model):
    """A URL pattern (origin and path shape) and what its pages yielded: stopped when its
    pages stopped bringing new text (frontier/traps.py)."""

    key = models.BigIntegerField(unique=True, help_text="the first 8 bytes of the pattern's blake2b")
    pattern = models.TextField(help_text="origin and path shape: digits as #, deeper segments as …")
    pages = models.IntegerField(default=0, help_text="pages of it stored")
    new_pages = models.IntegerField(default=0, help_text="of those, indexed as new text")
    stopped_at = models.DateTimeField(null=True, blank=True, help_text="when its yield collapsed: its URLs are "
                                      "no longer admitted, its queued ones set aside")
    allowed = models.BooleanField(default=False, help_text="an operator resumed it: never stopped again")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "URL pattern"

    def __str__(self):
        return self.pattern


class TrustedDomain(models.Model):
    """A domain an operator trusts: its URLs (and its subdomains') score `weight` points more,
    so they are fetched sooner (frontier/importance.py)."""

    domain = models.CharField(max_length=253, unique=True)
    weight = models.IntegerField(default=50, help_text="score points added (negative: later)")
    created_at = models.DateTimeField(default=timezone.now)

    def save(self, *args, **kwargs):
        self.domain = self.domain.strip().lower().rstrip(".")
        super().save(*args, **kwargs)

    def __str__(self):
        return f"{self.domain} ({self.weight:+d})"


class CrawlLimits(models.Model):
    """The one row of admin-editable limits; empty fields fall back to settings.

    `version` is bumped on every change so long-running workers notice cheaply
    (django-celery-beat's PeriodicTasks "last changed" idea).
    """

    depth_limit = models.PositiveIntegerField(null=True, blank=True)
    url_length_limit = models.PositiveIntegerField(null=True, blank=True)
    max_urls_per_host = models.PositiveIntegerField(null=True, blank=True)
    paused_at = models.DateTimeField(null=True, blank=True, help_text="the whole crawl is paused: no host is "
                                     "leased and running sessions stop (frontier/steering.py)")
    version = models.PositiveIntegerField(default=1)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "crawl limits"

    def save(self, *args, **kwargs):
        self.pk = 1
        current = CrawlLimits.objects.filter(pk=1).values_list("version", flat=True).first()
        self.version = (current or 0) + 1
        super().save(*args, **kwargs)
        limits_changed.send(sender=CrawlLimits)

    @classmethod
    def bump_version(cls):
        """Every runner sees a change of limits within LIMITS_RECHECK_SECONDS; this process
        at once (frontier/limits.py listens for limits_changed)."""
        if not cls.objects.filter(pk=1).update(version=models.F("version") + 1):
            cls.objects.get_or_create(pk=1)
        limits_changed.send(sender=cls)

    def __str__(self):
        return f"crawl limits v{self.version}"


class RecrawlPlan(models.Model):
    """The one row of the recrawl plan (frontier/recrawl.py): the budget's price, solved
    from every URL's estimate by beat, and the release task's budget account."""

    price = models.FloatField(default=0.0, help_text="Lagrange multiplier of the budget (0: budget to spare)")
    explore_freq = models.FloatField(default=0.0, help_text="revisits per second of a page being explored")
    budget = models.FloatField(default=0.0, help_text="revisits per second allowed")
    planned = models.FloatField(default=0.0, help_text="revisits per second the plan spends")
    pages = models.BigIntegerField(default=0, help_text="pages the plan covers")
    solved_at = models.DateTimeField(null=True, blank=True)
    credit = models.FloatField(default=0.0, help_text="revisits the release task may still send")
    released_at = models.DateTimeField(null=True, blank=True)
    released_total = models.BigIntegerField(default=0)
    prior = models.TextField(blank=True, default="", db_default="", help_text=(
        "the crawl's prior over change rates (frontier/belief.py), fitted by the last plan"))
    first_looks = models.BigIntegerField(default=0, db_default=0, help_text=(
        "pages the last plan counted with nothing known of their rate yet (waiting for their first look)"))

    class Meta:
        verbose_name = "recrawl plan"

    def __str__(self):
        return f"recrawl plan: {self.planned * 86400:.0f} of {self.budget * 86400:.0f} revisits/day"


class DeadLetter(models.Model):
    """A URL that kept failing; an admin inspects it and may requeue it."""

    url = models.OneToOneField(Url, on_delete=models.CASCADE, related_name="dead_letter")
    reason = models.CharField(max_length=80)
    last_status = models.SmallIntegerField(null=True, blank=True)
    attempts = models.SmallIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return f"{self.url_id}: {self.reason}"


class SteeringAction(models.Model):
    """The audit log of an operator's steering (frontier/steering.py): who did what to
    what, from the admin or the API. Written by the action itself, so both surfaces are
    audited the same way; never edited."""

    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.CharField(max_length=120, help_text="admin:<user>, api:<user> or key:<API key name>")
    action = models.CharField(max_length=32)
    target = models.CharField(max_length=300, blank=True, default="", help_text="the crawl, hosts or URLs")
    result = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        verbose_name = "steering action"

    def __str__(self):
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor} {self.action} {self.target}"
