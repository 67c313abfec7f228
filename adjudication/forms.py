"""Helpers every page's forms share. Every POST is parsed by a form, never read raw from
request.POST: forms refuse NUL characters, over-long text and numbers that do not parse or do not
fit their column, with a message instead of a 500. The bounds are the model fields' own validators."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db import models

from adjudication.validators import validate_free_text

MAX_TEXT = 10_000


def model_bounds(model: type[models.Model], name: str) -> dict[str, Any]:
    """min_value / max_value from a model field's Min/MaxValueValidators."""
    from django.core.validators import MaxValueValidator, MinValueValidator

    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)  # a column of the model, not a reverse relation
    bounds: dict[str, Any] = {}
    for validator in field.validators:
        if isinstance(validator, MinValueValidator):
            bounds["min_value"] = validator.limit_value
        elif isinstance(validator, MaxValueValidator):
            bounds["max_value"] = validator.limit_value
    return bounds


def free_text_field(**kwargs: Any) -> forms.CharField:
    return forms.CharField(required=False, max_length=MAX_TEXT, validators=[validate_free_text], strip=False, **kwargs)


def form_errors(form: forms.Form) -> str:
    """A form's errors as one line for a flash message."""
    parts = []
    for field, errors in form.errors.items():
        label = "" if field == "__all__" else f"{field}: "
        parts.append(label + " ".join(map(str, errors)))
    return "; ".join(parts)
