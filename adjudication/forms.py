"""Helpers every page's forms share. Every POST is parsed by a form, never read raw from
request.POST: forms refuse NUL characters, over-long text and numbers that do not parse or do not
fit their column, with a message instead of a 500. The bounds are the model fields' own validators."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import BadRequest, ValidationError
from django.db import models
from django.http import QueryDict

from adjudication.errors import ApplicationError
from adjudication.validators import parse_id, validate_free_text

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


def form_error_add(form: forms.Form, exc: ApplicationError) -> None:
    """A service's refusal as one of the form's errors: its reason on the field it names when the
    form has that field, else its whole message among the non-field errors; form_errors then says
    it as it says the form's own ("field: reason")."""
    if exc.field is not None and exc.field in form.fields:
        form.add_error(exc.field, exc.field_error)
    else:
        form.add_error(None, exc.message)


def query_id(params: QueryDict, name: str) -> int | None:
    """The id a query string or a POST names under `name` (None when absent or blank); anything but
    an id is a 400 (BadRequest), never a 500 from int() nor a different id read from "３"."""
    raw = params.get(name, "")
    if raw == "":
        return None
    try:
        return parse_id(raw, name=name)
    except ValidationError as exc:
        raise BadRequest(exc.messages[0]) from None


class IdChoiceField(forms.ModelChoiceField):
    """A ModelChoiceField that takes only what parse_id takes: Django's own lookup runs int() on the
    value, which reads " 1" and "１" as 1."""

    def to_python(self, value: Any) -> models.Model | None:
        if isinstance(value, str) and value not in self.empty_values:
            try:
                parse_id(value)
            except ValidationError:
                raise ValidationError(
                    self.error_messages["invalid_choice"], code="invalid_choice", params={"value": value}
                ) from None
        return super().to_python(value)
