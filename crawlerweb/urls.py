from django.contrib import admin
from django.urls import path

from console import steering as console_steering
from console import views as console_views
from indexer import views as indexer_views

urlpatterns = [
    path("", indexer_views.search_page, name="search"),
    path("search.json", indexer_views.search_json, name="search-json"),
    # The REST API (docs/api.md, docs/openapi.yaml): API keys or staff sessions only.
    path("seed/urls", console_views.seed_urls, name="api-seed-urls"),
    path("url/limit", console_views.url_limit, name="api-url-limit"),
    path("url/trusted", console_views.url_trusted, name="api-url-trusted"),
    path("metrics", console_views.metrics_view, name="api-metrics"),
    path("crawl", console_steering.crawl_state, name="api-crawl-state"),
    path("crawl/pause", console_steering.crawl_pause, name="api-crawl-pause"),
    path("crawl/resume", console_steering.crawl_resume, name="api-crawl-resume"),
    path("hosts/<str:action>", console_steering.host_action, name="api-host-action"),
    path("urls/recrawl", console_steering.urls_recrawl, name="api-urls-recrawl"),
    path("dashboard/", console_views.dashboard, name="dashboard"),
    path("dashboard/data", console_views.dashboard_data, name="dashboard-data"),
    path("favicon.ico", console_views.favicon, name="favicon"),
    path("admin/", admin.site.urls),
]
