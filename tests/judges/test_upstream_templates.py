"""Upstream judge templates on the loopback server: the grader's own text, which the user supplies,
is what is sent, filled the way upstream fills it, and its hash is part of the judge's identity.

No upstream text is in this repository, so these tests write stand-ins of their own with upstream's
field names and quirks (a doubled brace, lines ending in a space, surrounding newlines)."""

from __future__ import annotations

import dataclasses
import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management.base import CommandError

from adjudication.models import ReaderSpec, Reading
from judges import prompts
from judges.models import Judge, Judgement
from judges.services.judging import judge_config, judge_spec_for, judgements_create

from ..conftest import math_row, run_command
from .conftest import response_ids

pytestmark = pytest.mark.django_db

# Our own words, shaped like simple-evals' grader: its three field names, a literal brace pair,
# two lines ending in a space, and the newlines around it that upstream's .strip() removes.
STAND_IN = (
    "\nGrade the predicted answer against the gold target. \n"
    "A set such as {{1, 2}} stays as written. \n\n"
    "Question: {question}\nGold target: {target}\nPredicted answer: {predicted_answer}\n\n"
    "Reply with one letter: A (CORRECT), B (INCORRECT) or C (NOT_ATTEMPTED).\n"
)
STRIPPED = STAND_IN.strip()

# A stand-in for upstream's simpleqa_eval.py: the template is a module-level string literal with
# .strip(), beside code that must never run (it would write a marker file, then exit).
STAND_IN_PY = f'''"""A stand-in for simple-evals' simpleqa_eval.py, written for this test."""
import pathlib
import sys

pathlib.Path(__file__).with_name("RAN").write_text("the file was executed")
sys.exit(3)
import module_that_does_not_exist

GRADER_TEMPLATE = {STAND_IN!r}.strip()


def grade_sample(question, target, predicted_answer):
    GRADER_TEMPLATE = "a local name, not the module's template"
    return GRADER_TEMPLATE.format(question=question, target=target, predicted_answer=predicted_answer)
'''


def sent_prompts(loopback) -> list[str]:
    return [b["messages"][0]["content"] for b in loopback.stats.bodies]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture
def pin(monkeypatch):
    """Pin simpleqa-upstream's sha256 to a hash the test knows (the real pin is of text we do not ship)."""

    def set_pin(digest: str) -> None:
        spec = prompts.UPSTREAM["simpleqa-upstream"]
        monkeypatch.setitem(prompts.UPSTREAM, "simpleqa-upstream", dataclasses.replace(spec, pinned_sha256=digest))

    return set_pin


def test_simpleqa_upstream_sends_the_supplied_grader_filled_as_simple_evals_fills_it(
    loopback, make_endpoint, make_dataset, tmp_path
):
    make_endpoint()
    path = write(tmp_path, "grader.txt", STAND_IN)
    run_command("add_judge", "gpt-grader", endpoint="loop", template="simpleqa-upstream", template_file=str(path))
    judge = Judge.objects.get(name="gpt-grader")
    assert (judge.template, judge.custom_template) == ("simpleqa-upstream", STRIPPED)

    ds = make_dataset([math_row(0, response="It is {target}, i.e. {{72}}: \\boxed{72}.")], name="free")
    loopback.reply = "A"
    judgements_create(judges=[judge], response_ids=response_ids(ds))
    (prompt,) = sent_prompts(loopback)
    # simple-evals: GRADER_TEMPLATE.strip() then .format(question=..., target=..., predicted_answer=...)
    assert prompt == STRIPPED.format(
        question="Compute 0 + 72 - 0.", target="72", predicted_answer="It is {target}, i.e. {{72}}: \\boxed{72}."
    )
    assert "A set such as {1, 2} stays as written. \n" in prompt
    reading = Reading.objects.get(reader_spec__name="gpt-grader")
    assert reading.verdict == "correct"
    judgement = Judgement.objects.get(reading=reading)
    assert judgement.template_hash == sha256(STRIPPED) and judgement.parser == "simpleqa"


def test_the_template_hash_is_in_the_judges_config_hash(loopback, make_endpoint):
    ep = make_endpoint()
    ours = Judge.objects.create(name="para", endpoint=ep, template="simpleqa")
    upstream = Judge.objects.create(name="verb", endpoint=ep, template="simpleqa-upstream", custom_template=STRIPPED)
    assert judge_config(upstream)["template_hash"] == sha256(STRIPPED)[:16]
    assert judge_config(ours)["template_hash"] != judge_config(upstream)["template_hash"]
    spec_ours, spec_upstream = judge_spec_for(ours), judge_spec_for(upstream)
    assert spec_ours.config_hash != spec_upstream.config_hash
    assert ReaderSpec.objects.get(pk=spec_upstream.pk).config["template"] == "simpleqa-upstream"


