"""The managers' queue API: list and create queues (annotators list the ones they see, by display
title only), a queue's state, title and assigned annotators, its status, and its exports (with each
response's model and checkpoint: managers only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, PolymorphicProxySerializer, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.response import Response as ApiResponse
from rest_framework.views import APIView

from adjudication.api_schema import download_responses, rows_serializer
from adjudication.exports import FORMATS, table_download
from adjudication.models import Dataset, ReviewQueue, RoutingPolicy
from adjudication.permissions import IsAnnotator, IsManager
from adjudication.review.annotate.selectors import annotator_visible_queues
from adjudication.review.queues.selectors import (
    FINAL_LABEL_COLUMNS,
    LABEL_COLUMNS,
    queue_export_table,
    queue_status,
    users_named,
)
from adjudication.review.queues.services import queue_annotators_set, queue_create, queue_state_set, queue_title_set
from adjudication.review.queues.specs import QueueSpec
from adjudication.validators import INT_MAX, INT_MIN, SMALLINT_MAX, validate_name

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class QueueSerializer(serializers.ModelSerializer):
    # Usernames of the assigned annotators; empty: every annotator.
    annotators: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username", many=True, read_only=True
    )

    class Meta:
        model = ReviewQueue
        fields = ["id", "name", "title", "overlap", "show_candidates", "judge_correctness", "state", "annotators"]


class AnnotatorQueueSerializer(serializers.Serializer):
    """A queue as annotators see it: its display title, never its name (names are the managers'
    handles and are often built from reader or model names)."""

    id = serializers.IntegerField()
    title = serializers.CharField()
    judge_correctness = serializers.BooleanField()
    state = serializers.ChoiceField(choices=["active", "paused"])  # closed queues are not listed


class QueueCreateSerializer(serializers.Serializer):
    # Bounds are the columns' (the model fields' validators): a value that does not fit is a 400.
    dataset = serializers.CharField(max_length=200)
    name = serializers.CharField(max_length=200, validators=[validate_name])
    panel = serializers.ListField(child=serializers.CharField(max_length=200), required=False, max_length=100)
    overlap = serializers.IntegerField(min_value=1, max_value=SMALLINT_MAX, default=2)
    lease_seconds = serializers.IntegerField(min_value=10, max_value=INT_MAX, default=900)
    show_candidates = serializers.BooleanField(default=True)
    judge_correctness = serializers.BooleanField(default=False)
    control_fraction = serializers.FloatField(min_value=0, max_value=1, default=0.0)
    unreadable_fraction = serializers.FloatField(
        min_value=0,
        max_value=1,
        default=0.1,
        help_text="share of the responses no panel reader can read (their own stratum) routed to review",
    )
    seed = serializers.IntegerField(min_value=INT_MIN, max_value=INT_MAX, default=0)
    compare = serializers.ChoiceField(choices=RoutingPolicy.Compare.values, default=RoutingPolicy.Compare.EITHER)
    missing_is_disagreement = serializers.BooleanField(default=False)
    priority = serializers.ChoiceField(
        choices=RoutingPolicy.Priority.values,
        default=RoutingPolicy.Priority.DISAGREEMENT,
        help_text="the new policy's order; information: by label value for `target` (docs/consensus.md)",
    )
    target = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        default="",
        help_text="with priority information: accuracy, accuracy:<checkpoint>, reader:<producer>, bias:<producer>, "
        "false-accept:<producer>, false-reject:<producer> or format-share:<base>,<rl>[,<reader>]",
    )
    budget = serializers.IntegerField(
        min_value=1,
        max_value=INT_MAX,
        required=False,
        allow_null=True,
        default=None,
        help_text="with priority information: route about this many items (randomized: the draw's expected "
        "size; greedy: at most this many; null: every response whose label tells something)",
    )
    sampling = serializers.ChoiceField(
        choices=RoutingPolicy.Sampling.values,
        default=RoutingPolicy.Sampling.RANDOMIZED,
        help_text="with priority information: randomized (every response drawn with a known probability; fit for "
        "estimates) or greedy (the highest label values; unfit for estimates)",
    )
    title = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    guidelines = serializers.CharField(required=False, allow_null=True, default=None, trim_whitespace=False)
    annotators = serializers.ListField(
        child=serializers.CharField(max_length=150), required=False, default=list, max_length=10_000
    )


class QueueListApi(APIView):
    permission_classes = [IsAnnotator | IsManager]

    @extend_schema(
        responses=PolymorphicProxySerializer(
            component_name="QueueListEntry",
            serializers=[QueueSerializer, AnnotatorQueueSerializer],
            resource_type_field_name=None,
            many=True,
        ),
        description="Managers get every field (Queue); annotators a queue's id, display title and whether it "
        "judges correctness (AnnotatorQueue).",
    )
    def get(self, request):
        if IsManager().has_permission(request, self):
            queues = ReviewQueue.objects.order_by("created_at", "id").prefetch_related("annotators")
            return ApiResponse(QueueSerializer(queues, many=True).data)
        # Annotators: the queues they see (not closed; assigned to nobody or to them).
        queues = annotator_visible_queues(annotator=request.user).order_by("created_at", "id")
        shown = [
            {"id": q.pk, "title": q.display_title, "judge_correctness": q.judge_correctness, "state": q.state}
            for q in queues
        ]
        return ApiResponse(AnnotatorQueueSerializer(shown, many=True).data)

    @extend_schema(request=QueueCreateSerializer, responses={201: QueueSerializer})
    def post(self, request):
        if not IsManager().has_permission(request, self):
            raise PermissionDenied("managers only")
        data = QueueCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = dict(data.validated_data)
        name = v.pop("dataset")
        dataset = Dataset.objects.filter(name=name).first()
        if dataset is None:  # a field of the body, not the URL: 400 naming it, not 404
            raise ValidationError({"dataset": [f"no dataset named {name!r}"]})
        annotators = _annotators_named(v.pop("annotators", []))
        spec = QueueSpec.from_values(v)
        queue = queue_create(dataset=dataset, spec=spec, created_by=request.user, annotators=annotators)
        return ApiResponse(QueueSerializer(queue).data, status=status.HTTP_201_CREATED)


class QueueStatusSerializer(serializers.Serializer):
    items = serializers.IntegerField()
    pending = serializers.IntegerField(help_text="state: open, no label and no live lease (not started)")
    leased = serializers.IntegerField(help_text="state: open, with a live lease right now")
    waiting = serializers.IntegerField(help_text="state: open, some labels, no live lease (waiting for more labels)")
    conflicting = serializers.IntegerField(help_text="state: its labels conflict (waiting for adjudication)")
    one_label = serializers.IntegerField(help_text="state: settled by a single label (overlap 1)")
    agreed = serializers.IntegerField(help_text="state: settled by two or more agreeing labels")
    adjudicated = serializers.IntegerField(help_text="state: settled by an adjudicator")
    labelled = serializers.IntegerField(help_text="derived (overlaps the states): with at least one label")
    skipped = serializers.IntegerField(help_text="derived (overlaps the states): open items someone skipped")
    labels_wanted = serializers.IntegerField()
    eta_hours = serializers.FloatField(allow_null=True, help_text="at the recent pace; null without one")
    active_annotators = serializers.IntegerField(help_text="who labelled in the last 24 hours")


class QueueStatusApi(APIView):
    permission_classes = [IsManager]

    @extend_schema(responses=QueueStatusSerializer)
    def get(self, request, queue_id: int):
        status_ = queue_status(queue=get_object_or_404(ReviewQueue, pk=queue_id))
        return ApiResponse(QueueStatusSerializer(status_).data)


_FMT = OpenApiParameter(
    "fmt",
    str,
    enum=list(FORMATS),
    default="jsonl",
    description="jsonl (lossless, nested), csv (flat) or parquet (flat, typed columns)",
)

_LABEL_ROW = rows_serializer("LabelRow", LABEL_COLUMNS)

_NESTED_LABEL = rows_serializer("ItemLabel", [c for c in LABEL_COLUMNS if c.name not in ("item_id", "response_id")])


class DecisionSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text='"unresolved" when the adjudicator marked it so')
    answer = serializers.CharField()
    correctness = serializers.CharField()
    provenance = serializers.CharField()
    error_type = serializers.CharField()
    notes = serializers.CharField()
    decided_by = serializers.CharField(allow_null=True)
    decided_at = serializers.DateTimeField()
    invalidated_at = serializers.DateTimeField(allow_null=True)


_FINAL_ROW_JSONL = rows_serializer(
    "FinalLabelRow",
    FINAL_LABEL_COLUMNS,
    extra={
        "labels": _NESTED_LABEL(many=True),
        "decision_history": DecisionSerializer(many=True),
        "routing_reason": serializers.DictField(help_text="which readers said what (the routing policy's reason)"),
    },
)


def _queue_download(request, queue_id: int, table: str):
    queue = get_object_or_404(ReviewQueue, pk=queue_id)
    fmt = request.query_params.get("fmt", "jsonl")
    if fmt not in FORMATS:
        raise ValidationError({"fmt": [f"one of {', '.join(FORMATS)}"]})
    rows, columns = queue_export_table(queue=queue, table=table)
    return table_download(fmt=fmt, filename_stem=f"{queue.name}-{table}", rows=rows, columns=columns)


class FinalLabelsApi(APIView):
    """One row per item that has left "needs labels": the final label (kind "unresolved" for an
    unresolved item), provenance, error type, the adjudicator's notes, who decided and when, the
    response's model, checkpoint and benchmark. JSONL also nests every label of the item and every
    decision made on it; CSV and Parquet are flat (the labels are GET …/labels/)."""

    permission_classes = [IsManager]

    @extend_schema(parameters=[_FMT], responses=download_responses(jsonl=_FINAL_ROW_JSONL, columns=FINAL_LABEL_COLUMNS))
    def get(self, request, queue_id: int):
        return _queue_download(request, queue_id, "final-labels")


class LabelsApi(APIView):
    """One row per individual label of the queue, history included: author, time, kind, answer,
    correctness, confidence, note, skip reason, guideline version, seconds spent, the label it
    revises, when it was invalidated, and whether it is its annotator's current label."""

    permission_classes = [IsManager]

    @extend_schema(parameters=[_FMT], responses=download_responses(jsonl=_LABEL_ROW, columns=LABEL_COLUMNS))
    def get(self, request, queue_id: int):
        return _queue_download(request, queue_id, "labels")


