"""Forms of the managers' queue pages: creating a queue (dataset, then panel and settings), its
guidelines, state, title and assigned annotators."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.models import User
from django.db.models import QuerySet

from adjudication.forms import IdChoiceField, model_bounds
from adjudication.models import Dataset, ReaderSpec, ReviewQueue, RoutingPolicy


class DatasetPickForm(forms.Form):
    """The first step of creating a queue: the dataset, whose readers make the panel's choices."""

    dataset = IdChoiceField(
        queryset=Dataset.objects.order_by("name"),
        error_messages={"required": "choose a dataset", "invalid_choice": "choose a dataset"},
    )


class QueueForm(forms.Form):
    """A new queue over one dataset: its routing (panel, comparison, controls) and its review
    settings. `readers` are the dataset's reader specs, the panel's choices."""

    name = forms.CharField(
        max_length=ReviewQueue._meta.get_field("name").max_length,
        validators=ReviewQueue._meta.get_field("name").validators,
        required=False,
    )
    title = forms.CharField(max_length=ReviewQueue._meta.get_field("title").max_length, required=False)
    panel = forms.ModelMultipleChoiceField(
        queryset=ReaderSpec.objects.none(),
        error_messages={
            "required": "tick at least two readers",
            "invalid_choice": "tick readers that have read this dataset",
            "invalid_pk_value": "tick readers that have read this dataset",
        },
    )
    compare = forms.ChoiceField(choices=RoutingPolicy.Compare.choices, initial=RoutingPolicy.Compare.EITHER)
    missing_is_disagreement = forms.BooleanField(required=False)
    control_fraction = forms.FloatField(initial=0.0, min_value=0.0, max_value=1.0, required=False)
    unreadable_fraction = forms.FloatField(initial=0.1, min_value=0.0, max_value=1.0, required=False)
    seed = forms.IntegerField(initial=0, required=False, **model_bounds(RoutingPolicy, "seed"))
    priority = forms.ChoiceField(
        choices=RoutingPolicy.Priority.choices,
        initial=RoutingPolicy.Priority.DISAGREEMENT,
        required=False,
        error_messages={"invalid_choice": "priority: one of " + ", ".join(RoutingPolicy.Priority.values)},
    )
    target = forms.CharField(max_length=RoutingPolicy._meta.get_field("target").max_length, required=False)
    budget = forms.IntegerField(required=False, **model_bounds(RoutingPolicy, "budget"))
    sampling = forms.ChoiceField(
        choices=RoutingPolicy.Sampling.choices,
        initial=RoutingPolicy.Sampling.RANDOMIZED,
        required=False,
        error_messages={"invalid_choice": "sampling: one of " + ", ".join(RoutingPolicy.Sampling.values)},
    )
    overlap = forms.IntegerField(initial=2, **model_bounds(ReviewQueue, "overlap"))
    lease_seconds = forms.IntegerField(initial=900, **model_bounds(ReviewQueue, "lease_seconds"))
    show_candidates = forms.BooleanField(required=False, initial=True)
    judge_correctness = forms.BooleanField(required=False)

    def __init__(self, *args: Any, readers: list[ReaderSpec], creating: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        panel = self.fields["panel"]
        assert isinstance(panel, forms.ModelMultipleChoiceField)  # declared above
        panel.queryset = ReaderSpec.objects.filter(pk__in=[r.pk for r in readers])
        # A preview needs no name yet; creating does.
        self.fields["name"].required = creating

    def clean_panel(self) -> list[ReaderSpec]:
        panel = list(self.cleaned_data["panel"])
        if len(panel) < 2:
            raise forms.ValidationError("tick at least two readers: a panel of one cannot disagree")
        return panel

    def clean(self) -> dict[str, Any]:
        # The target's own check (does it parse, does the fit have that group or producer) is the
        # routing service's, against the data: its message is shown as the form's error.
        data = super().clean()
        assert data is not None  # Form.clean returns cleaned_data
        priority = data.get("priority") or RoutingPolicy.Priority.DISAGREEMENT
        data["priority"] = priority
        data["target"] = (data.get("target") or "").strip()
        if priority == RoutingPolicy.Priority.INFORMATION and not data["target"]:
            self.add_error("target", "priority information needs a target, e.g. reader:strict-match or accuracy")
        elif priority != RoutingPolicy.Priority.INFORMATION and (data["target"] or data.get("budget") is not None):
            self.add_error("target", "a target and a budget go with priority information only")
        data["sampling"] = data.get("sampling") or RoutingPolicy.Sampling.RANDOMIZED
        if priority != RoutingPolicy.Priority.INFORMATION and data["sampling"] != RoutingPolicy.Sampling.RANDOMIZED:
            self.add_error("sampling", "greedy sampling goes with priority information only")
        return data


class GuidelinesForm(forms.Form):
    text = forms.CharField(strip=False, error_messages={"required": "the guidelines are empty"})


class QueueStateForm(forms.Form):
    state = forms.ChoiceField(
        choices=ReviewQueue.State.choices, error_messages={"invalid_choice": "active, paused or closed"}
    )


class QueueTitleForm(forms.Form):
    title = forms.CharField(max_length=ReviewQueue._meta.get_field("title").max_length, required=False)


class QueueAnnotatorsForm(forms.Form):
    """Who may label the queue: the ticked annotators; none ticked, every annotator."""

    annotators = forms.ModelMultipleChoiceField(
        queryset=User.objects.none(),
        required=False,
        error_messages={
            "invalid_choice": "tick users who hold the annotator role",
            "invalid_pk_value": "tick users who hold the annotator role",
        },
    )

    def __init__(self, *args: Any, candidates: QuerySet[User], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        annotators = self.fields["annotators"]
        assert isinstance(annotators, forms.ModelMultipleChoiceField)  # declared above
        annotators.queryset = candidates
