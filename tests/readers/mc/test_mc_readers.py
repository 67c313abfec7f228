"""Pins readers/mc/ to upstream behaviour: lm-eval 0.4.13 filters and metric, seed 002's five
MC extractors, and seed 000's box-only reader. Pure Python: runs with `-p no:django`."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readers import registry
from readers.base import ANSWER_FORMS, VERDICTS, Item, Reading
from readers.mc.boxed import last_box
from readers.mc.lm_eval import (
    FALLBACK,
    GSM8K_METRIC,
    _sub_ignore,
    exact_match,
    exact_match_normalize,
    multi_choice_regex_filter,
    regex_filter,
)
from readers.mc.seed002 import SEED002_ANSWER_IS_CORRECT, SEED002_STRICT

from ...conftest import read_jsonl, shared_data
from ..budget import read_within_budget

SEED002 = ("strict-match", "flexible-extract", "instructed-format", "answer-is-correct", "last-extract")
LM_EVAL = (
    "gsm8k-strict-match",
    "gsm8k-flexible-extract",
    "gsm8k-cot-strict-match",
    "mmlu-pro-custom-extract",
    "multi-choice-regex",
)
ALL = SEED002 + LM_EVAL + ("boxed",)

SOCIOLOGISTS = ("Durkheim", "Weber", "Merton", "Parsons")
GSM8K_STRICT = r"#### (\-?[0-9\.\,]+)"
GSM8K_FLEX = r"(-?[$0-9.,]{2,})|(-?[0-9]+)"
GSM8K_COT_STRICT = r"The answer is (\-?[0-9\.\,]+)."
MMLU_PRO = r"answer is \(?([ABCDEFGHIJ])\)?"
MMLU_FEWSHOT_GET_ANSWER = r"(?<=answer is )(.*)(?=.)"


def read(name: str, response: str, gold: str = "B", choices: tuple[str, ...] = SOCIOLOGISTS) -> Reading:
    return registry.get(name).read(Item(response=response, gold=gold, choices=choices))


def spanned(reading: Reading, response: str) -> str | None:
    return response[reading.span[0] : reading.span[1]] if reading.span else None


# --------------------------------------------------------------------------------------------
# Registry and declarations
# --------------------------------------------------------------------------------------------


def test_all_names_registered_with_declarations() -> None:
    names = registry.names()
    for name in ALL:
        assert name in names
        reader = registry.get(name)
        assert reader.name == name
        assert reader.contract and set(reader.contract) <= set(ANSWER_FORMS)
        assert reader.upstream
        assert reader.version == ("0.4.13" if name in LM_EVAL else "1.0")
    assert registry.get("strict-match").contract == {"option_letter"}
    assert registry.get("gsm8k-strict-match").contract == {"plain_number"}
    assert registry.get("boxed").contract == {"boxed", "option_letter"}
    assert "gsm8k/gsm8k.yaml" in registry.get("gsm8k-strict-match").upstream


def test_config_hashes_differ_per_named_config() -> None:
    hashes = {registry.get(name).config_hash for name in ALL}
    assert len(hashes) == len(ALL)


# --------------------------------------------------------------------------------------------
# lm-eval RegexFilter / exact_match / MultiChoiceRegexFilter ports (catalogue §1.2–1.7)
# --------------------------------------------------------------------------------------------


def test_regex_filter_basics() -> None:
    assert regex_filter("no number here", GSM8K_STRICT).value == FALLBACK
    assert not regex_filter("no number here", GSM8K_STRICT).matched
    assert regex_filter("x\n#### 1,234 \n", GSM8K_STRICT).value == "1,234"
    # Several groups: the first non-empty one of the selected tuple.
    assert regex_filter("a 7 b 12", GSM8K_FLEX, -1).value == "12"
    # All groups empty in the selected tuple -> fallback (RegexFilter), stripped.
    assert regex_filter("x", "()()", 0, " [none] ").value == "[none]"
    # No match at all -> fallback returned unstripped.
    assert regex_filter("x", "(y)", 0, " [none] ").value == " [none] "
    # Out-of-range group_select on a non-empty match list raises, as upstream's list indexing.
    with pytest.raises(IndexError):
        regex_filter("#### 1", GSM8K_STRICT, 3)
    assert regex_filter("#### 1 #### 2 #### 3", GSM8K_STRICT, -2).value == "2"
    assert regex_filter(None, GSM8K_STRICT).value == FALLBACK  # type: ignore[arg-type]


def test_empty_group_returns_empty_string_not_fallback() -> None:
    # Catalogue §1.2: the MMLU pattern on text ending in `answer is B` yields "".
    ext = regex_filter("so the answer is B", MMLU_FEWSHOT_GET_ANSWER)
    assert ext.matched and ext.value == ""


@pytest.mark.parametrize(
    ("response", "captured", "scores"),
    [
        ("answer is (B).", "(B)", True),
        ("answer is (B)", "(B", True),  # punctuation is deleted on both sides: b == b
        ("answer is (B) because X.", "(B) because X", False),
    ],
)
def test_mmlu_flan_cot_fewshot_get_answer(response: str, captured: str, scores: bool) -> None:
    ext = regex_filter(response, MMLU_FEWSHOT_GET_ANSWER)
    assert ext.value == captured
    assert exact_match(ext.value, "(B)", ignore_case=True, ignore_punctuation=True) is scores


def test_exact_match_options_in_order() -> None:
    gsm: dict[str, Any] = dict(regexes_to_ignore=list(GSM8K_METRIC.regexes_to_ignore or ()), ignore_case=True)
    assert exact_match("$1,234.", "Janet ... #### 1234", **gsm)
    assert exact_match("18.", "18", **gsm)
    assert not exact_match("18.00", "18", **gsm)
    # Order matters: "\.$" runs after "," so "1,." -> "1." -> "1".
    assert exact_match_normalize("1,.", [",", r"\.$"]) == "1"
    assert exact_match_normalize("1.,", [r"\.$", ","]) == "1."
    assert exact_match_normalize("A-b c!", ignore_case=True, ignore_punctuation=True) == "ab c"
    assert exact_match_normalize("a1b2", ignore_numbers=True) == "ab"
    # Only ASCII punctuation for the metric (unlike MultiChoiceRegexFilter's Unicode P*).
    assert exact_match_normalize("«b»", ignore_punctuation=True) == "«b»"


def test_exact_match_numpy_quirks() -> None:
    # Trailing NULs vanish whenever NumPy stores a string; the ignore-regexes see the result.
    assert exact_match("5\x00", "5")
    assert exact_match_normalize("5.\x00", [",", r"\.$"]) == "5"
    # np.char.lower keeps the item width: "İX" (2 chars) lowers to 3 chars, cut to 2.
    assert exact_match_normalize("İX", ignore_case=True) == "i\u0307"


def _numpy_exact_match_one(pred: str, ref: str, **kw: Any) -> bool:
    """The upstream algorithm written against NumPy, to check the NumPy-free port."""
    np = pytest.importorskip("numpy")
    import string

    preds: Any = [pred]
    refs: Any = [ref]
    if kw.get("regexes_to_ignore") is not None:
        for s in kw["regexes_to_ignore"]:
            preds = np.array([re.sub(s, "", x) for x in preds])
            refs = np.array([re.sub(s, "", x) for x in refs])
    else:
        preds, refs = np.asarray(preds), np.asarray(refs)
    if kw.get("ignore_case"):
        preds, refs = np.char.lower(preds), np.char.lower(refs)
    if kw.get("ignore_punctuation"):
        table = string.punctuation.maketrans("", "", string.punctuation)
        preds, refs = np.char.translate(preds, table=table), np.char.translate(refs, table=table)
    if kw.get("ignore_numbers"):
        table = string.digits.maketrans("", "", string.digits)
        preds, refs = np.char.translate(preds, table=table), np.char.translate(refs, table=table)
    return bool((preds == refs)[0])


_EM_TEXT = st.lists(st.sampled_from([*"aB1.,$# \x00\nİ-", "#### "]), max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(pred=_EM_TEXT, ref=_EM_TEXT, case=st.booleans(), punct=st.booleans(), nums=st.booleans(), gsm=st.booleans())
def test_exact_match_port_equals_numpy_reference(
    pred: str, ref: str, case: bool, punct: bool, nums: bool, gsm: bool
) -> None:
    kw: dict[str, Any] = dict(
        ignore_case=case,
        ignore_punctuation=punct,
        ignore_numbers=nums,
        regexes_to_ignore=list(GSM8K_METRIC.regexes_to_ignore or ()) if gsm else None,
    )
    assert exact_match(pred, ref, **kw) == _numpy_exact_match_one(pred, ref, **kw)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["#", " ", "a", "\n", "#### ", "##"]), max_size=20).map("".join))
def test_fast_hash_ignore_regex_is_exact(s: str) -> None:
    assert _sub_ignore("(?s).*#### ", s) == re.sub("(?s).*#### ", "", s)


def test_multi_choice_regex_filter_steps() -> None:
    kw: dict[str, Any] = dict(regex_pattern=r"(\([A-Z]\))", group_select=-1, ignore_case=True, ignore_punctuation=True)
    # Primary regex, last match, case-sensitive, any letter A-Z (not limited to the choices).
    assert multi_choice_regex_filter("(A) then (C)", SOCIOLOGISTS, **kw).value == "(C)"
    assert multi_choice_regex_filter("maybe (E)", SOCIOLOGISTS, **kw).value == "(E)"
    # Choice-text fallback on the normalised response (Unicode P* removed, lowercased).
    ext = multi_choice_regex_filter("It was «Merton», surely.", SOCIOLOGISTS, **kw)
    assert (ext.value, ext.step) == ("(C)", "choice_text")
    # Longest-first alternation (PyPI 0.4.13): "Guilty" cannot shadow "Guilty of Romance".
    guilty = ("Guilty", "Guilty of Romance")
    assert multi_choice_regex_filter("It is guilty of romance", guilty, **kw).value == "(B)"
    # Colon-letter fallback on the raw response.
    ext = multi_choice_regex_filter("Final:   D", SOCIOLOGISTS, **kw)
    assert (ext.value, ext.step) == ("(D)", "colon_letter")
    assert multi_choice_regex_filter("nothing", SOCIOLOGISTS, **kw).value == FALLBACK
    # A choice key that keeps a leading space after punctuation removal misses the lookup:
    # upstream then returns the matched text itself, not a letter.
    assert multi_choice_regex_filter("x - foo", ("- foo", "bar"), **kw).value == "foo"


@pytest.mark.system  # reads ../shared/data
def test_filter_test_vectors() -> None:
    rows = read_jsonl(shared_data("lm-eval-harness-filters", "filter_test_vectors.jsonl"))
    assert len(rows) == 2
    for row in rows:
        assert row["filter"] == "multi_choice_regex"
        got = multi_choice_regex_filter(row["response"], row["choices"], **row["settings"])
        assert got.value == row["expected_output"], row["id"]


# Which task_regex_filters.jsonl rows each named config claims to reproduce.
CLAIMS: dict[str, list[tuple[str, str]]] = {
    "gsm8k-strict-match": [("lm_eval/tasks/gsm8k/gsm8k.yaml", "strict-match")],
    "gsm8k-flexible-extract": [("lm_eval/tasks/gsm8k/gsm8k.yaml", "flexible-extract")],
    "gsm8k-cot-strict-match": [
        ("lm_eval/tasks/gsm8k/gsm8k-cot.yaml", "strict-match"),
        ("lm_eval/tasks/gsm8k/gsm8k-cot-zeroshot.yaml", "strict-match"),
    ],
    "mmlu-pro-custom-extract": [("lm_eval/tasks/mmlu_pro/_default_template_yaml", "custom-extract")],
    "multi-choice-regex": [
        ("lm_eval/tasks/mmlu/flan_cot_zeroshot/_mmlu_flan_cot_zeroshot_template_yaml", "flexible-extract")
    ],
}


@pytest.mark.system  # reads ../shared/data
def test_named_configs_equal_task_rows() -> None:
    rows = read_jsonl(shared_data("lm-eval-harness-filters", "task_regex_filters.jsonl"))
    by_key = {(r["yaml_path"], r["filter_name"]): r for r in rows if r["function"] in ("regex", "multi_choice_regex")}
    for name, claims in CLAIMS.items():
        cfg = registry.get(name).config
        for key in claims:
            row = by_key[key]
            assert cfg.regex_pattern == row["regex_pattern"], (name, key)
            assert cfg.group_select == row.get("group_select", 0), (name, key)
            assert cfg.fallback == row.get("fallback", FALLBACK), (name, key)
            if row["function"] == "multi_choice_regex":
                assert cfg.ignore_case == row.get("ignore_case", False)
                assert cfg.ignore_punctuation == row.get("ignore_punctuation", False)
                assert cfg.regexes_to_ignore == row.get("regexes_to_ignore")
    metric = next(
        r for r in rows if r["yaml_path"] == "lm_eval/tasks/gsm8k/gsm8k.yaml" and r["function"] == "metric:exact_match"
    )
    for name in ("gsm8k-strict-match", "gsm8k-flexible-extract", "gsm8k-cot-strict-match"):
        m = registry.get(name).config.metric
        assert list(m.regexes_to_ignore or ()) == metric["regexes_to_ignore"]
        assert (m.ignore_case, m.ignore_punctuation) == (metric["ignore_case"], metric["ignore_punctuation"])
    # Seed 002's strict-match is the flan_cot_zeroshot strict pattern, deliberately with the last match.
    strict = by_key[("lm_eval/tasks/mmlu/flan_cot_zeroshot/_mmlu_flan_cot_zeroshot_template_yaml", "strict-match")]
    assert SEED002_STRICT == strict["regex_pattern"] == registry.get("strict-match").config.regex_pattern
    assert registry.get("strict-match").config.group_select == -1 != strict.get("group_select", 0)


# --------------------------------------------------------------------------------------------
# Named configs as readers: catalogue §1.5–1.7 quirks with their exact inputs
# --------------------------------------------------------------------------------------------


def test_gsm8k_cot_trailing_wildcard_truncation() -> None:
    r = read("gsm8k-cot-strict-match", "… The answer is 42", gold="42", choices=())
    assert (r.verdict, r.answer) == ("incorrect", "4")
    r = read("gsm8k-cot-strict-match", "… The answer is 42.", gold="42", choices=())
    assert (r.verdict, r.answer) == ("correct", "42")


def test_gsm8k_currency() -> None:
    strict = read("gsm8k-cot-strict-match", "The answer is $18.00.", gold="18", choices=())
    assert strict.verdict == "no_answer" and strict.answer is None
    assert strict.detail["filter_output"] == "[invalid]"
    flex = read("gsm8k-flexible-extract", "The answer is $18.00.", gold="18", choices=())
    assert (flex.verdict, flex.answer, flex.normalized) == ("incorrect", "$18.00.", "18.00")


def test_gsm8k_leftmost_strict_and_last_flexible() -> None:
    recited = "Q: There are 15 trees ... The answer is 6.\nNow ours: 3 + 5 = 8. The answer is 8."
    strict = read("gsm8k-cot-strict-match", recited, gold="8", choices=())
    assert (strict.verdict, strict.answer) == ("incorrect", "6")
    # The trailing wildcard cannot eat a newline, so "6." backs off to "6"; before a space it keeps "6.".
    strict = read("gsm8k-cot-strict-match", "The answer is 6. Next: The answer is 8.", gold="8", choices=())
    assert (strict.verdict, strict.answer, strict.normalized) == ("incorrect", "6.", "6")
    flex = read("gsm8k-flexible-extract", recited, gold="8", choices=())
    assert (flex.verdict, flex.answer, flex.normalized) == ("correct", "8.", "8")
    # A number after the answer wins for flexible-extract.
    after = read("gsm8k-flexible-extract", "The answer is 8 apples.\nQuestion: 12 eggs", gold="8", choices=())
    assert (after.verdict, after.answer) == ("incorrect", "12")


def test_gsm8k_case_sensitive_and_full_solution_reference() -> None:
    assert read("gsm8k-cot-strict-match", "the answer is 7.", gold="7", choices=()).verdict == "no_answer"
    solution = "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n#### 72"
    r = read("gsm8k-strict-match", "She sold 72.\n#### 72", gold=solution, choices=())
    assert r.verdict == "correct" and r.detail["target_normalized"] == "72"
    r = read("gsm8k-strict-match", "So #### 1,234.", gold="1234", choices=())
    assert (r.verdict, r.answer, r.normalized) == ("correct", "1,234.", "1234")
    assert read("gsm8k-strict-match", "So #### $1,234.", gold="1234", choices=()).verdict == "no_answer"
    r = read("gsm8k-cot-strict-match", "The answer is 72.", gold=solution, choices=())
    assert r.verdict == "correct" and r.detail["target"] == "72"


def test_mmlu_pro_first_occurrence_optional_parens() -> None:
    text = "The answer is (B). Hmm, no: the answer is C."
    r = read("mmlu-pro-custom-extract", text, gold="B", choices=tuple("abcdefghij"))
    assert (r.verdict, r.answer, spanned(r, text)) == ("correct", "B", "B")
    assert read("mmlu-pro-custom-extract", "answer is J", gold="(J)").verdict == "correct"
    # No word boundary: the D of "Definitely" is read.
    assert read("mmlu-pro-custom-extract", "The answer is Definitely A", gold="D").answer == "D"
    assert read("mmlu-pro-custom-extract", "Answer: B", gold="B").verdict == "no_answer"


def test_multi_choice_regex_reader() -> None:
    r = read("multi-choice-regex", "(A) looks wrong; I pick (B).", gold="(B)")
    assert (r.verdict, r.answer) == ("correct", "(B)")
    assert read("multi-choice-regex", "I pick (B).", gold="B").verdict == "correct"  # punctuation ignored
    text = "My final choice is Merton."
    r = read("multi-choice-regex", text, gold="(C)")
    assert (r.verdict, r.answer, spanned(r, text)) == ("correct", "(C)", "Merton")
    r = read("multi-choice-regex", "Answer:B", gold="(B)")
    assert (r.verdict, r.answer, r.detail["step"]) == ("correct", "(B)", "colon_letter")
    none = read("multi-choice-regex", "no idea", gold="(B)")
    assert none.verdict == "no_answer" and none.detail["filter_output"] == "[invalid]"
    # Items stored without choices: the colon fallback uses A-D.
    assert read("multi-choice-regex", "Answer: C", gold="(C)", choices=()).verdict == "correct"


@pytest.mark.system  # reads ../shared/data
def test_mmlu_pro_released_predictions_reproduced() -> None:
    """MMLU-Pro's own first runs used only `answer is \\(?([A-J])\\)?`: custom-extract must agree."""
    path = shared_data("mmlu-pro-model-outputs", "mmlu_pro_cot_outputs_sample.jsonl")
    reader = registry.get("mmlu-pro-custom-extract")
    checked = 0
    for row in read_jsonl(path):
        if not row["model"].startswith(("Mixtral", "Phi-3", "Qwen1.5")):
            continue
        r = reader.read(Item(row["model_output"], row["answer"], tuple(row["options"])))
        assert (r.answer if r.verdict != "no_answer" else None) == (row["pred_as_released"] or None)
        assert r.verdict == (
            "no_answer"
            if not row["pred_as_released"]
            else "correct"
            if row["pred_as_released"] == row["answer"]
            else "incorrect"
        )
        checked += 1
    assert checked > 900


