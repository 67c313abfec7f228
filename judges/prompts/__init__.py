"""Prompt templates: the built-in judge graders, and the question block Answer Regeneration falls
back on when no rendered prompt was imported.

Placeholders are `{question}`, `{choices}`, `{target}` (alias `{gold}`) and `{response}`. Only
these names are substituted, so the braces of LaTeX in questions and responses, and any other
braces in a custom template, pass through untouched.
"""
from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILTIN = ("simpleqa", "xverify")
PLACEHOLDERS = ("question", "choices", "target", "gold", "response")
_PLACEHOLDER = re.compile(r"\{(question|choices|target|gold|response)\}")


@lru_cache(maxsize=None)
def builtin(name: str) -> str:
    if name not in BUILTIN:
        raise KeyError(f"no built-in template {name!r}; built in: {', '.join(BUILTIN)}")
    return (HERE / f"{name}.txt").read_text(encoding="utf-8")


def template_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def letters(n: int) -> list[str]:
    return [chr(ord("A") + i) for i in range(n)]


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


def render(template: str, *, question: str, choices: list[str] | tuple[str, ...], gold: str,
           gold_letter: str | None, response: str) -> str:
    values = {
        "question": question_block(question, choices),
        "choices": choices_block(choices),
        "target": target_text(gold, choices, gold_letter),
        "gold": target_text(gold, choices, gold_letter),
        "response": response,
    }
    return sendable(_PLACEHOLDER.sub(lambda m: values[m.group(1)], template))


def check_custom(text: str) -> None:
    """A usable custom template shows the judge at least the response."""
    if "{response}" not in text:
        raise ValueError("a judge template must contain {response} (and usually {question} and {target})")
