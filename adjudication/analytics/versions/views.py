"""The managers' judge-versions page: /analytics/<dataset_id>/judge-versions/?judge=J."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from adjudication.analytics.versions.selectors import judge_families, judge_versions_report
from adjudication.models import Dataset
from adjudication.permissions import role_required


@role_required("manager")
def judge_versions_page(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    family = request.GET.get("judge", "")
    report = judge_versions_report(dataset=dataset, family=family) if family else None
    context = {"dataset": dataset, "family": family, "families": judge_families(), "report": report}
    return render(request, "analytics/judge_versions.html", context)
