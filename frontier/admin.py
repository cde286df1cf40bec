from django.contrib import admin, messages
from django.utils import timezone

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


@admin.register(Host)
class HostAdmin(admin.ModelAdmin):
    list_display = ("origin", "address", "url_count", "crawl_delay", "response_time", "failures", "next_fetch_at",
                    "robots_status", "robots_error", "lease_owner", "leased_until")
    list_filter = (LeasedFilter, "robots_status", "robots_error")
    search_fields = ("origin", "=address")
    readonly_fields = ("created_at", "url_count", "robots_fetched_at", "response_time", "failures")
    show_full_result_count = False


@admin.register(ServerAddress)
class ServerAddressAdmin(admin.ModelAdmin):
    list_display = ("address", "next_fetch_at", "lease_owner", "leased_until")
    list_filter = (LeasedFilter,)
    search_fields = ("=address",)
    show_full_result_count = False


@admin.register(Url)
class UrlAdmin(admin.ModelAdmin):
    list_display = ("url", "state", "outcome", "last_status", "depth", "attempts", "next_fetch_at", "last_fetched_at")
    list_filter = ("state", "last_status", "outcome")
    search_fields = ("=url_hash", "url")
    raw_id_fields = ("host", "referrer")
    readonly_fields = ("url_hash", "created_at")
    list_select_related = False
    show_full_result_count = False  # no COUNT(*) over millions of rows


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


@admin.register(ExcludedDomain)
class ExcludedDomainAdmin(admin.ModelAdmin):
    fields = ("domain",)
    list_display = ("domain", "created_at")
    search_fields = ("domain",)


@admin.register(CrawlLimits)
class CrawlLimitsAdmin(admin.ModelAdmin):
    list_display = ("__str__", "depth_limit", "url_length_limit", "max_urls_per_host", "updated_at")
    readonly_fields = ("version", "updated_at")

    def has_add_permission(self, request):
        return not CrawlLimits.objects.exists()


@admin.register(DeadLetter)
class DeadLetterAdmin(admin.ModelAdmin):
    list_display = ("url", "reason", "last_status", "attempts", "created_at")
    list_filter = ("reason", "last_status")
    raw_id_fields = ("url",)
    actions = ["requeue"]

    @admin.action(description="Requeue selected URLs")
    def requeue(self, request, queryset):
        n = service.requeue_dead_letters(queryset.values_list("id", flat=True))
        messages.success(request, f"{n} URLs requeued")
