"""What managers read of a queue: its guidelines' versions, who may be assigned, its status and
ETA, per-annotator numbers, and its exports (final labels with each response's model and
checkpoint; every label with its author). Manager-facing: never shown to an annotator."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import cast

from django.contrib.auth.models import User
from django.db.models import (
    BooleanField,
    Count,
    Exists,
    ExpressionWrapper,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Sum,
    Value,
)
from django.utils import timezone

from adjudication.exports import Column
from adjudication.models import FinalLabel, Guidelines, Label, Lease, QueueItem, ReviewItem, ReviewQueue


def guidelines_versions(*, queue: ReviewQueue) -> list[Guidelines]:
    return list(queue.guidelines.order_by("-version").select_related("created_by"))


def annotator_candidates(*, queue: ReviewQueue | None = None) -> QuerySet[User]:
    """The users a queue can be assigned to: active members of the annotator group, and whoever the
    queue is assigned to now (so that someone who lost the role can still be unassigned)."""
    users = Q(is_active=True, groups__name="annotator")
    if queue is not None:
        users |= Q(assigned_queues=queue)
    return User.objects.filter(pk__in=User.objects.filter(users).values("pk")).order_by("username")


def users_named(*, usernames: Sequence[str]) -> tuple[list[User], list[str]]:
    """The users of these usernames (each once, sorted) and the usernames nobody has."""
    wanted = set(usernames)
    found = list(User.objects.filter(username__in=wanted).order_by("username"))
    return found, sorted(wanted - {u.username for u in found})


def policy_items_missing(*, queue: ReviewQueue) -> int:
    """How many of its policy's items the queue does not hold (routed since it was last synced)."""
    return ReviewItem.objects.filter(policy_id=queue.policy_id).exclude(queue_items__queue=queue).count()


# The states an item of a queue is in, each item in exactly one (queue_status's "states"): the
# page's progress line adds up to the queue's items. An item settled by one label (an overlap-1
# queue) is "labelled once", not "agreed": nobody agreed with anyone.
ITEM_STATES: tuple[tuple[str, str], ...] = (
    ("pending", "not started"),
    ("leased", "leased now"),
    ("waiting", "waiting for more labels"),
    ("conflicting", "conflicting"),
    ("one_label", "labelled once"),
    ("agreed", "agreed"),
    ("adjudicated", "adjudicated"),
)


def queue_status(*, queue: ReviewQueue) -> dict:
    """How far a queue is. The counts named in ITEM_STATES partition its items (an open item is
    leased if anyone holds a live lease on it, else waiting for more labels if it has some, else not
    started; a settled one is agreed only when at least two labels agreed); `states` lists them in
    that order. `labelled` (at least one label), `skipped` (open items with a standing skip) and the
    labels still wanted are derived counts, which overlap the states."""
    now = timezone.now()
    open_q = Q(status=QueueItem.Status.OPEN)
    live = Exists(Lease.objects.filter(item_id=OuterRef("pk"), completed_at__isnull=True, expires_at__gt=now))
    counts = queue.items.annotate(live=live).aggregate(
        items=Count("id"),
        leased=Count("id", filter=open_q & Q(live=True)),
        waiting=Count("id", filter=open_q & Q(live=False, label_count__gt=0)),
        pending=Count("id", filter=open_q & Q(live=False, label_count=0)),
        conflicting=Count("id", filter=Q(status=QueueItem.Status.CONFLICT)),
        one_label=Count("id", filter=Q(status=QueueItem.Status.AGREED, label_count__lt=2)),
        agreed=Count("id", filter=Q(status=QueueItem.Status.AGREED, label_count__gte=2)),
        adjudicated=Count("id", filter=Q(status=QueueItem.Status.ADJUDICATED)),
        labelled=Count("id", filter=Q(label_count__gt=0)),
    )
    skipped = open_item_skips(queue=queue).values("item_id").distinct().count()
    return {
        **counts,
        "states": [{"key": key, "label": label, "count": counts[key]} for key, label in ITEM_STATES],
        "skipped": skipped,
        **queue_eta(queue=queue, now=now),
    }


def queue_strata(*, queue: ReviewQueue) -> dict[str, int]:
    """The queue's items per routing stratum (disputed, control, information, greedy, unreadable),
    and `unreadable_total`: how many responses of the dataset no panel reader could read at the
    policy's last routing, the unreadable stratum the queue's unreadable items were drawn from."""
    counts = dict(
        queue.items.values("review_item__stratum")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("review_item__stratum", "n")
    )
    out = {stratum: counts.get(stratum, 0) for stratum in ReviewItem.Stratum.values}
    out["unreadable_total"] = int((queue.policy.design or {}).get("unreadable") or 0)
    return out


