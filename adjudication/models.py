"""Every model of the adjudication app, as Django loads them (it imports `adjudication.models`).
Each is defined by the capability that owns it; import them from here or from there alike."""

from adjudication.analytics.models import AnalyticsChoice, AnalyticsReport, JudgeSplit
from adjudication.audit.models import AuditRun
from adjudication.ingest.models import Dataset, Question, Response, Run
from adjudication.pipeline.models import ReaderSpec, Reading, TaskBatch, Verdict
from adjudication.review.models import (
    FinalLabel,
    Guidelines,
    Invalidatable,
    Label,
    Lease,
    QueueItem,
    ReviewQueue,
    ValidManager,
)
from adjudication.revisions import DatasetRevision
from adjudication.routing.models import ReviewItem, RoutingPolicy

__all__ = [
    "AnalyticsChoice",
    "AnalyticsReport",
    "AuditRun",
    "Dataset",
    "DatasetRevision",
    "FinalLabel",
    "Guidelines",
    "Invalidatable",
    "JudgeSplit",
    "Label",
    "Lease",
    "Question",
    "QueueItem",
    "ReaderSpec",
    "Reading",
    "Response",
    "ReviewItem",
    "ReviewQueue",
    "RoutingPolicy",
    "Run",
    "TaskBatch",
    "ValidManager",
    "Verdict",
]