# --------------------------------------------------------------------------------------------
# Seed 002's five extractors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "letter"),
    [
        ("strict-match", "The answer is (A).\nWait, re-checking. The answer is (B).", "B"),
        ("flexible-extract", "First (A) looked right... after all (B) is it.", "B"),
        ("instructed-format", '{"answer": "A"}\nOn reflection: {"answer": "B"}', "B"),
        ("answer-is-correct", "Answer: A. Hmm, no, B is the answer.", "B"),
        ("last-extract", "I lean to A here, but B is better.", "B"),
    ],
)
def test_self_correction_last_match_wins(name: str, text: str, letter: str) -> None:
    r = read(name, text, gold=letter)
    assert (r.verdict, r.answer) == ("correct", letter)
    assert spanned(r, text) == letter  # the span points at the letter itself
    assert r.detail["gold_letter"] == letter


@pytest.mark.parametrize("name", (*SEED002, "boxed"))
def test_no_answer_class(name: str) -> None:
    r = read(name, "I am not sure; it depends on the definition used.", gold="B")
    assert r.verdict == "no_answer" and r.answer is None


def test_strict_match_capture_rules() -> None:
    # Capture normalised like lm-eval exact_match(ignore_case, ignore_punctuation).
    assert read("strict-match", "So the answer is **b**.").verdict == "correct"
    r = read("strict-match", "The answer is (B) because Weber.")
    assert (r.verdict, r.answer) == ("incorrect", "(B) because Weber")
    # `(.*)(?=.)` needs a character after the capture: end of text captures "".
    assert read("strict-match", "The answer is B").verdict == "no_answer"
    assert read("strict-match", "The answer: B.").verdict == "correct"
    assert read("strict-match", "Answer: B").verdict == "no_answer"


