# Server-provided texts stored verbatim-safely.

import adjudication.fields
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
    ]
