"""lighteval `details` parquet files: field mapping (both layouts), the harness's metrics as readings,
format detection, bad files named by file, row and field, idempotent re-import.

lighteval is not installed here (it needs torch): the files are built with pyarrow to the layout
lighteval writes. src/lighteval/logging/evaluation_tracker.py (`save` / `save_details`) writes
`Dataset.from_list([asdict(detail) for detail in task_details])`, columns sorted by name, to
`{output_dir}/details/{model_name}/{date}/details_{task}_{date}.parquet`; the Detail of lighteval 0.10
and later is `doc` (src/lighteval/tasks/requests.py Doc), `model_response`
(src/lighteval/models/model_output.py ModelResponse) and `metric`; earlier releases' Detail
(src/lighteval/logging/info_loggers.py DetailsLogger.Detail) is flat, and some wrote each column
through str().
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adjudication.ingest.harnesses import detect_format, iter_rows
from adjudication.models import Dataset, ReaderSpec, Reading, Response
from readers.base import config_hash
from tests.ingest.harness_support import import_log, import_refusal

from ..conftest import project_table_counts, shared_data

pytestmark = pytest.mark.django_db

DATE = "2025-06-01T10-11-12.123456"
GPQA_QUERY = "What is the capital of France?\n\nA) London\nB) Paris\nC) Berlin\nD) Madrid\nAnswer:"


def doc(**overrides: Any) -> dict[str, Any]:
    """A lighteval Doc as asdict() gives it (the fields of src/lighteval/tasks/requests.py)."""
    d: dict[str, Any] = {
        "query": GPQA_QUERY,
        "choices": ["A", "B", "C", "D"],
        "gold_index": 1,
        "id": "",
        "original_query": "",
        "specific": None,
        "task_name": "lighteval|gpqa:diamond|0",
        "system_prompt": None,
        "full_prompt": None,
        "instruction": "",
        "fewshot_sorting_class": None,
        "num_asked_few_shots": 0,
        "num_effective_few_shots": 0,
        "unconditioned_query": None,
        "fewshot_samples": [],
        "sampling_methods": ["GENERATIVE"],
        "generation_size": 32768,
        "do_sample": False,
        "stop_sequences": [],
        "use_logits": False,
        "num_samples": 1,
    }
    d.update(overrides)
    return d


def model_response(text: list[str], **overrides: Any) -> dict[str, Any]:
    """A lighteval ModelResponse as asdict() gives it (src/lighteval/models/model_output.py)."""
    r: dict[str, Any] = {
        "input": "<|user|>" + GPQA_QUERY + "<|assistant|>",
        "input_tokens": [1, 2, 3],
        "text": text,
        "output_tokens": [[4, 5]],
        "text_post_processed": None,
        "reasonings": [],
        "logprobs": [],
        "argmax_logits_eq_gold": [],
        "logits": None,
        "unconditioned_logprobs": None,
        "truncated_tokens_count": 0,
        "padded_tokens_count": 0,
    }
    r.update(overrides)
    return r


def detail(d: dict, response: dict, metric: dict) -> dict[str, Any]:
    return {"doc": d, "metric": metric, "model_response": response}  # sorted, as lighteval saves them


def write_details(tmp_path: Path, rows: list[dict], *, task: str = "lighteval|gpqa:diamond|0", layout: bool = True):
    """The file where lighteval puts it: details/<org>/<model>/<date>/details_<task>_<date>.parquet."""
    folder = tmp_path / "details" / "org" / "qwen-7b" / DATE if layout else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"details_{task}_{DATE}.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def gpqa_rows() -> list[dict]:
    extracted = {"extracted_predictions": ["B", "B"], "extracted_golds": ["B", "B"]}
    return [
        detail(
            doc(id="rec1", specific=extracted),
            model_response(["Paris is the capital.\nAnswer: B"]),
            {"extractive_match": 1.0},
        ),
        detail(
            doc(specific={"extracted_predictions": ["C", "C"], "extracted_golds": ["B", "B"]}),
            model_response(["Berlin.\nAnswer: C"]),
            {"extractive_match": 0.0},
        ),
        detail(
            doc(specific={"extracted_predictions": [], "extracted_golds": ["B", "B"]}),
            model_response(["I am not sure."]),
            {"extractive_match": 0.0},
        ),
    ]


def gsm8k_rows() -> list[dict]:
    solution = " Natalia sold 48/2 = 24 clips in May.\nAltogether 48+24 = 72 clips.\n#### 72"
    return [
        detail(
            doc(
                query="Question: Natalia sold 48 clips in April and half as many in May. How many?\nAnswer:",
                original_query="Natalia sold 48 clips in April and half as many in May. How many?",
                choices=[solution],
                gold_index=0,
                task_name="lighteval|gsm8k|0",
            ),
            model_response(["48 + 24 = 72. The answer is 72."], input="Question: Natalia …\nAnswer:"),
            {"em": 0, "qem": 1, "f1": 0.5},
        )
    ]


def test_a_details_file_maps_docs_to_questions_choices_gold_responses_and_ids(tmp_path):
    out = import_log(write_details(tmp_path, gpqa_rows()), fmt="lighteval", checkpoint="rl")
    assert "3 new" in out
    # The run's model and checkpoint, the task, and the doc's own id where it has one, else the row's position.
    assert set(Response.objects.values_list("external_id", flat=True)) == {
        "org/qwen-7b:rl:lighteval|gpqa:diamond|0:rec1",
        "org/qwen-7b:rl:lighteval|gpqa:diamond|0:1",
        "org/qwen-7b:rl:lighteval|gpqa:diamond|0:2",
    }
    r = Response.objects.select_related("question", "run").get(
        external_id="org/qwen-7b:rl:lighteval|gpqa:diamond|0:rec1"
    )
    assert r.question.text == GPQA_QUERY and r.question.benchmark == "lighteval|gpqa:diamond|0"
    # Two or more choices and one gold index: multiple choice, the gold its letter.
    assert r.question.choices == ["A", "B", "C", "D"] and r.question.gold == "B"
    assert r.text == "Paris is the capital.\nAnswer: B"
    # The model from lighteval's own folder layout (an org/model name), the checkpoint from the command line.
    assert (r.run.model, r.run.checkpoint) == ("org/qwen-7b", "rl")
    assert r.prompt_text == "<|user|>" + GPQA_QUERY + "<|assistant|>"
    assert r.meta["lighteval"]["metric"] == {"extractive_match": 1.0}
    assert r.meta["lighteval"]["extracted_predictions"] == ["B", "B"]


def test_a_generative_gold_is_its_reference_text_and_gsm8k_keeps_what_follows_the_hashes(tmp_path):
    import_log(write_details(tmp_path, gsm8k_rows(), task="lighteval|gsm8k|0"), model="m")
    r = Response.objects.select_related("question", "run").get(external_id="m:lighteval|gsm8k|0:0")
    assert r.question.gold == "72" and r.question.choices == []
    assert r.question.text == "Natalia sold 48 clips in April and half as many in May. How many?"
    assert r.run.model == "m"  # --model wins over the folder's name
    assert r.prompt_text == "Question: Natalia …\nAnswer:"


def test_binary_metrics_are_readings_of_a_harness_reader_with_name_version_and_config_hash(tmp_path):
    out = import_log(write_details(tmp_path, gpqa_rows()))
    assert "3 new lighteval readings" in out
    spec = ReaderSpec.objects.get(name="lighteval:extractive_match")
    assert spec.kind == "harness" and spec.version == "details-v2"
    assert spec.config == {"harness": "lighteval", "metric": "extractive_match"}
    assert spec.config_hash == config_hash(spec.config)
    readings = {r.response.external_id.rsplit(":", 1)[1]: r for r in Reading.objects.select_related("response")}
    right, wrong, none = readings["rec1"], readings["1"], readings["2"]
    # The answer is the text lighteval matched (last), the normalized form its parsed one (first).
    assert (right.verdict, right.answer, right.normalized, right.canonical) == ("correct", "B", "B", "B")
    assert (wrong.verdict, wrong.answer, wrong.canonical) == ("incorrect", "C", "C")
    # Nothing extracted and scored 0: no_answer, the harness's score kept.
    assert (none.verdict, none.answer) == ("no_answer", None) and none.detail["score"] == 0.0


def test_a_partial_score_is_no_verdict_and_makes_no_reading(tmp_path):
    import_log(write_details(tmp_path, gsm8k_rows(), task="lighteval|gsm8k|0"))
    verdicts = dict(Reading.objects.values_list("reader_spec__name", "verdict"))
    assert verdicts == {"lighteval:em": "incorrect", "lighteval:qem": "correct"}  # f1 = 0.5 is none
    meta = Response.objects.get().meta["lighteval"]
    assert meta["metric"] == {"em": 0, "qem": 1, "f1": 0.5}


def test_several_generations_are_one_response_without_readings(tmp_path):
    row = detail(doc(), model_response(["Answer: B", "Answer: C"]), {"pass@1:2_samples": 0.5, "maj@2": 1.0})
    out = import_log(write_details(tmp_path, [row]))
    assert "0 new lighteval readings" in out
    r = Response.objects.get()
    assert r.text == "Answer: B" and r.meta["lighteval"]["generations"] == 2


def v1_row(**overrides: Any) -> dict[str, Any]:
    """A flat Detail of lighteval before 0.10 (src/lighteval/logging/info_loggers.py)."""
    row: dict[str, Any] = {
        "choices": [],
        "cont_tokens": [[4, 5]],
        "example": "What is 6*7?",
        "full_prompt": "Question: What is 6*7?\nAnswer:",
        "gold": [" 42"],
        "gold_index": [],
        "input_tokens": [[1, 2, 3]],
        "instruction": "",
        "metrics": {"em": 1.0, "qem": 1.0},
        "num_asked_few_shots": 0,
        "num_effective_few_shots": 0,
        "padded": [0],
        "pred_logits": [],
        "prediction_logits": [],
        "predictions": [" 42"],
        "specifics": None,
        "truncated": [0],
    }
    row.update(overrides)
    return row


@pytest.mark.parametrize("stringified", [False, True], ids=["typed", "str-cast"])
def test_the_flat_layout_of_earlier_releases_reads_typed_or_cast_to_str(tmp_path, stringified):
    rows = [v1_row(), v1_row(example="What is 2+3?", gold=[" 5"], predictions=[" 6"], metrics={"em": 0.0})]
    if stringified:
        rows = [{k: str(v) for k, v in row.items()} for row in rows]
    path = write_details(tmp_path, rows, task="lighteval|arith|0")
    import_log(path)
    r = Response.objects.select_related("question").get(external_id="org/qwen-7b:lighteval|arith|0:1")
    assert (r.question.text, r.question.gold, r.text) == ("What is 2+3?", "5", " 6")
    assert r.prompt_text == "Question: What is 6*7?\nAnswer:"
    spec = ReaderSpec.objects.get(name="lighteval:em")
    assert spec.version == "details-v1"
    assert dict(Reading.objects.filter(reader_spec=spec).values_list("response__external_id", "verdict")) == {
        "org/qwen-7b:lighteval|arith|0:0": "correct",
        "org/qwen-7b:lighteval|arith|0:1": "incorrect",
    }


def test_a_str_cast_cell_nested_past_the_bound_is_named_with_its_row_and_field(tmp_path):
    deep = "[" * 120 + "]" * 120  # over the bound of 100 levels, under ast's own limit of 200
    rows = [{k: str(v) for k, v in v1_row().items()}, {**{k: str(v) for k, v in v1_row().items()}, "specifics": deep}]
    path = write_details(tmp_path, rows, task="lighteval|arith|0")
    before = project_table_counts()
    message = import_refusal(path)
    assert "row 2, field 'specifics[0][0][0]…'" in message and "nested more than 100 levels deep" in message
    assert project_table_counts() == before


def test_the_format_is_told_from_the_file_when_omitted(tmp_path):
    path = write_details(tmp_path, gpqa_rows(), layout=False)
    renamed = path.rename(tmp_path / f"details_lighteval|gpqa:diamond|0_{DATE}.bin")
    assert detect_format(renamed) == "lighteval"
    canonical = tmp_path / "rows.jsonl"
    canonical.write_text(json.dumps({"id": "x", "question": "q", "gold": "1", "response": "1"}) + "\n")
    assert detect_format(canonical) == "canonical"
    assert "3 new" in import_log(renamed, task="lighteval|gpqa:diamond|0")


def test_reimporting_a_details_file_changes_nothing(tmp_path):
    path = write_details(tmp_path, gpqa_rows())
    import_log(path)
    before = project_table_counts()
    readings = list(Reading.objects.values_list("id", "verdict", "answer"))
    out = import_log(path)
    assert "0 new, 3 unchanged" in out and "0 new lighteval readings" in out
    assert project_table_counts() == before
    assert list(Reading.objects.values_list("id", "verdict", "answer")) == readings


def test_a_log_likelihood_task_has_no_response_to_read_and_is_named(tmp_path):
    rows = [*gpqa_rows()[:1], detail(doc(), model_response([], logprobs=[-1.2, -0.3]), {"acc": 1})]
    before = project_table_counts()
    message = import_refusal(write_details(tmp_path, rows))
    assert "row 2, field 'model_response.text'" in message and "no generated text" in message
    assert project_table_counts() == before and not Dataset.objects.filter(name="bad").exists()


@pytest.mark.parametrize(
    ("row", "field", "needle"),
    [
        (detail(doc(query=None), model_response(["B"]), {"em": 0}), "doc.query", "must be a string"),
        (detail(doc(gold_index=7), model_response(["B"]), {"em": 0}), "doc.gold_index", "out of range for 4 choices"),
    ],
)
def test_a_wrong_type_names_the_file_the_row_and_the_field(tmp_path, row, field, needle):
    path = write_details(tmp_path, [*gpqa_rows()[:2], row])
    message = import_refusal(path)
    assert f"{path.name}, row 3, field '{field}'" in message and needle in message
    assert not Dataset.objects.filter(name="bad").exists()


@pytest.mark.parametrize(
    ("overrides", "field", "needle"),
    [
        ({"query": 12}, "doc.query", "must be a string, got int"),
        ({"specific": {"extracted_predictions": "B"}}, "doc.specific.extracted_predictions", "a list of strings"),
        ({"choices": "ABCD"}, "doc.choices", "must be a list of strings"),
    ],
)
def test_a_column_of_the_wrong_type_names_its_field_at_the_first_row(tmp_path, overrides, field, needle):
    # A parquet column holds one type: a wrong type is the whole file's, and the first row names it.
    rows = [detail(doc(**overrides), model_response(["B"]), {"em": 0}) for _ in range(2)]
    message = import_refusal(write_details(tmp_path, rows))
    assert f"row 1, field '{field}'" in message and needle in message


def test_a_missing_column_is_named(tmp_path):
    rows = [{"doc": r["doc"], "model_response": r["model_response"]} for r in gpqa_rows()]
    message = import_refusal(write_details(tmp_path, rows))
    assert "not a lighteval details file: missing column(s) metric" in message


def test_a_corrupt_parquet_file_is_named_and_nothing_is_written(tmp_path):
    path = write_details(tmp_path, gpqa_rows())
    data = path.read_bytes()
    path.write_bytes(data[:-40])  # the footer (schema and row groups) is cut off
    before = project_table_counts()
    message = import_refusal(path, fmt="lighteval")
    assert f"{path.name}: not a readable parquet file" in message
    assert project_table_counts() == before


def test_a_task_not_in_the_file_name_must_be_given(tmp_path):
    path = tmp_path / "mine.parquet"
    pq.write_table(pa.Table.from_pylist(gpqa_rows()), path)
    assert "cannot tell the task from the file name" in import_refusal(path)
    assert "3 new" in import_log(path, task="gpqa")


def test_file_only_commands_read_details_through_the_same_dispatcher(tmp_path):
    rows = list(iter_rows(write_details(tmp_path, gpqa_rows()), fmt=None))
    assert [r.gold for r in rows] == ["B", "B", "B"] and rows[0].model == "org/qwen-7b"


@pytest.mark.system  # reads ../shared/data
def test_lighteval_s_own_metric_test_docs_import_with_its_expected_verdicts(tmp_path):
    """lighteval's declarative metric tests (shared data) hold real Doc and ModelResponse values and
    the metric's expected output: as details rows they import with those verdicts."""
    cases = json.loads(
        shared_data("lighteval-extractive-match-tests", "metric_test_cases", "gpqa_instruct_metric.json").read_text()
    )["test_cases"]
    rows = [detail(doc(**c["doc"]), model_response(c["model_response"]["text"]), c["expected_output"]) for c in cases]
    import_log(write_details(tmp_path, rows, task="lighteval|gpqa_instruct|0"))
    expected = {
        f"org/qwen-7b:lighteval|gpqa_instruct|0:{i}": "correct"
        if c["expected_output"]["extractive_match"] == 1
        else "incorrect"
        for i, c in enumerate(cases)
    }
    got = dict(
        Reading.objects.filter(reader_spec__name="lighteval:extractive_match").values_list(
            "response__external_id", "verdict"
        )
    )
    assert got == expected and len(got) == len(cases)
