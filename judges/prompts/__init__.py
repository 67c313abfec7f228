"""Prompt templates: the built-in judge graders, and the question block Answer Regeneration falls
back on when no rendered prompt was imported.

Our templates (`simpleqa`, `xverify`, custom files) use the placeholders `{question}`,
`{choices}`, `{target}` (alias `{gold}`) and `{response}`. Only these names are substituted, so the
braces of LaTeX in questions and responses, and any other braces in a custom template, pass
through untouched. `simpleqa` and `xverify` are our paraphrases of the upstream graders.

Upstream templates are the graders' own text, byte for byte, rendered the way upstream renders
them (Python `str.format`: their own field names, `{{` and `}}` for literal braces). None ships
here: the user supplies each one (`add_judge --template-file`), and `how_to_get` says where from.

* `simpleqa-upstream`: simple-evals' SimpleQA `GRADER_TEMPLATE`, as a text file or as upstream's
  `simpleqa_eval.py` itself (the string is read with `ast`, never executed). This is also seed
  002's "GPTGrader" (Wei et al., 2024). A sha256 pinned at one upstream commit tells whether the
  supplied text is that upstream text exactly.
* `xverify-upstream`: xVerify's judge prompt, as a text file.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from readers.options import letters

HERE = Path(__file__).resolve().parent
BUILTIN = ("simpleqa", "xverify")
PLACEHOLDERS = ("question", "choices", "target", "gold", "response")
_PLACEHOLDER = re.compile(r"\{(question|choices|target|gold|response)\}")


@dataclass(frozen=True)
class Upstream:
    """An upstream grader template, supplied by the user: where its text comes from and its own
    field names, each mapped to one of our values (question, choices, target, response)."""

    name: str
    source: str
    licence: str
    fields: dict[str, str]
    how_to_get: str
    # sha256 of the upstream text at the commit in `source` ("" when none is pinned).
    pinned_sha256: str = ""
    # The module-level string a supplied `.py` file is read from ("" when only text files are read).
    python_name: str = ""
    # Upstream calls .strip() on its template before filling it; so do we, whatever the file's form.
    strip: bool = False


SIMPLEQA_COMMIT = "e28223688200a7f71984b647c30965823ba727b3"
XVERIFY_COMMIT = "5e3606ac82dfacde5120bbf6db295979bad10e1a"

UPSTREAM: dict[str, Upstream] = {
    "simpleqa-upstream": Upstream(
        name="simpleqa-upstream",
        source=f"openai/simple-evals simpleqa_eval.py GRADER_TEMPLATE (after .strip()), commit {SIMPLEQA_COMMIT}",
        licence="MIT (simple-evals' LICENSE): not redistributed here",
        fields={"question": "question", "target": "target", "predicted_answer": "response"},
        how_to_get=(
            "This project does not ship simple-evals' grader text; supply it. Either download "
            f"https://github.com/openai/simple-evals/blob/{SIMPLEQA_COMMIT}/simpleqa_eval.py and pass that "
            ".py file as it is (its module-level GRADER_TEMPLATE string is read with Python's ast module; "
            "nothing in the file is executed), or copy the GRADER_TEMPLATE string's text (what Python holds "
            "before .format(): {question}, {target} and {predicted_answer} stay as they are) into a UTF-8 "
            "file. Pass it with --template-file. Either way the text is stripped, as upstream strips it, and "
            "its sha256 is compared with the one pinned for that commit."
        ),
        pinned_sha256="063c04ea798f91c4706c050b66a721afc77a458b12d8f0d72286d4b0eee8a3ee",
        python_name="GRADER_TEMPLATE",
        strip=True,
    ),
    "xverify-upstream": Upstream(
        name="xverify-upstream",
        source=f"IAAR-Shanghai/xVerify src/xVerify/prompts/judge_prompt.py, commit {XVERIFY_COMMIT}",
        licence="CC BY-NC-ND 4.0: not redistributed here",
        fields={"question": "question", "output": "response", "answer": "target"},
        how_to_get=(
            "xVerify's licence (CC BY-NC-ND 4.0) does not let this project ship its prompt. Open "
            f"https://github.com/IAAR-Shanghai/xVerify/blob/{XVERIFY_COMMIT}/src/xVerify/prompts/judge_prompt.py, "
            "copy the judge prompt string's text (what Python holds before .format(): {question}, {output} and "
            "{answer} stay as they are) into a UTF-8 file, unchanged, and pass it with --template-file. "
            "Check that your use is non-commercial."
        ),
    ),
}
_FORMAT_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
_FORMAT_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")


@cache
def builtin(name: str) -> str:
    if name not in BUILTIN:
        raise KeyError(f"no built-in template {name!r}; built in: {', '.join(BUILTIN)}")
    return (HERE / f"{name}.txt").read_text(encoding="utf-8")


def check_upstream(name: str, text: str, *, origin: str = "template") -> None:
    """A user-supplied upstream template must use exactly upstream's field names, in Python format
    syntax: an unknown field or a single brace is what str.format would reject upstream too."""
    spec = UPSTREAM[name]
    seen: set[str] = set()
    for m in _FORMAT_TOKEN.finditer(text):
        token, field_name = m.group(0), m.group(1)
        if token in ("{{", "}}"):
            continue
        line = text.count("\n", 0, m.start()) + 1
        if field_name is None:
            raise ValueError(
                f"{origin}, line {line}: single {token!r} (str.format needs {token * 2} for a literal brace)"
            )
        if field_name not in spec.fields:
            raise ValueError(
                f"{origin}, line {line}: unknown field {{{field_name}}} for {name} "
                f"(upstream's fields: {', '.join('{' + f + '}' for f in spec.fields)})"
            )
        seen.add(field_name)
    missing = [f for f in spec.fields if f not in seen]
    if missing:
        raise ValueError(
            f"{origin}: {name} needs the field(s) {', '.join('{' + f + '}' for f in missing)}; "
            "is this the upstream prompt?"
        )


def _python_string(name: str, path: Path, source: bytes) -> str:
    """The module-level `name = "..."` (optionally `"...".strip()`) of a Python file, read from its
    syntax tree: the file is parsed, never run, and anything but a string literal is refused."""
    try:
        tree = ast.parse(source, filename=str(path))
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        raise ValueError(
            f"{path}{f', line {line}' if line else ''}: not valid Python "
            f"({getattr(exc, 'msg', exc)}); pass the .py file unchanged or the template as text"
        ) from None
    found: list[ast.expr] = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        else:
            continue
        if node.value is not None and any(isinstance(t, ast.Name) and t.id == name for t in targets):
            found.append(node.value)
    if not found:
        raise ValueError(f'{path}: no module-level assignment {name} = "..."; is this the upstream file?')
    if len(found) > 1:
        raise ValueError(
            f"{path}, lines {', '.join(str(v.lineno) for v in found)}: {name} is assigned "
            f"{len(found)} times; the upstream file assigns it once"
        )
    (value,) = found
    stripped = False
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "strip"
        and not value.args
        and not value.keywords
    ):
        value, stripped = value.func.value, True
    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        found_kind = type(value.value).__name__ if isinstance(value, ast.Constant) else type(value).__name__
        raise ValueError(
            f"{path}, line {value.lineno}: {name} is not a string literal (found {found_kind}); "
            "only a literal, optionally with .strip(), is read, since the file is never run"
        )
    return value.value.strip() if stripped else value.value


def load_upstream(name: str, path: Path) -> str:
    """The template text of a user-supplied upstream file, as upstream holds it before .format():
    a `.py` file gives its module-level string (for templates that name one), any other file its
    UTF-8 text. Checked as str.format would read it; errors name the file and line."""
    spec = UPSTREAM[name]
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    raw = path.read_bytes()
    if spec.python_name and path.suffix == ".py":
        text = _python_string(spec.python_name, path, raw)
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            raise ValueError(f"{path}, line {line}: not UTF-8 ({exc.reason})") from None
    if spec.strip:
        text = text.strip()
    check_upstream(name, text, origin=str(path))
    return text


def verbatim(name: str, text: str) -> bool | None:
    """Whether `text` is exactly the upstream text pinned for this template (None: none is pinned)."""
    pinned = UPSTREAM[name].pinned_sha256
    return template_hash(text) == pinned if pinned else None


def verbatim_note(name: str, text: str) -> str:
    """One line saying whether a supplied upstream text is the pinned one, for people to read."""
    spec, same = UPSTREAM[name], verbatim(name, text)
    if same is None:
        return f"{name}: no upstream hash is pinned, so the supplied text is not verified"
    if same:
        return f"{name}: verified verbatim upstream (sha256 equals the one pinned for {spec.source})"
    return (
        f"{name}: differs from the pinned upstream text (sha256 {template_hash(text)[:16]}, pinned "
        f"{spec.pinned_sha256[:16]}, {spec.source}); accepted, but a bias measured with it is not "
        "comparable with one measured with the upstream grader"
    )


def template_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def choices_block(choices: list[str] | tuple[str, ...]) -> str:
    return "\n".join(f"{letter}. {text}" for letter, text in zip(letters(len(choices)), choices))


def question_block(question: str, choices: list[str] | tuple[str, ...]) -> str:
    """The question and its options, one `X. option` line each: what a judge is shown, and
    Answer Regeneration's stand-in for the original prompt when the import carried none."""
    return question.rstrip() + ("\n" + choices_block(choices) if choices else "")


