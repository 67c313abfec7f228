from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from readers import registry as reader_registry

from .permissions import is_manager
from .services.pipeline import dataset_read, default_panel
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render

from .models import Dataset
from .selectors import SUMMARY_GROUPS, reader_summary


def home(request: HttpRequest) -> HttpResponse:
    # Dataset pages name models and checkpoints: managers only. Others go to their own work.
    if not is_manager(request.user):
        from .permissions import has_role

        return redirect("review:adjudicate" if has_role(request.user, "adjudicator") and
                        not has_role(request.user, "annotator") else "review:home")
    datasets = Dataset.objects.order_by("name")
    return render(request, "adjudication/home.html", {"datasets": datasets})


def dataset_detail(request: HttpRequest, dataset_id: int) -> HttpResponse:
    if not is_manager(request.user):
        raise PermissionDenied("managers only")
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    by = request.GET.get("by", "benchmark/checkpoint")
    if by not in SUMMARY_GROUPS:
        by = "benchmark/checkpoint"
    rows = reader_summary(dataset=dataset, by=by)
    return render(request, "adjudication/dataset.html", {
        "dataset": dataset, "rows": rows, "by": by,
        "runs": dataset.runs.all(), "n_responses": dataset.responses.count(), "groupings": list(SUMMARY_GROUPS),
        "panel": default_panel(), "can_manage": is_manager(request.user),
    })


@require_POST
def dataset_run_readers(request: HttpRequest, dataset_id: int) -> HttpResponse:
    if not is_manager(request.user):
        raise PermissionDenied("managers only")
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    known = set(reader_registry.names())
    names = [n for n in request.POST.getlist("reader") if n in known] or default_panel()
    dataset_read(dataset=dataset, reader_names=names, batch_size=settings.READER_BATCH_SIZE)
    messages.info(request, f"Reading with {len(names)} reader(s); progress below.")
    return redirect("adjudication:dataset", dataset_id=dataset.id)


@login_not_required
def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})
