"""The site's addresses: the search page and its JSON (indexer/urls.py), the REST API and the
dashboard (console/urls.py), the Django admin."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("", include("indexer.urls")),
    path("", include("console.urls")),
    path("admin/", admin.site.urls),
]
