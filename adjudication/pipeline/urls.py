from django.urls import path

from adjudication.pipeline import views

app_name = "adjudication"
urlpatterns = [
    path("", views.home, name="home"),
    path("datasets/<int:dataset_id>/", views.dataset_detail, name="dataset"),
    path("datasets/<int:dataset_id>/run/", views.dataset_run_readers, name="dataset-run"),
    path("datasets/<int:dataset_id>/judge/", views.dataset_run_judges, name="dataset-judge"),
    path("healthz", views.healthz, name="healthz"),
]
