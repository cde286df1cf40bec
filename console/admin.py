from django.contrib import admin, messages

from .keys import create_key
from .models import ApiKey


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("name", "prefix", "created_at", "last_used_at", "revoked")
    list_filter = ("revoked",)
    search_fields = ("name", "=prefix")
    readonly_fields = ("prefix", "created_at", "last_used_at")
    actions = ["revoke"]

    def get_fields(self, request, obj=None):
        return ("name",) if obj is None else ("name", "prefix", "created_at", "last_used_at", "revoked")

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        row, key = create_key(obj.name)
        obj.__dict__.update({f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields})
        obj._state.adding = False  # the admin's log entry and redirect use the saved row
        messages.warning(request, f"API key for {row.name!r}: {key} — copy it now, it is not shown again.")

    @admin.action(description="Revoke selected keys")
    def revoke(self, request, queryset):
        n = queryset.update(revoked=True)
        messages.success(request, f"{n} keys revoked")