def test_simpleqa_upstream_needs_the_users_file_and_says_where_to_get_it(loopback, make_endpoint):
    make_endpoint()
    with pytest.raises(CommandError) as err:
        run_command("add_judge", "sq-up", endpoint="loop", template="simpleqa-upstream")
    message = str(err.value)
    for needed in (
        "--template-file",
        "openai/simple-evals",
        "simpleqa_eval.py",
        "GRADER_TEMPLATE",
        prompts.SIMPLEQA_COMMIT,
    ):
        assert needed in message
    assert not Judge.objects.filter(name="sq-up").exists()


@pytest.mark.system  # a child process
def test_the_grader_is_read_from_simpleqa_eval_py_without_running_it(loopback, make_endpoint, tmp_path):
    make_endpoint()
    path = write(tmp_path, "simpleqa_eval.py", STAND_IN_PY)
    run_command("add_judge", "sq-up", endpoint="loop", template="simpleqa-upstream", template_file=str(path))
    assert Judge.objects.get(name="sq-up").custom_template == STRIPPED
    assert not (tmp_path / "RAN").exists()
    # The stand-in's code is live: run by Python, it leaves the marker that reading it did not.
    assert subprocess.run([sys.executable, str(path)], capture_output=True).returncode == 3
    assert (tmp_path / "RAN").read_text() == "the file was executed"


@pytest.mark.parametrize(
    "source, message",
    [
        ('"""No template here."""\nimport os\nos.system("true")\n', r"no module-level assignment GRADER_TEMPLATE"),
        (
            'def f():\n    GRADER_TEMPLATE = "Q {question} T {target} P {predicted_answer}"\n',
            r"no module-level assignment GRADER_TEMPLATE",
        ),
        (
            'GRADER_TEMPLATE = open("grader.txt").read()\n',
            r"line 1: GRADER_TEMPLATE is not a string literal \(found Call\)",
        ),
        (
            'X = "Q"\n\nGRADER_TEMPLATE = X + " {question} {target} {predicted_answer}"\n',
            r"line 3: GRADER_TEMPLATE is not a string literal \(found BinOp\)",
        ),
        (
            'Q = "{question}"\nGRADER_TEMPLATE = f"{Q} {{target}} {{predicted_answer}}"\n',
            r"line 2: GRADER_TEMPLATE is not a string literal \(found JoinedStr\)",
        ),
        (
            'GRADER_TEMPLATE = b"Q {question} T {target} P {predicted_answer}"\n',
            r"line 1: GRADER_TEMPLATE is not a string literal \(found bytes\)",
        ),
        ('GRADER_TEMPLATE = "a"\nGRADER_TEMPLATE = "b"\n', r"lines 1, 2: GRADER_TEMPLATE is assigned 2 times"),
        ('GRADER_TEMPLATE = """unclosed\n', r"line 1: not valid Python"),
    ],
)
def test_a_simpleqa_eval_py_without_a_string_grader_template_is_refused_naming_the_file(
    loopback, make_endpoint, tmp_path, source, message
):
    make_endpoint()
    path = write(tmp_path, "simpleqa_eval.py", source)
    with pytest.raises(CommandError, match=message) as err:
        run_command("add_judge", "sq-up", endpoint="loop", template="simpleqa-upstream", template_file=str(path))
    assert str(err.value).startswith(str(path))
    assert not Judge.objects.filter(name="sq-up").exists()


@pytest.mark.parametrize("form", ["grader.txt", "simpleqa_eval.py"])
@pytest.mark.parametrize("pinned, verified", [(sha256(STRIPPED), True), (sha256(STAND_IN), False)])
def test_add_judge_says_whether_the_supplied_grader_is_the_pinned_upstream_text(
    loopback, make_endpoint, tmp_path, pin, form, pinned, verified
):
    # The pin is of the stripped text, so the unstripped stand-in's hash is a pin it cannot match.
    pin(pinned)
    make_endpoint()
    path = write(tmp_path, form, STAND_IN_PY if form.endswith(".py") else STAND_IN)
    out = run_command("add_judge", "sq-up", endpoint="loop", template="simpleqa-upstream", template_file=str(path))
    judge = Judge.objects.get(name="sq-up")
    assert prompts.verbatim("simpleqa-upstream", judge.custom_template) is verified
    if verified:
        assert "simpleqa-upstream: verified verbatim upstream" in out and "differs" not in out
    else:
        assert f"differs from the pinned upstream text (sha256 {sha256(STRIPPED)[:16]}, pinned {pinned[:16]}" in out
        assert "verified" not in out