def open_item_skips(*, queue: ReviewQueue) -> QuerySet[Label]:
    """Current skips (not revised into a label) on the queue's open items: the ones that can leave an
    item stuck, when every annotator left has labelled or skipped it."""
    return Label.objects.filter(item__queue=queue, kind=Label.Kind.SKIPPED, item__status=QueueItem.Status.OPEN).exclude(
        revisions__isnull=False
    )


def queue_eta(*, queue: ReviewQueue, now: datetime) -> dict:
    """Labels still wanted, and how long they take at the queue's recent pace: the median seconds
    per label of its last 200 labels, shared by the annotators who labelled in the last 24 hours."""
    wanted = (
        queue.items.filter(status=QueueItem.Status.OPEN).aggregate(
            n=Sum(Value(queue.overlap) - F("label_count"), output_field=IntegerField())
        )["n"]
        or 0
    )
    # seconds_spent__isnull=False: the column is nullable, these values are not.
    recent = cast(
        "list[float]",
        list(
            Label.objects.filter(queue=queue, revises__isnull=True, seconds_spent__isnull=False)
            .exclude(kind=Label.Kind.SKIPPED)
            .order_by("-created_at")
            .values_list("seconds_spent", flat=True)[:200]
        ),
    )
    active = (
        Label.objects.filter(queue=queue, created_at__gte=now - timedelta(hours=24))
        .values("annotator_id")
        .distinct()
        .count()
    )
    if not wanted or not recent:
        return {"labels_wanted": wanted, "eta_hours": None, "active_annotators": active}
    seconds = wanted * statistics.median(recent) / max(active, 1)
    return {"labels_wanted": wanted, "eta_hours": seconds / 3600, "active_annotators": active}


def annotator_stats(*, queue: ReviewQueue) -> list[dict]:
    rows = []
    by_user: dict[int, list[float]] = {}
    names: dict[int, str] = {}
    for annotator_id, username, seconds in Label.objects.filter(item__queue=queue, revises__isnull=True).values_list(
        "annotator_id", "annotator__username", "seconds_spent"
    ):
        by_user.setdefault(annotator_id, []).append(seconds or 0.0)
        names[annotator_id] = username
    for uid, spent in sorted(by_user.items(), key=lambda kv: names[kv[0]]):
        rows.append({"annotator": names[uid], "count": len(spent), "median_seconds": statistics.median(spent)})
    return rows


# The final-labels export: one row per item that has left "needs labels", flat (CSV, Parquet). The
# JSONL rows also nest the item's labels ("labels": LABEL_COLUMNS less the item's own columns), every
# decision made on it ("decision_history", invalidated ones included) and the routing reason.
FINAL_LABEL_COLUMNS = (
    Column("response_id"),
    Column("item_id", "int"),
    Column("model"),
    Column("checkpoint"),
    Column("benchmark"),
    Column("prompt"),
    Column("is_control", "bool"),
    Column("priority", "float"),
    Column("status"),
    Column("final_kind"),
    Column("final_answer"),
    Column("final_correctness"),
    Column("provenance"),
    Column("error_type"),
    Column("final_notes"),
    Column("decided_by"),
    Column("decided_at", "time"),
    Column("decision_count", "int"),
    Column("label_count", "int"),
    Column("replaced_at", "time"),
)

# The labels export: one row per individual label of a queue, history included (revised rows, and
# rows invalidated when the response text was replaced or a skip re-opened).
LABEL_COLUMNS = (
    Column("label_id", "int"),
    Column("item_id", "int"),
    Column("response_id"),
    Column("annotator"),
    Column("created_at", "time"),
    Column("kind"),
    Column("answer"),
    Column("correctness"),
    Column("confidence", "int"),
    Column("note"),
    Column("skip_reason"),
    Column("guidelines_version", "int"),
    Column("seconds_spent", "float"),
    Column("revises", "int"),
    Column("invalidated_at", "time"),
    Column("current", "bool"),
)

_LABEL_FIELDS = (
    "id",
    "item_id",
    "item__review_item__response__external_id",
    "annotator__username",
    "created_at",
    "kind",
    "answer",
    "correctness",
    "confidence",
    "note",
    "skip_reason",
    "guidelines_version",
    "seconds_spent",
    "revises_id",
    "invalidated_at",
    "is_current",
)

