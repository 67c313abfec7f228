# Server-provided texts stored verbatim-safely; LLMBatch, the status of each llm-queue task.

import adjudication.fields
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('adjudication', '0001_initial'),
        ('judges', '0001_initial'),
    ]

    operations = [
        migrations.AlterField(
            model_name='endpoint',
            name='timeout_s',
            field=models.FloatField(default=60.0, help_text='seconds per attempt, all of it: connect, send, wait and read, however slowly the reply trickles in'),
        ),
        migrations.AlterField(
            model_name='judgement',
            name='finish_reason',
            field=adjudication.fields.VerbatimTextField(blank=True, default=''),
        ),
        migrations.AlterField(
            model_name='judgement',
            name='served_model',
            field=adjudication.fields.VerbatimTextField(blank=True, default=''),
        ),
        migrations.AlterField(
            model_name='llmattempt',
            name='error',
            field=adjudication.fields.VerbatimTextField(blank=True, default='', help_text='server-provided text; API keys redacted'),
        ),
        migrations.CreateModel(
            name='LLMBatch',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('run', models.UUIDField(help_text='the command run that enqueued it')),
                ('kind', models.CharField(choices=[('judge', 'Judge'), ('regenerate', 'Regenerate')], max_length=12)),
                ('responses', models.PositiveIntegerField(help_text='responses in the batch')),
                ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'running (or its worker died and the task waits for redelivery)'), ('done', 'Done'), ('failed', 'Failed')], default='queued', max_length=8)),
                ('deliveries', models.PositiveIntegerField(default=0, help_text='times a worker started it')),
                ('error', adjudication.fields.VerbatimTextField(blank=True, default='', help_text='why it failed; API keys redacted')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('dataset', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='llm_batches', to='adjudication.dataset')),
            ],
            options={
                'ordering': ['created_at', 'id'],
                'indexes': [models.Index(fields=['run', 'status'], name='judges_llmb_run_c7189f_idx'), models.Index(fields=['dataset', 'status'], name='judges_llmb_dataset_cca1e7_idx')],
            },
        ),
    ]
