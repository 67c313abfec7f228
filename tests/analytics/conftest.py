"""Fixtures of the analytics tests: a labelled dataset (`labelled`) and stored reports computed on
demand (`computed`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from adjudication.analytics.report import Params
from adjudication.analytics.services import report_compute, report_request
from adjudication.models import AnalyticsReport, Dataset, ReaderSpec, Reading, Response
from adjudication.pipeline.readings import reader_spec_by_name, readings_create
from adjudication.review.adjudicate.selectors import adjudication_queue
from adjudication.review.adjudicate.services import final_label_adjudicate
from adjudication.review.annotate.services import label_submit, lease_claim_next
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec
from adjudication.routing.specs import PolicySpec

from ..conftest import run_command
from ..review.conftest import make_user


@pytest.fixture(autouse=True)
def _consensus_without_bootstrap(settings) -> None:
    """The report's panel consensus without bootstrap replicates: each refits the model (20 s for
    a hundred on the `labelled` fixture). The consensus page tests set their own."""
    settings.ANALYTICS_CONSENSUS_BOOTSTRAP = 0


@pytest.fixture
def computed(eager, django_capture_on_commit_callbacks) -> Callable[..., AnalyticsReport]:
    """computed(dataset, **query): the stored report the page shows for `query` (its parameters as
    the page's query string has them), requested and computed now: the task runs inline, as on
    the embedded default. Inside a test's transaction nothing commits, so the callbacks that
    transaction.on_commit holds are run by hand."""

    def compute(dataset: Dataset, **query: Any) -> AnalyticsReport:
        params = Params.from_query({k: str(v) for k, v in query.items()})
        with django_capture_on_commit_callbacks(execute=True):
            row = report_request(dataset=dataset, params=params)
        if AnalyticsReport.objects.get(pk=row.pk).status == AnalyticsReport.Status.QUEUED:
            report_compute(report_id=row.pk)  # handed out before, to a worker that is not running
        report = AnalyticsReport.objects.get(pk=row.pk)
        assert report.status == AnalyticsReport.Status.DONE, report.error
        return report

    return compute


CHOICES = ["Durkheim", "Weber", "Merton", "Parsons"]
N = 12


def truth(i: int) -> tuple[str, str, str | None]:
    """(gold, what the base says, what RL says): both checkpoints mostly right; base writes prose,
    RL boxes; the first three RL responses say one letter in prose and box another (disputes)."""
    gold = "ABCD"[i % 4]
    base = gold if i < 7 else "ABCD"[(i + 1) % 4]
    rl = gold if i < 8 else "ABCD"[(i + 1) % 4]
    return gold, base, rl


def response_text(ckpt: str, i: int) -> str:
    _, base, rl = truth(i)
    if ckpt == "base":
        return f"Considering each sociologist in turn. The answer is {base}. [{i}]"
    if i < 3:
        other = "ABCD"[(i + 2) % 4]
        return f"The answer is {other}. On reflection, \\boxed{{{rl}}} [{i}]"
    return f"Quick check done. \\boxed{{{rl}}} [{i}]"


JUDGE_TEMPLATE = "063c04ea798f91c4"


@pytest.fixture
def labelled(write_jsonl):
    rows = []
    for i in range(N):
        for ckpt in ("base", "rl"):
            rows.append(
                {
                    "id": f"{ckpt}-{i}",
                    "question": f"Who fits description {i}?",
                    "choices": CHOICES,
                    "gold": truth(i)[0],
                    "response": response_text(ckpt, i),
                    "model": "orca-7b",
                    "checkpoint": ckpt,
                    "benchmark": "mmlu",
                    "prompt": "cot-v1",
                }
            )
    run_command("import_responses", str(write_jsonl(rows, name="an.jsonl")), dataset="an", no_progress=True)
    ds = Dataset.objects.get(name="an")
    ids = list(Response.objects.filter(dataset=ds).values_list("id", flat=True))
    specs = [reader_spec_by_name(name=n) for n in ("boxed", "strict-match", "fixed")]
    readings_create(reader_specs=specs, response_ids=ids)
    # An LLM judge's verdicts, stored as readings of a judge spec: it accepts everything from RL.
    judge = ReaderSpec.objects.create(
        name="judge-x",
        version="1",
        kind="judge",
        config_hash="j" * 16,
        config={"template": "simpleqa-upstream", "template_hash": JUDGE_TEMPLATE},
    )
    for r in Response.objects.filter(dataset=ds).select_related("question", "run"):
        gold, base, rl = truth(int(r.external_id.split("-")[1]))
        said = base if r.run.checkpoint == "base" else rl
        verdict = "correct" if r.run.checkpoint == "rl" or said == gold else "incorrect"
        Reading.objects.create(response=r, reader_spec=judge, verdict=verdict)
    queue = queue_create(
        dataset=ds,
        spec=QueueSpec(
            name="aq", overlap=2, routing=PolicySpec(panel=["boxed", "strict-match"], control_fraction=0.5, seed=1)
        ),
    )
    a, b = make_user("ann", "annotator"), make_user("bob", "annotator")
    first = None
    for annotator in (a, b):
        while (lease := lease_claim_next(queue=queue, annotator=annotator).lease) is not None:
            response = lease.item.review_item.response
            i = int(response.external_id.split("-")[1])
            gold, base, rl = truth(i)
            said = base if response.run.checkpoint == "base" else rl
            if annotator == b and first is None:
                first = lease.item_id
                said = "ABCD"[("ABCD".index(said) + 1) % 4]  # one disagreement, adjudicated below
            label_submit(lease=lease, annotator=annotator, entry=LabelEntry(kind="option", answer=said))
    adj = make_user("judy", "adjudicator")
    for item, _ in adjudication_queue(queue=queue, adjudicator=adj):
        response = item.review_item.response
        gold, base, rl = truth(int(response.external_id.split("-")[1]))
        final_label_adjudicate(
            item=item, adjudicator=adj, kind="option", answer=base if response.run.checkpoint == "base" else rl
        )
    return ds, queue
