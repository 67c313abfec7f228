"""No annotator-facing page or API response carries model, checkpoint, prompt, run or reader identity."""

from __future__ import annotations

import pytest
from django.test import Client

from adjudication.models import Response
from adjudication.pipeline.readings import reader_spec_for
from adjudication.review.annotate.services import label_submit, lease_claim_next
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec
from adjudication.routing.specs import PolicySpec
from readers import registry
from readers.base import Item, Reader
from readers.base import Reading as ReaderReading

from ..conftest import mc_row, reading_at, run_command
from .conftest import make_user

pytestmark = pytest.mark.django_db

CANARIES = (
    "CANARYMODELQZX",
    "CANARYCKPTQZX",
    "CANARYPROMPTQZX",
    "CANARYBENCHQZX",
    "test-canaryreaderqzx",
    "CANARYVERSIONQZX",
    "strict-match",
    "math-verify",
    "sympy-cascade",
    "reader_spec",
    "verdict",
    "canaryqueueqzx",  # a queue's name is the managers' handle (often made of reader names)
)


class CanaryReader(Reader):
    name = "test-canaryreaderqzx"
    version = "CANARYVERSIONQZX"
    contract = frozenset({"option_letter"})

    def read(self, item: Item) -> ReaderReading:
        return ReaderReading("incorrect", answer="D", normalized="D", span=(0, 1))


@pytest.fixture
def canary_queue(write_jsonl):
    # The canary exists for the test only, the review views included.
    with registry.scoped({"test-canaryreaderqzx": CanaryReader}):
        rows = [
            mc_row(
                i,
                model="CANARYMODELQZX",
                checkpoint="CANARYCKPTQZX",
                prompt="CANARYPROMPTQZX",
                benchmark="CANARYBENCHQZX",
                response=f"Thinking {i}. The answer is B. Then again \\boxed{{C}}",
            )
            for i in range(4)
        ]
        run_command("import_responses", str(write_jsonl(rows)), dataset="canary", no_progress=True)
        canary_spec = reader_spec_for(reader=registry.get("test-canaryreaderqzx"))
        boxed_spec = reader_spec_for(reader=registry.get("boxed"))
        for response in Response.objects.all():
            reading_at(response, canary_spec, "D", at=0, verdict="incorrect").save()
            reading_at(response, boxed_spec, "C", at=response.text.index("{C}") + 1, verdict="incorrect").save()
        dataset = Response.objects.first().dataset
        queue = queue_create(
            dataset=dataset,
            spec=QueueSpec(
                name="canaryqueueqzx-1", overlap=2, routing=PolicySpec(panel=["test-canaryreaderqzx", "boxed"])
            ),
        )
        # A second queue, so that the annotators' landing page lists queues instead of opening one.
        queue_create(
            dataset=dataset,
            spec=QueueSpec(
                name="canaryqueueqzx-2", overlap=1, routing=PolicySpec(panel=["test-canaryreaderqzx", "boxed"])
            ),
        )
        yield queue


def assert_blind(body: str, where: str) -> None:
    for canary in CANARIES:
        assert canary not in body, f"{canary!r} leaked on {where}"


def test_every_annotator_facing_page_and_api_response_is_blind(canary_queue):
    ann = make_user("ann", "annotator")
    other = make_user("other", "annotator")
    # another annotator's label must not show either
    lease = lease_claim_next(queue=canary_queue, annotator=other).lease
    label_submit(
        lease=lease, annotator=other, entry=LabelEntry(kind="text", answer="OTHERSLABELQZX", note="OTHERSNOTEQZX")
    )
    client = Client()
    client.force_login(ann)
    pages = []
    landing = client.get("/review/")
    assert landing.status_code == 200 and "Queue" in landing.content.decode()
    pages.append(("/review/ landing", landing))
    start = f"/review/?queue={canary_queue.id}"
    resp = client.get(start, follow=True)
    pages.append(("/review/?queue= → item", resp))
    assert resp.redirect_chain and "Thinking" in resp.content.decode()
    lease_id = int(resp.redirect_chain[-1][0].rstrip("/").split("/")[-1])
    pages.append(("API claim", client.post(f"/api/queues/{canary_queue.id}/claim/")))
    pages.append(("API lease", client.get(f"/api/leases/{lease_id}/")))
    pages.append(("API queues", client.get("/api/queues/")))
    pages.append(("home", client.get("/")))
    pages.append(("login", Client().get("/accounts/login/")))
    pages.append(("guidelines", client.get(f"/review/queues/{canary_queue.id}/guidelines/")))
    # label everything, then the "done" page
    for _ in range(10):
        r = client.get(start, follow=True)
        pages.append(("item", r))
        if not r.redirect_chain:
            break
        lid = int(r.redirect_chain[-1][0].rstrip("/").split("/")[-1])
        pages.append(("submit", client.post(f"/review/item/{lid}/", {"kind": "option", "answer": "B"}, follow=True)))
    pages.append(("my labels", client.get(f"/review/queues/{canary_queue.id}/mine/")))
    pages.append(("revisit", client.get(f"/review/item/{lease_id}/")))
    assert "You have labelled this item" in pages[-1][1].content.decode()
    for where, response in pages:
        body = response.content.decode()
        assert_blind(body, where)
        assert "OTHERSLABELQZX" not in body and "OTHERSNOTEQZX" not in body, where
    # the candidate answers are there, anonymously
    item_html = pages[1][1].content.decode()
    assert item_html.count('class="candidate"') >= 2


def test_a_paused_closed_or_assigned_queue_never_shows_its_name_to_annotators(canary_queue):
    from adjudication.models import ReviewQueue
    from adjudication.review.queues.services import queue_annotators_set, queue_state_set

    ann, other = make_user("ann", "annotator"), make_user("other", "annotator")
    second = ReviewQueue.objects.exclude(pk=canary_queue.pk).get()
    client = Client()
    client.force_login(ann)
    pages = []
    for state in ("paused", "closed"):
        queue_state_set(queue=canary_queue, state=state)
        pages += [
            (f"{state} landing", client.get("/review/")),
            (f"{state} queue", client.get(f"/review/?queue={canary_queue.pk}")),
            (f"{state} API queues", client.get("/api/queues/")),
            (f"{state} API claim", client.post(f"/api/queues/{canary_queue.pk}/claim/")),
            (f"{state} my labels", client.get(f"/review/queues/{canary_queue.pk}/mine/")),
        ]
    queue_annotators_set(queue=second, annotators=[other])
    pages += [
        ("assigned landing", client.get("/review/")),
        ("assigned queue", client.get(f"/review/?queue={second.pk}")),
        ("assigned API claim", client.post(f"/api/queues/{second.pk}/claim/")),
        ("assigned guidelines", client.get(f"/review/queues/{second.pk}/guidelines/")),
    ]
    assert [r.status_code for where, r in pages if "claim" in where] == [409, 409, 403]
    for where, response in pages:
        assert_blind(response.content.decode(), where)
