"""The managers' item browser (/items/, /items/<response id>/): every filter, the review states, the
`disagree` contract the queue page links with, bad input, pagination, batching and escaping.

The data is built through the real services (import_responses, readings by reading_at, queue_create,
label_submit, final_label_adjudicate); each state and disagreement the tests expect is the one the
services produced, recorded while labelling (`World`), never a list written down beside the data.
tests/review/test_item_browser_in_browser.py drives the same data in Chromium."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from html import unescape

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.http import QueryDict
from django.test import Client
from django.test.utils import CaptureQueriesContext

from adjudication.browse import selectors as browse
from adjudication.browse.forms import ItemFilterForm
from adjudication.models import Dataset, Label, QueueItem, Reading, Response, ReviewQueue
from adjudication.pipeline.readings import reader_spec_by_name, reader_spec_get_or_create
from adjudication.review.adjudicate.services import final_label_adjudicate
from adjudication.review.annotate.services import label_revise, label_submit, lease_claim_next
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec
from adjudication.routing.specs import PolicySpec

from ..conftest import jsonl_writer, mc_row, reading_at, run_command, world_transaction
from .conftest import make_user

pytestmark = pytest.mark.django_db

DISPUTE = " The answer is B. Then again \\boxed{C}"
HOSTILE_ID = 'b-1"><script>window.__xss=3</script>'
HOSTILE_MODEL = "zephyr-<i>3b</i>"
HOSTILE_TEXT = (
    "<script>window.__xss=1</script> nul:\x00 lone:\ud800 "
    '<img src=x onerror="window.__xss=2"> [x](javascript:window.__xss=5)' + DISPUTE
)
HOSTILE_NOTE = "<script>window.__xss=4</script> see <b>bold</b>"

# id -> (model, checkpoint, benchmark, fixed's verdict, boxed's verdict, text before the dispute)
ALPHA = {
    "a-0": ("orca-7b", "base", "mmlu", "correct", "incorrect", "Reasoning 0."),
    "a-1": ("orca-7b", "base", "mmlu", "correct", "no_answer", "Reasoning 1."),
    "a-2": ("orca-7b", "rl", "mmlu", "correct", "incorrect", "Reasoning 2 about Durkheim's ANOMIE."),
    "a-3": ("orca-7b", "rl", "arc", "correct", "no_answer", "Reasoning 3."),
    "a-4": ("llama-8b", "base", "arc", "incorrect", "correct", "Reasoning 4."),
    "a-5": ("llama-8b", "rl", "mmlu", "incorrect", "no_answer", "Reasoning 5."),
}
BETA = {
    "b-0": (HOSTILE_MODEL, "rl", "mmlu", "correct", "no_answer", "Compare with item A-1 first."),
    HOSTILE_ID: (HOSTILE_MODEL, "rl", "mmlu", "incorrect", None, HOSTILE_TEXT),
}
PASSWORD = "items-pw-4471"


@dataclass
class World:
    alpha: Dataset
    beta: Dataset
    q1: ReviewQueue  # overlap 2, every alpha response (fixed and strict-match disagree on all)
    q2: ReviewQueue  # overlap 3, the alpha responses fixed and boxed dispute by verdict
    users: dict[str, User]
    # queue name -> external id -> the item's review state, as the services left it
    states: dict[str, dict[str, str]] = field(default_factory=dict)
    # queue name -> external ids in the order the annotators were given them
    order: dict[str, list[str]] = field(default_factory=dict)

    def in_state(self, state: str, queue: str | None = None) -> set[str]:
        queues = [queue] if queue else list(self.states)
        return {ext for q in queues for ext, s in self.states[q].items() if s == state}


def _rows(spec: dict) -> list[dict]:
    return [
        mc_row(
            n,
            id=ext,
            model=model,
            checkpoint=ckpt,
            benchmark=bench,
            response=text + ("" if "\\boxed" in text else DISPUTE),
        )
        for n, (ext, (model, ckpt, bench, _f, _b, text)) in enumerate(spec.items())
    ]


def _read(dataset: Dataset, spec: dict) -> None:
    fixed, boxed, strict = (reader_spec_by_name(name=n) for n in ("fixed", "boxed", "strict-match"))
    # An older version of boxed: a verdict condition names a reader, whatever its version.
    old_boxed = reader_spec_get_or_create(name="boxed", version="0.9-old", config={}, config_hash="0" * 64, kind="rule")
    readings = []
    for response in Response.objects.filter(dataset=dataset):
        _m, _c, _b, fixed_verdict, boxed_verdict, _t = spec[response.external_id]
        text = response.text
        box, prose = text.rindex("{C}") + 1, text.rindex("B. Then")
        readings += [
            reading_at(response, fixed, "C", at=box, verdict=fixed_verdict, canonical="C"),
            reading_at(response, strict, "B", at=prose, verdict="correct", canonical="B"),
        ]
        if boxed_verdict == "no_answer":
            readings.append(Reading(response=response, reader_spec=boxed, verdict="no_answer"))
        elif boxed_verdict:
            readings.append(reading_at(response, boxed, "C", at=box, verdict=boxed_verdict))
        if response.external_id == "a-4":
            readings.append(Reading(response=response, reader_spec=old_boxed, verdict="no_answer", elapsed_ms=1.5))
    Reading.objects.bulk_create(readings)


def _label(queue: ReviewQueue, user: User, entry: LabelEntry, note: str = "") -> Label:
    lease = lease_claim_next(queue=queue, annotator=user).lease
    assert lease is not None, f"{user.username} found nothing to label in {queue.name}"
    if note:
        entry = LabelEntry(kind=entry.kind, answer=entry.answer, note=note)
    return label_submit(lease=lease, annotator=user, entry=entry)


def _ext(label: Label) -> str:
    return QueueItem.objects.get(pk=label.item_id).review_item.response.external_id


def build_world(write_jsonl) -> World:
    """Two datasets (beta imported first, so that import order differs from the exact-id ranking),
    readings, two queues on alpha, labels by three annotators and two decisions by an adjudicator."""
    run_command("import_responses", str(write_jsonl(_rows(BETA), name="beta.jsonl")), dataset="beta", no_progress=True)
    run_command(
        "import_responses", str(write_jsonl(_rows(ALPHA), name="alpha.jsonl")), dataset="alpha", no_progress=True
    )
    alpha, beta = Dataset.objects.get(name="alpha"), Dataset.objects.get(name="beta")
    _read(beta, BETA)
    _read(alpha, ALPHA)
    users = {name: make_user(name, "annotator") for name in ("ann1", "ann2", "ann3")}
    users["adj"] = make_user("adj", "adjudicator")
    users["boss"] = make_user("boss", "manager")
    for user in users.values():
        user.set_password(PASSWORD)
        user.save(update_fields=["password"])
    q1 = queue_create(
        dataset=alpha,
        spec=QueueSpec(
            name="alpha-q1", overlap=2, title="Round one", routing=PolicySpec(panel=["fixed", "strict-match"])
        ),
    )
    q2 = queue_create(
        dataset=alpha, spec=QueueSpec(name="alpha-q2", overlap=3, routing=PolicySpec(panel=["fixed", "boxed"]))
    )
    world = World(alpha=alpha, beta=beta, q1=q1, q2=q2, users=users)
    option = lambda answer: LabelEntry(kind="option", answer=answer)  # noqa: E731

    # q1, overlap 2: ann1 labels five items B; ann2 labels the first four B, C, C, C.
    a1 = [_label(q1, users["ann1"], option("B")) for _ in range(5)]
    a2 = [_label(q1, users["ann2"], option(x), note=HOSTILE_NOTE if n == 1 else "") for n, x in enumerate("BCCC")]
    order = [_ext(lab) for lab in a1]
    assert [_ext(lab) for lab in a2] == order[:4]
    order += sorted(set(ALPHA) - set(order))
    world.order["alpha-q1"] = order
    items = {_ext(lab): QueueItem.objects.get(pk=lab.item_id) for lab in a1}
    final_label_adjudicate(
        item=items[order[2]], adjudicator=users["adj"], kind="option", answer="C", notes="boxed wins"
    )
    final_label_adjudicate(
        item=items[order[3]],
        adjudicator=users["adj"],
        kind="",
        unresolved=True,
        notes="cannot tell",
        error_type="ambiguous_response",
    )
    world.states["alpha-q1"] = {
        order[0]: "labelled",
        order[1]: "conflicting",
        order[2]: "adjudicated",
        order[3]: "unresolved",
        order[4]: "open",
        order[5]: "open",
    }

    # q2, overlap 3: j0 B B C; j1 B C C; j2 two equal free texts (spacing and case aside) and a no-answer.
    texts = {"ann1": "Forty  Two", "ann2": "forty two"}
    per = {"ann1": "BB", "ann2": "BC", "ann3": "CC"}
    seen = {}
    for name, answers in per.items():
        labels = [_label(q2, users[name], option(x)) for x in answers]
        third = LabelEntry(kind="text", answer=texts[name]) if name in texts else LabelEntry(kind="no_answer")
        labels.append(_label(q2, users[name], third))
        seen[name] = [_ext(lab) for lab in labels]
    assert seen["ann1"] == seen["ann2"] == seen["ann3"]
    world.order["alpha-q2"] = seen["ann1"]
    world.states["alpha-q2"] = {
        ext: QueueItem.objects.get(queue=q2, review_item__response__external_id=ext).status for ext in seen["ann1"]
    }
    # Each of the three disagrees somewhere, so every item of q2 is in conflict.
    assert set(world.states["alpha-q2"].values()) == {"conflict"}
    world.states["alpha-q2"] = dict.fromkeys(seen["ann1"], "conflicting")
    return world


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[World]:
    """Built once for the module; each test runs in a savepoint of it (world_transaction)."""
    with world_transaction(django_db_blocker):
        with django_db_blocker.unblock():
            built = build_world(jsonl_writer(tmp_path_factory.mktemp("items")))
        yield built


@pytest.fixture
def boss(world) -> Client:
    client = Client()
    client.force_login(world.users["boss"])
    return client


ROW = re.compile(r'<tr data-response="\d+"><td class="ext-id"><a href="/items/(\d+)/">(.*?)</a>', re.S)


def listed(client: Client, query: str = "", status: int = 200) -> list[str]:
    """The external ids /items/?<query> lists, in order."""
    response = client.get("/items/?" + query)
    assert response.status_code == status, response.content.decode()[:2000]
    return [unescape(ext) for _pk, ext in ROW.findall(response.content.decode())]


# -- search -----------------------------------------------------------------------------------------


def test_search_by_id_ranks_the_exact_id_first_then_other_matches_in_import_order(boss):
    # b-0 was imported first and mentions "A-1" in its text; the exact id, in any case, comes first.
    assert listed(boss, "q=A-1") == ["a-1", "b-0"]


def test_the_exact_id_stays_first_across_pages(world):
    filters = browse.ItemFilters(q="A-1")
    pages = [browse.items_page(filters=filters, page=n, page_size=1) for n in (1, 2, 3)]
    assert [[it.external_id for it in p.items] for p in pages] == [["a-1"], ["b-0"], []]
    assert pages[0].has_next and not pages[1].has_next and pages[0].total == 2


def test_search_by_text_finds_a_substring_of_the_response_in_any_case(boss):
    assert listed(boss, "q=durkheim%27s+anomie") == ["a-2"]
    assert listed(boss, "q=no+such+words") == []


# -- run identity -----------------------------------------------------------------------------------


def test_dataset_model_checkpoint_and_benchmark_filter_exactly_and_combine(boss, world):
    a = world.alpha.pk
    assert listed(boss, f"dataset={a}") == list(ALPHA)
    assert listed(boss, f"dataset={world.beta.pk}") == list(BETA)
    assert listed(boss, "model=llama-8b") == ["a-4", "a-5"]
    assert listed(boss, "checkpoint=rl") == [*BETA, "a-2", "a-3", "a-5"]
    assert listed(boss, "benchmark=arc") == ["a-3", "a-4"]
    assert listed(boss, f"dataset={a}&checkpoint=rl&benchmark=mmlu") == ["a-2", "a-5"]
    assert listed(boss, "model=orca-7b&q=reasoning+2") == ["a-2"]


def test_the_run_options_are_the_chosen_datasets_and_a_value_from_another_is_refused(boss, world):
    def options(query: str, name: str) -> list[str]:
        body = boss.get("/items/?" + query).content.decode()
        select = re.search(rf'<select name="{name}".*?</select>', body, re.S).group(0)
        return [unescape(v) for v in re.findall(r'<option value="([^"]+)"', select)]

    assert options("", "model") == ["llama-8b", "orca-7b", HOSTILE_MODEL]
    assert options(f"dataset={world.beta.pk}", "model") == [HOSTILE_MODEL]
    assert options(f"dataset={world.alpha.pk}", "benchmark") == ["arc", "mmlu"]
    response = boss.get(f"/items/?dataset={world.beta.pk}&model=orca-7b")
    assert response.status_code == 400
    assert "model: no run of this dataset has the model “orca-7b”" in response.content.decode()


# -- queues and review states -----------------------------------------------------------------------


def test_the_queue_filter_lists_the_queues_items(boss, world):
    assert listed(boss, f"queue={world.q1.pk}") == list(ALPHA)
    assert listed(boss, f"queue={world.q2.pk}") == sorted(world.order["alpha-q2"])


@pytest.mark.parametrize("state", list(browse.STATES))
def test_each_review_state_lists_the_items_the_services_left_in_it(boss, world, state):
    in_q1 = listed(boss, f"queue={world.q1.pk}&status={state}")
    assert set(in_q1) == world.in_state(state, "alpha-q1") and in_q1
    # Without a queue: the state in any queue.
    assert set(listed(boss, f"status={state}")) == world.in_state(state)


def test_states_partition_a_queues_items(boss, world):
    listings = [set(listed(boss, f"queue={world.q1.pk}&status={s}")) for s in browse.STATES]
    assert sum(len(s) for s in listings) == len(ALPHA)
    assert set().union(*listings) == set(ALPHA)


def test_a_second_decision_on_an_unresolved_item_makes_it_adjudicated(boss, world):
    unresolved = world.in_state("unresolved", "alpha-q1").pop()
    item = QueueItem.objects.get(queue=world.q1, review_item__response__external_id=unresolved)
    other = make_user("adj2", "adjudicator")
    final_label_adjudicate(item=item, adjudicator=other, kind="option", answer="B")
    assert listed(boss, f"queue={world.q1.pk}&status=unresolved") == []
    assert unresolved in listed(boss, f"queue={world.q1.pk}&status=adjudicated")


# -- reader verdicts --------------------------------------------------------------------------------


def test_verdict_conditions_are_anded_and_match_any_version_of_the_reader(boss):
    assert listed(boss, "verdict=fixed:correct") == ["b-0", "a-0", "a-1", "a-2", "a-3"]
    # a-4's no_answer is by an older version of boxed.
    assert listed(boss, "verdict=boxed:no_answer") == ["b-0", "a-1", "a-3", "a-4", "a-5"]
    assert listed(boss, "verdict=fixed:correct&verdict=boxed:no_answer") == ["b-0", "a-1", "a-3"]
    assert listed(boss, "verdict=fixed:correct&verdict=boxed:no_answer&verdict=strict-match:incorrect") == []


def test_with_verdict_conditions_each_row_shows_the_named_readers_verdicts(boss, world):
    body = boss.get(f"/items/?dataset={world.alpha.pk}&verdict=boxed:no_answer").content.decode()
    row = re.search(r'<tr data-response="\d+"><td class="ext-id"><a[^>]*>a-4</a>.*?</tr>', body, re.S).group(0)
    assert re.search(r"boxed 0\.9-old: <span[^>]*>no_answer</span>", row)
    assert re.search(r"boxed [0-9][^:]*: <span[^>]*>correct</span>", row)
    assert "fixed" not in row  # only the readers the conditions name


# -- disagreement (the queue page's links) ----------------------------------------------------------


def test_disagree_any_lists_the_items_whose_current_labels_are_not_all_equal(boss, world):
    q1_conflicts = {world.order["alpha-q1"][i] for i in (1, 2, 3)}
    assert set(listed(boss, f"queue={world.q1.pk}&disagree=any")) == q1_conflicts
    # j2's two free texts differ in spacing and case only (equal labels), but the no-answer differs.
    assert set(listed(boss, f"queue={world.q2.pk}&disagree=any")) == set(world.order["alpha-q2"])


def test_disagree_for_a_pair_compares_their_current_labels_by_the_labels_rule(boss, world):
    j0, j1, j2 = world.order["alpha-q2"]
    q2 = world.q2.pk
    assert listed(boss, f"queue={q2}&disagree=ann1,ann2") == [j1]  # j2: "Forty  Two" = "forty two"
    assert set(listed(boss, f"queue={q2}&disagree=ann2,ann3")) == {j0, j2}
    assert set(listed(boss, f"queue={q2}&disagree=ann3,ann1")) == {j0, j1, j2}
    # Pairs that never labelled the same item together disagree nowhere.
    assert listed(boss, f"queue={world.q1.pk}&disagree=ann1,ann3") == []


def test_disagreement_follows_revisions_and_ignores_skips(boss, world):
    _j0, j1, _j2 = world.order["alpha-q2"]
    ann2 = world.users["ann2"]
    label = Label.objects.filter(
        item__queue=world.q2, annotator=ann2, item__review_item__response__external_id=j1
    ).get()
    label_revise(label=label, annotator=ann2, entry=LabelEntry(kind="option", answer="b"))
    assert listed(boss, f"queue={world.q2.pk}&disagree=ann1,ann2") == []
    # A skip is no label: ann3 skips an open q1 item ann1 labelled, which stays out of every pair.
    lease = lease_claim_next(queue=world.q1, annotator=world.users["ann3"]).lease
    label_submit(lease=lease, annotator=world.users["ann3"], entry=LabelEntry(kind="skipped"), skip_reason="unclear")
    assert listed(boss, f"queue={world.q1.pk}&disagree=ann1,ann3") == []


def test_disagreeing_responses_agrees_with_the_queue_agreement(world):
    from adjudication.review.items import current_labels
    from adjudication.review.labels import agreement

    for queue in (world.q1, world.q2):
        found = browse.disagreeing_items(queue=queue, pair=None)
        assert found
        for item in QueueItem.objects.filter(queue=queue):
            assert (item.pk in found) == (agreement(current_labels(item), queue.judge_correctness) < 1.0)


# -- bad input --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("dataset=abc", "dataset: no such dataset"),
        ("dataset=99999999999999999999999", "dataset: no such dataset"),
        ("queue=1x", "queue: no such queue"),
        ("status=done", "status: the status must be one of open, labelled, conflicting, adjudicated, unresolved"),
        ("verdict=fixed", "verdict: &#x27;fixed&#x27; is not &lt;reader&gt;:&lt;verdict&gt;"),
        ("verdict=:correct", "is not &lt;reader&gt;:&lt;verdict&gt;"),
        ("verdict=fixed:maybe", "the verdict must be one of correct, incorrect, no_answer, error, timeout"),
        ("verdict=nosuch:correct", "verdict: no reader named &#x27;nosuch&#x27;"),
        ("q=" + "x" * 10_000, "q: search for at most 500 characters (this is 10000)"),
        ("q=a%00b", "q: Null characters are not allowed."),
        ("page=abc", "page: the page must be a number"),
        ("page=0", "page: Ensure this value is greater than or equal to 1."),
        ("disagree=ann1", "disagree: give &quot;any&quot; or two different annotators"),
        ("disagree=any", "disagree: needs a queue"),
        ("queue={q1}&disagree=ann1,nobody", "disagree: no user named &#x27;nobody&#x27;"),
        ("model=gpt-17", "model: no run has the model “gpt-17”"),
    ],
)
def test_a_bad_parameter_is_a_400_page_naming_it_with_the_form_kept(boss, world, query, message):
    response = boss.get("/items/?" + query.format(q1=world.q1.pk))
    body = response.content.decode()
    assert response.status_code == 400
    assert 'id="filter-error"' in body and message in body, body[body.find("filter-error") - 50 :][:600]
    assert 'id="items"' not in body
    assert '<form method="get"' in body


def test_hostile_query_bytes_never_break_the_page(boss):
    # Invalid UTF-8 (a lone surrogate's bytes) is decoded to U+FFFD by Django; a lone surrogate
    # given to the form directly is refused with a message.
    assert boss.get("/items/?q=%ED%A0%80").status_code == 200
    for name, value in (("q", "\ud800"), ("verdict", "fixed:correct\ud800"), ("disagree", "ann1,\ud800")):
        data = QueryDict(mutable=True)
        data[name] = value
        form = ItemFilterForm(data)
        assert not form.is_valid() and "lone surrogate" in form.errors[name][0], form.errors


# -- pagination, counting, batching -----------------------------------------------------------------


def test_pages_link_to_each_other_keeping_the_filters(boss, world, monkeypatch):
    monkeypatch.setattr(browse, "PAGE_SIZE", 2)
    first = boss.get(f"/items/?dataset={world.alpha.pk}&verdict=strict-match:correct").content.decode()
    assert "6 items; showing 1–2" in first
    nxt = unescape(re.search(r'href="\?([^"]+)" rel="next"', first).group(1))
    assert QueryDict(nxt).dict() == {"dataset": str(world.alpha.pk), "verdict": "strict-match:correct", "page": "2"}
    assert listed(boss, nxt) == ["a-2", "a-3"]
    last = boss.get("/items/?" + nxt.replace("page=2", "page=3")).content.decode()
    assert 'rel="next"' not in last and 'rel="prev"' in last
    prev = unescape(re.search(r'href="\?([^"]+)" rel="prev"', last).group(1))
    assert QueryDict(prev)["page"] == "2"


def test_the_count_is_capped(boss, monkeypatch):
    monkeypatch.setattr(browse, "PAGE_SIZE", 2)
    monkeypatch.setattr(browse, "COUNT_CAP", 3)
    assert "More than 3 items" in boss.get("/items/").content.decode()


def test_the_list_costs_the_same_statements_for_one_row_as_for_four(world):
    filters = browse.ItemFilters(verdicts=(browse.VerdictCondition("boxed", "no_answer"),), status="")

    def statements(size: int) -> int:
        with CaptureQueriesContext(connection) as ctx:
            page = browse.items_page(filters=filters, page=1, page_size=size)
        assert len(page.items) == size and page.has_next  # five match: both pages count them
        assert all(it.verdicts for it in page.items)
        assert all(it.queue_items for it in page.items if it.external_id.startswith("a-"))
        return len(ctx.captured_queries)

    assert statements(1) == statements(4)


# -- the item page ----------------------------------------------------------------------------------


def item_page(client: Client, external_id: str) -> str:
    pk = Response.objects.get(external_id=external_id).pk
    response = client.get(f"/items/{pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_item_page_shows_run_readings_labels_and_final_labels(boss, world):
    adjudicated = world.in_state("adjudicated", "alpha-q1").pop()
    body = item_page(boss, adjudicated)
    identity = re.search(r'<table class="grid identity".*?</table>', body, re.S).group(0)
    model, checkpoint, benchmark = ALPHA[adjudicated][:3]
    for name, value in (("dataset", "alpha"), ("model", model), ("checkpoint", checkpoint), ("benchmark", benchmark)):
        assert f"<tr><th>{name}</th><td>{value}</td></tr>" in identity
    assert "<tr><th>prompt</th><td>cot-v1</td></tr>" in identity
    readings = re.search(r'<table class="grid readings".*?</table>', body, re.S).group(0)
    assert set(re.findall(r'<td class="reader-name">([^<]+)</td>', readings)) >= {"fixed", "strict-match"}
    # Its span is marked in the response: fixed's C in the box.
    assert re.search(r'<mark data-candidate="\d+">C</mark>', body)
    q1 = re.search(r'<section class="queue-item"[^>]*data-queue="alpha-q1">.*?</section>', body, re.S).group(0)
    assert '<span class="state state-adjudicated">adjudicated</span>' in q1
    assert "Round one" in q1
    authors = re.findall(r'<td class="author">([^<]+)</td>', q1)
    assert authors[:2] == ["ann1", "ann2"] and authors[-1] == "adj"
    final = re.search(r'<tr class="final current">.*?</tr>', q1, re.S).group(0)
    assert "adjudicated" in final and "boxed wins" in final and "adj" in final
    assert 'class="adjudicate-link"' not in q1  # decided: nothing to adjudicate


def test_the_item_page_links_a_conflict_and_an_unresolved_item_to_adjudication(boss, world):
    for state in ("conflicting", "unresolved"):
        ext = world.in_state(state, "alpha-q1").pop()
        item = QueueItem.objects.get(queue=world.q1, review_item__response__external_id=ext)
        body = item_page(boss, ext)
        assert f'<a href="/adjudicate/{item.pk}/" class="adjudicate-link">' in body
        assert 'href="/queues/"' in body
    unresolved = item_page(boss, world.in_state("unresolved", "alpha-q1").pop())
    final = re.search(r'<tr class="final current">.*?</tr>', unresolved, re.S).group(0)
    assert "unresolved" in final and "cannot tell" in final and "ambiguous response" in final


def test_the_item_page_keeps_invalidated_labels_as_history(boss, world, write_jsonl):
    labelled = world.in_state("labelled", "alpha-q1").pop()
    row = next(r for r in _rows(ALPHA) if r["id"] == labelled)
    row["response"] = "A new text. The answer is B. Then again \\boxed{C}"
    run_command(
        "import_responses", str(write_jsonl([row], name="again.jsonl")), dataset="alpha", replace=True, no_progress=True
    )
    body = item_page(boss, labelled)
    q1 = re.search(r'<section class="queue-item"[^>]*data-queue="alpha-q1">.*?</section>', body, re.S).group(0)
    assert len(re.findall(r'<tr id="label-\d+" class="label invalidated">', q1)) == 2
    assert '<span class="state state-open">open</span>' in q1
    assert re.search(r'<tr class="final invalidated">.*?unanimous', q1, re.S)
    assert 'class="final current"' not in q1


def test_the_item_page_of_a_response_no_queue_holds(boss):
    body = item_page(boss, "b-0")
    assert 'id="not-queued"' in body


def test_an_unknown_or_huge_response_id_is_a_404(boss):
    assert boss.get("/items/999999/").status_code == 404
    assert boss.get("/items/99999999999999999999999/").status_code == 404


# -- escaping and roles -----------------------------------------------------------------------------


def test_hostile_model_text_is_escaped_on_the_list_and_the_item_page(boss, world):
    listing = boss.get(f"/items/?dataset={world.beta.pk}").content.decode()
    body = item_page(boss, HOSTILE_ID)
    for page in (listing, body):
        assert "<script>window.__xss" not in page and "<img src=x" not in page and "<i>3b</i>" not in page
        assert "\x00" not in page and "\ud800" not in page
        assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in page
        assert "zephyr-&lt;i&gt;3b&lt;/i&gt;" in page
    assert "nul:\ufffd lone:\ufffd" in listing  # the preview shows both as U+FFFD
    assert "&lt;script&gt;window.__xss=3&lt;/script&gt;" in body  # the hostile external id
    assert 'href="javascript:' not in body
    # A label's note is shown escaped too.
    conflict = item_page(boss, world.in_state("conflicting", "alpha-q1").pop())
    assert "&lt;script&gt;window.__xss=4&lt;/script&gt; see &lt;b&gt;bold&lt;/b&gt;" in conflict


def test_only_managers_see_the_items_link(world):
    client = Client()
    client.force_login(world.users["boss"])
    assert '<a href="/items/">items</a>' in client.get("/queues/").content.decode()
    client.force_login(world.users["adj"])
    assert "/items/" not in client.get("/adjudicate/").content.decode()


def test_preview_decodes_a_verbatim_stored_prefix_cut_anywhere():
    from adjudication.fields import encode_verbatim

    text = "nul\x00 and \ud83d\ude00 and \\ and \ud800 end " * 3
    stored = encode_verbatim(text)
    full = browse.preview(stored, limit=10_000)
    assert full.startswith("nul\ufffd and 😀 and \\ and \ufffd end nul")
    for cut in range(len("\x01json:") + 1, len(stored)):
        shown = browse.preview(stored[:cut], limit=10_000)
        # A prefix of the whole preview; its last character may be half of the emoji's pair (U+FFFD).
        assert full.startswith(shown) or (full.startswith(shown[:-1]) and shown[-1] == "\ufffd"), (cut, shown)
    assert len(browse.preview(stored, limit=20)) == 20