def test_flexible_extract_fallbacks_and_letter_range() -> None:
    assert read("flexible-extract", "Clearly Weber.").answer == "B"  # option text fallback
    assert read("flexible-extract", "Final answer: B").answer == "B"  # ": X" fallback
    # The paper's [A-D]: "(E)" is not an option of a four-choice item.
    assert read("flexible-extract", "(E) or (B)? (E).").answer == "B"
    ten = tuple(f"opt{i}" for i in range(10))
    assert read("flexible-extract", "(E) or (B)? (J).", gold="J", choices=ten).verdict == "correct"


def test_instructed_format_is_strict() -> None:
    for text in ('"answer": "C"', '{"Answer":"(C)"}', 'answer": "**C**"', '"answer": "C"}.'):
        assert read("instructed-format", text, gold="C").verdict == "correct", text
    for text in ("answer: C", "The answer is C.", "**Answer:** C", r"\boxed{C}", '"answer": C'):
        assert read("instructed-format", text, gold="C").verdict == "no_answer", text


@pytest.mark.parametrize(
    "text",
    [
        "**Answer:** C",
        "Answer: **C**",
        "**Answer**: (C)",
        "The answer is **C**.",
        "the answer should be (C)",
        "The correct answer is C",
        "correct answer:  C",
        "So C is correct.",
        "**C** is the correct option",
        "(C) is the answer",
        "C should be the answer",
    ],
)
def test_answer_is_correct_variants(text: str) -> None:
    r = read("answer-is-correct", text, gold="C")
    assert (r.verdict, spanned(r, text)) == ("correct", "C"), text


