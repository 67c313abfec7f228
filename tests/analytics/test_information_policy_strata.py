"""A greedy information policy in the analytics: its controls are a sample of every response and its other
items are not disputes, so the policy-weighted estimates use its controls alone."""

from __future__ import annotations

from adjudication.analytics.selectors import disputed_by_benchmark, policy_strata
from adjudication.models import FinalLabel, QueueItem, Response
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec
from adjudication.routing.specs import PolicySpec

from ..routing.test_information_routing import PANEL, info_dataset  # noqa: F401 (the fixture)


def test_an_information_policy_weighs_its_controls_as_a_sample_of_every_response(info_dataset):  # noqa: F811
    queue = queue_create(
        dataset=info_dataset,
        spec=QueueSpec(
            name="iq",
            overlap=1,
            routing=PolicySpec(
                panel=PANEL,
                priority="information",
                sampling="greedy",
                target="accuracy",
                budget=10,
                control_fraction=0.5,
            ),
        ),
    )
    item = QueueItem.objects.filter(queue=queue).first()
    FinalLabel.objects.create(item=item, kind="option", answer="B", provenance="adjudicated")
    [strata] = policy_strata(dataset=info_dataset)
    assert strata == {
        "policy": queue.policy.name,
        "n_disputed": 0,
        "n_undisputed": Response.objects.filter(dataset=info_dataset).count(),
    }
    # the informative items are not counted as disputes
    assert disputed_by_benchmark(dataset=info_dataset) == {}
