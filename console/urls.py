from django.urls import path

from . import steering, views

urlpatterns = [
    # The REST API (docs/api.md, docs/openapi.yaml): API keys or staff sessions only.
    path("seed/urls", views.seed_urls, name="api-seed-urls"),
    path("url/limit", views.url_limit, name="api-url-limit"),
    path("url/trusted", views.url_trusted, name="api-url-trusted"),
    path("metrics", views.metrics_view, name="api-metrics"),
    path("crawl", steering.crawl_state, name="api-crawl-state"),
    path("crawl/pause", steering.crawl_pause, name="api-crawl-pause"),
    path("crawl/resume", steering.crawl_resume, name="api-crawl-resume"),
    path("hosts/<str:action>", steering.host_action, name="api-host-action"),
    path("urls/recrawl", steering.urls_recrawl, name="api-urls-recrawl"),
    path("dashboard/", views.dashboard, name="dashboard"),
    path("dashboard/data", views.dashboard_data, name="dashboard-data"),
    path("favicon.ico", views.favicon, name="favicon"),
]