def test_answer_is_correct_quirks() -> None:
    # No word boundary (as in the appendix and in mmlu_pro): "Definitely" reads D.
    assert read("answer-is-correct", "The answer is Definitely not clear").answer == "D"
    # "X could be the correct answer" is in the paper's prose but not in its regex.
    assert read("answer-is-correct", "C could be the correct answer").verdict == "no_answer"


_AIC_PAPER = "|".join(
    [
        r"\**[Aa]nswer:\**\s*(\(?[A-D]\)?)",
        r"\**[Aa]nswer\**:\s*(\(?[A-D]\)?)",
        r"[Aa]nswer is \**(\(?[A-D]\)?)\**",
        r"[Aa]nswer should be \**(\(?[A-D]\)?)\**",
        r"[Aa]nswer:\s+\**(\(?[A-D]\)?)\**",
        r"correct answer is \**(\(?[A-D]\)?)\**",
        r"correct answer:\s+\**(\(?[A-D]\)?)\**",
        r"\**(\(?[A-D]\)?)\** is correct",
        r"\**(\(?[A-D]\)?)\** is the correct",
        r"\**(\(?[A-D]\)?)\** is the answer",
        r"\**(\(?[A-D]\)?)\** should be the answer",
    ]
)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "*",
                "**",
                "A",
                "B",
                "(",
                ")",
                " ",
                "x",
                "\n",
                " is correct",
                " is the answer",
                "Answer",
                ":",
                "answer is ",
                "correct answer: ",
                " should be the answer",
                "D",
            ]
        ),
        max_size=14,
    ).map("".join)
)
def test_answer_is_correct_without_leading_stars_is_equivalent(text: str) -> None:
    assert re.findall(SEED002_ANSWER_IS_CORRECT, text) == re.findall(_AIC_PAPER, text)


