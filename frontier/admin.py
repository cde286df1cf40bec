"""The frontier in the Django admin. Built for million-row tables: no full COUNT(*)
(CappedCountPaginator, show_full_result_count=False), no DISTINCT scans for filter choices
(fixed choices only), raw id widgets instead of select boxes, no query per row."""

from django import forms
from django.contrib import admin, messages
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from crawlerweb.paging import CappedCountPaginator

from . import service
from .models import CrawlLimits, DeadLetter, ExcludedDomain, Host, Seed, ServerAddress, Url


class LeasedFilter(admin.SimpleListFilter):
    title = "lease"
    parameter_name = "leased"

    def lookups(self, request, model_admin):
        return [("yes", "leased now"), ("no", "not leased")]

    def queryset(self, request, queryset):
        now = timezone.now()
        if self.value() == "yes":
            return queryset.filter(leased_until__gt=now)
        if self.value() == "no":
            return queryset.exclude(leased_until__gt=now)
        return queryset


class StatusFilter(admin.SimpleListFilter):
    """Status classes, fixed: listing the distinct codes present would scan every URL."""

    title = "last status"
    parameter_name = "status"
    CLASSES = {"2xx": (200, 299), "3xx": (300, 399), "404/410": None, "4xx": (400, 499), "5xx": (500, 599)}

    def lookups(self, request, model_admin):
        return [(name, name) for name in self.CLASSES] + [("none", "no response")]

    def queryset(self, request, queryset):
        value = self.value()
        if value == "none":
            return queryset.filter(last_status__isnull=True)
        if value == "404/410":
            return queryset.filter(last_status__in=(404, 410))
        if value in self.CLASSES:
            low, high = self.CLASSES[value]
            return queryset.filter(last_status__gte=low, last_status__lte=high)
        return queryset


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
    title = "robots.txt"
    parameter_name = "robots"
    CHOICES = {
        "ok": ("fetched (2xx)", dict(robots_status__gte=200, robots_status__lt=300)),
        "allow_all": ("4xx: allow all", dict(robots_status__gte=400, robots_status__lt=500)),
        "unavailable": ("unavailable: disallow for now", dict(robots_error__gt="")),
        "never": ("not fetched yet", dict(robots_fetched_at__isnull=True)),
    }

    def lookups(self, request, model_admin):
        return [(key, label) for key, (label, _) in self.CHOICES.items()]

    def queryset(self, request, queryset):
        choice = self.CHOICES.get(self.value())
        return queryset.filter(**choice[1]) if choice else queryset


class BigTableAdmin(admin.ModelAdmin):
    paginator = CappedCountPaginator
    show_full_result_count = False
    list_per_page = 100


@admin.register(Host)
class HostAdmin(BigTableAdmin):
    list_display = ("origin", "address", "urls_link", "crawl_delay", "response_time", "failures", "next_fetch_at",
                    "robots_status", "robots_error", "lease_owner", "leased_until")
    list_filter = (LeasedFilter, RobotsFilter)
    search_fields = ("origin", "=address")
    readonly_fields = ("created_at", "url_count", "robots_fetched_at", "response_time", "failures")

    @admin.display(description="URLs", ordering="url_count")
    def urls_link(self, host):
        return format_html('<a href="{}?host={}">{}</a>', reverse("admin:frontier_url_changelist"), host.id,
                           host.url_count)


@admin.register(ServerAddress)
class ServerAddressAdmin(BigTableAdmin):
    list_display = ("address", "next_fetch_at", "lease_owner", "leased_until")
    list_filter = (LeasedFilter,)
    search_fields = ("=address",)


@admin.register(Url)
class UrlAdmin(BigTableAdmin):
    list_display = ("url", "state", "outcome", "last_status", "depth", "attempts", "next_fetch_at", "last_fetched_at")
    list_filter = ("state", StatusFilter, HostFilter)
    search_fields = ("=url_hash", "url")
    raw_id_fields = ("host", "referrer")
    readonly_fields = ("url_hash", "created_at")


@admin.register(Seed)
class SeedAdmin(admin.ModelAdmin):
    fields = ("url",)
    list_display = ("url", "created_at")
    search_fields = ("url",)

    def save_model(self, request, obj, form, change):
        result = service.add_urls([service.Candidate(obj.url)])
        if result.rejected:
            messages.warning(request, f"{obj.url} was not admitted: {', '.join(result.rejected)}")
        else:
            obj.url = result.verdicts[0]  # store the canonical form
        super().save_model(request, obj, form, change)


class ExcludedDomainForm(forms.ModelForm):
    class Meta:
        model = ExcludedDomain
        fields = ("domain",)

    def clean_domain(self):
        try:
            return service.canonical_domain(self.cleaned_data["domain"])
        except service.InvalidDomain as exc:
            raise forms.ValidationError(str(exc)) from None


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


@admin.register(CrawlLimits)
class CrawlLimitsAdmin(admin.ModelAdmin):
    list_display = ("__str__", "depth_limit", "url_length_limit", "max_urls_per_host", "updated_at")
    readonly_fields = ("version", "updated_at")

    def has_add_permission(self, request):
        return not CrawlLimits.objects.exists()


@admin.register(DeadLetter)
class DeadLetterAdmin(BigTableAdmin):
    list_display = ("url", "reason", "last_status", "attempts", "created_at")
    list_filter = ("reason", "last_status")  # a small table: DISTINCT is cheap here
    list_select_related = ("url",)
    raw_id_fields = ("url",)
    actions = ["requeue"]

    @admin.action(description="Requeue selected URLs")
    def requeue(self, request, queryset):
        n = service.requeue_dead_letters(queryset.values_list("id", flat=True))
        messages.success(request, f"{n} URLs requeued")
