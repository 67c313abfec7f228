# Upstream judge templates, both supplied by the user: simple-evals' SimpleQA grader and xVerify's prompt.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('judges', '0002_verbatim_server_texts'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='judge',
            name='judge_custom_has_text',
        ),
        migrations.AlterField(
            model_name='judge',
            name='template',
            field=models.CharField(choices=[('simpleqa', 'ours: SimpleQA-style three-way grader (a paraphrase; CORRECT / INCORRECT / NOT_ATTEMPTED)'), ('xverify', 'ours: xVerify-style grader (a paraphrase; Correct / Incorrect)'), ('simpleqa-upstream', "upstream: simple-evals' SimpleQA grader, verbatim, from a file the user supplies (seed 002's GPTGrader)"), ('xverify-upstream', "upstream: xVerify's judge prompt, verbatim, from a file the user supplies"), ('custom', 'custom template')], default='simpleqa', max_length=30),
        ),
        migrations.AlterField(
            model_name='judge',
            name='custom_template',
            field=models.TextField(blank=True, default='', help_text='for template=custom: placeholders {question} {choices} {target} {response}; for template=simpleqa-upstream or xverify-upstream: the upstream prompt as supplied by the user'),
        ),
        migrations.AddConstraint(
            model_name='judge',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('template__in', ['custom', 'simpleqa-upstream', 'xverify-upstream']), _negated=True), models.Q(('custom_template', ''), _negated=True), _connector='OR'), name='judge_custom_has_text'),
        ),
    ]
