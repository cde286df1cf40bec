"""The frontier in the Django admin. Built for million-row tables: no full COUNT(*)
(CappedCountPaginator, show_full_result_count=False), no DISTINCT scans for filter choices
(fixed choices only), raw id widgets instead of select boxes, no query per row."""

from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import Count, Q
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from common.adminkit import (
    BigTableAdmin,
    ChoicesFilter,
    ObjectActionsAdmin,
    ReadOnlyAdmin,
    StatusClassFilter,
    YesNoFilter,
)
from common.humanize import duration, exact, moment, per_day, relative

from . import hoststate, importance, service, traps
from .models import (
    CrawlLimits,
    CrawlScope,
    DeadLetter,
    ExcludedDomain,
    Host,
    RecrawlPlan,
    ScopeKind,
    Seed,
    ServerAddress,
    SteeringAction,
    TrustedDomain,
    Url,
    UrlPattern,
    UrlState,
)
from .limits import LIMIT_SETTINGS
from .normalize import InvalidUrl, normalize
from .pacing import WAIT_REASONS
from .robots_state import VERDICT_FILTERS, RobotsVerdict, classify
from .vocabulary import Observation


class LeasedFilter(YesNoFilter):
    title = "lease"
    parameter_name = "leased"
    yes_label, no_label = "leased now", "not leased"

    def condition(self):
        return Q(leased_until__gt=timezone.now())


class StatusFilter(StatusClassFilter):
    title = "last status"
    field = "last_status"
    _classes = StatusClassFilter.CLASSES
    CLASSES = {"2xx": _classes["2xx"], "3xx": _classes["3xx"], "404/410": {"in": (404, 410)},
               "4xx": _classes["4xx"], "5xx": _classes["5xx"]}


class HostFilter(admin.SimpleListFilter):
    """URLs of one host (linked from the host list); lists only the chosen host, never all."""

    title = "host"
    parameter_name = "host"

    def lookups(self, request, model_admin):
        value = self.value()
        if value and value.isdigit():
            origin = Host.objects.filter(id=int(value)).values_list("origin", flat=True).first()
            if origin:
                return [(value, origin)]
        return []

    def queryset(self, request, queryset):
        value = self.value()
        return queryset.filter(host_id=int(value)) if value and value.isdigit() else queryset


class RobotsFilter(admin.SimpleListFilter):
    """The verdicts of robots_state, the one definition the fetcher and metrics use too."""

    title = "robots.txt"
    parameter_name = "robots"

    def lookups(self, request, model_admin):
        return list(RobotsVerdict.choices)

    def queryset(self, request, queryset):
        value = self.value()
        return queryset.filter(VERDICT_FILTERS[value]) if value in VERDICT_FILTERS else queryset


class DerivedDataAdmin(ReadOnlyAdmin, BigTableAdmin):
    """Rows the crawl derives (hosts, URLs, leases, robots caches): shown, never edited by
    hand — an edit would bypass what keeps them consistent (an edited state is not a
    requeue, an edited lease is a second fetcher). Operators change them through the
    steering actions (frontier/steering.py), which the API offers too, audited the same."""

    def has_steer_permission(self, request):
        return request.user.has_perm("frontier.change_host")


def _actor(request) -> str:
    return f"admin:{request.user.get_username()}"


def _summary(result: service.ActionResult, what: str) -> str:
    extras = {k: v for k, v in result.detail.items() if v}
    suffix = f" ({', '.join(f'{k}: {v}' for k, v in extras.items())})" if extras else ""
    return f"{what}: {result.changed} changed{suffix}"


def _report(modeladmin, request, result: service.ActionResult, what: str) -> None:
    modeladmin.message_user(request, _summary(result, what), messages.SUCCESS)


def _host_action(action: str, description: str):
    @admin.action(description=description, permissions=["steer"])
    def run(modeladmin, request, queryset):
        result = service.host_action(action, list(queryset.values_list("id", flat=True)), _actor(request))
        _report(modeladmin, request, result, description)

    run.__name__ = action
    return run


# The robots.txt verdicts in a list column's width (the full label on hover).
ROBOTS_SHORT = {RobotsVerdict.NOT_FETCHED: "not fetched", RobotsVerdict.RULES: "rules apply",
                RobotsVerdict.ALLOW_ALL: "allow all", RobotsVerdict.DISALLOW_ALL: "disallow all"}


