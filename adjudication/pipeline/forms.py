"""Forms of the dataset pages."""

from __future__ import annotations

from typing import Any

from django import forms

from adjudication.forms import form_error_add
from adjudication.pipeline.subsets import SEED_MAX, ResponseSubset, SubsetError
from adjudication.validators import INT_MAX, validate_free_text

# Pasted ids: tens of thousands of ids, URL-encoded within Django's 2.5 MB request body limit
# (DATA_UPLOAD_MAX_MEMORY_SIZE); a longer list is a file for `run_judges --ids`.
IDS_MAX_CHARS = 1_000_000


class RunReadersForm(forms.Form):
    reader = forms.MultipleChoiceField(error_messages={"required": "tick at least one reader"})

    def __init__(self, *args: Any, readers: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["reader"]
        assert isinstance(field, forms.MultipleChoiceField)  # declared above
        field.choices = [(name, name) for name in readers]


class RunJudgesForm(forms.Form):
    """The judges to run and the subset of the dataset they judge. "Preview" says how many
    responses each judge would judge; "Judge" enqueues them."""

    judge = forms.MultipleChoiceField(error_messages={"required": "tick at least one judge"})
    subset = forms.ChoiceField(
        choices=[
            ("all", "the whole dataset"),
            ("queue", "the responses in a review queue"),
            ("labelled", "the responses with a final human label"),
            ("sample", "a random sample"),
            ("ids", "the responses listed"),
        ],
        initial="all",
    )
    # A name, not a choice: a queue deleted since the page was drawn is refused only when it is
    # the subset asked for (the selector names the dataset's queues), not whatever was picked.
    queue = forms.CharField(required=False, max_length=200)
    sample = forms.IntegerField(required=False, min_value=1, max_value=INT_MAX)
    seed = forms.IntegerField(required=False, min_value=0, max_value=SEED_MAX, initial=0)
    ids = forms.CharField(
        required=False, max_length=IDS_MAX_CHARS, strip=False, validators=[validate_free_text], widget=forms.Textarea
    )
    action = forms.ChoiceField(choices=[("preview", "Preview"), ("run", "Judge")], initial="preview")

    def __init__(self, *args: Any, judges: list[str], queues: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        judge = self.fields["judge"]
        assert isinstance(judge, forms.MultipleChoiceField)  # declared above
        judge.choices = [(name, name) for name in judges]
        self.queue_names = queues  # the dataset's queues, for the page's list

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        kind = data.get("subset")
        if kind is None or self.errors:
            return data
        try:
            if kind == "queue":
                data["response_subset"] = ResponseSubset.of_queue(data.get("queue") or "")
            elif kind == "labelled":
                data["response_subset"] = ResponseSubset.labelled()
            elif kind == "sample":
                seed = data.get("seed")
                data["response_subset"] = ResponseSubset.sample(
                    data.get("sample") or 0, seed=0 if seed is None else seed
                )
            elif kind == "ids":
                data["response_subset"] = ResponseSubset.listed(data.get("ids") or "", source="the ids", field="ids")
            else:
                data["response_subset"] = ResponseSubset.whole()
        except SubsetError as exc:
            form_error_add(self, exc)
        return data