def test_last_extract_quirks() -> None:
    # Needs a non-alphanumeric character on both sides: a final letter is not seen.
    assert read("last-extract", "(A) is wrong. Answer: B").answer == "A"
    # Neighbours share one separator: " A B " yields A only.
    assert read("last-extract", "x A B ", gold="A").answer == "A"
    # MMLU-Pro letters: the pronoun " I " is option I on a ten-choice item, not on a four-choice one.
    ten = tuple(f"opt{i}" for i in range(10))
    assert read("last-extract", "(B) is it, I think", gold="B", choices=ten).answer == "I"
    assert read("last-extract", "(B) is it, I think", gold="B").answer == "B"


def test_seed002_figure3_like_output() -> None:
    """Figure 3: answer-is-correct reads the thought, the final boxed option text defeats it,
    last-extract reads the unit "C" of the option text."""
    choices = ("10 °F", "0 K", "25 °C", "300 K")
    text = (
        "<think>Room temperature... I think B is correct? No: the kelvin value is too low."
        "</think>\nThe correct answer is: $$\\boxed{\\text{25 °C}}$$"
    )
    assert read("answer-is-correct", text, gold="C", choices=choices).answer == "B"
    last = read("last-extract", text, gold="C", choices=choices)
    assert last.answer == "C" and last.span is not None
    assert text[last.span[0] - 1 : last.span[1]] == "°C"
    # "answer is:" is not "answer is ": strict-match fails, as in the paper.
    assert read("strict-match", text, gold="C", choices=choices).verdict == "no_answer"
    assert read("instructed-format", text, gold="C", choices=choices).verdict == "no_answer"
    boxed = read("boxed", text, gold="C", choices=choices)
    assert (boxed.verdict, boxed.answer) == ("incorrect", "\\text{25 °C}")  # text is not mapped


