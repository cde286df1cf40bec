"""Pieces every app's admin shares: lists built for million-row tables, read-only models,
buttons and links on an object's page, and the three kinds of list filter they use, each with fixed choices (a filter whose
choices come from a SELECT DISTINCT scans the whole table on every page view).
"""

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import Http404, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.urls import path, reverse

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


class ObjectActionsAdmin(admin.ModelAdmin):
    """An object's page carries what an operator does to it and where to look next: buttons
    (`object_actions`: (name, label) pairs, run by `run_object_action`, POST with the CSRF
    token, for those `has_steer_permission` allows) and links (`object_links`)."""

    change_form_template = "admin/object_actions_change_form.html"
    object_actions: tuple[tuple[str, str], ...] = ()

    def has_steer_permission(self, request) -> bool:
        return request.user.is_staff

    def available_object_actions(self, request, obj) -> list[tuple[str, str]]:
        """The actions that make sense for this object now (a paused host has Resume, not Pause)."""
        return list(self.object_actions) if self.has_steer_permission(request) else []

    def run_object_action(self, request, obj, action: str) -> str:
        """Do it; the message for the operator."""
        raise NotImplementedError

    def object_links(self, obj) -> list[tuple[str, str]]:
        return []

    def _action_url_name(self) -> str:
        return f"{self.opts.app_label}_{self.opts.model_name}_act"

    def get_urls(self):
        act = path("<path:object_id>/act/<str:action>/", self.admin_site.admin_view(self.object_action_view),
                   name=self._action_url_name())
        return [act, *super().get_urls()]

    def object_action_view(self, request, object_id, action):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        obj = self.get_object(request, object_id)
        if obj is None:
            raise Http404(f"no {self.opts.verbose_name} {object_id}")
        if action not in dict(self.available_object_actions(request, obj)):
            raise PermissionDenied
        self.message_user(request, self.run_object_action(request, obj, action), messages.SUCCESS)
        return redirect(reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[obj.pk]))

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            context["object_actions"] = [
                (label, reverse(f"admin:{self._action_url_name()}", args=[obj.pk, name]))
                for name, label in self.available_object_actions(request, obj)]
            context["object_links"] = self.object_links(obj)
        return super().render_change_form(request, context, add=add, change=change, form_url=form_url, obj=obj)
