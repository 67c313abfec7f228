"""The app's pages, one URL module per capability. Each keeps its own namespace
(`review:`, `analytics:`, `audit:`, `adjudication:` for datasets and health)."""

from django.urls import include, path

urlpatterns = [
    path("", include("adjudication.review.urls")),
    path("", include("adjudication.analytics.urls")),
    path("", include("adjudication.audit.urls")),
    path("", include("adjudication.pipeline.urls")),
    path("", include("adjudication.bundles.urls")),
]
