"""inspect-ai eval logs (.eval and .json), written by inspect-ai itself with its mock model: field
mapping, the harness's scores as readings, format detection, bad files named, idempotent re-import."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from django.core.management.base import CommandError

from adjudication.ingest.formats import MAX_JSON_DEPTH, RowError
from adjudication.ingest.harnesses import detect_format, iter_rows
from adjudication.models import Dataset, Question, ReaderSpec, Reading, Response, Run
from readers.base import config_hash
from tests.ingest.harness_support import import_log, import_refusal

from ..conftest import ROOT, manage, project_table_counts

pytestmark = pytest.mark.django_db

MC = "mockllm/model:sociology_mc"  # the ids' prefix: model (no checkpoint given) and task

# What the mock model answers, by question: one right, one wrong, one without an answer line.
ANSWERS = {
    "Who wrote The Protestant Ethic?": "Weber, surely.\nANSWER: B",
    "2+2?": "ANSWER: A",
    "Which is a prime?": "I cannot decide between them.",
    "What is 6*7?": "6*7 = 42",
}


def _write_logs(log_dir: Path) -> dict[str, Path]:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import choice, match
    from inspect_ai.solver import generate, multiple_choice

    def outputs(messages, tools, tool_choice, config):
        text = messages[-1].text
        content = next(answer for question, answer in ANSWERS.items() if question in text)
        out = ModelOutput.from_content(model="mockllm/model", content=content)
        # Usage given, so that the mock does not count tokens with tiktoken (which downloads encodings).
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    mc = Task(
        name="sociology_mc",
        dataset=[
            Sample(
                input="Who wrote The Protestant Ethic?",
                choices=["Durkheim", "Weber", "Merton"],
                target="B",
                id="q1",
                metadata={"subject": "sociology"},
            ),
            Sample(input="2+2?", choices=["3", "4"], target="B", id=7),
            Sample(input="Which is a prime?", choices=["4", "6", "7"], target="C", id="q3"),
        ],
        solver=multiple_choice(),
        scorer=choice(),
    )
    qa = Task(
        name="arith_qa",
        dataset=[Sample(input="What is 6*7?", target="42", id="a")],
        solver=generate(),
        scorer=match(numeric=True),
    )
    model = get_model("mockllm/model", custom_outputs=outputs)
    eval_logs = eval([mc, qa], model=model, log_dir=str(log_dir / "eval"), log_format="eval", display="none")
    json_logs = eval(mc, model=model, log_dir=str(log_dir / "json"), log_format="json", display="none", epochs=2)
    assert all(log.status == "success" for log in [*eval_logs, *json_logs])
    by_task = {log.eval.task: Path(log.location) for log in eval_logs}
    return {"mc": by_task["sociology_mc"], "qa": by_task["arith_qa"], "json": Path(json_logs[0].location)}


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, Path]:
    return _write_logs(tmp_path_factory.mktemp("inspect-logs"))


def test_an_eval_log_maps_samples_to_questions_choices_gold_responses_and_model(logs):
    out = import_log(logs["mc"], fmt="inspect", checkpoint="rl")
    assert "3 new" in out
    # The id is the run's (model, checkpoint) and the sample's (task, id).
    r = Response.objects.select_related("question", "run").get(external_id="mockllm/model:rl:sociology_mc:q1")
    assert r.question.text == "Who wrote The Protestant Ethic?"
    assert r.question.choices == ["Durkheim", "Weber", "Merton"] and r.question.gold == "B"
    assert r.question.benchmark == "sociology_mc"
    assert r.text == ANSWERS["Who wrote The Protestant Ethic?"]
    assert (r.run.model, r.run.checkpoint, r.run.benchmark) == ("mockllm/model", "rl", "sociology_mc")
    assert r.meta["inspect"]["sample_id"] == "q1" and r.meta["inspect"]["epoch"] == 1
    assert r.meta["inspect"]["metadata"] == {"subject": "sociology"}
    # An integer sample id is kept as the integer it was.
    assert Response.objects.get(external_id="mockllm/model:rl:sociology_mc:7").meta["inspect"]["sample_id"] == 7
    # A chat-API log has no rendered text prompt.
    assert r.prompt_text is None


def test_inspect_scores_are_readings_of_a_harness_reader_with_name_version_and_config_hash(logs):
    import inspect_ai

    out = import_log(logs["mc"])
    assert "3 new inspect readings" in out
    spec = ReaderSpec.objects.get(name="inspect:choice")
    assert spec.kind == "harness" and spec.version == inspect_ai.__version__
    assert spec.config == {"harness": "inspect", "scorer": "choice", "options": {}}
    assert spec.config_hash == config_hash(spec.config)
    readings = {r.response.external_id: r for r in Reading.objects.filter(reader_spec=spec).select_related("response")}
    right, wrong, none = (readings[f"{MC}:{sample}"] for sample in ("q1", "7", "q3"))
    assert (right.verdict, right.answer, right.canonical) == ("correct", "B", "B")
    assert (wrong.verdict, wrong.answer, wrong.canonical) == ("incorrect", "A", "A")
    # choice() scores a response with no ANSWER line as incorrect, answer "": the platform's no_answer.
    assert (none.verdict, none.answer) == ("no_answer", None)
    assert none.detail["value"] == "I" and none.detail["reason"] == "invalid_response_format"


def test_two_checkpoints_logs_share_one_dataset_and_its_questions(logs):
    import_log(logs["mc"], checkpoint="base")
    import_log(logs["mc"], checkpoint="rl")
    assert Response.objects.count() == 6 and Question.objects.count() == 3
    assert set(Run.objects.values_list("checkpoint", flat=True)) == {"base", "rl"}
    assert Reading.objects.filter(reader_spec__name="inspect:choice").count() == 6


def test_a_match_scorer_keeps_its_options_in_the_reader_config(logs):
    import_log(logs["qa"])
    spec = ReaderSpec.objects.get(name="inspect:match")
    assert spec.config["options"] == {"numeric": True}
    reading = Reading.objects.get(reader_spec=spec)
    assert reading.verdict == "correct" and reading.answer == "42" and reading.canonical == "42"
    assert Response.objects.get(external_id="mockllm/model:arith_qa:a").question.gold == "42"


def test_a_json_log_with_two_epochs_imports_each_epoch_as_its_own_response(logs):
    assert detect_format(logs["json"]) == "inspect"
    out = import_log(logs["json"])
    assert "6 new" in out
    ids = set(Response.objects.values_list("external_id", flat=True))
    assert ids == {f"{MC}:{s}:epoch{e}" for s in ("q1", 7, "q3") for e in (1, 2)}
    # Both epochs answer one question: one Question row, two responses.
    q1 = Response.objects.filter(external_id__startswith=f"{MC}:q1:")
    assert q1.count() == 2 and q1.values("question").distinct().count() == 1
    assert Reading.objects.filter(reader_spec__name="inspect:choice").count() == 6


@pytest.mark.parametrize("log", ["mc", "json"])
def test_reimporting_an_inspect_log_changes_nothing(logs, log):
    import_log(logs[log])
    before = project_table_counts()
    readings = list(Reading.objects.values_list("id", "verdict", "answer"))
    out = import_log(logs[log])
    assert " 0 new, " in out and "0 new inspect readings" in out
    assert project_table_counts() == before
    assert list(Reading.objects.values_list("id", "verdict", "answer")) == readings


def _rewrite_eval(source: Path, target: Path, change, *, compression: int = zipfile.ZIP_DEFLATED) -> Path:
    """A copy of an .eval archive with `change(name, data) -> data` applied to each entry, written with
    deflate as inspect-ai wrote .eval archives before it moved to zstd."""
    import zipfile_zstd  # noqa: F401 - the source archive's entries are zstd

    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w", compression=compression) as dst:
        for name in src.namelist():
            dst.writestr(name, change(name, src.read(name)))
    return target


def test_an_eval_archive_with_deflate_entries_reads_like_a_zstd_one(logs, tmp_path):
    old = _rewrite_eval(logs["mc"], tmp_path / "old.eval", lambda name, data: data)
    zstd_rows = [(r.id, r.response, r.meta) for r in iter_rows(logs["mc"], fmt=None)]
    assert [(r.id, r.response, r.meta) for r in iter_rows(old, fmt=None)] == zstd_rows


def _first_sample(path: Path) -> str:
    import zipfile_zstd  # noqa: F401

    with zipfile.ZipFile(path) as archive:
        return next(n for n in archive.namelist() if n.startswith("samples/"))


@pytest.mark.parametrize(
    ("change", "field", "needle"),
    [
        (lambda s: s["output"].update(completion=5), "output.completion", "missing or not a string"),
        (lambda s: s.update(target=["A", "B"]), "target", "several correct options"),
        (lambda s: s.update(input=3), "input", "must be a string or a list of chat messages"),
        (lambda s: s["scores"]["choice"].pop("value"), "scores.choice", "must be a Score object with a value"),
    ],
)
def test_a_bad_sample_field_names_the_file_the_sample_and_the_field(logs, tmp_path, change, field, needle):
    bad_entry = _first_sample(logs["mc"])

    def edit(name: str, data: bytes) -> bytes:
        if name != bad_entry:
            return data
        sample = json.loads(data)
        change(sample)
        return json.dumps(sample).encode()

    path = _rewrite_eval(logs["mc"], tmp_path / "bad.eval", edit)
    before = project_table_counts()
    message = import_refusal(path)
    assert f"bad.eval, sample 1 ({bad_entry}), field '{field}'" in message and needle in message
    assert project_table_counts() == before and not Dataset.objects.filter(name="bad").exists()


def test_a_corrupt_eval_archive_is_named_and_nothing_is_written(logs, tmp_path):
    data = logs["mc"].read_bytes()
    path = tmp_path / "cut.eval"
    path.write_bytes(data[: len(data) // 2])  # the central directory, at the end, is gone
    before = project_table_counts()
    message = import_refusal(path)
    assert "cut.eval: not a readable .eval archive" in message
    assert project_table_counts() == before


def test_a_damaged_archive_entry_names_its_sample(logs, tmp_path):
    entry = _first_sample(logs["mc"])
    path = _rewrite_eval(logs["mc"], tmp_path / "damaged.eval", lambda name, data: data)
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(entry)
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    raw[start : start + 8] = b"\xff" * 8  # corrupt the compressed bytes of that entry
    path.write_bytes(bytes(raw))
    message = import_refusal(path)
    assert f"damaged.eval, sample 1 ({entry}): {entry} cannot be read" in message


def test_a_truncated_json_log_names_the_sample_it_stops_in_and_nothing_is_written(logs, tmp_path):
    text = logs["json"].read_text()
    cut = text.index('"epoch": 2')  # inside the third sample (epoch 1 of all three come first)
    path = tmp_path / "cut.json"
    path.write_text(text[:cut])
    assert detect_format(path) == "inspect"
    before = project_table_counts()
    message = import_refusal(path)
    assert "cut.json, sample " in message and "the log ends inside this sample" in message
    assert project_table_counts() == before and not Dataset.objects.filter(name="bad").exists()


def test_a_json_file_that_is_not_an_eval_log_is_named(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"version": 2, "status": "success", "samples": []}')
    message = import_refusal(path, fmt="inspect")
    assert "other.json: not an inspect-ai eval log: no `eval` object" in message


def test_a_changed_score_is_a_changed_row_and_replace_stores_the_new_reading(logs, tmp_path):
    import_log(logs["mc"])
    entry = _first_sample(logs["mc"])

    def flip(name: str, data: bytes) -> bytes:
        if name != entry:
            return data
        sample = json.loads(data)
        sample["scores"]["choice"]["value"] = "I" if sample["scores"]["choice"]["value"] == "C" else "C"
        return json.dumps(sample).encode()

    rescored = _rewrite_eval(logs["mc"], tmp_path / "rescored.eval", flip)
    with pytest.raises(CommandError) as err:
        import_log(rescored)
    assert "already exists" in str(err.value) and "--replace" in str(err.value)
    out = import_log(rescored, replace=True)
    assert "1 replaced" in out and "1 new inspect reading" in out
    with zipfile.ZipFile(rescored) as archive:
        sample = json.loads(archive.read(entry))
    external_id = f"{MC}:{sample['id']}"
    reading = Reading.objects.get(reader_spec__name="inspect:choice", response__external_id=external_id)
    assert reading.detail["value"] == sample["scores"]["choice"]["value"]
    assert reading.verdict == ("correct" if sample["scores"]["choice"]["value"] == "C" else "incorrect")


def test_file_only_commands_read_inspect_logs_through_the_same_dispatcher(logs):
    rows = list(iter_rows(logs["mc"], fmt=None))
    assert {r.id for r in rows} == {f"{MC}:q1", f"{MC}:7", f"{MC}:q3"}
    assert all(r.model == "mockllm/model" for r in rows)


@pytest.mark.system  # a child process
def test_the_read_command_reads_an_inspect_log_with_no_database_server(logs, tmp_path):
    out = tmp_path / "out.jsonl"
    # Port 1 on loopback: nothing listens, so any ORM access would fail loudly.
    env = {"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none", "SECRET_KEY": "x", "PATH": "/usr/bin:/bin"}
    proc = manage("read", str(logs["mc"]), "--reader", "fixed", "--out", str(out), env={**env, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    verdicts = {x["id"]: x["verdict"] for x in map(json.loads, out.read_text().splitlines())}
    assert verdicts == {f"{MC}:q1": "correct", f"{MC}:7": "incorrect", f"{MC}:q3": "no_answer"}


def test_iter_rows_errors_are_row_errors_naming_the_sample(logs, tmp_path):
    entry = _first_sample(logs["mc"])

    def edit(name: str, data: bytes) -> bytes:
        return data.replace(b'"epoch": 1', b'"epoch": 0').replace(b'"epoch":1', b'"epoch":0') if name == entry else data

    path = _rewrite_eval(logs["mc"], tmp_path / "epoch.eval", edit)
    with pytest.raises(RowError) as err:
        list(iter_rows(path, fmt=None))
    assert f"epoch.eval, sample 1 ({entry}), field 'epoch'" in str(err.value)


def _rewrite_json(source: Path, target: Path, change) -> Path:
    """A copy of a .json log with `change(log)` applied, written as json.dumps writes (non-ASCII and
    lone surrogates as \\u escapes, as any JSON writer must for a lone surrogate)."""
    log = json.loads(source.read_text())
    change(log)
    target.write_text(json.dumps(log))
    return target


def test_a_json_log_keeps_a_lone_surrogate_in_a_response_verbatim_as_the_eval_path_does(logs, tmp_path):
    text = "half a pair \ud800 then a whole one \U0001f600"

    def edit(log: dict) -> None:
        log["samples"][0]["output"]["completion"] = text

    path = _rewrite_json(logs["json"], tmp_path / "surrogate.json", edit)
    assert b"\\ud800" in path.read_bytes()
    rows = list(iter_rows(path, fmt=None))
    assert rows[0].response == text
    import_log(path)
    assert Response.objects.get(external_id=rows[0].id).text == text


def test_a_json_log_refuses_a_sample_id_holding_a_lone_surrogate_as_the_eval_path_does(logs, tmp_path):
    def edit(log: dict) -> None:
        log["samples"][1]["id"] = "q\udc80"

    path = _rewrite_json(logs["json"], tmp_path / "surrogate-id.json", edit)
    before = project_table_counts()
    message = import_refusal(path)
    assert "surrogate-id.json, sample 2, field 'id'" in message and "lone surrogate" in message
    assert project_table_counts() == before


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


DEEP = MAX_JSON_DEPTH + 20  # a bit over the bound: small, so a broken reader still cannot hurt the machine


def test_a_json_log_nested_past_the_bound_is_refused_naming_the_sample_and_field(logs, tmp_path):
    def edit(log: dict) -> None:
        log["samples"][1]["metadata"] = {"deep": _nested(DEEP)}

    path = _rewrite_json(logs["json"], tmp_path / "deep.json", edit)
    message = import_refusal(path)
    assert "deep.json, sample 2, field 'metadata.deep[0][0]…'" in message
    assert f"nested more than {MAX_JSON_DEPTH} levels deep" in message
    assert not Dataset.objects.filter(name="bad").exists()


def test_a_json_log_nested_exactly_to_the_bound_imports(logs, tmp_path):
    def edit(log: dict) -> None:
        # A field the import does not keep (a stored metadata is nested a level deeper, in meta).
        log["samples"][0]["events"] = [{"deep": _nested(MAX_JSON_DEPTH - 2)}]

    path = _rewrite_json(logs["json"], tmp_path / "deep-ok.json", edit)
    assert "6 new" in import_log(path)


def test_reading_a_deeply_nested_json_log_takes_memory_linear_in_its_size(logs, tmp_path):
    """ijson.items kept a prefix string per open level: memory quadratic in the depth (a 95 KB file
    took 2.2 GB). These 8,000 levels (an 18 KB file) took 160 MB that way, 2 MB now; the bound stops at 100."""
    import tracemalloc

    header = {k: v for k, v in json.loads(logs["json"].read_text()).items() if k != "samples"}
    sample = '{"id": 1, "metadata": ' + "[" * 8_000 + "]" * 8_000 + "}"
    path = tmp_path / "nest.json"
    path.write_text(json.dumps(header)[:-1] + f', "samples": [{sample}]}}')
    list(iter_rows(logs["json"], fmt=None))  # modules imported on first use are not the file's cost
    tracemalloc.start()
    try:
        with pytest.raises(RowError) as err:
            list(iter_rows(path, fmt=None))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20  # a 1 MB read buffer and the header, whatever the depth
    assert "nest.json, sample 1, field 'metadata[0][0][0]…'" in str(err.value)


def test_an_eval_archive_sample_nested_past_the_bound_is_refused_naming_its_entry(logs, tmp_path):
    entry = _first_sample(logs["mc"])

    def edit(name: str, data: bytes) -> bytes:
        if name != entry:
            return data
        sample = json.loads(data)
        sample["events"] = [{"deep": _nested(DEEP)}]  # a field the import does not even read
        return json.dumps(sample).encode()

    path = _rewrite_eval(logs["mc"], tmp_path / "deep.eval", edit)
    message = import_refusal(path)
    assert f"deep.eval, sample 1 ({entry}), field 'events[0].deep[0]…'" in message
    assert f"nested more than {MAX_JSON_DEPTH} levels deep" in message
