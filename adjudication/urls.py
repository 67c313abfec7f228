from django.urls import path

from . import views

app_name = "adjudication"
urlpatterns = [
    path("", views.home, name="home"),
    path("datasets/<int:dataset_id>/", views.dataset_detail, name="dataset"),
    path("healthz", views.healthz, name="healthz"),
]
