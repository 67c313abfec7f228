import adjudication.fields
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('adjudication', '0010_reading_canonical'),
    ]

    operations = [
        migrations.AddField(
            model_name='response',
            name='prompt_text',
            field=adjudication.fields.VerbatimTextField(blank=True, null=True),
        ),
    ]
