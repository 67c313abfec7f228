"""Forms of the review pages (labels, skips, adjudication, queue creation)."""

from __future__ import annotations

from typing import Any

from django import forms

from adjudication.forms import free_text_field, model_bounds
from adjudication.models import Dataset, FinalLabel, Label, ReviewQueue


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


class AdjudicationForm(forms.Form):
    kind = forms.ChoiceField(choices=[(k, k) for k in Label.Kind.values if k != Label.Kind.SKIPPED], required=False)
    answer = free_text_field()
    correctness = forms.ChoiceField(
        choices=[("", ""), ("correct", "correct"), ("incorrect", "incorrect")], required=False
    )
    error_type = forms.ChoiceField(choices=FinalLabel.ErrorType.choices, required=False)
    notes = free_text_field()
    unresolved = forms.BooleanField(required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not data.get("unresolved") and not data.get("kind") and not self.errors:
            raise forms.ValidationError("choose the final label's kind, or mark the item unresolved")
        return data


class QueueForm(forms.Form):
    dataset = forms.ModelChoiceField(
        queryset=Dataset.objects.all(),
        error_messages={"required": "choose a dataset", "invalid_choice": "choose a dataset"},
    )
    name = forms.CharField(
        max_length=ReviewQueue._meta.get_field("name").max_length,
        validators=ReviewQueue._meta.get_field("name").validators,
    )
    overlap = forms.IntegerField(initial=2, **model_bounds(ReviewQueue, "overlap"))
    lease_seconds = forms.IntegerField(initial=900, **model_bounds(ReviewQueue, "lease_seconds"))
    control_fraction = forms.FloatField(initial=0.0, min_value=0.0, max_value=1.0, required=False)
    show_candidates = forms.BooleanField(required=False)
    judge_correctness = forms.BooleanField(required=False)
    title = forms.CharField(max_length=200, required=False)


class GuidelinesForm(forms.Form):
    text = forms.CharField(strip=False, error_messages={"required": "the guidelines are empty"})
