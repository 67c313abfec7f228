"""Issue 12: what a review stores is what it was given, queues follow their policy, nothing is shown
to an adjudicator that blinding hides, and ordinary input never gives a 500."""

from __future__ import annotations

import csv
import importlib
import io
import json

import pytest
from django.apps import apps as django_apps
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction
from django.test import Client

from adjudication.models import (
    Dataset,
    FinalLabel,
    Label,
    QueueItem,
    Reading,
    Response,
    ReviewItem,
    ReviewQueue,
    RoutingPolicy,
)
from adjudication.pipeline.readings import reader_spec_by_name
from adjudication.review.adjudicate.selectors import adjudication_queue
from adjudication.review.adjudicate.services import final_label_adjudicate
from adjudication.review.annotate.services import label_revise, label_submit, lease_claim_next
from adjudication.review.errors import ReviewError
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec
from adjudication.routing.specs import PolicySpec

from ..conftest import mc_row, run_command
from .conftest import disputed_dataset, make_user

pytestmark = pytest.mark.django_db


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def import_rows(rows: list[dict], dataset: str, write_jsonl, *, file: str = "in.jsonl", **options) -> str:
    return run_command("import_responses", str(write_jsonl(rows, file)), dataset=dataset, no_progress=True, **options)


def read_disputed(dataset: str, first: str = "B", second: str = "C") -> None:
    """Readings by strict-match (`first`) and boxed (`second`) for every response not read yet."""
    a, b = reader_spec_by_name(name="strict-match"), reader_spec_by_name(name="boxed")
    new = Response.objects.filter(dataset__name=dataset).exclude(readings__isnull=False)
    Reading.objects.bulk_create(
        [
            Reading(response=r, reader_spec=spec, answer=ans, normalized=ans, verdict=v)
            for r in new
            for spec, ans, v in ((a, first, "correct"), (b, second, "incorrect"))
        ]
    )


def label_next(queue, user, answer="B", kind="option", **extra):
    lease = lease_claim_next(queue=queue, annotator=user).lease
    assert lease is not None
    return label_submit(lease=lease, annotator=user, entry=LabelEntry(kind=kind, answer=answer, **extra))


# -- 1. integers are refused, never stored as another value ---------------------------------------


@pytest.mark.parametrize(
    "field,value", [("overlap", 65538), ("overlap", 40000), ("lease_seconds", 4294967356), ("seed", 4294967296)]
)
def test_the_queue_api_refuses_numbers_that_do_not_fit_their_column(write_jsonl, field, value):
    disputed_dataset(write_jsonl, 2)
    manager = logged_in(make_user("man", "manager"))
    reply = manager.post("/api/queues/", {"dataset": "rv", "name": "q", field: value}, content_type="application/json")
    assert reply.status_code == 400 and field in reply.json()["error"]["fields"]
    assert not ReviewQueue.objects.exists()


def test_create_queue_refuses_a_seed_that_does_not_fit_instead_of_storing_zero(write_jsonl):
    disputed_dataset(write_jsonl, 2)
    with pytest.raises(CommandError, match="seed"):
        run_command("create_queue", dataset="rv", name="q", panel=["strict-match", "boxed"], seed=4294967296)
    assert not ReviewQueue.objects.exists() and not RoutingPolicy.objects.exists()


def test_the_queue_form_refuses_an_overlap_that_does_not_fit(write_jsonl):
    ds = disputed_dataset(write_jsonl, 2)
    manager = logged_in(make_user("man", "manager"))
    page = manager.post(
        "/queues/new/", {"dataset": ds.pk, "name": "q", "overlap": 40000, "lease_seconds": 900}, follow=True
    )
    assert page.status_code == 200 and b"overlap" in page.content
    assert not ReviewQueue.objects.exists()


def test_an_out_of_range_integer_written_through_the_orm_fails_rather_than_wraps(queue):
    if connection.vendor != "postgresql":
        pytest.skip("the wrap-around came from PostgreSQL server-side binding")
    with pytest.raises(DatabaseError), transaction.atomic():
        ReviewQueue.objects.filter(pk=queue.pk).update(overlap=65538)
    queue.refresh_from_db()
    assert queue.overlap == 2


# -- 2. only what the queue asked for is stored ---------------------------------------------------


