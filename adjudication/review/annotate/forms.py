"""Forms of the annotator's item page: a label, a skip."""

from __future__ import annotations

from django import forms

from adjudication.forms import free_text_field
from adjudication.models import Label


class LabelForm(forms.Form):
    kind = forms.ChoiceField(
        choices=[(k, k) for k in Label.Kind.values if k != Label.Kind.SKIPPED],
        error_messages={"required": "pick an answer first", "invalid_choice": "pick an answer first"},
    )
    answer = free_text_field()
    correctness = forms.ChoiceField(
        choices=[("", ""), ("correct", "correct"), ("incorrect", "incorrect")], required=False
    )
    confidence = forms.TypedChoiceField(
        choices=[("", "")] + [(str(n), str(n)) for n in range(1, 6)], coerce=int, required=False, empty_value=None
    )
    note = free_text_field()


class SkipForm(forms.Form):
    skip_reason = free_text_field()
    note = free_text_field()