class PausedFilter(YesNoFilter):
    title = "paused"
    parameter_name = "paused"
    yes_label, no_label = "paused by an operator", "not paused"

    def condition(self):
        return Q(paused_at__isnull=False)


class WaitReasonFilter(ChoicesFilter):
    """Hosts waiting now, by why (a reason whose wait is over is history, not a state)."""

    title = "waiting now for"
    parameter_name = field = "wait_reason"
    values = WAIT_REASONS

    def queryset(self, request, queryset):
        if self.value() in self.values:
            return queryset.filter(wait_reason=self.value(), next_fetch_at__gt=timezone.now())
        return queryset


@admin.register(Host)
class HostAdmin(DerivedDataAdmin, ObjectActionsAdmin):
    """A host in a line (its state now, computed: frontier/hoststate.py), and its page with
    the actions and links an operator wants next to it."""

    list_display = ("origin", "state_now", "urls_link", "band", "response_time_human", "failures", "robots",
                    "log_link")
    list_filter = (PausedFilter, LeasedFilter, RobotsFilter, WaitReasonFilter)
    search_fields = ("origin", "=address")
    actions = [_host_action("pause", "Pause selected hosts"), _host_action("resume", "Resume selected hosts"),
               _host_action("fetch_now", "Fetch now (cut the wait short)"),
               _host_action("reset_breaker", "Reset the circuit breaker"),
               _host_action("refetch_robots", "Refetch robots.txt")]
    object_actions = (("pause", "Pause"), ("resume", "Resume"), ("fetch_now", "Fetch now"),
                      ("reset_breaker", "Reset breaker"), ("refetch_robots", "Refetch robots.txt"))
    fieldsets = (
        (None, {"fields": ("origin", "state_in_words")}),
        ("Politeness", {"description": "the wait between requests: max(Crawl-delay, adaptive delay from the "
                                       "response time, Retry-After), from the end of the previous response",
                        "fields": ("crawl_delay_human", "response_time_human", "next_fetch_at", "waiting_for",
                                   "failures", "band")}),
        ("robots.txt", {"fields": ("robots", "robots_status", "robots_error", "robots_fetched_at",
                                   "robots_expires_at", "robots_sitemaps", "robots_body")}),
        ("Lease", {"description": "a crawling process's hold on the host while it runs a session",
                   "fields": ("lease_owner", "lease_holder", "leased_until")}),
        ("Counts and addresses", {"fields": ("url_count", "referring_hosts", "domain", "address", "created_at")}),
    )
    certificate_fieldset = ("Certificate (trust on first use)", {
        "description": "Geminispace's certificates are mostly self-signed: the crawler remembers the one a "
                       "capsule showed and notes a change that came before it expired (it crawls on)",
        "fields": ("tls_fingerprint", "tls_not_after", "tls_previous_fingerprint", "tls_changed_early_at")})
    readonly_fields = ("state_in_words", "crawl_delay_human", "response_time_human", "robots", "waiting_for",
                       "referring_hosts")

    def get_fieldsets(self, request, obj=None):
        gemini = obj is not None and obj.origin.startswith("gemini://")
        return self.fieldsets + ((self.certificate_fieldset,) if gemini else ())

    def get_queryset(self, request):
        # Ready or idle needs to know whether any URL is due: one EXISTS per listed row.
        return super().get_queryset(request).annotate(has_due=hoststate.due_urls(timezone.now()))

    @admin.display(description="now")
    def state_now(self, host):
        state = service.host_state(host, has_due=host.has_due)
        return exact(state.short(), state.text)

    @admin.display(description="state now")
    def state_in_words(self, host):
        return service.host_state(host, has_due=getattr(host, "has_due", None)).text

    @admin.display(description="response time", ordering="response_time")
    def response_time_human(self, host):
        return exact(duration(host.response_time), host.response_time)

    @admin.display(description="Crawl-delay")
    def crawl_delay_human(self, host):
        if host.crawl_delay is None:
            return "none (robots.txt sets none; the default or adaptive delay applies)"
        return exact(duration(host.crawl_delay), host.crawl_delay)

    @admin.display(description="waiting for")
    def waiting_for(self, host):
        """The stored reason only while its wait lasts: after that it is history."""
        if host.next_fetch_at and host.next_fetch_at > timezone.now() and host.wait_reason:
            return service.WAIT_REASON_TEXT.get(host.wait_reason, host.wait_reason)
        return "nothing: its last wait is over"

    @admin.display(description="robots.txt")
    def robots(self, host):
        verdict = classify(host.robots_status, host.robots_error, host.robots_fetched_at is not None)
        return exact(ROBOTS_SHORT[verdict], verdict.label)

    @admin.display(description="URLs", ordering="url_count")
    def urls_link(self, host):
        return format_html('<a href="{}?host={}">{}</a>', reverse("admin:frontier_url_changelist"), host.id,
                           host.url_count)

    @admin.display(description="requests")
    def log_link(self, host):
        return format_html('<a href="{}?host_id={}">crawl log</a>', reverse("admin:crawl_crawllogentry_changelist"),
                           host.id)

    def available_object_actions(self, request, host):
        actions = dict(super().available_object_actions(request, host))
        actions.pop("resume" if host.paused_at is None else "pause", None)
        if not host.failures:
            actions.pop("reset_breaker", None)
        return list(actions.items())

    def run_object_action(self, request, host, action):
        result = service.host_action(action, [host.id], _actor(request))
        return _summary(result, dict(self.object_actions)[action])

    def object_links(self, host):
        links = [(f"its {host.url_count} URLs", f"{reverse('admin:frontier_url_changelist')}?host={host.id}"),
                 ("its crawl log", f"{reverse('admin:crawl_crawllogentry_changelist')}?host_id={host.id}")]
        if host.address:
            links.append((f"server address {host.address}",
                          f"{reverse('admin:frontier_serveraddress_changelist')}?q={host.address}"))
        return links


