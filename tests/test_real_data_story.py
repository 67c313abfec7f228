"""Issue 36's acceptance: the whole real-data story, in Chromium, on real multiple-choice outputs with
ten options (../shared/data/mmlu-pro-model-outputs: two models' runs on the same questions stand in
for a base and an RL checkpoint, under their own, different model names).

Import the pair without editing a field (`--pair` declares the family), read with the default panel
of the task type, make a queue from the form's multiple-choice preset, label it as two annotators
with the keyboard only (option J included), resolve a conflict as the adjudicator, read format share
and agreement on the analytics page (the MMLU-Pro harness reader, no dashes), download the bundle
and replay it.

The test skips cleanly where ../shared is absent (a clean clone); CI has it.
"""

from __future__ import annotations

import json
import os
import re
import string
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from .browser import chromium_browser, reload_until, require_chromium
from .conftest import ROOT, run_command, shared_data
from .review.test_browser_flow import PASSWORD, log_in

pytestmark = [pytest.mark.browser, pytest.mark.system, pytest.mark.django_db(transaction=True)]

BASE_MODEL, RL_MODEL = "Phi-3-mini-4k-instruct", "gemini-1.5-pro-002"
DATASET = "mmlu-pro-pair"
QUESTIONS = 20  # per model: a queue two annotators label in a minute
ITEM_URL = re.compile(r"/review/item/(\d+)/(?:#.*)?$")


def plain(text: str) -> bool:
    """No TeX: the test finds a served response by its text, which typesetting would rewrite."""
    return "$" not in text and "\\" not in text


