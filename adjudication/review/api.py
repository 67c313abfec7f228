"""REST API of the review flow. Annotator-facing payloads are blinded: no model, checkpoint, run,
prompt or reader identity, no other annotators' labels."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, PolymorphicProxySerializer, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, PermissionDenied, ValidationError
from rest_framework.response import Response as ApiResponse
from rest_framework.views import APIView

from adjudication.api_errors import Busy, ErrorSerializer
from adjudication.api_schema import download_responses, rows_serializer
from adjudication.exports import FORMATS, table_download
from adjudication.models import Dataset, Label, Lease, ReviewQueue, RoutingPolicy
from adjudication.permissions import IsAnnotator, IsManager
from adjudication.review.labels import LabelEntry
from adjudication.review.selectors import (
    FINAL_LABEL_COLUMNS,
    LABEL_COLUMNS,
    annotator_progress,
    annotator_visible_queues,
    candidates_for,
    queue_export_table,
    queue_status,
    users_named,
)
from adjudication.review.services import (
    ReviewError,
    label_revise,
    label_submit,
    lease_claim_next,
    queue_annotators_set,
    queue_create,
    queue_state_set,
    queue_title_set,
)
from adjudication.validators import INT_MAX, INT_MIN, SMALLINT_MAX, validate_name
from readers.options import LETTERS

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
        help_text="with priority information: route at most this many items (null: no limit)",
    )
    title = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    guidelines = serializers.CharField(required=False, allow_null=True, default=None, trim_whitespace=False)
    annotators = serializers.ListField(
        child=serializers.CharField(max_length=150), required=False, default=list, max_length=10_000
    )


class OptionSerializer(serializers.Serializer):
    letter = serializers.CharField()
    text = serializers.CharField()


class CandidateSerializer(serializers.Serializer):
    number = serializers.IntegerField(help_text="1, 2, …: shuffled per (item, annotator); means nothing across items")
    answer = serializers.CharField()
    spans = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2),
        help_text="[start, end) character offsets in the response where a reader found this answer",
    )


class AnnotatorProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField()
    remaining = serializers.IntegerField(help_text="capped; see remaining_more")
    remaining_more = serializers.BooleanField(help_text="more remain than `remaining` says")


class BlindedItemSerializer(serializers.Serializer):
    lease = serializers.IntegerField()
    expires_at = serializers.DateTimeField()
    question = serializers.CharField()
    options = OptionSerializer(many=True)
    response = serializers.CharField()
    candidates = CandidateSerializer(many=True)
    gold = serializers.CharField(allow_null=True, help_text="only when the queue asks annotators to judge correctness")
    progress = AnnotatorProgressSerializer()


def blinded_item(lease: Lease, user) -> dict:
    item = lease.item
    question = item.review_item.response.question
    cands, spans = candidates_for(item, user) if item.queue.show_candidates else ([], [])
    by_number: dict[int, list] = {}
    for start, end, number in spans:
        by_number.setdefault(number, []).append([start, end])
    return {
        "lease": lease.pk,
        "expires_at": lease.expires_at,
        "question": question.text,
        "options": [{"letter": LETTERS[i], "text": t} for i, t in enumerate(question.choices)],
        "response": item.review_item.response.text,
        "candidates": [
            {"number": c["number"], "answer": c["answer"], "spans": by_number.get(c["number"], [])} for c in cands
        ],
        "gold": question.gold if item.queue.judge_correctness else None,
        "progress": annotator_progress(queue=item.queue, annotator=user),
    }


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
        v["annotators"] = _annotators_named(v.get("annotators", []))
        try:
            queue = queue_create(dataset=dataset, created_by=request.user, **v)
        except (ReviewError, KeyError) as exc:
            raise ValidationError(str(exc)) from exc
        return ApiResponse(QueueSerializer(queue).data, status=status.HTTP_201_CREATED)


class ClaimApi(APIView):
    """Claim the next item of a queue (or get back the one in progress)."""

    permission_classes = [IsAnnotator]

    @extend_schema(
        request=None,
        responses={
            200: OpenApiResponse(BlindedItemSerializer, description="The item, leased to you until `expires_at`."),
            204: OpenApiResponse(description="Nothing left for you in this queue."),
            409: OpenApiResponse(
                ErrorSerializer,
                description='Busy (code "busy"): every item left is leased to someone else right now; retry '
                "after `Retry-After` seconds.",
            ),
        },
    )
    def post(self, request, queue_id: int):
        queue = get_object_or_404(ReviewQueue, pk=queue_id)
        claim = lease_claim_next(queue=queue, annotator=request.user)
        if claim.refused == "not_assigned":
            raise PermissionDenied(claim.refusal)
        if claim.refused:
            raise QueueNotOpen(claim.refusal)
        if claim.lease is None:
            if claim.busy:
                raise Busy()
            return ApiResponse(status=status.HTTP_204_NO_CONTENT)
        return ApiResponse(BlindedItemSerializer(blinded_item(claim.lease, request.user)).data)


class LeaseApi(APIView):
    permission_classes = [IsAnnotator]

    @extend_schema(responses=BlindedItemSerializer)
    def get(self, request, lease_id: int):
        lease = get_object_or_404(Lease.objects.select_related("item__queue"), pk=lease_id, annotator=request.user)
        return ApiResponse(BlindedItemSerializer(blinded_item(lease, request.user)).data)


class ReviseSerializer(serializers.Serializer):
    """A label's fields (a revision cannot be a skip)."""

    kind = serializers.ChoiceField(choices=["option", "text", "no_answer", "ambiguous"])
    answer = serializers.CharField(required=False, allow_blank=True, default="")
    correctness = serializers.ChoiceField(choices=["", "correct", "incorrect"], required=False, default="")
    confidence = serializers.IntegerField(min_value=1, max_value=5, required=False, allow_null=True, default=None)
    note = serializers.CharField(required=False, allow_blank=True, default="")