@admin.register(ServerAddress)
class ServerAddressAdmin(DerivedDataAdmin):
    list_display = ("address", "next_fetch_at", "lease_owner", "leased_until")
    list_filter = (LeasedFilter,)
    search_fields = ("=address",)


class UrlStateFilter(admin.SimpleListFilter):
    """The URL states, with "failed" split in two: dead letters (retries spent, an admin may
    requeue them) and URLs refused for good without retries (a refused address, a body
    over the size cap), which are not dead letters."""

    title = "state"
    parameter_name = "state"
    DEAD_LETTER, FINAL = "failed_dead_letter", "failed_final"

    def lookups(self, request, model_admin):
        choices = [(value, label) for value, label in UrlState.choices if value != UrlState.FAILED]
        return choices + [(self.DEAD_LETTER, "failed (dead letter)"),
                          (self.FINAL, "failed without retries (refused address, too large)")]

    def queryset(self, request, queryset):
        value = self.value()
        if value == self.DEAD_LETTER:
            return queryset.filter(state=UrlState.FAILED, dead_letter__isnull=False)
        if value == self.FINAL:
            return queryset.filter(state=UrlState.FAILED, dead_letter__isnull=True)
        if value in UrlState.values:
            return queryset.filter(state=value)
        return queryset


class ObservationFilter(ChoicesFilter):
    """What the last visit saw (the vocabulary's observations)."""

    title = "last observation"
    parameter_name = "observation"
    field = "last_observation"
    values = tuple(o.value for o in Observation)