_ITEM_OWN = ("item_id", "response_id")

# What an export says of a final label whose provenance is "unresolved": no answer was decided (the
# row stores kind "ambiguous" with an empty answer; the export does not pretend that was a verdict).
UNRESOLVED = "unresolved"


def label_rows(*, queue: ReviewQueue) -> Iterator[dict]:
    """Every label of the queue (LABEL_COLUMNS), history included, by item and time. `current`: the
    row is its annotator's standing label of the item (valid, and no valid row of theirs is newer)."""
    newer = Label.objects.filter(item_id=OuterRef("item_id"), annotator_id=OuterRef("annotator_id")).filter(
        Q(created_at__gt=OuterRef("created_at")) | Q(created_at=OuterRef("created_at"), id__gt=OuterRef("id"))
    )
    rows = (
        Label.all_objects.filter(queue=queue)
        .annotate(
            is_current=ExpressionWrapper(Q(invalidated_at__isnull=True) & ~Exists(newer), output_field=BooleanField())
        )
        .order_by("item_id", "created_at", "id")
        .values_list(*_LABEL_FIELDS)
    )
    names = [c.name for c in LABEL_COLUMNS]
    for values in rows.iterator(chunk_size=5000):
        yield dict(zip(names, values))


def _decision(final: FinalLabel) -> dict:
    unresolved = final.provenance == FinalLabel.Provenance.UNRESOLVED
    return {
        "kind": UNRESOLVED if unresolved else final.kind,
        "answer": final.answer,
        "correctness": final.correctness,
        "provenance": final.provenance,
        "error_type": final.error_type,
        "notes": final.notes,
        "decided_by": final.decided_by.username if final.decided_by else None,
        "decided_at": final.created_at,
        "invalidated_at": final.invalidated_at,
    }


def final_labels(*, queue: ReviewQueue) -> list[dict]:
    """Every item with a final label (FINAL_LABEL_COLUMNS): its newest standing final label with who
    decided it and when, and (nested, for JSONL) every label of the item and every decision made."""
    labels: dict[int, list[dict]] = {}
    for row in label_rows(queue=queue):
        labels.setdefault(row["item_id"], []).append({k: v for k, v in row.items() if k not in _ITEM_OWN})
    decisions: dict[int, list[FinalLabel]] = {}
    finals = FinalLabel.all_objects.filter(item__queue=queue).select_related("decided_by").order_by("created_at", "id")
    for final in finals:
        decisions.setdefault(final.item_id, []).append(final)
    items = (
        queue.items.filter(~Q(status=QueueItem.Status.OPEN))
        .select_related("review_item__response__run")
        .defer("review_item__response__text", "review_item__response__prompt_text", "review_item__response__meta")
        .order_by("id")
    )
    out = []
    for item in items:
        review_item, response = item.review_item, item.review_item.response
        history = decisions.get(item.pk, [])
        standing = [f for f in history if f.invalidated_at is None]
        newest = _decision(standing[-1]) if standing else {}
        item_labels = labels.get(item.pk, [])
        out.append(
            {
                "item_id": item.pk,
                "response_id": response.external_id,
                "model": response.run.model,
                "checkpoint": response.run.checkpoint,
                "benchmark": response.run.benchmark,
                "prompt": response.run.prompt,
                "is_control": review_item.is_control,
                "priority": item.priority,
                "status": item.status,
                "final_kind": newest.get("kind"),
                "final_answer": newest.get("answer"),
                "final_correctness": newest.get("correctness"),
                "provenance": newest.get("provenance"),
                "error_type": newest.get("error_type", ""),
                "final_notes": newest.get("notes", ""),
                "decided_by": newest.get("decided_by"),
                "decided_at": newest.get("decided_at"),
                "decision_count": len(standing),
                "label_count": len(item_labels),
                "replaced_at": review_item.replaced_at,
                "labels": item_labels,
                "decision_history": [_decision(f) for f in history],
                "routing_reason": review_item.reason,
            }
        )
    return out


QUEUE_TABLES = ("final-labels", "labels")


def queue_export_table(*, queue: ReviewQueue, table: str) -> tuple[Iterable[dict], tuple[Column, ...]]:
    """A queue's export table and its columns: "final-labels" (one row per decided item) or "labels"
    (one row per individual label)."""
    if table == "final-labels":
        return final_labels(queue=queue), FINAL_LABEL_COLUMNS
    if table == "labels":
        return label_rows(queue=queue), LABEL_COLUMNS
    raise ValueError(f"unknown queue table {table!r}")
