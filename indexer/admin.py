from datetime import timezone as dt_timezone

from django.conf import settings
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from common.adminkit import BigTableAdmin, ReadOnlyAdmin
from archive import warc, replay
from fetch import http

from . import decoding
from .maincontent import decode_spans, indexed_text
from .models import Document

# Shown in the page; the whole body is one click away as a download.
RAW_PREVIEW_BYTES = 256 * 1024
# A document's text on its page, before "show all".
TEXT_PREVIEW_CHARS = 400


@admin.register(Document)
class DocumentAdmin(ReadOnlyAdmin, BigTableAdmin):
    """Documents are what the crawl derived from the archived response, so read-only: an
    edited title would show in search while its words were never indexed. Recrawl the URL
    instead."""

    list_display = ("page_url", "title", "status", "indexed", "duplicate_of", "fetched_at", "raw_link")
    list_filter = ("indexed", "noindex")  # booleans: fixed choices, no DISTINCT scan
    search_fields = ("page_url", "title")
    raw_id_fields = ("url", "duplicate_of")
    readonly_fields = ("url_link", "raw_link", "replay_link", "content_hash", "size", "status", "fetched_at",
                       "encoding", "encoding_source", "warc_file", "warc_offset", "warc_length", "main_text", "furniture",
                       "language")
    fieldsets = (
        (None, {"fields": ("url_link", "page_url", "title", "headings", "main_text", "furniture")}),
        ("Response", {"fields": ("status", "content_type", "size", "fetched_at", "content_hash", "raw_link",
                                 "replay_link", "encoding", "encoding_source")}),
        ("Index", {"fields": ("indexed", "noindex", "duplicate_of", "language")}),
        ("Archive", {"fields": ("warc_file", "warc_offset", "warc_length")}),
    )

    @admin.display(description="main text")
    def main_text(self, document):
        """The page's own words, as indexed and as snippets show them (indexer/maincontent.py)."""
        return _folded(indexed_text(document.body or "", document.boilerplate or "", document.content_type))

    @admin.display(description="furniture")
    def furniture(self, document):
        """The rest of its visible text: menus, banners, footers, sidebars (not indexed)."""
        body = document.body or ""
        if indexed_text(body, document.boilerplate or "", document.content_type) == body:
            return "–"
        return _folded(" … ".join(body[a:b] for a, b in decode_spans(document.boilerplate)))

    @admin.display(description="frontier URL")
    def url_link(self, document):
        return format_html('<a href="{}">{}</a>', reverse("admin:frontier_url_change", args=[document.url_id]),
                           document.page_url)

    @admin.display(description="raw response")
    def raw_link(self, document):
        if not document.warc_file:
            return "not archived"
        return format_html('<a href="{}">raw response</a>', reverse("admin:indexer_document_raw", args=[document.pk]))

    @admin.display(description="archived copy")
    def replay_link(self, document):
        """The page as archived, replayed by pywb (`manage.py replay`) at its capture time."""
        if not document.warc_file:
            return "not archived"
        if not settings.CRAWLER_REPLAY_URL:
            return "not replayed (CRAWLER_REPLAY_URL is not set; see docs/archive.md: Replay the archive)"
        link = replay.capture_url(document.page_url, document.fetched_at)
        if link is None:
            return "not replayed (pywb replays http and https pages)"
        return format_html('<a href="{}" rel="noopener noreferrer">replay at {}</a>', link,
                           document.fetched_at.astimezone(dt_timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"))

    def get_urls(self):
        raw = path("<int:document_id>/raw/", self.admin_site.admin_view(self.raw_response_view),
                   name="indexer_document_raw")
        return [raw, *super().get_urls()]

    def raw_response_view(self, request, document_id):
        """The archived response of a document: headers and body as received.

        The body comes from the web: it is shown as escaped text and downloaded as an
        attachment, never rendered in the admin's origin.
        """
        document = get_object_or_404(Document, pk=document_id)
        if not self.has_view_permission(request, document):
            raise PermissionDenied
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "document": document,
                   "title": f"Raw response: {document.page_url}"}
        if not document.warc_file:
            context["problem"] = ("This document has no archived response: it was fetched while "
                                  "CRAWLER_WARC_ENABLED was off, or before the archive existed. "
                                  "Its next fetch will archive it.")
            return TemplateResponse(request, "admin/indexer/document/raw_response.html", context, status=404)
        location = warc.Location(document.warc_file, document.warc_offset or 0, document.warc_length or 0)
        try:
            response = warc.read_response(location)
        except warc.ArchiveUnavailable as exc:
            context["problem"] = str(exc)
            return TemplateResponse(request, "admin/indexer/document/raw_response.html", context, status=404)
        download = request.GET.get("download")
        if download == "body":
            return _attachment(response.body, "application/octet-stream", f"document-{document.pk}.body")
        if download == "warc":
            return _attachment(response.record_bytes, "application/warc", f"document-{document.pk}.warc.gz")
        if download is not None:
            raise Http404("download is body or warc")
        context.update(
            response=response, body_text=_preview(response),
            body_cut=len(response.body) > RAW_PREVIEW_BYTES, preview_bytes=RAW_PREVIEW_BYTES,
        )
        return TemplateResponse(request, "admin/indexer/document/raw_response.html", context)


def _preview(response: warc.ArchivedResponse) -> str:
    """The start of the raw body, decoded as the crawl decoded the page (indexer/decoding.py)."""
    content_type = next((value for name, value in response.http_headers if name.lower() == "content-type"), "")
    kind = "html" if "html" in content_type.lower() else "text"
    return decoding.decode(response.body[:RAW_PREVIEW_BYTES], http.charset_of(content_type), kind=kind)[0]


def _attachment(content: bytes, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "sandbox"  # if a browser shows it anyway: no scripts, no origin
    return response


def _folded(text: str):
    """A text on a document's page: its first characters, the rest one click away."""
    if len(text) <= TEXT_PREVIEW_CHARS:
        return text or "–"
    return format_html('<details><summary>{}… ({} characters: show all)</summary>'
                       '<div style="white-space: pre-wrap">{}</div></details>',
                       text[:TEXT_PREVIEW_CHARS], f"{len(text):,}", text)
