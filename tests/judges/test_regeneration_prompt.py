"""Answer Regeneration from the stored prompt (seed 002 §5: "the original input prompt and its
previous output, and a new prefix `Answer:`"), checked on the exact requests the loopback server
receives through real sockets and the real openai client."""

from __future__ import annotations

import pytest

from adjudication.models import ReaderSpec, Reading
from judges.services.regeneration import NO_PROMPT

from ..conftest import math_row, mc_row, run_command
from .conftest import regen

pytestmark = pytest.mark.django_db

# What lm-eval --apply_chat_template renders for Qwen3: the model's own chat template, verbatim.
MC_PROMPT = (
    "<|im_start|>user\nWhich sociologist wrote question 0?\nA. Durkheim\nB. Weber\nC. Merton\nD. Parsons\n"
    "Think step by step, then answer with the letter.<|im_end|>\n<|im_start|>assistant\n"
)
UNFINISHED = "<think>\nDurkheim? No. Merton wrote on anomie, but the Protestant ethic is Weber's, so\n"
MATH_PROMPT = "<|im_start|>user\nCompute 0 + 72 - 0.<|im_end|>\n<|im_start|>assistant\n"
MATH_OUTPUT = "<think>\n0 + 72 = 72, minus 0 is 72.\n</think>\n\nThe result is 72.\n"


def test_multiple_choice_scores_the_stored_prompt_the_output_and_answer_verbatim(loopback, make_endpoint, make_dataset):
    ds = make_dataset([mc_row(0, prompt_text=MC_PROMPT, response=UNFINISHED)], n_mc=0)
    loopback.letter_logprobs = {"A": -3.0, "B": -0.2, "C": -2.0, "D": -5.0}
    r = regen(ds, make_endpoint(logprob_method="completions_echo"))["mc-0"]
    assert (r.answer, r.verdict) == ("B", "correct")
    context = MC_PROMPT + UNFINISHED.rstrip() + "\n\nAnswer:"
    assert loopback.stats.paths == ["/v1/completions"]
    assert loopback.stats.bodies == [
        {
            "model": "loop-model",
            "prompt": [context + " A", context + " B", context + " C", context + " D"],
            "echo": True,
            "logprobs": 1,
            "max_tokens": 1,
            "temperature": 0,
        }
    ]
    assert r.detail["prompt"] == "stored" and "prompt_missing" not in r.detail


def test_an_open_answer_is_generated_from_the_stored_prompt_the_output_and_answer(
    loopback, make_endpoint, make_dataset
):
    ds = make_dataset([math_row(0, prompt_text=MATH_PROMPT, response=MATH_OUTPUT)], n_mc=0)
    loopback.reply = " 72"
    r = regen(ds, make_endpoint())["math-0"]
    assert (r.answer, r.verdict, r.detail["prompt"]) == ("72", "correct", "stored")
    assert loopback.stats.bodies == [
        {
            "model": "loop-model",
            "prompt": MATH_PROMPT + MATH_OUTPUT.rstrip() + "\n\nAnswer:",
            "max_tokens": 32,
            "temperature": 0,
        }
    ]


def test_an_lm_eval_samples_prompt_is_what_regeneration_continues(loopback, make_endpoint, write_jsonl):
    sample = {
        "doc_id": 3,
        "doc": {"question": "Compute 0 + 72 - 0."},
        "target": "72",
        "arguments": {"gen_args_0": {"arg_0": MATH_PROMPT, "arg_1": {"until": ["<|im_end|>"]}}},
        "resps": [[MATH_OUTPUT]],
        "filtered_resps": ["72"],
        "prompt_hash": "h",
    }
    path = write_jsonl([sample], name="samples_math_2026-01-02T10-11-12.jsonl")
    run_command(
        "import_responses", str(path), dataset="lm", fmt="lm-eval", model="qwen3-8b", checkpoint="rl", no_progress=True
    )
    from adjudication.models import Dataset

    loopback.reply = " 72"
    r = regen(Dataset.objects.get(name="lm"), make_endpoint())["math:3"]
    assert r.verdict == "correct"
    (body,) = loopback.stats.bodies
    assert body["prompt"] == MATH_PROMPT + MATH_OUTPUT.rstrip() + "\n\nAnswer:"


def test_chat_sends_the_stored_prompt_as_the_user_message_and_continues_the_output(
    loopback, make_endpoint, make_dataset
):
    user = "Which sociologist wrote question 0?\nA. Durkheim\nB. Weber\nC. Merton\nD. Parsons\nAnswer with a letter."
    ds = make_dataset([mc_row(0, prompt_text=user, response=UNFINISHED)], n_mc=0)
    loopback.chat_top = [("B", -0.1), ("A", -3.0)]
    r = regen(ds, make_endpoint(logprob_method="chat_top_logprobs", top_logprobs=5))["mc-0"]
    assert r.answer == "B"
    (body,) = loopback.stats.bodies
    assert body["messages"] == [
        {"role": "user", "content": user},
        {"role": "assistant", "content": UNFINISHED.rstrip() + "\n\nAnswer:"},
    ]
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False