@admin.register(Url)
class UrlAdmin(DerivedDataAdmin, ObjectActionsAdmin):
    list_display = ("url", "state", "last_status", "score_and_band", "next_fetch", "last_fetched",
                    "change_rate_human")
    list_filter = (UrlStateFilter, "kind", ObservationFilter, StatusFilter, HostFilter)
    search_fields = ("url",)
    raw_id_fields = ("host", "referrer")
    readonly_fields = ("score_parts", "change_rate_human", "recrawl_interval_human", "next_fetch")
    actions = ["recrawl_now"]
    object_actions = (("recrawl_now", "Recrawl now"),)
    fieldsets = (
        (None, {"fields": ("url", "url_key", "kind", "host", "depth", "redirect_hops", "scopes", "referrer",
                           "created_at")}),
        ("Importance", {"description": "why this URL ranks where it does (frontier/importance.py): higher goes "
                                       "first within its host; its host's band decides how often the host is drawn",
                        "fields": ("score", "score_parts", "inlink_hosts", "hint")}),
        ("Fetching", {"fields": ("state", "outcome", "attempts", "backoff_level", "next_fetch", "last_status",
                                 "last_fetched_at")}),
        ("Revisits", {"description": "what visits saw and when the next is planned (frontier/recrawl.py)",
                      "fields": ("last_observation", "observed_at", "last_change_at", "observations",
                                 "change_rate_human", "recrawl_interval_human", "change_stats", "etag",
                                 "last_modified", "content_hash", "payload_at", "text_hash", "simhash")}),
    )

    @admin.display(description="next fetch", ordering="next_fetch_at")
    def next_fetch(self, url):
        if url.state != UrlState.QUEUED:
            return exact("–", moment(url.next_fetch_at))  # not queued: the stored time is not a plan
        return exact(relative(url.next_fetch_at), moment(url.next_fetch_at))

    @admin.display(description="last fetched", ordering="last_fetched_at")
    def last_fetched(self, url):
        return exact(relative(url.last_fetched_at, empty="never"), moment(url.last_fetched_at))

    @admin.display(description="change rate")
    def change_rate_human(self, url):
        if not url.change_stats or url.change_rate is None:  # frontier/belief.py: nothing seen yet
            if url.state == UrlState.FETCHED:
                return "unknown (nothing seen yet: its first look is due)"
            return "unknown (not fetched yet)" if url.last_fetched_at is None else "unknown"
        return exact(per_day(url.change_rate), url.change_rate)

    @admin.display(description="recrawl interval")
    def recrawl_interval_human(self, url):
        if url.recrawl_interval is None:
            return "not planned yet"
        return exact(f"every {duration(url.recrawl_interval)}", f"{url.recrawl_interval} s")

    def run_object_action(self, request, url, action):
        return _summary(service.recrawl_now([url.id], _actor(request)), "Recrawl now")

    def object_links(self, url):
        links = [(f"host {url.host.origin}", reverse("admin:frontier_host_change", args=[url.host_id])),
                 ("its crawl log lines", f"{reverse('admin:crawl_crawllogentry_changelist')}?"
                                         f"{urlencode({'host_id': url.host_id, 'q': url.url})}")]
        # The document is the indexer's; its row names the URL, so the frontier reads it by
        # the reverse relation (Document.url's related_name) without importing the indexer.
        document_id, warc_file = Url.objects.filter(pk=url.id).values_list("document__id", "document__warc_file")[0]
        if document_id:
            archived = bool(warc_file)
            links.append(("its document", reverse("admin:indexer_document_change", args=[document_id])))
            if archived:
                links.append(("raw response", reverse("admin:indexer_document_raw", args=[document_id])))
        return links

    def get_search_results(self, request, queryset, search_term):
        """A whole URL is found by its key (an index lookup, however big the table);
        anything else, or a URL not in the frontier, by part of the URL."""
        try:
            found = queryset.filter(url_key=normalize(search_term.strip()).url_key)
        except InvalidUrl:
            found = None
        if found is not None and found.exists():
            return found, False
        return super().get_search_results(request, queryset, search_term)

    @admin.display(description="score", ordering="score")
    def score_and_band(self, url):
        return score_with_band(url.score)

    @admin.display(description="why")
    def score_parts(self, url):
        return score_in_words(url)

    @admin.action(description="Recrawl now", permissions=["steer"])
    def recrawl_now(self, request, queryset):
        result = service.recrawl_now(list(queryset.values_list("id", flat=True)), _actor(request))
        _report(self, request, result, "Recrawl now")


def score_with_band(score: int) -> str:
    """The score and the band it puts the URL in."""
    return f"{score} ({('high', 'middle', 'low')[importance.score_band(score)]} band)"