def test_a_correctness_the_queue_did_not_ask_for_is_not_stored_or_copied_into_the_final_label(queue):
    assert not queue.judge_correctness
    a, b = make_user("a", "annotator"), make_user("b", "annotator")
    for user in (a, b):
        client = logged_in(user)
        item = client.post(f"/api/queues/{queue.pk}/claim/").json()
        reply = client.post(
            f"/api/leases/{item['lease']}/label/",
            {"kind": "option", "answer": "B", "correctness": "incorrect"},
            content_type="application/json",
        )
        assert reply.status_code == 201
    assert set(Label.objects.values_list("correctness", flat=True)) == {""}
    assert set(FinalLabel.objects.values_list("correctness", flat=True)) == {""}


def test_revisions_and_adjudications_store_no_unasked_correctness(queue):
    a, b, judge = make_user("a", "annotator"), make_user("b", "annotator"), make_user("j", "adjudicator")
    first = label_next(queue, a, "B")
    revised = label_revise(label=first, annotator=a, entry=LabelEntry(kind="option", answer="B", correctness="correct"))
    label_next(queue, b, "C")
    final = final_label_adjudicate(
        item=QueueItem.objects.get(pk=first.item_id),
        adjudicator=judge,
        kind="option",
        answer="C",
        correctness="incorrect",
    )
    revised.refresh_from_db()
    assert revised.correctness == "" and final.correctness == ""


def test_the_migration_blanks_correctness_where_the_queue_did_not_ask(queue):
    a = make_user("a", "annotator")
    label = label_next(queue, a, "B")
    Label.objects.filter(pk=label.pk).update(correctness="incorrect")  # as the old code stored it
    judged = queue_create(
        dataset=queue.dataset, spec=QueueSpec(name="judged", judge_correctness=True), policy=queue.policy
    )
    kept = label_next(judged, a, "B", correctness="correct")
    migration = importlib.import_module("adjudication.migrations.0008_review_integrity")
    migration.blank_unasked_correctness(django_apps, None)
    assert Label.objects.get(pk=label.pk).correctness == ""
    assert Label.objects.get(pk=kept.pk).correctness == "correct"


# -- 3. --replace invalidates labels made on the old text -----------------------------------------


def test_replacing_a_response_invalidates_its_labels_and_reopens_the_item(write_jsonl):
    rows = [mc_row(0, response="The answer is B. Then again \\boxed{C}")]
    import_rows(rows, "rp", write_jsonl, file="a.jsonl")
    read_disputed("rp")
    queue = queue_create(dataset=Dataset.objects.get(name="rp"), spec=QueueSpec(name="q"))
    a, b = make_user("a", "annotator"), make_user("b", "annotator")
    label_next(queue, a, "B")
    label_next(queue, b, "B")
    assert queue.items.get().status == QueueItem.Status.AGREED
    out = import_rows([dict(rows[0], response="(D)")], "rp", write_jsonl, file="b.jsonl", replace=True)
    assert "2 labels" in out and "1 final label" in out and "1 review item re-opened" in out
    item = queue.items.get()
    assert (item.status, item.label_count) == (QueueItem.Status.OPEN, 0)
    assert not Label.objects.exists() and not FinalLabel.objects.exists()  # nothing stale counts
    assert Label.all_objects.filter(invalidated_at__isnull=False).count() == 2  # kept as history
    assert FinalLabel.all_objects.filter(item=item, answer="B").exists()
    assert not Reading.objects.exists()
    # The same annotators read the new text and label it again.
    lease = lease_claim_next(queue=queue, annotator=a).lease
    assert lease is not None and lease.item_id == item.pk
    manager = logged_in(make_user("man", "manager"))
    rows_out = [json.loads(line) for line in manager.get(f"/api/queues/{queue.pk}/final-labels/").content.splitlines()]
    assert rows_out == []  # the agreed "B" was about words no longer there


def test_a_lease_taken_before_the_text_was_replaced_cannot_label_the_new_text(write_jsonl):
    from adjudication.review.queues.services import review_invalidate_replaced

    queue = queue_create(dataset=disputed_dataset(write_jsonl, 1), spec=QueueSpec(name="q"))
    a = make_user("a", "annotator")
    lease = lease_claim_next(queue=queue, annotator=a).lease
    review_invalidate_replaced(response_ids=[lease.item.review_item.response_id])
    with pytest.raises(ReviewError, match="replaced"):
        label_submit(lease=lease, annotator=a, entry=LabelEntry(kind="option", answer="B"))
    assert not Label.objects.exists()


