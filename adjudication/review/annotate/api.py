"""The annotator's REST API: claim the next item, read a leased item, label it, revise a label.
Blinded payloads: no model, checkpoint, run, prompt or reader identity, no other annotators' labels."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, PermissionDenied
from rest_framework.response import Response as ApiResponse
from rest_framework.views import APIView

from adjudication.api_errors import Busy, ErrorSerializer
from adjudication.models import Label, Lease, ReviewQueue
from adjudication.permissions import IsAnnotator
from adjudication.review.annotate.selectors import annotator_progress, candidates_for
from adjudication.review.annotate.services import label_revise, label_submit, lease_claim_next
from adjudication.review.labels import LabelEntry
from readers.options import LETTERS


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
        # A ReviewError is the API's one 400 body (api_errors.exception_handler maps the base once).
        fields = dict(data.validated_data)
        skip_reason = fields.pop("skip_reason")
        label = label_submit(lease=lease, annotator=request.user, entry=LabelEntry(**fields), skip_reason=skip_reason)
        return ApiResponse({"label": label.pk}, status=status.HTTP_201_CREATED)


class ReviseApi(APIView):
    """A new label revising one of the caller's own (the old row is kept); 404 for anybody else's."""

    permission_classes = [IsAnnotator]

    @extend_schema(request=ReviseSerializer, responses={201: RevisedSerializer})
    def post(self, request, label_id: int):
        label = get_object_or_404(Label, pk=label_id, annotator=request.user)
        data = ReviseSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        new = label_revise(label=label, annotator=request.user, entry=LabelEntry(**data.validated_data))
        return ApiResponse({"label": new.pk, "revises": label.pk}, status=status.HTTP_201_CREATED)


class QueueNotOpen(APIException):
    """A claim on a paused or closed queue: nothing new is handed out (a live lease still is)."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "the queue hands out no new items"
    default_code = "queue_not_open"