def score_in_words(url: Url) -> str:
    """The score's parts as they would be computed now (the stored score was computed when
    the URL was admitted, and raised by links from other hosts since)."""
    parts = importance.parts(url.url, normalize(url.url).host, url.depth, url.inlink_hosts, url.hint)
    words = [f"depth {url.depth}: {parts.depth:+d}",
             f"{'home page' if parts.place == settings.CRAWLER_SCORE_HOME and parts.place else 'place'}: "
             f"{parts.place:+d}",
             f"{url.inlink_hosts} other host{'s' if url.inlink_hosts != 1 else ''} link here: {parts.inlinks:+d}",
             f"sitemap: {parts.hint:+d}", f"trusted domain: {parts.trusted:+d}"]
    sites = url.host.referring_hosts
    return (" · ".join(words) + f" = {parts.total} now; stored {url.score}; and when hosts compete for fetch "
            f"threads, its host's standing ({'about ' if sites > 3 else ''}{sites} other "
            f"host{'s' if sites != 1 else ''} link to its pages): "
            f"{importance.site_points(sites):+d}")


class SeedForm(forms.ModelForm):
    """A seed and the scope its links are crawled in, checked before anything is written."""

    scope_kind = forms.ChoiceField(label="scope", choices=ScopeKind.choices,
                                   help_text="where the links found from this seed may lead")
    include = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}),
                              help_text="regular expressions, one per line: URLs matching one are crawled "
                                        "wherever they are")
    exclude = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}),
                              help_text="regular expressions, one per line: URLs matching one are never crawled")

    class Meta:
        model = Seed
        fields = ("url",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["scope_kind"].initial = settings.CRAWLER_DEFAULT_SCOPE

    def clean(self):
        data = super().clean()
        try:
            data["spec"] = service.parse_spec(data.get("scope_kind", ""), _lines(data.get("include")),
                                              _lines(data.get("exclude")))
        except service.InvalidScope as exc:
            raise forms.ValidationError(str(exc)) from None
        if data.get("url"):
            reason = service.seed_rejection(data["url"])
            if reason:
                raise forms.ValidationError({"url": f"not admitted: {reason}"})
        return data


def _lines(text: str | None) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


@admin.register(Seed)
class SeedAdmin(admin.ModelAdmin):
    """Seeds are a log of what was asked for: added here (admitted to the frontier at once,
    in canonical form, with their scope), never edited."""

    form = SeedForm
    list_display = ("url", "scope", "created_at")
    list_select_related = ("scope",)
    search_fields = ("url",)

    def has_change_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        result = service.add_seeds([obj.url], form.cleaned_data["spec"])
        if result.rejected:  # the limits changed since the form was checked
            messages.warning(request, f"{obj.url} was not admitted: {', '.join(result.rejected)}")
            return
        for _, message in result.warnings.values():
            messages.warning(request, f"{result.verdicts[0]}: {message}")
        saved = Seed.objects.filter(url=result.verdicts[0]).order_by("-id").first()
        obj.pk, obj.url, obj.scope_id, obj.created_at = saved.pk, saved.url, saved.scope_id, saved.created_at


class CrawlScopeForm(forms.ModelForm):
    class Meta:
        model = CrawlScope
        fields = ("include", "exclude")

    def clean(self):
        data = super().clean()
        try:
            service.parse_spec(self.instance.kind, _lines(data.get("include")), _lines(data.get("exclude")))
        except service.InvalidScope as exc:
            raise forms.ValidationError(str(exc)) from None
        for name in ("include", "exclude"):
            data[name] = "\n".join(_lines(data.get(name)))
        if service.scope_key_taken(self.instance, data["include"], data["exclude"]):
            raise forms.ValidationError("another scope has exactly this definition")
        return data


@admin.register(CrawlScope)
class CrawlScopeAdmin(admin.ModelAdmin):
    """Scopes are made with their seeds; their patterns can be changed here and apply to
    links found from then on (workers notice within seconds)."""

    form = CrawlScopeForm
    list_display = ("id", "kind", "anchor", "include", "exclude", "seed_count", "out_of_scope")
    list_filter = ("kind",)
    search_fields = ("anchor",)
    readonly_fields = ("kind", "anchor", "out_of_scope", "created_at")

    def has_add_permission(self, request):
        return False

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(seed_count=Count("seeds"))

    @admin.display(description="seeds", ordering="seed_count")
    def seed_count(self, scope):
        return scope.seed_count

    def save_model(self, request, obj, form, change):
        service.save_scope_patterns(obj)


class ExcludedDomainForm(forms.ModelForm):
    class Meta:
        model = ExcludedDomain
        fields = ("domain",)

    def clean_domain(self):
        try:
            return service.canonical_domain(self.cleaned_data["domain"])
        except service.InvalidDomain as exc:
            raise forms.ValidationError(str(exc)) from None


@admin.register(UrlPattern)
class UrlPatternAdmin(ReadOnlyAdmin):
    """URL patterns and what their pages yielded (frontier/traps.py): a stopped one is a trap
    that stopped itself; a bare origin is a whole host, stopped as a mirror of another host's
    pages. Resuming one queues its URLs again and it is never stopped again."""

    list_display = ("pattern", "kind", "pages", "new_pages", "yield_share", "stopped_at", "allowed")
    list_filter = (("stopped_at", admin.EmptyFieldListFilter), "allowed")
    search_fields = ("pattern",)
    actions = ["resume_patterns", "stop_patterns"]

    @admin.display(description="new text")
    def yield_share(self, pattern):
        """Pages with new text (for a host: pages not a copy of another host's page)."""
        return f"{pattern.new_pages / pattern.pages:.0%}" if pattern.pages else "–"

    @admin.display(description="kind")
    def kind(self, pattern):
        return "host (mirror test)" if traps.is_host_pattern(pattern.pattern) else "path (trap test)"

    @admin.action(description="Resume: not a trap (queue its URLs again, never stop it)", permissions=["steer"])
    def resume_patterns(self, request, queryset):
        urls = sum(traps.resume(p) for p in queryset.values_list("pattern", flat=True))
        messages.info(request, f"{queryset.count()} patterns resumed, {urls} URLs queued again")

    @admin.action(description="Stop: a trap (set its queued URLs aside, admit no more)", permissions=["steer"])
    def stop_patterns(self, request, queryset):
        urls = sum(traps.stop(p) for p in queryset.values_list("pattern", flat=True))
        messages.info(request, f"{queryset.count()} patterns stopped, {urls} queued URLs set aside")

    def has_steer_permission(self, request):
        return request.user.has_perm("frontier.change_host")


@admin.register(TrustedDomain)
class TrustedDomainAdmin(admin.ModelAdmin):
    """Domains whose URLs (and their subdomains') are fetched sooner: `weight` score points
    more for URLs admitted from now on (frontier/importance.py)."""

    list_display = ("domain", "weight", "created_at")
    search_fields = ("domain",)

    def save_model(self, request, obj, form, change):
        obj.domain = service.canonical_domain(obj.domain)
        super().save_model(request, obj, form, change)
        importance.forget_trusted()


@admin.register(ExcludedDomain)
class ExcludedDomainAdmin(admin.ModelAdmin):
    """Adding a domain stops its queued URLs at once; removing it puts them back."""

    form = ExcludedDomainForm
    list_display = ("domain", "created_at")
    search_fields = ("domain",)

    def save_model(self, request, obj, form, change):
        previous = ExcludedDomain.objects.filter(pk=obj.pk).values_list("domain", flat=True).first()
        super().save_model(request, obj, form, change)
        stopped = service.stop_queued_urls([obj.domain])
        if previous and previous != obj.domain:
            service.resume_excluded_urls([previous])
        messages.info(request, f"{stopped} queued URLs of {obj.domain} stopped")

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        service.resume_excluded_urls([obj.domain])

    def delete_queryset(self, request, queryset):
        domains = list(queryset.values_list("domain", flat=True))
        for obj in queryset:
            obj.delete()  # bumps the limits version
        service.resume_excluded_urls(domains)


class CrawlLimitsForm(forms.ModelForm):
    """Each limit says what is in force and what an empty field means."""

    class Meta:
        model = CrawlLimits
        fields = list(LIMIT_SETTINGS)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field, setting in LIMIT_SETTINGS.items():
            default = getattr(settings, setting)
            value = getattr(self.instance, field)
            in_force = f"{default} (the default)" if value is None else f"{value} (set here)"
            self.fields[field].help_text = (f"in force: {in_force}. Empty = the default, {setting} = {default}.")
            self.fields[field].widget.attrs.update(placeholder=f"default: {default}", style="width: 12em")
        self.fields["url_length_limit"].label = "URL length limit"
        self.fields["max_urls_per_host"].label = "URLs per host"


@admin.register(CrawlLimits)
class CrawlLimitsAdmin(ObjectActionsAdmin):
    """The one row of limits, and the crawl's pause switch. The list is skipped: it opens
    the row itself, with the crawl's state, Pause/Resume as a button, and each limit in force
    beside its default."""

    form = CrawlLimitsForm
    list_display = ("__str__", "crawl_state")  # shown only after a list action that selected nothing
    fieldsets = (
        ("The crawl", {"fields": ("crawl_state",)}),
        ("Limits", {"description": "links found from now on are held to these (running workers see a change "
                                   "within about 2 s)",
                    "fields": list(LIMIT_SETTINGS)}),
        (None, {"fields": ("excluded_domains", "version", "updated_at")}),
    )
    readonly_fields = ("crawl_state", "excluded_domains", "version", "updated_at")
    actions = ["pause_crawl", "resume_crawl"]
    object_actions = (("pause", "Pause the whole crawl"), ("resume", "Resume the crawl"))

    def has_add_permission(self, request):
        return False  # the row exists: the changelist makes it

    def has_delete_permission(self, request, obj=None):
        return False

    def has_steer_permission(self, request):
        return request.user.has_perm("frontier.change_host")

    def changelist_view(self, request, extra_context=None):
        row, _ = CrawlLimits.objects.get_or_create(pk=1)  # "0 crawl limits" said nothing about the ones in force
        if request.method == "GET":  # a list of one row: open the row (the list's actions still POST here)
            return redirect(reverse("admin:frontier_crawllimits_change", args=[row.pk]))
        return super().changelist_view(request, extra_context)

    def available_object_actions(self, request, row):
        actions = dict(super().available_object_actions(request, row))
        actions.pop("resume" if row.paused_at is None else "pause", None)
        return list(actions.items())

    def run_object_action(self, request, row, action):
        if action == "pause":
            return _summary(service.pause_crawl(_actor(request)), "Pause the crawl")
        return _summary(service.resume_crawl(_actor(request)), "Resume the crawl")

    @admin.display(description="crawl")
    def crawl_state(self, row):
        if row.paused_at:
            return f"paused since {moment(row.paused_at)}: no host is leased, running sessions stop"
        return "running"

    @admin.display(description="excluded domains")
    def excluded_domains(self, row):
        count = ExcludedDomain.objects.count()
        return format_html('<a href="{}">{} excluded domain{}</a>', reverse("admin:frontier_excludeddomain_changelist"),
                           count, "" if count == 1 else "s")

    @admin.action(description="Pause the whole crawl", permissions=["steer"])
    def pause_crawl(self, request, queryset):
        _report(self, request, service.pause_crawl(_actor(request)), "Pause the crawl")

    @admin.action(description="Resume the crawl", permissions=["steer"])
    def resume_crawl(self, request, queryset):
        _report(self, request, service.resume_crawl(_actor(request)), "Resume the crawl")


@admin.register(SteeringAction)
class SteeringActionAdmin(DerivedDataAdmin):
    """The audit log: every pause, resume and host or URL action, from the admin or the API."""

    list_display = ("at", "actor", "action", "target", "result")
    list_filter = ("action",)
    search_fields = ("actor", "target")


@admin.register(DeadLetter)
class DeadLetterAdmin(DerivedDataAdmin):
    list_display = ("url_text", "reason", "last_status", "attempts", "created_at")
    list_filter = ("reason", "last_status")  # a small table: DISTINCT is cheap here
    list_select_related = ("url",)
    raw_id_fields = ("url",)
    actions = ["requeue"]

    @admin.display(description="URL", ordering="url__url")
    def url_text(self, letter):
        # Not the foreign key itself: the admin would keep a long URL on one line (nowrap).
        return letter.url.url

    @admin.action(description="Requeue selected URLs", permissions=["steer"])
    def requeue(self, request, queryset):
        result = service.recrawl_now(list(queryset.values_list("url_id", flat=True)), _actor(request))
        _report(self, request, result, "Requeued")


@admin.register(RecrawlPlan)
class RecrawlPlanAdmin(ReadOnlyAdmin):
    """The recrawl plan is derived (beat solves it): shown, never edited."""

    list_display = ("__str__", "price", "pages", "solved_at", "released_total", "released_at")
