"""Label.queue: a copy of the item's queue, so an annotator's progress is counted without a join."""
import django.db.models.deletion
from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def copy_queue(apps, schema_editor) -> None:
    Label = apps.get_model("adjudication", "Label")
    QueueItem = apps.get_model("adjudication", "QueueItem")
    Label.objects.filter(queue__isnull=True).update(
        queue=Subquery(QueueItem.objects.filter(pk=OuterRef("item_id")).values("queue_id")[:1]))


class Migration(migrations.Migration):

    dependencies = [
        ("adjudication", "0005_audit"),
    ]

    operations = [
        migrations.AddField(
            model_name="label",
            name="queue",
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                    to="adjudication.reviewqueue"),
        ),
        migrations.RunPython(copy_queue, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="label",
            name="queue",
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                    to="adjudication.reviewqueue"),
        ),
        migrations.AddIndex(
            model_name="label",
            index=models.Index(fields=["queue", "annotator", "item"], name="adjudicatio_queue_i_a89ce6_idx"),
        ),
    ]
