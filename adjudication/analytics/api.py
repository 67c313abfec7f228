"""REST API of the reports: GET /api/datasets/<id>/reports/<kind>/ for every report kind, the
options as query parameters (validated by the kind's options class: a bad one is a 400 naming
it), the report's JSON as the command prints it with --json. Served from the stored report
(analytics.report_pages.stored_report), as the report pages are: 503 with Retry-After while it is
computed, 409 when it could not be; X-Report-* headers say which data version it is of."""

from __future__ import annotations

from typing import Any, ClassVar

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.response import Response as ApiResponse
from rest_framework.views import APIView

from adjudication.analytics.report_pages import RETRY_AFTER_SECONDS, stamp, stored_report, waiting_message
from adjudication.analytics.reports import KINDS, OPTIONS, ReportError, ReportSpec, options_from_query
from adjudication.api_errors import Busy, ErrorSerializer
from adjudication.models import Dataset
from adjudication.permissions import IsManager

# DRF's own query parameter (?format=json chooses the renderer), never a report option.
NOT_OPTIONS = ("format",)


class ReportPending(Busy):
    """No report for these options yet: it is being computed."""

    # Busy's own status is 409 (a claim); waiting for a computation is a 503 (a download's too).
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE  # type: ignore[assignment]
    default_detail = f"the report is being computed; try again in {RETRY_AFTER_SECONDS} seconds"
    default_code = "busy"
    retry_after = RETRY_AFTER_SECONDS


class ReportFailed(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "the report could not be computed on this dataset with these options"
    default_code = "report_failed"


class ReportApi(APIView):
    """One report kind of one dataset (a subclass per kind: each documents its own options)."""

    permission_classes = [IsManager]
    kind: ClassVar[str]

    def get(self, request: Any, dataset_id: int) -> ApiResponse:
        dataset = get_object_or_404(Dataset, pk=dataset_id)
        try:
            options = options_from_query(self.kind, request.query_params, dataset=dataset, ignore=NOT_OPTIONS)
        except ReportError as exc:
            raise ValidationError({exc.field or "options": [exc.message]}) from None
        stored, body = stored_report(dataset=dataset, spec=ReportSpec(self.kind, options))
        if body is None:
            if stored.failed is not None:
                raise ReportFailed(waiting_message(stored))
            raise ReportPending(waiting_message(stored))
        return ApiResponse(body, headers=stamp(stored))


_TYPES = {"int": OpenApiTypes.INT, "float": OpenApiTypes.FLOAT, "str": OpenApiTypes.STR, "flag": OpenApiTypes.BOOL}


def _parameters(kind: str) -> list[OpenApiParameter]:
    out = []
    for f in OPTIONS[kind]._fields():
        o = f.option
        if not o.shared:
            continue
        bounds = ", ".join(
            f"{word} {value() if callable(value) else value}"
            for word, value in (("at least", o.low), ("at most", o.high))
            if value is not None
        )
        out.append(
            OpenApiParameter(
                f.name,
                _TYPES.get(o.kind, OpenApiTypes.STR),
                required=False,
                many=o.repeat,
                enum=list(o.choices) or None,
                description=f"default {f.default!r}"
                + (f"; {bounds}" if bounds else "")
                + ("; repeatable" if o.repeat else ""),
            )
        )
    return out


def _api(kind: str) -> type[ReportApi]:
    def get(self: ReportApi, request: Any, dataset_id: int) -> ApiResponse:
        return ReportApi.get(self, request, dataset_id)

    documented = extend_schema(
        operation_id=f"report_{kind}",
        summary=f"The {kind} report of a dataset",
        description=(
            f"The `{kind}` report's JSON, as `manage.py {kind} --dataset NAME --json` prints it (the analytics "
            "page's report for `analytics`; docs/reports.md), for the options given as query parameters. "
            "Served from the stored report of the dataset's data version: X-Report-Data-Version, "
            "X-Report-Current and X-Report-Computed-At say which."
        ),
        parameters=_parameters(kind),
        responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="The report's JSON."),
            409: OpenApiResponse(
                ErrorSerializer, description='Not computable (code "report_failed"): `message` says why.'
            ),
            503: OpenApiResponse(
                ErrorSerializer,
                description='Being computed (code "busy"): try again after `Retry-After` seconds.',
            ),
        },
    )(get)
    return type(f"{kind.title().replace('_', '')}ReportApi", (ReportApi,), {"kind": kind, "get": documented})


REPORT_APIS: dict[str, type[ReportApi]] = {kind: _api(kind) for kind in KINDS}
