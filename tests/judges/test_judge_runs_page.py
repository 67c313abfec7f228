"""LLM judges run from the dataset page (/datasets/<id>/judge/) on a subset, through Django's test
client against the loopback server: the preview writes nothing, "Judge" judges only the subset,
refusals are shown in the form, and only managers may use it."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from adjudication.models import ReaderSpec, Reading, TaskBatch
from adjudication.pipeline.subsets import ResponseSubset

from ..review.conftest import make_user
from .test_run_subsets import N_RESPONSES, audit_world, external_ids, judged

pytestmark = pytest.mark.django_db


@pytest.fixture
def manager() -> Client:
    client = Client()
    client.force_login(make_user("boss", "manager"))
    return client


def judge_post(client: Client, dataset_id: int, **fields: object):
    data = {"judge": ["sq"], "subset": "all", "seed": "0", "action": "preview", **fields}
    return client.post(f"/datasets/{dataset_id}/judge/", data)


def preview_rows(html: str) -> dict[str, tuple[int, int, int]]:
    """judge -> (responses in the subset, already judged, to judge), from the preview table."""
    table = html[html.index('id="judge-preview"') :]
    table = table[: table.index("</table>")]
    rows = re.findall(r"<tr><td>([^<]+)</td><td>(\d+)</td><td>(\d+)</td><td>(\d+)</td></tr>", table)
    return {name: (int(n), int(done), int(left)) for name, n, done, left in rows}


def test_the_dataset_page_offers_the_judges_and_the_dataset_s_queues(manager, make_judge, write_jsonl):
    world = audit_world(write_jsonl)
    make_judge("sq")
    page = manager.get(f"/datasets/{world.dataset.pk}/").content.decode()
    form = page[page.index('id="judge-form"') :]
    assert 'name="judge" value="sq"' in form and '<option value="q">q</option>' in form
    assert 'name="csrfmiddlewaretoken"' in form
    for kind in ("all", "queue", "labelled", "sample", "ids"):
        assert f'name="subset" value="{kind}"' in form


def test_without_a_judge_the_page_says_how_to_add_one(manager, make_dataset):
    ds = make_dataset(n_mc=1, n_math=0)
    page = manager.get(f"/datasets/{ds.pk}/").content.decode()
    assert "No LLM judge yet" in page and 'id="judge-form"' not in page


def test_the_preview_counts_what_each_judge_would_judge_and_writes_nothing(
    manager, loopback, make_judge, write_jsonl, eager, django_capture_on_commit_callbacks
):
    world = audit_world(write_jsonl)
    sq = make_judge("sq")
    make_judge("xv", endpoint=sq.endpoint, template="xverify")
    with django_capture_on_commit_callbacks(execute=True):
        assert judge_post(manager, world.dataset.pk, subset="queue", queue="q", action="run").status_code == 302
    specs, requests = ReaderSpec.objects.count(), loopback.stats.requests
    batches = TaskBatch.objects.count()

    sample = external_ids(world.dataset, ResponseSubset.sample(5, seed=3))
    resp = judge_post(manager, world.dataset.pk, judge=["sq", "xv"], subset="sample", sample="5", seed="3")
    assert resp.status_code == 200
    # sq judged the queue's responses; xv has never run (no reader spec of it is made by a preview).
    overlap = len(sample & world.queued)
    assert preview_rows(resp.content.decode()) == {"sq": (5, overlap, 5 - overlap), "xv": (5, 0, 5)}
    assert (ReaderSpec.objects.count(), TaskBatch.objects.count(), loopback.stats.requests) == (
        specs,
        batches,
        requests,
    )
    # The form keeps what was chosen, for "Judge" next.
    page = resp.content.decode()
    assert 'name="subset" value="sample" checked' in page and 'name="sample" type="number" min="1" value="5"' in page


def test_each_subset_from_the_form_judges_only_its_responses_and_says_so(
    manager, loopback, make_judge, write_jsonl, eager, django_capture_on_commit_callbacks
):
    world = audit_world(write_jsonl)
    make_judge("sq", template="simpleqa")
    pk = world.dataset.pk

    def run(**fields: object) -> str:
        with django_capture_on_commit_callbacks(execute=True):
            resp = judge_post(manager, pk, action="run", **fields)
        assert resp.status_code == 302, resp.content.decode()[:2000]
        page = manager.get(resp["Location"]).content.decode()
        return re.search(r"Judging [^<]*", page)[0]  # the flash message

    said = run(subset="queue", queue="q")
    assert judged() == world.queued and loopback.stats.requests == len(world.queued)
    assert said == (
        f"Judging the responses in review queue &#x27;q&#x27;: {len(world.queued)} responses; "
        f"sq: 0 already judged, {len(world.queued)} enqueued. "
        "Their readings join the reader table below as the workers write them."
    )

    said = run(subset="labelled")
    assert f": {len(world.labelled)} responses; sq: {len(world.labelled)} already judged, 0 enqueued" in said

    sample = external_ids(world.dataset, ResponseSubset.sample(4, seed=11))
    said = run(subset="sample", sample="4", seed="11")
    assert f"sq: {len(sample & world.queued)} already judged, {len(sample - world.queued)} enqueued" in said
    assert judged() == world.queued | sample

    rest = sorted({f"mc-{i}" for i in range(N_RESPONSES)} - judged())
    said = run(subset="ids", ids="# still to judge\r\n" + "\r\n".join(rest) + "\r\n\r\n")
    assert f"{len(rest)} responses; sq: 0 already judged, {len(rest)} enqueued" in said
    assert len(judged()) == N_RESPONSES and loopback.stats.requests == N_RESPONSES

    said = run(subset="all")
    assert f"sq: {N_RESPONSES} already judged, 0 enqueued" in said
    assert loopback.stats.requests == N_RESPONSES


@pytest.mark.parametrize(
    "fields,field,message",
    [
        ({"judge": []}, "judge", "tick at least one judge"),
        ({"subset": "queue", "queue": ""}, "queue", "name the review queue"),
        (
            {"subset": "queue", "queue": "other"},
            "queue",
            "no review queue named &#x27;other&#x27; in dataset &#x27;audit&#x27; (its queues: q)",
        ),
        ({"subset": "sample", "sample": ""}, "sample", "a sample holds at least 1 response"),
        ({"subset": "sample", "sample": "0"}, "sample", "greater than or equal to 1"),
        ({"subset": "sample", "sample": "3", "seed": "-1"}, "seed", "greater than or equal to 0"),
        ({"subset": "ids", "ids": "\n# only a comment\n"}, "ids", "the ids: no response id in it"),
        ({"subset": "ids", "ids": "mc-1\nmc-404\n"}, "ids", "the ids, line 2: no response &#x27;mc-404&#x27;"),
        ({"subset": "ids", "ids": "mc-1\x00"}, "ids", "must not contain NUL characters"),
    ],
)
def test_a_refused_choice_is_shown_beside_its_field_and_nothing_is_enqueued(
    manager, loopback, make_judge, write_jsonl, fields, field, message
):
    world = audit_world(write_jsonl)
    make_judge("sq")
    resp = judge_post(manager, world.dataset.pk, action="run", **fields)
    assert resp.status_code == 400
    page = resp.content.decode()
    shown = re.search(rf'<span class="error" id="{field}-errors">([^<]*)</span>', page)
    assert shown and message in shown[1], page[page.index('id="judge-form"') :][:3000]
    assert not TaskBatch.objects.exists() and not Reading.objects.filter(reader_spec__kind="judge").exists()
    assert loopback.stats.requests == 0


def test_a_stale_queue_name_is_refused_only_when_the_queue_is_the_subset(
    manager, loopback, make_judge, write_jsonl, eager, django_capture_on_commit_callbacks
):
    world = audit_world(write_jsonl)
    make_judge("sq")
    with django_capture_on_commit_callbacks(execute=True):
        resp = judge_post(manager, world.dataset.pk, subset="labelled", queue="gone", action="run")
    assert resp.status_code == 302 and judged() == world.labelled


def test_pasted_ids_are_escaped_when_shown_back(manager, make_judge, write_jsonl):
    world = audit_world(write_jsonl)
    make_judge("sq")
    resp = judge_post(manager, world.dataset.pk, subset="ids", ids="<script>alert(1)</script>")
    page = resp.content.decode()
    assert resp.status_code == 400 and "<script>alert(1)" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_only_managers_may_run_judges_and_only_with_the_csrf_token(make_judge, write_jsonl, loopback):
    world = audit_world(write_jsonl)
    make_judge("sq")
    target = f"/datasets/{world.dataset.pk}/judge/"
    data = {"judge": ["sq"], "subset": "all", "action": "run"}
    assert Client().post(target, data).status_code == 302  # anonymous: to the login form
    for role in ("annotator", "adjudicator"):
        client = Client()
        client.force_login(make_user(f"someone-{role}", role))
        assert client.post(target, data).status_code == 403
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(make_user("boss", "manager"))
    assert strict.post(target, data).status_code == 403
    assert strict.get(target).status_code == 405
    assert not TaskBatch.objects.exists() and loopback.stats.requests == 0
