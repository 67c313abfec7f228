from django.urls import path

from adjudication.analytics import report_pages, views
from adjudication.analytics.versions import views as version_views

app_name = "analytics"
urlpatterns = [
    path("analytics/<int:dataset_id>/", views.analytics_page, name="dataset"),
    path("analytics/<int:dataset_id>/<slug:table>.<slug:fmt>", views.analytics_export, name="export"),
    path("analytics/<int:dataset_id>/judge-versions/", version_views.judge_versions_page, name="judge-versions"),
    path("analytics/<int:dataset_id>/reports/<slug:kind>/", report_pages.report_page, name="report"),
    path("analytics/<int:dataset_id>/reports/<slug:kind>.json", report_pages.report_download, name="report-json"),
]
