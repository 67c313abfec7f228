"""Forms of the dataset pages."""

from __future__ import annotations

from typing import Any

from django import forms


class RunReadersForm(forms.Form):
    reader = forms.MultipleChoiceField(error_messages={"required": "tick at least one reader"})

    def __init__(self, *args: Any, readers: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["reader"]
        assert isinstance(field, forms.MultipleChoiceField)  # declared above
        field.choices = [(name, name) for name in readers]
