from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from crawlerweb.paging import CappedCountPaginator

from .models import Document


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("address", "title", "status", "size", "indexed", "noindex", "duplicate_of", "fetched_at")
    list_filter = ("indexed", "noindex")  # booleans: fixed choices, no DISTINCT scan
    search_fields = ("address", "title")
    raw_id_fields = ("url", "duplicate_of")
    readonly_fields = ("url_link", "content_hash", "size", "status", "fetched_at")
    paginator = CappedCountPaginator
    show_full_result_count = False
    list_per_page = 100

    @admin.display(description="frontier URL")
    def url_link(self, document):
        return format_html('<a href="{}">{}</a>', reverse("admin:frontier_url_change", args=[document.url_id]),
                           document.address)
