"""The crawl log in the Django admin: the recent past of every request from every machine,
newest first, read-only (entries are facts; crawl/crawllog.py writes and prunes them).

Built for a million rows, like frontier/admin.py (common/adminkit.py): no full COUNT(*),
fixed filter choices (no DISTINCT scans), and every filter
rides on one of the two indexes (time; host + time). One host's requests:
`/admin/crawl/crawllogentry/?host_id=N` (N is the frontier host's id; the origin column
links there).
"""

from datetime import UTC, timedelta

from django.contrib import admin
from django.db.models import Q
from django.utils import timezone
from django.utils.html import format_html

from common.adminkit import BigTableAdmin, ChoicesFilter, ReadOnlyAdmin, StatusClassFilter, YesNoFilter
from frontier.vocabulary import FetchError, RequestOutcome

from .models import CrawlLogEntry

# What crawl/observe.py outcome_of() names: the class of a status, or the request's error.
OUTCOMES = tuple(RequestOutcome) + tuple(error for error in FetchError if error != FetchError.ROBOTS_UNAVAILABLE)


class OutcomeFilter(ChoicesFilter):
    title = "outcome"
    parameter_name = field = "outcome"
    values = OUTCOMES


class KindFilter(admin.SimpleListFilter):
    title = "kind"
    parameter_name = "kind"

    def lookups(self, request, model_admin):
        return [("page", "page"), ("robots", "robots.txt")]

    def queryset(self, request, queryset):
        return queryset.filter(kind=self.value()) if self.value() else queryset


class RetryFilter(YesNoFilter):
    title = "retries"
    parameter_name = "retry"
    yes_label, no_label = "retries only", "first tries only"

    def condition(self):
        return Q(attempt__gt=1)


class NotModifiedFilter(admin.SimpleListFilter):
    title = "304 not modified"
    parameter_name = "not_modified"

    def lookups(self, request, model_admin):
        return [("yes", "304s only")]

    def queryset(self, request, queryset):
        return queryset.filter(status=304) if self.value() == "yes" else queryset


class SinceFilter(admin.SimpleListFilter):
    title = "time"
    parameter_name = "since"
    RANGES = {"15m": ("last 15 minutes", timedelta(minutes=15)), "1h": ("last hour", timedelta(hours=1)),
              "6h": ("last 6 hours", timedelta(hours=6)), "24h": ("last 24 hours", timedelta(hours=24))}

    def lookups(self, request, model_admin):
        return [(key, label) for key, (label, _) in self.RANGES.items()]

    def queryset(self, request, queryset):
        if self.value() in self.RANGES:
            return queryset.filter(at__gte=timezone.now() - self.RANGES[self.value()][1])
        return queryset


class HostFilter(admin.SimpleListFilter):
    """One host's requests, by the frontier host's id (`?host_id=N`); lists only the chosen
    host (read from its newest entry), never all hosts."""

    title = "host"
    parameter_name = "host_id"

    def lookups(self, request, model_admin):
        value = self.value()
        if value and value.isdigit():
            origin = (CrawlLogEntry.objects.filter(host_id=int(value)).order_by("-at")
                      .values_list("origin", flat=True).first())
            return [(value, origin or f"host {value}")]
        return []

    def queryset(self, request, queryset):
        value = self.value()
        return queryset.filter(host_id=int(value)) if value and value.isdigit() else queryset


@admin.register(CrawlLogEntry)
class CrawlLogEntryAdmin(ReadOnlyAdmin, BigTableAdmin):
    ordering = ("-at",)
    # Eight columns fit 1366 px; the kind (robots.txt or page: the URL says), attempt,
    # Retry-After, address and lease are on the entry's page.
    list_display = ("when", "status", "outcome", "url", "host_link", "bytes", "ms", "worker")
    list_display_links = ("when",)
    list_filter = (SinceFilter, OutcomeFilter, KindFilter, StatusClassFilter, RetryFilter, NotModifiedFilter,
                   HostFilter)
    search_fields = ("url",)
    search_help_text = "part of the URL"
    sortable_by = ("when",)  # the time index serves it; sorting by another column would sort every row

    @admin.display(description="time (UTC)", ordering="at")
    def when(self, entry):
        return entry.at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]

    @admin.display(description="host")
    def host_link(self, entry):
        return format_html('<a href="?host_id={}">{}</a>', entry.host_id, entry.origin)
