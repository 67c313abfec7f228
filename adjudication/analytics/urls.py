from django.urls import path

from adjudication.analytics import views

app_name = "analytics"
urlpatterns = [
    path("analytics/<int:dataset_id>/", views.analytics_page, name="dataset"),
    path("analytics/<int:dataset_id>/<slug:table>.<slug:fmt>", views.analytics_export, name="export"),
]
