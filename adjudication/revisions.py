"""The data version of a dataset: one counter (DatasetRevision.number) that every write changing
what the analytics read raises, inside that write's transaction. A stored report is current while
it carries the dataset's number, so "is the report stale?" is one primary-key lookup, not a count of
millions of readings.

Call `dataset_changed` last in the writing transaction: the counter row stays locked until commit,
and taking it last keeps that wait short and the lock order the same everywhere (item rows, then
the counter), so two writers never deadlock on it.
"""

from __future__ import annotations

from django.db import connection, models
from django.utils import timezone

from adjudication.ingest.models import Dataset


class DatasetRevision(models.Model):
    """A counter per dataset, raised by every write that changes what the analytics read (responses,
    readings, routing, labels, final labels): a stored report is current while it carries the
    dataset's number. A row of its own, not a column of Dataset: an import holds the dataset row
    for its whole transaction, and labelling must not wait for that."""

    dataset = models.OneToOneField(Dataset, primary_key=True, on_delete=models.CASCADE, related_name="revision")
    number = models.BigIntegerField(default=0)
    changed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.dataset_id} r{self.number}"


# One statement on PostgreSQL and SQLite (>= 3.24) alike: the first change of a dataset creates
# its row, later ones raise the number; two concurrent first changes cannot both insert.
_BUMP_SQL = """
    INSERT INTO adjudication_datasetrevision (dataset_id, number, changed_at) VALUES (%s, 1, %s)
    ON CONFLICT (dataset_id) DO UPDATE SET number = adjudication_datasetrevision.number + 1,
                                           changed_at = excluded.changed_at"""


def dataset_changed(*, dataset_id: int) -> None:
    """Raise the dataset's data version (within the caller's transaction)."""
    with connection.cursor() as cursor:
        cursor.execute(_BUMP_SQL, [dataset_id, connection.ops.adapt_datetimefield_value(timezone.now())])


def dataset_version(*, dataset_id: int) -> int:
    """The dataset's current data version (0 before its first change was recorded)."""
    number = DatasetRevision.objects.filter(dataset_id=dataset_id).values_list("number", flat=True).first()
    return number or 0
