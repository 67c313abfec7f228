from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render

from .models import Dataset
from .selectors import SUMMARY_GROUPS, reader_summary


def home(request: HttpRequest) -> HttpResponse:
    datasets = Dataset.objects.order_by("name")
    return render(request, "adjudication/home.html", {"datasets": datasets})


def dataset_detail(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    by = request.GET.get("by", "benchmark/checkpoint")
    if by not in SUMMARY_GROUPS:
        by = "benchmark/checkpoint"
    rows = reader_summary(dataset=dataset, by=by)
    return render(request, "adjudication/dataset.html", {
        "dataset": dataset, "rows": rows, "by": by,
        "runs": dataset.runs.all(), "n_responses": dataset.responses.count(), "groupings": list(SUMMARY_GROUPS),
    })


@login_not_required
def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})