def _annotators_named(usernames: list[str]) -> list:
    users, unknown = users_named(usernames=usernames)
    if unknown:
        raise ValidationError({"annotators": [f"no user named {', '.join(map(repr, unknown))}"]})
    return users


class QueuePatchSerializer(serializers.Serializer):
    """What a manager changes on a queue; fields left out stay as they are."""

    state = serializers.ChoiceField(choices=ReviewQueue.State.values, required=False)
    title = serializers.CharField(max_length=200, required=False, allow_blank=True)
    # Usernames, the whole assignment (an empty list: every annotator).
    annotators = serializers.ListField(child=serializers.CharField(max_length=150), required=False, max_length=10_000)


class QueueDetailApi(APIView):
    """One queue for managers: GET it, PATCH its state (active / paused / closed), title or
    assigned annotators."""

    permission_classes = [IsManager]

    @extend_schema(responses=QueueSerializer)
    def get(self, request, queue_id: int):
        return ApiResponse(QueueSerializer(get_object_or_404(ReviewQueue, pk=queue_id)).data)

    @extend_schema(request=QueuePatchSerializer, responses={200: QueueSerializer})
    def patch(self, request, queue_id: int):
        queue = get_object_or_404(ReviewQueue, pk=queue_id)
        data = QueuePatchSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        annotators = _annotators_named(v["annotators"]) if "annotators" in v else None
        with transaction.atomic():
            if "state" in v:
                queue_state_set(queue=queue, state=v["state"])
            if "title" in v:
                queue_title_set(queue=queue, title=v["title"])
            if annotators is not None:
                queue_annotators_set(queue=queue, annotators=annotators)
        return ApiResponse(QueueSerializer(ReviewQueue.objects.get(pk=queue.pk)).data)