# -- 4. a queue follows its policy ----------------------------------------------------------------


def add_disputed(name: str, start: int, n: int, write_jsonl) -> None:
    rows = [
        mc_row(i, response=f"Reasoning {i}. The answer is B. Then again \\boxed{{C}}") for i in range(start, start + n)
    ]
    import_rows(rows, name, write_jsonl, file=f"more-{start}.jsonl")
    read_disputed(name)


def test_routing_after_new_readings_adds_the_new_items_to_the_queue(queue, write_jsonl):
    assert queue.items.count() == 6
    add_disputed("rv", 100, 3, write_jsonl)
    out = run_command("route_disagreements", dataset="rv", policy=queue.policy.name)
    assert "3 new review items" in out and "3 items added" in out
    assert queue.items.count() == 9


def test_the_queue_page_says_when_the_policy_has_items_the_queue_lacks_and_syncs_them(queue, write_jsonl):
    add_disputed("rv", 100, 2, write_jsonl)
    # A queue made by an older version, which routed into the policy without filling the queue.
    QueueItem.objects.filter(queue=queue).delete()
    manager = logged_in(make_user("man", "manager"))
    page = manager.get("/queues/").content.decode()
    assert f'id="queue-{queue.pk}-missing"' in page and "6 items this queue does not hold" in page
    manager.post(f"/queues/{queue.pk}/sync/")
    assert queue.items.count() == 8
    assert f'id="queue-{queue.pk}-missing"' not in manager.get("/queues/").content.decode()


def test_sync_queue_command_brings_every_queue_in_step(queue, write_jsonl):
    add_disputed("rv", 100, 2, write_jsonl)
    out = run_command("sync_queue")
    assert "queue q: 2 new items, 8 in all" in out
    with pytest.raises(CommandError, match="no queue named 'nope'"):
        run_command("sync_queue", "nope")


# -- 10. adjudicators see only conflicts, never their own ------------------------------------------


def test_an_adjudicator_who_also_annotates_cannot_open_an_item_still_open(queue):
    both = make_user("both", "annotator", "adjudicator")
    lease = lease_claim_next(queue=queue, annotator=both).lease
    client = logged_in(both)
    page = client.get(f"/adjudicate/{lease.item_id}/")
    assert page.status_code == 404 and b"Reference answer" not in page.content
    assert lease.item_id not in [i.pk for i, _ in adjudication_queue(queue=queue, adjudicator=both)]


def test_an_adjudicator_never_decides_an_item_they_labelled(queue):
    both, other, judge = (
        make_user("both", "annotator", "adjudicator"),
        make_user("o", "annotator"),
        make_user("j", "adjudicator"),
    )
    item_id = label_next(queue, both, "B").item_id
    label_next(queue, other, "C")
    assert QueueItem.objects.get(pk=item_id).status == QueueItem.Status.CONFLICT
    assert logged_in(both).get(f"/adjudicate/{item_id}/").status_code == 404
    assert b"Annotator 2" in logged_in(judge).get(f"/adjudicate/{item_id}/").content
    assert adjudication_queue(queue=queue, adjudicator=both) == []
    with pytest.raises(ReviewError, match="labelled this item yourself"):
        final_label_adjudicate(item=QueueItem.objects.get(pk=item_id), adjudicator=both, kind="option", answer="B")
    reply = logged_in(both).post(f"/adjudicate/{item_id}/", {"kind": "option", "answer": "B"})
    assert reply.status_code == 404 and not FinalLabel.objects.filter(decided_by=both).exists()


# -- 11. equal priorities do not come out in import order ------------------------------------------


def test_equal_priorities_are_shuffled_per_queue_not_served_base_first(write_jsonl):
    rows = [
        mc_row(i, checkpoint=cp, id=f"{cp}-{i}", response=f"Reasoning {i}. The answer is B. Then \\boxed{{C}}")
        for cp in ("base", "rl")
        for i in range(20)
    ]
    import_rows(rows, "tie", write_jsonl)
    read_disputed("tie")
    queue = queue_create(
        dataset=Dataset.objects.get(name="tie"), spec=QueueSpec(name="q", overlap=1, routing=PolicySpec(seed=7))
    )
    assert len(set(queue.items.values_list("priority", flat=True))) == 1  # all tied
    ann = make_user("a", "annotator")
    served = []
    while (lease := lease_claim_next(queue=queue, annotator=ann).lease) is not None:
        served.append(lease.item.review_item.response.run.checkpoint)
        label_submit(lease=lease, annotator=ann, entry=LabelEntry(kind="option", answer="B"))
    assert len(served) == 40
    assert served != sorted(served)  # import order would serve all 20 base items first
    assert 5 <= served[:20].count("rl") <= 15
    # Item ids (shown in adjudication URLs) do not follow import order either.
    by_id = list(queue.items.order_by("id").values_list("review_item__response__run__checkpoint", flat=True))
    assert 5 <= by_id[:20].count("rl") <= 15


