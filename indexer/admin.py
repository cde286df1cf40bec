from django.contrib import admin

from .models import Document


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("address", "title", "status", "size", "indexed", "noindex", "duplicate_of", "fetched_at")
    list_filter = ("indexed", "noindex", "content_type")
    search_fields = ("address", "title")
    raw_id_fields = ("url", "duplicate_of")
    show_full_result_count = False
