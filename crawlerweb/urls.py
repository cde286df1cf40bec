from django.contrib import admin
from django.urls import path

from indexer import views as indexer_views

urlpatterns = [
    path("", indexer_views.search_page, name="search"),
    path("search.json", indexer_views.search_json, name="search-json"),
    path("admin/", admin.site.urls),
]
