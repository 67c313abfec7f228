"""AuditRun's claim becomes a lease: a heartbeat, and the number of claims (the fencing token)."""
from django.db import migrations, models


def count_past_claims(apps, schema_editor) -> None:
    # A run that has started was claimed once (the old claim could not be repeated).
    AuditRun = apps.get_model("adjudication", "AuditRun")
    AuditRun.objects.filter(started_at__isnull=False).update(attempts=1)


class Migration(migrations.Migration):

    dependencies = [
        ("adjudication", "0006_label_queue"),
    ]

    operations = [
        migrations.AlterField(
            model_name="auditrun",
            name="started_at",
            field=models.DateTimeField(blank=True, help_text="when the current attempt claimed the run", null=True),
        ),
        migrations.AddField(
            model_name="auditrun",
            name="heartbeat_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="auditrun",
            name="attempts",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(count_past_claims, migrations.RunPython.noop),
    ]
