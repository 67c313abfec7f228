"""The adjudicator's final-label form."""

from __future__ import annotations

from typing import Any

from django import forms

from adjudication.forms import free_text_field
from adjudication.models import FinalLabel, Label


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
        assert data is not None  # Form.clean returns cleaned_data
        if not data.get("unresolved") and not data.get("kind") and not self.errors:
            raise forms.ValidationError("choose the final label's kind, or mark the item unresolved")
        return data
