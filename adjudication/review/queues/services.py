"""The managers' writes on a queue: create it (with its policy, when none is given), its state,
title, assigned annotators and guidelines, sync it with its policy, give skipped items back; and,
when imports replace response texts, invalidate what was labelled on the old ones."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from adjudication.models import (
    Dataset,
    FinalLabel,
    Guidelines,
    Label,
    Lease,
    QueueItem,
    Reading,
    Response,
    ReviewItem,
    ReviewQueue,
    RoutingPolicy,
)
from adjudication.permissions import has_role
from adjudication.pipeline.selectors import dataset_default_panel
from adjudication.review.errors import ReviewError
from adjudication.review.guidelines import default_guidelines
from adjudication.review.items import live_leases
from adjudication.review.queues.selectors import open_item_skips
from adjudication.review.queues.specs import QueueSpec, title_check
from adjudication.revisions import dataset_changed
from adjudication.routing.services import (
    queue_items_sync,
    review_items_route,
    routing_policy_create,
)
from adjudication.validators import free_text_problem


def queue_create(
    *,
    dataset: Dataset,
    spec: QueueSpec,
    policy: RoutingPolicy | None = None,
    created_by: User | None = None,
    annotators: Sequence[User] = (),
) -> ReviewQueue:
    """A queue over a routing policy's items. Without a policy, one is made from `spec.routing`
    (its panel: reader names or specs; default: the rule readers of the dataset's task types that
    have read it) and
    routed now. With `annotators`, only they see and claim it. All or nothing: a queue that cannot
    be filled is not left behind half made."""
    queue = ReviewQueue(
        name=spec.name,
        dataset=dataset,
        policy=policy,
        overlap=spec.overlap,
        lease_seconds=spec.lease_seconds,
        show_candidates=spec.show_candidates,
        judge_correctness=spec.judge_correctness,
        seed=spec.routing.seed,
        created_by=created_by,
        title=spec.title,
    )
    _check_annotators(annotators)
    if ReviewQueue.objects.filter(name=spec.name).exists():
        raise ReviewError(f"a queue named {spec.name!r} exists already")
    try:
        with transaction.atomic():
            if policy is None:
                routing = spec.routing
                if not routing.panel:
                    routing = replace(routing, panel=tuple(_rule_readers_of(dataset)))
                if len(routing.panel) < 2:
                    raise ReviewError(
                        "the dataset needs readings by at least two readers (run_readers) to route disagreements"
                    )
                queue.policy = routing_policy_create(dataset=dataset, name=f"queue:{spec.name}", spec=routing)
            elif policy.dataset_id != dataset.pk:
                raise ReviewError(f"policy {policy.name!r} belongs to another dataset")
            queue.save()
            queue.annotators.set(annotators)
            guidelines = spec.guidelines
            guidelines_update(
                queue=queue,
                text=default_guidelines(judge_correctness=spec.judge_correctness) if guidelines is None else guidelines,
                by=created_by,
            )
            # Routes on the policy, which adds the items to every queue on it, this one included.
            review_items_route(policy=queue.policy)
            queue_items_sync(queue=queue)
    except IntegrityError:
        # The name check above raced with another creation of the same name.
        raise ReviewError(f"a queue named {spec.name!r} exists already") from None
    return queue


def _rule_readers_of(dataset: Dataset) -> list[str]:
    """The default panel of a queue: the rule readers that have read the dataset and apply to its
    questions' task types (pipeline.selectors.dataset_default_panel), as the queue form ticks them;
    a dataset fewer than two of whose readers are in it (plugins) routes by every rule reader."""
    read = set(
        Reading.objects.filter(response__dataset=dataset, reader_spec__kind="rule").values_list(
            "reader_spec__name", flat=True
        )
    )
    fitting = read & set(dataset_default_panel(dataset_id=dataset.pk))
    return sorted(fitting if len(fitting) >= 2 else read)


def _check_annotators(annotators: Sequence[User]) -> None:
    refused = sorted(u.username for u in annotators if not (u.is_active and has_role(u, "annotator")))
    if refused:
        raise ReviewError(f"annotators: {', '.join(refused)} do not hold the annotator role", field="annotators")


def queue_state_set(*, queue: ReviewQueue, state: str) -> ReviewQueue:
    """Pause (no new claims), close (hidden from annotators, no claims) or re-open a queue. Live
    leases stay: an annotator who holds an item can still submit it."""
    if state not in ReviewQueue.State.values:
        raise ReviewError(f"state: one of {', '.join(ReviewQueue.State.values)}", field="state")
    ReviewQueue.objects.filter(pk=queue.pk).update(state=state)
    queue.state = state
    return queue


def queue_title_set(*, queue: ReviewQueue, title: str) -> ReviewQueue:
    """The title annotators see (blank: "Queue N"); the name stays the managers' handle."""
    title = title.strip()
    title_check(title)
    ReviewQueue.objects.filter(pk=queue.pk).update(title=title)
    queue.title = title
    return queue


