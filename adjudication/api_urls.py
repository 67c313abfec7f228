from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from adjudication.analytics.api import REPORT_APIS
from adjudication.api_docs import ApiDocsView
from adjudication.pipeline import api
from adjudication.review.annotate import api as annotate_api
from adjudication.review.queues import api as queues_api

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", ApiDocsView.as_view(), name="api-docs"),
    path("datasets/", api.DatasetListApi.as_view(), name="api-datasets"),
    path("datasets/<int:dataset_id>/progress/", api.DatasetProgressApi.as_view(), name="api-dataset-progress"),
    path("datasets/<int:dataset_id>/run-readers/", api.RunReadersApi.as_view(), name="api-run-readers"),
    *(
        path(f"datasets/<int:dataset_id>/reports/{kind}/", api.as_view(), name=f"api-report-{kind}")
        for kind, api in REPORT_APIS.items()
    ),
    path("queues/", queues_api.QueueListApi.as_view(), name="api-queues"),
    path("queues/<int:queue_id>/", queues_api.QueueDetailApi.as_view(), name="api-queue"),
    path("queues/<int:queue_id>/claim/", annotate_api.ClaimApi.as_view(), name="api-claim"),
    path("queues/<int:queue_id>/status/", queues_api.QueueStatusApi.as_view(), name="api-queue-status"),
    path("queues/<int:queue_id>/final-labels/", queues_api.FinalLabelsApi.as_view(), name="api-final-labels"),
    path("queues/<int:queue_id>/labels/", queues_api.LabelsApi.as_view(), name="api-labels"),
    path("leases/<int:lease_id>/", annotate_api.LeaseApi.as_view(), name="api-lease"),
    path("leases/<int:lease_id>/label/", annotate_api.LabelApi.as_view(), name="api-label"),
    path("labels/<int:label_id>/revise/", annotate_api.ReviseApi.as_view(), name="api-label-revise"),
]
