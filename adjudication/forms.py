"""Forms of the HTML pages. Every POST is parsed by a form, never read raw from request.POST:
forms refuse NUL characters, over-long text and numbers that do not parse or do not fit their
column, with a message instead of a 500. The bounds are the model fields' own validators."""
from __future__ import annotations

from typing import Any

from django import forms

from .models import Dataset, FinalLabel, Label, ReviewQueue
from .validators import validate_free_text

MAX_TEXT = 10_000


def _model_bounds(model: type, name: str) -> dict[str, Any]:
    """min_value / max_value from a model field's Min/MaxValueValidators."""
    from django.core.validators import MaxValueValidator, MinValueValidator

    bounds: dict[str, Any] = {}
    for validator in model._meta.get_field(name).validators:
        if isinstance(validator, MinValueValidator):
            bounds["min_value"] = validator.limit_value
        elif isinstance(validator, MaxValueValidator):
            bounds["max_value"] = validator.limit_value
    return bounds


def _text(**kwargs: Any) -> forms.CharField:
    return forms.CharField(required=False, max_length=MAX_TEXT, validators=[validate_free_text], strip=False, **kwargs)


class LabelForm(forms.Form):
    kind = forms.ChoiceField(choices=[(k, k) for k in Label.Kind.values if k != Label.Kind.SKIPPED],
                             error_messages={"required": "pick an answer first", "invalid_choice": "pick an answer first"})
    answer = _text()
    correctness = forms.ChoiceField(choices=[("", ""), ("correct", "correct"), ("incorrect", "incorrect")],
                                    required=False)
    confidence = forms.TypedChoiceField(choices=[("", "")] + [(str(n), str(n)) for n in range(1, 6)], coerce=int,
                                        required=False, empty_value=None)
    note = _text()


class SkipForm(forms.Form):
    skip_reason = _text()
    note = _text()


class AdjudicationForm(forms.Form):
    kind = forms.ChoiceField(choices=[(k, k) for k in Label.Kind.values if k != Label.Kind.SKIPPED], required=False)
    answer = _text()
    correctness = forms.ChoiceField(choices=[("", ""), ("correct", "correct"), ("incorrect", "incorrect")],
                                    required=False)
    error_type = forms.ChoiceField(choices=FinalLabel.ErrorType.choices, required=False)
    notes = _text()
    unresolved = forms.BooleanField(required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not data.get("unresolved") and not data.get("kind") and not self.errors:
            raise forms.ValidationError("choose the final label's kind, or mark the item unresolved")
        return data


class QueueForm(forms.Form):
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.all(), error_messages={
        "required": "choose a dataset", "invalid_choice": "choose a dataset"})
    name = forms.CharField(max_length=ReviewQueue._meta.get_field("name").max_length,
                           validators=ReviewQueue._meta.get_field("name").validators)
    overlap = forms.IntegerField(initial=2, **_model_bounds(ReviewQueue, "overlap"))
    lease_seconds = forms.IntegerField(initial=900, **_model_bounds(ReviewQueue, "lease_seconds"))
    control_fraction = forms.FloatField(initial=0.0, min_value=0.0, max_value=1.0, required=False)
    show_candidates = forms.BooleanField(required=False)
    judge_correctness = forms.BooleanField(required=False)


class RunReadersForm(forms.Form):
    reader = forms.MultipleChoiceField(error_messages={"required": "tick at least one reader"})

    def __init__(self, *args: Any, readers: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["reader"].choices = [(name, name) for name in readers]


def form_errors(form: forms.Form) -> str:
    """A form's errors as one line for a flash message."""
    parts = []
    for field, errors in form.errors.items():
        label = "" if field == "__all__" else f"{field}: "
        parts.append(label + " ".join(errors))
    return "; ".join(parts)