def target_text(gold: str, choices: list[str] | tuple[str, ...], gold_letter: str | None) -> str:
    """The gold as a judge should see it: for multiple choice both the letter and the option text."""
    if choices and gold_letter:
        index = ord(gold_letter) - ord("A")
        if 0 <= index < len(choices):
            return f"{gold_letter}. {choices[index]}"
    return gold


def sendable(text: str) -> str:
    """Text that can travel as UTF-8 JSON: stored responses may hold lone surrogates (the response
    store keeps them verbatim), which no server accepts; each becomes U+FFFD in what is sent."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def render(
    template: str,
    *,
    question: str,
    choices: list[str] | tuple[str, ...],
    gold: str,
    gold_letter: str | None,
    response: str,
    upstream: str | None = None,
) -> str:
    """The prompt sent for one response. With `upstream`, `template` is that grader's own text and
    is filled as upstream fills it (str.format with its field names); values are inserted once,
    never re-read as template syntax."""
    values = {
        "question": question_block(question, choices),
        "choices": choices_block(choices),
        "target": target_text(gold, choices, gold_letter),
        "gold": target_text(gold, choices, gold_letter),
        "response": response,
    }
    if upstream is not None:
        fields = UPSTREAM[upstream].fields

        def fill(m: re.Match[str]) -> str:
            if m.group(1) is None:
                return m.group(0)[0]  # "{{" -> "{", "}}" -> "}"
            return values[fields[m.group(1)]]

        return sendable(_FORMAT_FIELD.sub(fill, template))
    return sendable(_PLACEHOLDER.sub(lambda m: values[m.group(1)], template))


def check_custom(text: str) -> None:
    """A usable custom template shows the judge at least the response."""
    if "{response}" not in text:
        raise ValueError("a judge template must contain {response} (and usually {question} and {target})")