def test_gold_forms() -> None:
    for gold in ("B", "(B)", " b. ", "Weber"):
        assert read("last-extract", "pick (B) now", gold=gold).verdict == "correct", gold
    bad = read("last-extract", "pick (B) now", gold="Max Weber, probably")
    assert bad.verdict == "error" and "gold" in bad.detail["reason"]


# --------------------------------------------------------------------------------------------
# boxed
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        r"Thus \boxed{C}.",
        r"$\boxed{\text{C}}$",
        r"\boxed{(C)}",
        r"\boxed{\textbf{C}}",
        r"so $\boxed C$",
        r"\fbox{C}",
        r"\boxed{ C. }",
        r"\boxed{B} wait, \boxed{C}",
        r"\boxed{B} then \fbox{C}",
        r"\boxed {\text{(C)}}",
    ],
)
def test_boxed_letter_forms(text: str) -> None:
    r = read("boxed", text, gold="C")
    assert (r.verdict, r.answer, spanned(r, text)) == ("correct", "C", "C"), text


def test_boxed_span_skips_wrapper_letters() -> None:
    text = r"Final: \boxed{\textbf{B}}"
    r = read("boxed", text, gold="B")
    assert (r.verdict, r.span, spanned(r, text)) == ("correct", (len(text) - 3, len(text) - 2), "B")


