"""Importing the rendered prompt a response was generated from: canonical `prompt_text` and
lm-eval's `arguments`, stored verbatim, with bad values named by file, line and field."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError

from adjudication.models import Response

from ..conftest import lm_eval_sample, math_row, mc_row, project_table_counts, run_command

pytestmark = pytest.mark.django_db

QWEN_PROMPT = (
    "<|im_start|>user\nWhich sociologist wrote question 0?\nA. Durkheim\nB. Weber\nC. Merton\n"
    "D. Parsons<|im_end|>\n<|im_start|>assistant\n"
)
SAMPLES = "samples_arc_2026-01-02T10-11-12.jsonl"


def import_error(path, **options) -> str:
    before = project_table_counts()
    options.setdefault("dataset", "d")
    with pytest.raises(CommandError) as err:
        run_command("import_responses", str(path), no_progress=True, **options)
    assert project_table_counts() == before  # all or nothing
    return str(err.value)


def test_a_canonical_prompt_text_is_stored_verbatim_and_its_absence_is_null(write_jsonl):
    nasty = QWEN_PROMPT + "trailing spaces and a NUL\x00 and \ud800  "
    rows = [mc_row(0, prompt_text=QWEN_PROMPT), mc_row(1, prompt_text=nasty), mc_row(2), math_row(0, prompt_text=None)]
    run_command("import_responses", str(write_jsonl(rows)), dataset="d", no_progress=True)
    stored = dict(Response.objects.values_list("external_id", "prompt_text"))
    assert stored == {"mc-0": QWEN_PROMPT, "mc-1": nasty, "mc-2": None, "math-0": None}
    # a known field: not swept into meta.extra_fields
    assert "extra_fields" not in Response.objects.get(external_id="mc-0").meta


def test_reimporting_rows_without_a_prompt_is_unchanged_and_adding_one_needs_replace(write_jsonl):
    run_command("import_responses", str(write_jsonl([mc_row(0)])), dataset="d", no_progress=True)
    out = run_command("import_responses", str(write_jsonl([mc_row(0)])), dataset="d", no_progress=True)
    assert "0 new, 1 unchanged" in out
    with_prompt = write_jsonl([mc_row(0, prompt_text=QWEN_PROMPT)], name="again.jsonl")
    message = import_error(with_prompt)
    assert "line 1" in message and "--replace" in message
    run_command("import_responses", str(with_prompt), dataset="d", replace=True, no_progress=True)
    assert Response.objects.get().prompt_text == QWEN_PROMPT
    out = run_command("import_responses", str(with_prompt), dataset="d", no_progress=True)
    assert "0 new, 1 unchanged" in out


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (42, "must be a string (the rendered prompt), got int"),
        (["<|im_start|>user"], "must be a string (the rendered prompt), got list"),
        ("", "must not be empty"),
        ("  \n ", "must not be empty"),
    ],
)
def test_a_bad_canonical_prompt_text_names_file_line_and_field(write_jsonl, value, needle):
    message = import_error(write_jsonl([mc_row(0), mc_row(1), mc_row(2, prompt_text=value)]))
    assert "in.jsonl, line 3, field 'prompt_text'" in message and needle in message


@pytest.mark.parametrize(
    "arguments",
    [
        {"gen_args_0": {"arg_0": QWEN_PROMPT, "arg_1": {"until": ["<|im_end|>"], "max_gen_toks": 4096}}},
        [[QWEN_PROMPT, {"until": ["<|im_end|>"]}]],
    ],
    ids=["samples-file-dict", "raw-list"],
)
def test_lm_eval_arguments_give_the_rendered_prompt(write_jsonl, arguments):
    path = write_jsonl([lm_eval_sample(0, arguments=arguments)], name=SAMPLES)
    run_command("import_responses", str(path), dataset="lm", fmt="lm-eval", no_progress=True)
    assert Response.objects.get().prompt_text == QWEN_PROMPT


def test_lm_eval_loglikelihood_requests_share_their_context_and_the_first_is_kept(write_jsonl):
    context = "Question: Which is a mammal?\nAnswer:"
    arguments = {f"gen_args_{i}": {"arg_0": context, "arg_1": f" {c}"} for i, c in enumerate(["a", "b", "c"])}
    path = write_jsonl([lm_eval_sample(0, arguments=arguments)], name=SAMPLES)
    run_command("import_responses", str(path), dataset="lm", fmt="lm-eval", no_progress=True)
    assert Response.objects.get().prompt_text == context


@pytest.mark.parametrize(
    "arguments",
    [
        None,
        {"gen_args_0": {"arg_0": ['[{"role": "user", "content": "Question 0?"}]'], "arg_1": {}}},  # chat-API run
        {"gen_args_0": {"arg_0": "", "arg_1": {}}},
    ],
    ids=["absent", "chat-messages", "empty-context"],
)
def test_lm_eval_samples_without_a_rendered_prompt_import_with_none(write_jsonl, arguments):
    sample = lm_eval_sample(0) if arguments is None else lm_eval_sample(0, arguments=arguments)
    path = write_jsonl([sample], name=SAMPLES)
    run_command("import_responses", str(path), dataset="lm", fmt="lm-eval", no_progress=True)
    assert Response.objects.get().prompt_text is None


@pytest.mark.parametrize(
    ("arguments", "field", "needle"),
    [
        ("Q: ...", "arguments", "must be an object or a list, got str"),
        ({"gen_args_1": {"arg_0": "x"}}, "arguments.gen_args_0", "missing or not an object"),
        ({"gen_args_0": ["x"]}, "arguments.gen_args_0", "missing or not an object"),
        ({"gen_args_0": {"arg_1": {}}}, "arguments.gen_args_0.arg_0", "missing"),
        ({"gen_args_0": {"arg_0": 7}}, "arguments.gen_args_0.arg_0", "must be a string (the rendered prompt), got int"),
        ([], "arguments[0]", "missing or not a list"),
        ([{"arg_0": "x"}], "arguments[0]", "missing or not a list"),
        ([[{"role": "user"}]], "arguments[0][0]", "must be a string (the rendered prompt), got dict"),
    ],
)
def test_malformed_lm_eval_arguments_are_named(write_jsonl, arguments, field, needle):
    path = write_jsonl([lm_eval_sample(0), lm_eval_sample(1, arguments=arguments)], name=SAMPLES)
    message = import_error(path, fmt="lm-eval")
    assert f"{SAMPLES}, line 2, field '{field}'" in message and needle in message


# -- a rendered prompt under `prompt` (issue 36 item 2) -------------------------------------------


def test_a_rendered_prompt_under_prompt_is_stored_as_prompt_text_with_no_prompt_id(write_jsonl):
    """issue 36 item 2: a `prompt` longer than a prompt id, or over several lines, is the rendered prompt."""
    long_one_line = "Answer the following question. " * 10  # 310 characters, more than the id's 200
    rows = [mc_row(0, prompt=QWEN_PROMPT), mc_row(1, prompt=long_one_line), mc_row(2, prompt="cot-v1")]
    run_command("import_responses", str(write_jsonl(rows)), dataset="d", no_progress=True)
    stored = {r.external_id: (r.run.prompt, r.prompt_text) for r in Response.objects.select_related("run")}
    assert stored == {"mc-0": ("", QWEN_PROMPT), "mc-1": ("", long_one_line), "mc-2": ("cot-v1", None)}


def test_a_rendered_prompt_under_both_prompt_and_prompt_text_is_taken_once(write_jsonl):
    rows = [mc_row(0, prompt=QWEN_PROMPT, prompt_text=QWEN_PROMPT)]
    run_command("import_responses", str(write_jsonl(rows)), dataset="d", no_progress=True)
    response = Response.objects.select_related("run").get()
    assert (response.run.prompt, response.prompt_text) == ("", QWEN_PROMPT)


def test_a_long_prompt_beside_another_prompt_text_is_an_error_naming_the_field_to_use(write_jsonl):
    long_prompt = QWEN_PROMPT * 2  # over the id's 200 characters
    message = import_error(write_jsonl([mc_row(0, prompt=long_prompt, prompt_text="something else")]))
    assert "line 1, field 'prompt'" in message
    assert "is a prompt id (one line, at most 200 characters)" in message and "'prompt_text'" in message


def test_a_prompt_that_is_not_a_string_says_where_a_rendered_prompt_goes(write_jsonl):
    messages = [{"role": "user", "content": "Which sociologist?"}]
    message = import_error(write_jsonl([mc_row(0, prompt=messages)]))
    assert "field 'prompt'" in message and "the rendered prompt goes in 'prompt_text'" in message
