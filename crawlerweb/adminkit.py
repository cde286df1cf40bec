"""Pieces every app's admin shares: lists built for million-row tables, read-only models,
and the three kinds of list filter they use, each with fixed choices (a filter whose
choices come from a SELECT DISTINCT scans the whole table on every page view).
"""

from django.contrib import admin
from django.db.models import Q

from .paging import CappedCountPaginator


class BigTableAdmin(admin.ModelAdmin):
    """No full COUNT(*) past CappedCountPaginator's cap, 100 rows a page."""

    paginator = CappedCountPaginator
    show_full_result_count = False
    list_per_page = 100


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows the crawl derives or records: shown, never added, edited or deleted by hand."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class YesNoFilter(admin.SimpleListFilter):
    """"yes" keeps the rows matching condition(), "no" the others."""

    yes_label = "yes"
    no_label = "no"

    def condition(self) -> Q:
        raise NotImplementedError

    def lookups(self, request, model_admin):
        return [("yes", self.yes_label), ("no", self.no_label)]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(self.condition())
        if self.value() == "no":
            return queryset.exclude(self.condition())
        return queryset


class ChoicesFilter(admin.SimpleListFilter):
    """One column equal to one of a fixed list of values (underscores shown as spaces)."""

    field = ""
    values: tuple[str, ...] = ()  # (not "choices": that is the list filter's own method)

    def lookups(self, request, model_admin):
        return [(value, value.replace("_", " ")) for value in self.values]

    def queryset(self, request, queryset):
        return queryset.filter(**{self.field: self.value()}) if self.value() in self.values else queryset


class StatusClassFilter(admin.SimpleListFilter):
    """An HTTP status column by class (2xx, 3xx, 4xx, 5xx), or no response at all."""

    title = "status"
    parameter_name = "status"
    field = "status"
    # name -> lookups on the field; a subclass may add names before the classes
    CLASSES = {"2xx": {"gte": 200, "lte": 299}, "3xx": {"gte": 300, "lte": 399}, "4xx": {"gte": 400, "lte": 499},
               "5xx": {"gte": 500, "lte": 599}}

    def lookups(self, request, model_admin):
        return [(name, name) for name in self.CLASSES] + [("none", "no response")]

    def queryset(self, request, queryset):
        value = self.value()
        if value == "none":
            return queryset.filter(**{f"{self.field}__isnull": True})
        if value in self.CLASSES:
            return queryset.filter(**{f"{self.field}__{op}": arg for op, arg in self.CLASSES[value].items()})
        return queryset