def test_boxed_no_box_and_malformed() -> None:
    assert read("boxed", "The answer is C.", gold="C").verdict == "no_answer"
    # The last box is unbalanced (truncated output): no fallback to the earlier box.
    r = read("boxed", r"\boxed{C} and finally \boxed{\frac{1}{2}", gold="C")
    assert r.verdict == "no_answer" and "unbalanced" in r.detail["reason"]
    assert read("boxed", r"\boxed{}", gold="C").verdict == "no_answer"
    assert read("boxed", "ends with \\boxed", gold="C").verdict == "no_answer"


def test_boxed_option_text_is_not_mapped() -> None:
    r = read("boxed", r"\boxed{Merton}", gold="C")
    assert (r.verdict, r.answer) == ("incorrect", "Merton")
    assert read("boxed", r"\boxed{c}", gold="C").verdict == "incorrect"  # letters are upper-case


def test_boxed_open_ended() -> None:
    text = r"So the total is $\boxed{\frac{1}{2}}$."
    r = read("boxed", text, gold="\\frac{1}{2}", choices=())
    assert (r.verdict, spanned(r, text)) == ("correct", "\\frac{1}{2}")
    assert read("boxed", r"\boxed{18.}", gold="18", choices=()).verdict == "correct"
    assert read("boxed", r"\boxed{\text{18}}", gold="$18$", choices=()).verdict == "correct"
    assert read("boxed", r"\boxed{\$18}", gold="18", choices=()).verdict == "correct"
    # Light normalisation only: not an equivalence checker.
    assert read("boxed", r"\boxed{0.5}", gold="\\frac{1}{2}", choices=()).verdict == "incorrect"
    assert read("boxed", r"\boxed{18}", gold="18.0", choices=()).verdict == "incorrect"