# -- 12. one CSV writer: no formulas reach a spreadsheet ------------------------------------------


def test_final_label_csv_exports_escape_formulas_but_keep_plain_numbers(write_jsonl):
    rows = [
        mc_row(i, choices=[], gold="3", response=f"Reasoning {i}. The answer is 3. Then \\boxed{{4}}") for i in range(2)
    ]
    import_rows(rows, "f", write_jsonl)
    read_disputed("f", "3", "4")
    queue = queue_create(dataset=Dataset.objects.get(name="f"), spec=QueueSpec(name="q", overlap=1))
    ann = make_user("a", "annotator")
    for answer in ('=HYPERLINK("http://evil.example","x")', "-3"):
        label_next(queue, ann, answer, kind="text")
    manager = logged_in(make_user("man", "manager"))
    for url in (f"/queues/{queue.pk}/final-labels.csv", f"/api/queues/{queue.pk}/final-labels/?fmt=csv"):
        cells = {r["final_answer"] for r in csv.DictReader(io.StringIO(manager.get(url).content.decode()))}
        assert cells == {'\'=HYPERLINK("http://evil.example","x")', "-3"}, url


def test_download_names_are_safe_whatever_the_queue_is_called(queue):
    ReviewQueue.objects.filter(pk=queue.pk).update(name='we"ird\r\nSet-Cookie: x=1')  # as older versions allowed
    reply = logged_in(make_user("man", "manager")).get(f"/queues/{queue.pk}/final-labels.csv")
    assert reply.status_code == 200
    assert (
        "\n" not in reply["Content-Disposition"]
        and 'filename="we_ird_Set-Cookie_x_1-final-labels.csv"' in reply["Content-Disposition"]
    )


# -- 19. model text that cannot be encoded never breaks a page ------------------------------------


def test_a_reader_answer_holding_nul_does_not_break_queue_creation(write_jsonl):
    ds = disputed_dataset(write_jsonl, 2)
    Reading.objects.filter(reader_spec__name="boxed").update(answer="C\x00", normalized="C\x00")
    queue = queue_create(dataset=ds, spec=QueueSpec(name="q"))
    assert queue.items.count() == 2
    assert "\ufffd" in json.dumps(ReviewItem.objects.first().reason, ensure_ascii=False)


def test_a_queue_that_cannot_be_filled_is_not_left_behind(write_jsonl):
    ds = disputed_dataset(write_jsonl, 2)
    with pytest.raises(Exception):
        queue_create(dataset=ds, spec=QueueSpec(name="q", routing=PolicySpec(panel=["strict-match", "no-such-reader"])))
    assert not ReviewQueue.objects.exists() and not RoutingPolicy.objects.exists()


@pytest.mark.parametrize("bad", ["\ud800", "\x00"], ids=["lone surrogate", "NUL"])
def test_undisplayable_model_text_renders_replaced_on_every_annotator_and_adjudicator_page(write_jsonl, bad):
    """A lone surrogate cannot be encoded and a NUL is dropped by the HTML parser: both are shown as
    U+FFFD (one for one, so spans line up), while the API keeps the text verbatim."""
    ds = disputed_dataset(write_jsonl, 1)
    Response.objects.update(text=f"Reasoning {bad} x. The answer is B. Then again \\boxed{{C}}")
    ds.questions.update(text=f"Which {bad}?")
    queue = queue_create(dataset=ds, spec=QueueSpec(name="q"))
    ann, other, judge = make_user("a", "annotator"), make_user("b", "annotator"), make_user("j", "adjudicator")
    client = logged_in(ann)
    page = client.get("/review/", follow=True)
    assert page.status_code == 200 and "Reasoning \ufffd x" in page.content.decode()
    assert "\x00" not in page.content.decode()
    lease_id = int(page.redirect_chain[-1][0].rstrip("/").rsplit("/", 1)[1])
    api = client.get(f"/api/leases/{lease_id}/")
    assert api.status_code == 200 and json.loads(api.content)["response"].startswith(f"Reasoning {bad} x")
    claimed = logged_in(other).post(f"/api/queues/{queue.pk}/claim/")
    assert claimed.status_code == 200 and json.loads(claimed.content)["question"] == f"Which {bad}?"
    label_submit(
        lease=lease_claim_next(queue=queue, annotator=ann).lease,
        annotator=ann,
        entry=LabelEntry(kind="option", answer="B"),
    )
    label_submit(
        lease=lease_claim_next(queue=queue, annotator=other).lease,
        annotator=other,
        entry=LabelEntry(kind="option", answer="C"),
    )
    adjudication = logged_in(judge).get(f"/adjudicate/{queue.items.get().pk}/")
    assert adjudication.status_code == 200 and "Which \ufffd?" in adjudication.content.decode()


