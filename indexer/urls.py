from django.urls import path

from . import views

urlpatterns = [
    path("", views.search_page, name="search"),
    path("search.json", views.search_json, name="search-json"),
]