def test_the_admin_shows_whether_a_judges_upstream_text_is_the_pinned_one(admin_client, make_endpoint, pin):
    ep = make_endpoint()
    judge = Judge.objects.create(name="verb", endpoint=ep, template="simpleqa-upstream", custom_template=STRIPPED)
    pin(sha256(STRIPPED))
    page = admin_client.get(f"/admin/judges/judge/{judge.pk}/change/").content.decode()
    assert "simpleqa-upstream: verified verbatim upstream" in page
    pin(sha256("another text"))
    page = admin_client.get(f"/admin/judges/judge/{judge.pk}/change/").content.decode()
    assert "simpleqa-upstream: differs from the pinned upstream text" in page


def test_xverify_upstream_needs_the_users_file_and_says_where_to_get_it(loopback, make_endpoint):
    make_endpoint()
    with pytest.raises(CommandError, match=r"--template-file.*IAAR-Shanghai/xVerify.*judge_prompt\.py"):
        run_command("add_judge", "xv-up", endpoint="loop", template="xverify-upstream")
    assert not Judge.objects.filter(name="xv-up").exists()


@pytest.mark.parametrize(
    "text, message",
    [
        ('Question: """{question}"""\nOutput sentence: """{output}"""\nJudgement:', r"needs the field\(s\) \{answer\}"),
        ("Q {question}\nO {output}\nA {answer}\nbraces {x}", r"line 4: unknown field \{x\}"),
        ("Q {question}\nO {output}\nA {answer}\n\\text{GHz}", r"line 4: unknown field \{GHz\}"),
        ("Q {question}\nO {output} }\nA {answer}", r"line 2: single '\}'"),
    ],
)
def test_a_supplied_upstream_file_is_checked_as_str_format_would(loopback, make_endpoint, tmp_path, text, message):
    make_endpoint()
    path = tmp_path / "judge_prompt.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CommandError, match=message) as err:
        run_command("add_judge", "xv-up", endpoint="loop", template="xverify-upstream", template_file=str(path))
    assert str(path) in str(err.value)


def test_xverify_upstream_sends_the_supplied_file_verbatim(loopback, make_endpoint, make_dataset, tmp_path):
    # A stand-in written for this test with xVerify's field names (the real prompt is not ours to
    # ship): what matters is that the file is sent as it is, filled by str.format rules.
    supplied = (
        'Grade it. Physics: 3 = 3 \\, \\text{{GHz}} counts.\n\nQuestion: """{question}"""\n\n'
        'Output sentence: """{output}"""\n\nCorrect answer: {answer}\n\nJudgement:\n'
    )
    path = tmp_path / "judge_prompt.txt"
    path.write_text(supplied, encoding="utf-8")
    make_endpoint()
    run_command("add_judge", "xv-up", endpoint="loop", template="xverify-upstream", template_file=str(path))
    judge = Judge.objects.get(name="xv-up")
    assert (judge.template, judge.custom_template, judge.parser) == ("xverify-upstream", supplied, "auto")

    ds = make_dataset(n_mc=1, n_math=0)
    loopback.reply = "Correct"
    judgements_create(judges=[judge], response_ids=response_ids(ds))
    (prompt,) = sent_prompts(loopback)
    assert prompt == supplied.format(
        question="Which sociologist wrote question 0?\nA. Durkheim\nB. Weber\nC. Merton\nD. Parsons",
        output="<think>Weber fits best.</think>\nThe answer is (B). [0]",
        answer="B. Weber",
    )
    judgement = Judgement.objects.get(reading__reader_spec__name="xv-up")
    assert judgement.label == "correct" and judgement.parser == "xverify"
    assert judgement.template_hash == hashlib.sha256(supplied.encode("utf-8")).hexdigest()
    assert judge_config(judge)["template_hash"] == judgement.template_hash[:16]


def test_template_file_is_refused_for_our_templates(loopback, make_endpoint, tmp_path):
    make_endpoint()
    path = write(tmp_path, "t.txt", "{question} {target} {predicted_answer}")
    with pytest.raises(CommandError, match="--template-file is for the upstream templates the user supplies"):
        run_command("add_judge", "sq", endpoint="loop", template="simpleqa", template_file=str(path))


def test_the_model_refuses_a_stored_xverify_text_str_format_would_reject(loopback, make_endpoint):
    from django.core.exceptions import ValidationError

    judge = Judge(
        name="xv-up",
        endpoint=make_endpoint(),
        template="xverify-upstream",
        custom_template="Q {question}\nO {output}\nno answer field",
    )
    with pytest.raises(ValidationError, match="needs the field"):
        judge.full_clean()