def queue_annotators_set(*, queue: ReviewQueue, annotators: Sequence[User]) -> ReviewQueue:
    """Who may see and claim the queue: exactly these annotators (nobody: every annotator). Someone
    unassigned keeps their live lease (it can be submitted) but is handed nothing new."""
    _check_annotators(annotators)
    queue.annotators.set(annotators)
    return queue


MAX_GUIDELINES_CHARS = 100_000


def guidelines_update(*, queue: ReviewQueue, text: str, by: User | None) -> Guidelines:
    """A new version of the queue's guidelines (the earlier ones are kept: labels name theirs)."""
    problem = free_text_problem(text)
    if problem:
        raise ReviewError(f"the guidelines {problem}")
    if not text.strip() or len(text) > MAX_GUIDELINES_CHARS:
        raise ReviewError(f"the guidelines must be 1 to {MAX_GUIDELINES_CHARS} characters")
    with transaction.atomic():
        # The queue row's lock orders concurrent edits: each gets the next version number.
        ReviewQueue.objects.select_for_update().filter(pk=queue.pk).first()
        latest = queue.guidelines.aggregate(n=Max("version"))["n"] or 0
        return Guidelines.objects.create(queue=queue, version=latest + 1, text=text, created_by=by)


def queue_sync(*, queue: ReviewQueue) -> int:
    """Route newly disputed responses and add the policy's new items to the queue."""
    report = review_items_route(policy=queue.policy)
    return report.queued + queue_items_sync(queue=queue)


def skips_reopen(*, queue: ReviewQueue) -> int:
    """Give skipped items back to the annotators who skipped them: their skips stay as history
    (invalidated) and the items become claimable by them again. Only items still open: a skip on
    a settled item changed nothing. Returns the number of skips re-opened."""
    now = timezone.now()
    with transaction.atomic():
        skips = open_item_skips(queue=queue).values_list("pk", flat=True)
        reopened = Label.objects.filter(pk__in=list(skips)).update(invalidated_at=now)
        if reopened:
            dataset_changed(dataset_id=queue.dataset_id)
        return reopened


@dataclass
class InvalidationReport:
    labels: int = 0
    final_labels: int = 0
    items_reopened: int = 0


def review_invalidate_replaced(*, response_ids: list[int], record_change: bool = True) -> InvalidationReport:
    """The responses' texts were replaced: labels and final labels made on the old text are kept as
    history but invalidated, their queue items re-opened (no labels, open), live leases on them
    ended, and their review items marked replaced with the old routing reason kept. The routing
    gives the items a new reason once the new readings are in.

    `record_change=False` leaves the data version to the caller: an import invalidates response by
    response as it goes and raises the version once, last, so that it never holds the counter
    while it still locks queue items (adjudication.revisions: item rows first, the counter last)."""
    report = InvalidationReport()
    if not response_ids:
        return report
    now = timezone.now()
    with transaction.atomic():
        items = QueueItem.objects.filter(review_item__response_id__in=response_ids)
        item_ids = list(items.select_for_update().values_list("id", flat=True))
        report.labels = Label.objects.filter(item_id__in=item_ids).update(invalidated_at=now)
        report.final_labels = FinalLabel.objects.filter(item_id__in=item_ids).update(invalidated_at=now)
        report.items_reopened = (
            QueueItem.objects.filter(id__in=item_ids)
            .exclude(status=QueueItem.Status.OPEN, label_count=0)
            .update(status=QueueItem.Status.OPEN, label_count=0)
        )
        Lease.objects.filter(live_leases(now), item_id__in=item_ids).update(expires_at=now)
        marked = 0
        for review_item in ReviewItem.objects.filter(response_id__in=response_ids).only("id", "reason"):
            reason = review_item.reason or {}
            previous = reason.get("before_replacement") if "readings" not in reason else reason
            marked += ReviewItem.objects.filter(pk=review_item.pk).update(
                replaced_at=now, reason={"before_replacement": previous}
            )
        if record_change and (item_ids or marked):
            datasets = Response.objects.filter(id__in=response_ids).values_list("dataset_id", flat=True).distinct()
            # In id order: two writers that raise several datasets' counters take them in one order.
            for dataset_id in sorted(set(datasets)):
                dataset_changed(dataset_id=dataset_id)
    return report