# -- 20. ordinary bad input is a message, never a 500 ----------------------------------------------


@pytest.mark.parametrize(
    "form",
    [
        {"dataset": "abc", "name": "q"},
        {"name": "q", "overlap": "40000"},
        {"name": "q\x00"},
        {"name": "n" * 201},
        {"name": "two\nlines"},
        {"name": "   "},
        {"name": "q", "overlap": "two"},
    ],
)
def test_bad_queue_forms_get_a_message_and_no_queue(write_jsonl, form):
    ds = disputed_dataset(write_jsonl, 2)
    manager = logged_in(make_user("man", "manager"))
    data = {"dataset": ds.pk, "overlap": 2, "lease_seconds": 900, **form}
    page = manager.post("/queues/new/", data, follow=True)
    # A dataset that is not an id is a bad request (400); the page says why either way.
    assert page.status_code == (400 if "dataset" in form else 200) and b'class="error"' in page.content
    assert not ReviewQueue.objects.exists()


@pytest.mark.parametrize(
    "payload",
    [
        {"name": "q\x00"},
        {"name": "n" * 201},
        {"name": "two\nlines"},
        {"name": "\ud800"},
        {"name": " "},
        {"name": "q", "control_fraction": "NaN"},
    ],
)
def test_bad_queue_api_payloads_are_a_400(write_jsonl, payload):
    disputed_dataset(write_jsonl, 2)
    manager = logged_in(make_user("man", "manager"))
    body = json.dumps({"dataset": "rv", **payload})
    reply = manager.post("/api/queues/", body, content_type="application/json")
    assert reply.status_code == 400
    assert not ReviewQueue.objects.exists()


@pytest.mark.parametrize(
    "field,value", [("note", "a\x00b"), ("note", "\ud800"), ("answer", "\udfff"), ("skip_reason", "x\x00")]
)
def test_labels_with_text_that_cannot_be_stored_are_a_400_not_a_500(queue, field, value):
    client = logged_in(make_user("a", "annotator"))
    item = client.post(f"/api/queues/{queue.pk}/claim/").json()
    body = {"kind": "skipped" if field == "skip_reason" else "option", "answer": "B", field: value}
    reply = client.post(f"/api/leases/{item['lease']}/label/", json.dumps(body), content_type="application/json")
    assert reply.status_code == 400
    assert not Label.objects.exists()


@pytest.mark.parametrize(
    "form",
    [
        {"kind": "option", "answer": "B", "note": "a\x00b"},
        {"action": "skip", "skip_reason": "x\x00"},
        {"kind": "option", "answer": "B", "confidence": "9" * 50},
        {"kind": "", "answer": ""},
    ],
)
def test_bad_label_forms_stay_on_the_item_with_a_message(queue, form):
    ann = make_user("a", "annotator")
    client = logged_in(ann)
    lease = lease_claim_next(queue=queue, annotator=ann).lease
    page = client.post(f"/review/item/{lease.pk}/", form, follow=True)
    assert page.status_code == 200 and b'class="error"' in page.content
    assert not Label.objects.exists()


def test_bad_adjudication_forms_stay_on_the_item_with_a_message(queue):
    a, b, judge = make_user("a", "annotator"), make_user("b", "annotator"), make_user("j", "adjudicator")
    item_id = label_next(queue, a, "B").item_id
    label_next(queue, b, "C")
    page = logged_in(judge).post(
        f"/adjudicate/{item_id}/", {"kind": "option", "answer": "B", "notes": "x\x00"}, follow=True
    )
    assert page.status_code == 200 and b'class="error"' in page.content
    assert not FinalLabel.objects.exists()


