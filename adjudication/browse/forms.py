"""The item browser's filter form: GET parameters parsed into browse.selectors.ItemFilters, every bad value a
message naming its parameter (never a 500), and what the form shows back (values kept, options)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db.models import Model, QuerySet
from django.http import QueryDict

from adjudication.browse.selectors import STATES, ItemFilters, VerdictCondition, filter_choices, reader_names
from adjudication.forms import IdChoiceField
from adjudication.models import Dataset, ReviewQueue, Verdict
from adjudication.text import displayable
from adjudication.validators import free_text_problem, parse_id

MAX_Q = 500  # an external id is at most 500 characters; a text search longer than that is a mistake
MAX_CONDITIONS = 8
MAX_PAGE = 10_000
# The parameters a link carries to keep the filters (pagination, the state shortcuts).
PARAMETERS = ("q", "dataset", "model", "checkpoint", "benchmark", "queue", "status", "verdict", "disagree")


def _valid_text(value: str) -> None:
    # NUL is refused by CharField itself (and named by it); this adds the lone surrogates.
    problem = free_text_problem(value.replace("\x00", ""))
    if problem:
        raise forms.ValidationError(problem)


class ConditionsField(forms.Field):
    """`verdict=<reader>:<verdict>`, repeatable; empty values (the form's blank input) are ignored."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> tuple[VerdictCondition, ...]:
        values = [v for v in (value or []) if v.strip()]
        if len(values) > MAX_CONDITIONS:
            raise forms.ValidationError(f"at most {MAX_CONDITIONS} conditions")
        conditions = []
        for raw in values:
            problem = free_text_problem(raw)
            if problem:
                raise forms.ValidationError(f"a condition {problem}")
            reader, colon, verdict = raw.strip().rpartition(":")
            if not colon or not reader.strip():
                raise forms.ValidationError(
                    f"{raw[:80]!r} is not <reader>:<verdict> (for example fixed:correct)", code="malformed"
                )
            if verdict not in Verdict.values:
                raise forms.ValidationError(
                    f"{raw[:80]!r}: the verdict must be one of {', '.join(Verdict.values)}", code="verdict"
                )
            conditions.append(VerdictCondition(reader.strip(), verdict))
        return tuple(dict.fromkeys(conditions))

    def validate(self, value: Any) -> None:
        known = set(reader_names()) if value else set()
        unknown = sorted({c.reader for c in value} - known)
        if unknown:
            raise forms.ValidationError(f"no reader named {', '.join(repr(n[:80]) for n in unknown)}")


def _id_field(queryset: QuerySet[Model], what: str) -> forms.ModelChoiceField:
    message = f"no such {what}: give the id of one listed in the form"
    return IdChoiceField(queryset=queryset, required=False, error_messages={"invalid_choice": message})


class ItemFilterForm(forms.Form):
    data: QueryDict  # the GET parameters: a repeated one (verdict) is read with getlist
    q = forms.CharField(
        required=False,
        max_length=MAX_Q,
        strip=True,
        validators=[_valid_text],
        error_messages={"max_length": f"search for at most {MAX_Q} characters (this is %(show_value)d)"},
    )
    dataset = _id_field(Dataset.objects.all(), "dataset")
    model = forms.ChoiceField(required=False)
    checkpoint = forms.ChoiceField(required=False)
    benchmark = forms.ChoiceField(required=False)
    queue = _id_field(ReviewQueue.objects.all(), "queue")
    status = forms.ChoiceField(
        required=False,
        choices=[("", "any"), *((s, s) for s in STATES)],
        error_messages={"invalid_choice": f"the status must be one of {', '.join(STATES)}"},
    )
    verdict = ConditionsField(required=False)
    disagree = forms.CharField(required=False, max_length=320, validators=[_valid_text])
    page = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_PAGE,
        error_messages={"invalid": "the page must be a number"},
    )

    def __init__(self, data: QueryDict, *args: Any, **kwargs: Any) -> None:
        super().__init__(data, *args, **kwargs)
        raw = data.get("dataset", "") if data else ""
        try:
            dataset_id: int | None = parse_id(raw)
        except ValidationError:
            dataset_id = None  # the dataset field says why, and the page answers 400
        # The run columns offered are the chosen dataset's (all datasets': none or a bad one chosen).
        self.run_values = filter_choices(dataset_id=dataset_id)
        for column, values in self.run_values.items():
            choice = self.fields[column]
            assert isinstance(choice, forms.ChoiceField)  # model, checkpoint, benchmark: declared above
            choice.choices = [("", "any"), *((v, v) for v in values)]
            choice.error_messages["invalid_choice"] = (
                f"no run {'of this dataset ' if dataset_id else ''}has the {column} “%(value)s”"
            )

    def clean_disagree(self) -> str | tuple[int, int] | None:
        value = self.cleaned_data["disagree"].strip()
        if not value:
            return None
        if value == "any":
            return value
        names = [n.strip() for n in value.split(",")]
        if len(names) != 2 or not all(names) or names[0] == names[1]:
            raise forms.ValidationError('give "any" or two different annotators\' usernames, comma-separated')
        users = dict(User.objects.filter(username__in=names).values_list("username", "id"))
        missing = [n for n in names if n not in users]
        if missing:
            raise forms.ValidationError(f"no user named {', '.join(repr(n[:80]) for n in missing)}")
        return users[names[0]], users[names[1]]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        assert data is not None  # Form.clean returns cleaned_data
        if data.get("disagree") and not data.get("queue") and "queue" not in self.errors:
            self.add_error("disagree", "needs a queue (queue=<id>): disagreement is counted within one queue")
        return data

    def filters(self) -> ItemFilters:
        data = self.cleaned_data
        disagree = data.get("disagree")
        return ItemFilters(
            q=data["q"],
            dataset_id=data["dataset"].pk if data["dataset"] else None,
            model=data["model"],
            checkpoint=data["checkpoint"],
            benchmark=data["benchmark"],
            queue_id=data["queue"].pk if data["queue"] else None,
            status=data["status"],
            verdicts=data["verdict"] or (),
            disagree_any=disagree == "any",
            disagree_pair=disagree if isinstance(disagree, tuple) else None,
        )

    def page_number(self) -> int:
        return self.cleaned_data.get("page") or 1

    # -- what the page shows back ------------------------------------------------------------------

    def kept(self) -> dict[str, Any]:
        """The values as given (made displayable, cut to a sane length), for the inputs to keep them."""
        data = self.data
        one = {name: _shown(data.get(name, "")) for name in PARAMETERS if name != "verdict"}
        return {**one, "verdict": [_shown(v) for v in data.getlist("verdict") if v.strip()]}

    def query(self, **changes: Any) -> str:
        """The query string of these filters (empty values left out), with `changes` applied."""
        pairs = []
        for name in PARAMETERS:
            values = changes[name] if name in changes else self.data.getlist(name)
            values = [values] if isinstance(values, (str, int)) else values
            pairs += [(name, str(v)) for v in values if str(v).strip()]
        if changes.get("page", 1) != 1:
            pairs.append(("page", str(changes["page"])))
        return urlencode(pairs)

    def options(self) -> dict[str, list[tuple[str, str, bool]]]:
        """(value, label, selected) per select of the form."""
        kept = self.kept()
        out = {
            "dataset": [(str(d.pk), d.name, str(d.pk) == kept["dataset"]) for d in Dataset.objects.order_by("name")],
            "queue": [
                (str(q.pk), f"{q.name} ({q.display_title})", str(q.pk) == kept["queue"])
                for q in ReviewQueue.objects.order_by("name")
            ],
            "status": [(s, s, s == kept["status"]) for s in STATES],
        }
        for column, values in self.run_values.items():
            out[column] = [(v, v, v == kept[column]) for v in values]
        return out


def _shown(value: str) -> str:
    return displayable(value[:1_000])
