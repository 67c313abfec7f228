"""The project's URLs plus a stand-in for the item browser's `review:items`, to check that the
queue page's links follow that URL name once it exists."""

from __future__ import annotations

from django.http import HttpResponse
from django.urls import include, path

from adjudication.review.urls import urlpatterns as review_urlpatterns
from config.urls import urlpatterns as project_urlpatterns


def _items(request):  # pragma: no cover - never requested, only reversed
    return HttpResponse()


urlpatterns = [
    path("", include(([*review_urlpatterns, path("browse/items/", _items, name="items")], "review"))),
    *project_urlpatterns,
]