# -- 23. small ones ---------------------------------------------------------------------------------


def test_run_readers_with_nothing_ticked_runs_nothing(write_jsonl, eager):
    run_command("import_responses", str(write_jsonl([mc_row(0)])), dataset="r", no_progress=True)
    ds = Dataset.objects.get(name="r")
    page = logged_in(make_user("man", "manager")).post(f"/datasets/{ds.pk}/run/", {}, follow=True)
    assert b"tick at least one reader" in page.content
    assert not Reading.objects.exists()


def test_adding_a_role_to_a_manager_keeps_their_admin(monkeypatch):
    monkeypatch.setenv("ADJ_PASSWORD", "a-long-enough-password-9")
    run_command("add_user", "mia", role=["manager"])
    run_command("add_user", "mia", role=["annotator"])
    from django.contrib.auth.models import User

    assert User.objects.get(username="mia").is_staff


def test_managers_see_and_use_the_admin_the_docs_send_them_to(write_jsonl):
    run_command("import_responses", str(write_jsonl([mc_row(0)])), dataset="r", no_progress=True)
    manager = make_user("man", "manager")
    manager.is_staff = True
    manager.save()
    client = logged_in(manager)
    index = client.get("/admin/").content.decode()
    assert "/admin/adjudication/dataset/" in index and "/admin/judges/endpoint/" in index
    assert client.get("/admin/adjudication/response/").status_code == 200
    assert client.get("/admin/adjudication/response/add/").status_code == 403  # evidence stays read-only
    annotator = make_user("ann", "annotator")
    annotator.is_staff = True  # even a staff flag set by hand gives an annotator nothing here
    annotator.save()
    assert "/admin/adjudication/dataset/" not in logged_in(annotator).get("/admin/").content.decode()


@pytest.mark.parametrize(
    "options",
    [
        {"control_fraction": float("nan")},
        {"control_fraction": 1.5},
        {"seed": -(2**31) - 1},
        {"overlap": 0},
        {"lease_seconds": 9},
        {"name": "x" * 201},
    ],
)
def test_create_queue_refuses_what_its_columns_cannot_hold(write_jsonl, options):
    disputed_dataset(write_jsonl, 2)
    with pytest.raises(CommandError):
        run_command("create_queue", dataset="rv", **{"name": "q", **options})
    assert not ReviewQueue.objects.exists() and not RoutingPolicy.objects.exists()


def test_route_disagreements_refuses_a_nan_control_fraction(write_jsonl):
    disputed_dataset(write_jsonl, 2)
    with pytest.raises(CommandError, match="control fraction"):
        run_command(
            "route_disagreements",
            dataset="rv",
            policy="p",
            panel=["strict-match", "boxed"],
            control_fraction=float("nan"),
        )
    assert not RoutingPolicy.objects.exists()


def test_the_run_readers_api_refuses_an_empty_reader_list_instead_of_running_all(write_jsonl, eager):
    run_command("import_responses", str(write_jsonl([mc_row(0)])), dataset="r", no_progress=True)
    ds = Dataset.objects.get(name="r")
    reply = logged_in(make_user("man", "manager")).post(
        f"/api/datasets/{ds.pk}/run-readers/", {"readers": []}, content_type="application/json"
    )
    assert reply.status_code == 400 and "readers" in reply.json()["error"]["fields"]
    assert not Reading.objects.exists()


def test_replacing_only_a_responses_metadata_keeps_its_labels(write_jsonl):
    rows = [mc_row(0, response="The answer is B. Then again \\boxed{C}")]
    import_rows(rows, "rp", write_jsonl, file="a.jsonl")
    read_disputed("rp")
    queue = queue_create(dataset=Dataset.objects.get(name="rp"), spec=QueueSpec(name="q", overlap=1))
    label_next(queue, make_user("a", "annotator"), "B")
    out = import_rows([dict(rows[0], meta={"note": "re-exported"})], "rp", write_jsonl, file="b.jsonl", replace=True)
    assert "1 replaced" in out and "invalidated" not in out
    assert Label.objects.count() == 1 and queue.items.get().status == QueueItem.Status.AGREED
