from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from . import api

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("datasets/", api.DatasetListApi.as_view(), name="api-datasets"),
    path("datasets/<int:dataset_id>/progress/", api.DatasetProgressApi.as_view(), name="api-dataset-progress"),
    path("datasets/<int:dataset_id>/run-readers/", api.RunReadersApi.as_view(), name="api-run-readers"),
]
