"""REST API of the review flow. Annotator-facing payloads are blinded: no model, checkpoint, run,
prompt or reader identity, no other annotators' labels."""

from __future__ import annotations

from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, PermissionDenied, ValidationError
from rest_framework.response import Response as ApiResponse
from rest_framework.views import APIView

from adjudication.exports import table_download
from adjudication.models import Dataset, Label, Lease, ReviewQueue, RoutingPolicy
from adjudication.permissions import IsAnnotator, IsManager
from adjudication.review.labels import LabelEntry
from adjudication.review.selectors import (
    FINAL_LABEL_COLUMNS,
    annotator_progress,
    annotator_visible_queues,
    candidates_for,
    final_labels,
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


class QueueSerializer(serializers.ModelSerializer):
    # Usernames of the assigned annotators; empty: every annotator.
    annotators = serializers.SlugRelatedField(slug_field="username", many=True, read_only=True)

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
    title = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    guidelines = serializers.CharField(required=False, allow_null=True, default=None, trim_whitespace=False)
    annotators = serializers.ListField(
        child=serializers.CharField(max_length=150), required=False, default=list, max_length=10_000
    )


class BlindedItemSerializer(serializers.Serializer):
    lease = serializers.IntegerField()
    expires_at = serializers.DateTimeField()
    question = serializers.CharField()
    options = serializers.ListField(child=serializers.DictField())
    response = serializers.CharField()
    candidates = serializers.ListField(child=serializers.DictField())
    gold = serializers.CharField(allow_null=True)
    progress = serializers.DictField()


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

    @extend_schema(responses=QueueSerializer(many=True))
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
        dataset = get_object_or_404(Dataset, name=v.pop("dataset"))
        v["annotators"] = _annotators_named(v.get("annotators", []))
        try:
            queue = queue_create(dataset=dataset, created_by=request.user, **v)
        except (ReviewError, KeyError) as exc:
            raise ValidationError(str(exc)) from exc
        return ApiResponse(QueueSerializer(queue).data, status=status.HTTP_201_CREATED)


class ClaimApi(APIView):
    """Claim the next item of a queue (or get back the one in progress)."""

    permission_classes = [IsAnnotator]

    @extend_schema(request=None, responses={200: BlindedItemSerializer, 204: None})
    def post(self, request, queue_id: int):
        queue = get_object_or_404(ReviewQueue, pk=queue_id)
        claim = lease_claim_next(queue=queue, annotator=request.user)
        if claim.refused == "not_assigned":
            raise PermissionDenied(claim.refusal)
        if claim.refused:
            raise QueueNotOpen(claim.refusal)
        if claim.lease is None:
            return ApiResponse({"busy": claim.busy}, status=status.HTTP_409_CONFLICT if claim.busy else 204)
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


class LabelApi(APIView):
    permission_classes = [IsAnnotator]

    @extend_schema(request=LabelSerializer, responses={201: None})
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

    @extend_schema(request=ReviseSerializer, responses={201: None})
    def post(self, request, label_id: int):
        label = get_object_or_404(Label, pk=label_id, annotator=request.user)
        data = ReviseSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            new = label_revise(label=label, annotator=request.user, entry=LabelEntry(**data.validated_data))
        except ReviewError as exc:
            raise ValidationError(str(exc)) from exc
        return ApiResponse({"label": new.pk, "revises": label.pk}, status=status.HTTP_201_CREATED)


class QueueStatusApi(APIView):
    permission_classes = [IsManager]

    def get(self, request, queue_id: int):
        return ApiResponse(queue_status(queue=get_object_or_404(ReviewQueue, pk=queue_id)))


class FinalLabelsApi(APIView):
    """Final labels with provenance and every individual label (JSONL or CSV), for managers."""

    permission_classes = [IsManager]

    @extend_schema(parameters=[OpenApiParameter("fmt", str, enum=["jsonl", "csv"])], responses={200: None})
    def get(self, request, queue_id: int):
        queue = get_object_or_404(ReviewQueue, pk=queue_id)
        fmt = request.query_params.get("fmt", "jsonl")
        if fmt not in ("jsonl", "csv"):
            raise ValidationError({"fmt": "jsonl or csv"})
        return table_download(
            fmt=fmt,
            filename_stem=f"{queue.name}-final-labels",
            rows=final_labels(queue=queue),
            columns=FINAL_LABEL_COLUMNS,
        )


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