def test_an_openai_style_chat_adds_no_instruction_unless_configured(loopback, make_endpoint, make_dataset):
    ds = make_dataset([mc_row(0, prompt_text="Q0 with options")], n_mc=0)
    loopback.chat_top = [("B", -0.1)]
    regen(ds, make_endpoint(logprob_method="chat_top_logprobs", flavour="openai"))
    (body,) = loopback.stats.bodies
    assert body["messages"] == [
        {"role": "user", "content": "Q0 with options"},
        {"role": "assistant", "content": mc_row(0)["response"]},
        {"role": "user", "content": "Answer:"},
    ]


def test_without_a_stored_prompt_the_reading_says_the_prompt_was_rebuilt(loopback, make_endpoint, make_dataset):
    ds = make_dataset([mc_row(0, prompt_text=MC_PROMPT), mc_row(1)], n_mc=0)
    loopback.letter_logprobs = {"B": -0.1, "A": -2.0, "C": -2.0, "D": -2.0}
    got = regen(ds, make_endpoint())
    assert got["mc-0"].detail["prompt"] == "stored" and "prompt_missing" not in got["mc-0"].detail
    assert got["mc-1"].detail["prompt"] == "rebuilt" and got["mc-1"].detail["prompt_missing"] == NO_PROMPT
    # the fallback prompt: question, options, output, "Answer:"
    fallback = next(b for b in loopback.stats.bodies if not b["prompt"][0].startswith("<|im_start|>"))
    assert fallback["prompt"][0] == (
        "Which sociologist wrote question 1?\nA. Durkheim\nB. Weber\nC. Merton\n"
        "D. Parsons\n\n" + mc_row(1)["response"] + "\n\nAnswer: A"
    )


def test_an_instruction_is_an_explicit_option_with_its_own_config_hash(loopback, make_endpoint, make_dataset):
    ds = make_dataset([math_row(0, prompt_text=MATH_PROMPT, response=MATH_OUTPUT)], n_mc=0)
    loopback.reply = " 72"
    ep = make_endpoint()
    regen(ds, ep)
    regen(ds, ep, instruction="Reply with the final answer only.")
    plain, instructed = loopback.stats.bodies
    assert plain["prompt"] == MATH_PROMPT + MATH_OUTPUT.rstrip() + "\n\nAnswer:"
    assert instructed["prompt"] == (
        MATH_PROMPT + MATH_OUTPUT.rstrip() + "\n\nReply with the final answer only.\n\nAnswer:"
    )
    specs = {s.config["instruction"]: s.config_hash for s in ReaderSpec.objects.filter(name="regeneration")}
    assert set(specs) == {None, "Reply with the final answer only."} and len(set(specs.values())) == 2
    assert Reading.objects.filter(reader_spec__name="regeneration").count() == 2


@pytest.mark.django_db(transaction=True)
def test_run_readers_takes_the_instruction_and_refuses_a_blank_one(loopback, make_endpoint, make_dataset, eager):
    from django.core.management.base import CommandError

    ds = make_dataset([math_row(0, prompt_text=MATH_PROMPT, response=MATH_OUTPUT)], n_mc=0)
    loopback.reply = " 72"
    make_endpoint("loop")

    def regenerate(instruction: str) -> None:
        run_command(
            "run_readers", dataset=ds.name, readers=["regeneration"], endpoint="loop", regen_instruction=instruction
        )

    regenerate("Final answer only.")
    (body,) = loopback.stats.bodies
    assert body["prompt"].endswith("\n\nFinal answer only.\n\nAnswer:")
    assert ReaderSpec.objects.get(name="regeneration").config["instruction"] == "Final answer only."
    with pytest.raises(CommandError, match=r"--regen-instruction: .*blank"):
        regenerate(" ")
    with pytest.raises(CommandError, match=r"--regen-instruction: .*lone surrogate"):
        regenerate("bad \udcff byte")
    assert ReaderSpec.objects.filter(name="regeneration").count() == 1
    with pytest.raises(CommandError, match="--regen-instruction is for the LLM reader"):
        run_command("run_readers", dataset=ds.name, readers=["boxed"], regen_instruction="x")


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_the_stored_prompt_and_the_instruction_reach_a_real_worker(
    loopback, make_endpoint, make_dataset, celery_worker
):
    ds = make_dataset([math_row(0, prompt_text=MATH_PROMPT, response=MATH_OUTPUT), math_row(1)], n_mc=0)
    loopback.reply = " 72"
    make_endpoint("loop")
    out = run_command(
        "run_readers",
        dataset=ds.name,
        readers=["regeneration"],
        endpoint="loop",
        timeout=120,
        regen_instruction="Final answer only.",
    )
    assert out.split()[:2] == ["regeneration", "2"]
    prompts = sorted(b["prompt"] for b in loopback.stats.bodies)
    assert prompts == sorted(
        [
            MATH_PROMPT + MATH_OUTPUT.rstrip() + "\n\nFinal answer only.\n\nAnswer:",
            "Compute 1 + 72 - 1.\n\n" + math_row(1)["response"] + "\n\nFinal answer only.\n\nAnswer:",
        ]
    )
    got = {
        r.response.external_id: (r.verdict, r.detail["prompt"])
        for r in Reading.objects.filter(reader_spec__name="regeneration").select_related("response")
    }
    assert got == {"math-0": ("correct", "stored"), "math-1": ("correct", "rebuilt")}
