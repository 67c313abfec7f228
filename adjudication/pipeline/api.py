"""REST API (DRF). Thin: validation in serializers, work in services, reads in selectors."""

from __future__ import annotations

from django.conf import settings
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response as ApiResponse
from rest_framework.views import APIView

from adjudication.models import Dataset
from adjudication.permissions import IsManager
from adjudication.pipeline.selectors import dataset_default_panel, dataset_progress
from adjudication.pipeline.services import dataset_read
from readers import registry as reader_registry


class DatasetSerializer(serializers.ModelSerializer):
    responses = serializers.IntegerField(source="responses.count", read_only=True)

    class Meta:
        model = Dataset
        fields = ["id", "name", "description", "created_at", "responses"]


class DatasetListApi(APIView):
    permission_classes = [IsManager]

    @extend_schema(responses=DatasetSerializer(many=True))
    def get(self, request):
        return ApiResponse(DatasetSerializer(Dataset.objects.order_by("name"), many=True).data)


class ReaderProgressSerializer(serializers.Serializer):
    reader = serializers.CharField()
    version = serializers.CharField()
    config_hash = serializers.CharField()
    done = serializers.IntegerField()
    total = serializers.IntegerField()


class ProgressSerializer(serializers.Serializer):
    dataset = serializers.CharField()
    responses = serializers.IntegerField()
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    readers = ReaderProgressSerializer(many=True)


class DatasetProgressApi(APIView):
    """Readings done per reader: what the UI polls while workers read."""

    permission_classes = [IsManager]

    @extend_schema(responses=ProgressSerializer)
    def get(self, request, dataset_id: int):
        dataset = get_object_or_404(Dataset, pk=dataset_id)
        return ApiResponse(ProgressSerializer(dataset_progress(dataset=dataset)).data)


class RunReadersSerializer(serializers.Serializer):
    readers = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        allow_empty=False,
        help_text="reader names; omitted: the dataset's rule-reader panel (the readers that apply to its task types)",
    )
    batch_size = serializers.IntegerField(min_value=1, max_value=10000, required=False)

    def validate_readers(self, value: list[str]) -> list[str]:
        try:
            return reader_registry.require(value)
        except reader_registry.UnknownReader as exc:
            raise serializers.ValidationError(str(exc)) from None


class RunReadersApi(APIView):
    permission_classes = [IsManager]

    @extend_schema(request=RunReadersSerializer, responses={202: ProgressSerializer})
    def post(self, request, dataset_id: int):
        dataset = get_object_or_404(Dataset, pk=dataset_id)
        payload = RunReadersSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        names = payload.validated_data.get("readers") or dataset_default_panel(dataset_id=dataset.pk)
        dataset_read(
            dataset=dataset,
            reader_names=names,
            batch_size=payload.validated_data.get("batch_size", settings.READER_BATCH_SIZE),
        )
        return ApiResponse(
            ProgressSerializer(dataset_progress(dataset=dataset, reader_names=names)).data,
            status=status.HTTP_202_ACCEPTED,
        )