class LabelSerializer(ReviseSerializer):
    kind = serializers.ChoiceField(choices=["option", "text", "no_answer", "ambiguous", "skipped"])
    skip_reason = serializers.CharField(required=False, allow_blank=True, default="")


# A field named "label" (like "fields" in api_errors.ErrorBodySerializer): DRF's serializer
# metaclass takes declared fields out of the class, so Field.label is not shadowed at run time.
class LabelCreatedSerializer(serializers.Serializer):
    label = serializers.IntegerField(help_text="the new label's id")  # type: ignore[assignment]  # see above


class RevisedSerializer(serializers.Serializer):
    label = serializers.IntegerField(help_text="the new label's id")  # type: ignore[assignment]  # as above
    revises = serializers.IntegerField(help_text="the label it revises (kept as history)")


class LabelApi(APIView):
    permission_classes = [IsAnnotator]

    @extend_schema(request=LabelSerializer, responses={201: LabelCreatedSerializer})
    def post(self, request, lease_id: int):
        lease = get_object_or_404(Lease, pk=lease_id, annotator=request.user)
        data = LabelSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            fields = dict(data.validated_data)
            skip_reason = fields.pop("skip_reason")
            label = label_submit(
                lease=lease, annotator=request.user, entry=LabelEntry(**fields), skip_reason=skip_reason
            )
        except ReviewError as exc:
            raise ValidationError(str(exc)) from exc
        return ApiResponse({"label": label.pk}, status=status.HTTP_201_CREATED)


class ReviseApi(APIView):
    """A new label revising one of the caller's own (the old row is kept); 404 for anybody else's."""

    permission_classes = [IsAnnotator]

    @extend_schema(request=ReviseSerializer, responses={201: RevisedSerializer})
    def post(self, request, label_id: int):
        label = get_object_or_404(Label, pk=label_id, annotator=request.user)
        data = ReviseSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            new = label_revise(label=label, annotator=request.user, entry=LabelEntry(**data.validated_data))
        except ReviewError as exc:
            raise ValidationError(str(exc)) from exc
        return ApiResponse({"label": new.pk, "revises": label.pk}, status=status.HTTP_201_CREATED)


class QueueStatusSerializer(serializers.Serializer):
    items = serializers.IntegerField()
    pending = serializers.IntegerField(help_text="open: still needing labels")
    leased = serializers.IntegerField(help_text="with a live lease right now")
    labelled = serializers.IntegerField(help_text="with at least one label")
    conflicting = serializers.IntegerField()
    agreed = serializers.IntegerField()
    adjudicated = serializers.IntegerField()
    skipped = serializers.IntegerField(help_text="open items someone skipped")
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


# -- queue management (state, title, assigned annotators) ------------------------------------------


class QueueNotOpen(APIException):
    """A claim on a paused or closed queue: nothing new is handed out (a live lease still is)."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "the queue hands out no new items"
    default_code = "queue_not_open"


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
        try:
            with transaction.atomic():
                if "state" in v:
                    queue_state_set(queue=queue, state=v["state"])
                if "title" in v:
                    queue_title_set(queue=queue, title=v["title"])
                if annotators is not None:
                    queue_annotators_set(queue=queue, annotators=annotators)
        except ReviewError as exc:
            raise ValidationError(str(exc)) from exc
        return ApiResponse(QueueSerializer(ReviewQueue.objects.get(pk=queue.pk)).data)