def test_boxed_nested_braces() -> None:
    assert last_box(r"\boxed{\{1, \frac{2}{3}\}}")[0] == r"\{1, \frac{2}{3}\}"  # type: ignore[index]
    deep = "\\boxed{" + "{" * 10_000 + "C" + "}" * 10_001
    (r,) = read_within_budget("boxed", [Item(response=deep, gold="C", choices=SOCIOLOGISTS)], budget_s=2.0)
    assert r.verdict == "incorrect"


# --------------------------------------------------------------------------------------------
# Hostile inputs: always a Reading, within the isolation pool's budget (timed in bench/hostile_bench.py)
# --------------------------------------------------------------------------------------------

MB = 1_000_000
HOSTILE = {
    "nul": "\x00" * 1000 + "The answer is (B).\x00",
    "surrogate": "\ud800 The answer is (B). \udfff" + "\ud800" * 1000,
    "letters": "a" * MB,
    "stars": "*" * MB,
    "letter_then_stars": "A" + "*" * MB,
    "spaces": " " * MB,
    "digits": "The answer is " + "1" * MB,
    "answer_is": "The answer is " * (MB // 14),
    "colons": ": " * (MB // 2),
    "letters_spaced": " A" * (MB // 2),
    "answer_colon": "Answer:" + " " * MB,
    "open_braces": "\\boxed{" + "{" * MB,
    "nested_braces": "\\boxed{" + "{" * 10_000 + "C" + "}" * 10_001,
    "many_boxes": "\\boxed{A}" * (MB // 9),
    "parens": "(A)" * (MB // 3),
    "hashes": "#### " + "1," * (MB // 2),
    "no_hashes_digits": "1" * MB,
    "quotes": 'answer": "' * (MB // 10),
}


@pytest.mark.parametrize("name", ALL)
def test_hostile_inputs_are_read_within_budget(name: str) -> None:
    cases = [(label, choices) for label in HOSTILE for choices in (SOCIOLOGISTS, ())]
    items = [
        Item(response=HOSTILE[label], gold="B" if choices or name not in LM_EVAL else "1", choices=choices)
        for label, choices in cases
    ]
    labels = [(label, "mc" if choices else "open") for label, choices in cases]
    for label, r in zip(labels, read_within_budget(name, items, budget_s=5.0, labels=labels), strict=True):
        assert isinstance(r, Reading) and r.verdict in VERDICTS, (label, r)
        json.dumps(r.to_dict())  # serialisable (lone surrogates survive json.dumps)