def story_rows() -> list[dict]:
    """The two runs' rows on the first QUESTIONS question ids (of the stratified slice) whose texts
    are plain, with every such question whose gold is J among them, as a harness writes them
    (model names as released, no checkpoint: the import's --pair declares it)."""
    path = shared_data("mmlu-pro-model-outputs", "mmlu_pro_cot_outputs_sample.jsonl")
    by_question: dict[int, dict[str, dict]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["slice"] == "stratified" and row["model"] in (BASE_MODEL, RL_MODEL):
            by_question.setdefault(row["question_id"], {})[row["model"]] = row
    eligible = [
        qid
        for qid, runs in sorted(by_question.items())
        if len(runs) == 2
        and all(
            plain(r["model_output"]) and plain(r["question"]) and all(map(plain, r["options"])) for r in runs.values()
        )
    ]
    gold_j = [qid for qid in eligible if by_question[qid][BASE_MODEL]["answer"] == "J"]
    chosen = gold_j[: QUESTIONS // 2]
    chosen += [qid for qid in eligible if qid not in chosen][: QUESTIONS - len(chosen)]
    rows = []
    for qid in sorted(chosen):
        for model in (BASE_MODEL, RL_MODEL):
            r = by_question[qid][model]
            rows.append(
                {
                    "id": f"{model}/{qid}",
                    "question": r["question"],
                    "choices": r["options"],
                    "gold": r["answer"],
                    "response": r["model_output"],
                    "model": model,
                    "benchmark": "mmlu-pro",
                    "prompt": "cot-5shot",
                    "meta": {"pred_as_released": r["pred_as_released"], "category": r["category"]},
                }
            )
    return rows


def key(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def story(tmp_path, eager, monkeypatch) -> dict:
    require_chromium()
    rows = story_rows()
    path = tmp_path / "mmlu-pro-pair.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = run_command(
        "import_responses", str(path), dataset=DATASET, pair=[f"base={BASE_MODEL},rl={RL_MODEL}"], no_progress=True
    )
    assert f"{len(rows)} new" in out, out
    monkeypatch.setenv("ADJ_PASSWORD", PASSWORD)
    for name, role in (("ann1", "annotator"), ("ann2", "annotator"), ("adj", "adjudicator"), ("mgr", "manager")):
        run_command("add_user", name, role=[role])
    # What each response commits to, as the MMLU-Pro authors' extractor read it: the annotators'
    # answer (None: the response commits to nothing, "no answer").
    commits = {key(r["response"]): (r["meta"]["pred_as_released"] or None, len(r["choices"])) for r in rows}
    return {"rows": rows, "commits": commits, "import": out}


@contextmanager
def logged_in(browser, base: str, username: str, path: str) -> Iterator:
    """As test_browser_flow's, at the laptop size the issue measured (1366x768), downloads allowed."""
    context = browser.new_context(viewport={"width": 1366, "height": 768}, accept_downloads=True)
    page = context.new_page()
    log_in(page, base, username, path)
    yield page
    context.close()


def label_everything(
    page, commits: dict[str, tuple[str | None, int]], *, differ_once: bool = False
) -> list[str | None]:
    """Label every item served, keys only: the letter the response commits to (0: no answer).
    With `differ_once`, the first response that commits to a letter other than J gets the next of
    its question's options instead (the conflict the adjudicator resolves). Returns the answers given, in order."""
    given: list[str | None] = []
    differed = not differ_once
    while ITEM_URL.search(page.url):
        source = page.locator("#response-source").text_content() or ""
        assert key(source) in commits, source[:200]
        answer, options = commits[key(source)]
        if answer and not differed and answer != "J":
            answer = string.ascii_uppercase[(string.ascii_uppercase.index(answer) + 1) % options]
            differed = True
        page.keyboard.press(answer.lower() if answer else "0")
        picked = page.locator("input[name=pick]:checked").get_attribute("value")
        assert picked == (f"option:{answer}" if answer else "no_answer"), picked
        before = page.url
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert page.url != before
        assert not page.locator(".messages .error").count(), page.inner_text(".messages")
        given.append(answer)
    return given


def test_a_researchers_real_outputs_from_import_to_adjudicated_numbers(story, plain_live_server, tmp_path):
    from adjudication.models import Dataset, FinalLabel, Reading, ReviewQueue

    # 1. The import paired the two model names as one family, and said so.
    assert f"compared as family '{BASE_MODEL}'" in story["import"], story["import"]
    dataset = Dataset.objects.get(name=DATASET)
    assert set(dataset.runs.values_list("model", "checkpoint")) == {(BASE_MODEL, "base"), (RL_MODEL, "rl")}

    # 2. The default panel of multiple choice: no reader fails on ten-option data, no maths reader ran.
    run_command("run_readers", dataset=DATASET)
    readers = set(Reading.objects.filter(response__dataset=dataset).values_list("reader_spec__name", flat=True))
    assert {"fixed", "mmlu-pro-released", "strict-match"} <= readers
    assert not {"sympy-cascade", "math-verify-latex", "gsm8k-strict-match", "qa-contains"} & readers
    assert not Reading.objects.filter(response__dataset=dataset, verdict="error").exists()

    with chromium_browser() as browser:
        # 3. The manager makes a queue from the form's multiple-choice preset.
        with logged_in(browser, plain_live_server, "mgr", f"/queues/new/?dataset={dataset.pk}") as page:
            with page.expect_navigation():
                page.click("#preset-multiple_choice")
            page.fill("input[name=name]", "story-q")
            page.fill("input[name=overlap]", "2")
            page.fill("input[name=control_fraction]", "0.2")
            with page.expect_navigation():
                page.click("#preview-button")
            preview = page.inner_text("main")
            assert re.search(r"\d+ items would be routed now: [1-9]\d* disputed, \d+ controls", preview), preview
            with page.expect_navigation():
                page.click("#create-button")
            assert not page.locator(".messages .error").count(), page.inner_text("main")[:2000]

        # 4. Two annotators label everything with the keyboard only.
        with logged_in(browser, plain_live_server, "ann1", "/review/") as page:
            first = label_everything(page, story["commits"])
        with logged_in(browser, plain_live_server, "ann2", "/review/") as page:
            second = label_everything(page, story["commits"], differ_once=True)
        assert "J" in first and "J" in second, (first, second)  # the tenth option, by its letter
        assert len(first) == len(second)

        # 5. The adjudicator resolves the conflict: annotator 1's label, accepted with its digit.
        with logged_in(browser, plain_live_server, "adj", "/adjudicate/") as page:
            links = page.locator("table.grid a")
            assert links.count() == 1, page.inner_text("main")
            with page.expect_navigation():
                links.first.click()
            page.keyboard.press("1")
            with page.expect_navigation():
                page.keyboard.press("Enter")
            assert "No conflicts to resolve" in page.inner_text("main")

        # 6. Analytics: format share and agreement under the MMLU-Pro harness reader, no dashes.
        with logged_in(browser, plain_live_server, "mgr", f"/analytics/{dataset.pk}/") as page:
            reload_until(
                page, lambda: page.locator("#format-share").count() and page.locator("#human-agreement").count()
            )
            assert "mmlu-pro-released" in page.inner_text("#readers-why")
            share = page.inner_text("#format-share")
            assert "format share" in share.lower() and not re.search(r"(^|\s)[—–-](\s|$)", share), share
            # Each reader against the final human labels: the harness reader has a number, not a dash.
            rows = page.locator("#agreement table.grid > tbody > tr:not(.muted)").all()
            cells = {
                row.locator("td").nth(0).inner_text(): [c.inner_text() for c in row.locator("td").all()] for row in rows
            }
            assert re.match(r"\d\.\d+ \[\d", cells["mmlu-pro-released"][3]), cells.get("mmlu-pro-released")
            assert re.match(r"\d\.\d+ \[\d", cells["fixed"][3]), cells.get("fixed")
            # The two annotators' agreement, with its interval and κ.
            assert re.search(
                r"ann1 / ann2\t\d+\t\d\.\d+ \[\d\.\d+, \d\.\d+\]\t-?\d\.\d+", page.inner_text("#human-agreement")
            )

            # 7. The bundle downloads (built in the background, then served) and replays.
            with page.expect_download(timeout=120_000) as download:
                page.click("#analytics-bundle")
            bundle = tmp_path / "story.zip"
            download.value.save_as(bundle)

    queue = ReviewQueue.objects.get(name="story-q")
    assert FinalLabel.objects.filter(item__queue=queue, provenance="adjudicated").count() == 1
    # The user's path: `manage.py replay FILE` in a child process, on a scratch SQLite database.
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    replayed = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "replay", str(bundle)],
        env={**env, "SECRET_KEY": "test-only"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert replayed.returncode == 0 and "reproduced" in replayed.stdout, replayed.stdout + replayed.stderr
    assert re.search(r"^\s*same +analytics .*reported=mmlu-pro-released", replayed.stdout, re.M), replayed.stdout
