"""What a response is, for breaking a judge's bias down by stratum (the judge-bias card,
docs/analytics.md "The judge-bias card"): the format its answer is given in, the type of its gold,
and the family of the model that wrote it.

Pure functions of the text: the analytics compute them over the labelled responses only. Each is a
coarse label chosen so that a reader of the card can check it by eye, not a reader of answers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .answer.notation import letter_of, parse_number
from .tasks import gold_is_mathematical

RESPONSE_FORMATS = ("boxed", "answer_is", "bare")
RESPONSE_FORMAT_LABELS = {"boxed": "boxed", "answer_is": '"the answer is"', "bare": "bare"}
GOLD_TYPES = ("letter", "number", "expression", "text")

# The same test as the analytics' box rate (selectors._box_annotation): the command anywhere.
_BOX = re.compile(r"\\(?:boxed|fbox)")
# "The answer is", "the final answer is", "Answer:", "**Answer:**": a stated answer outside a box.
_ANSWER_IS = re.compile(r"\banswer\s*(?:is\b|:)", re.IGNORECASE)
_MATH_DOLLARS = re.compile(r"^\$+(.*?)\$+$", re.DOTALL)

# Organisation names that lead some model names ("Meta-Llama-3.1-8B", "mistralai/Mistral-7B" once
# the path is gone): dropped, so the family is the model's own name.
_VENDORS = frozenset(
    {
        "meta",
        "microsoft",
        "google",
        "mistralai",
        "nvidia",
        "ibm",
        "allenai",
        "tiiuae",
        "openai",
        "anthropic",
        "huggingfacetb",
        "bigscience",
        "ai",
    }
)
_ALPHA_RUN = re.compile(r"[a-z]+")


def response_format(text: str) -> str:
    """How the response states its answer: `boxed` (a \\boxed{} or \\fbox{} anywhere, whatever
    else it writes), else `answer_is` ("the answer is", "Answer:"), else `bare`."""
    if _BOX.search(text):
        return "boxed"
    if _ANSWER_IS.search(text):
        return "answer_is"
    return "bare"


def gold_type(gold: str, choices: Sequence[str] = ()) -> str:
    """The kind of answer the gold is: `letter` (the question has options, or the gold is an
    option letter), `number` (a plain number: decimals, fractions, percent, currency), `expression`
    (other mathematics: LaTeX, a formula, a list of numbers; readers.tasks.gold_is_mathematical),
    else `text`."""
    text = (gold or "").strip()
    if choices or (text and letter_of(text)):
        return "letter"
    if not text:
        return "text"
    unwrapped = m.group(1).strip() if (m := _MATH_DOLLARS.match(text)) else text
    if parse_number(unwrapped) is not None:
        return "number"
    return "expression" if gold_is_mathematical(text) else "text"


def model_family(name: str) -> str:
    """A model's family as a normalised prefix: the last path segment, lower case, leading
    organisation names dropped, then its first run of letters ("Qwen2.5-72B-Instruct" and
    "qwen2.5-7b-instruct" are `qwen`, "meta-llama/Meta-Llama-3.1-8B" is `llama`). A heuristic:
    "Mixtral" and "Mistral" are two families to it, and a fine-tune renamed beyond its base's
    prefix is not recognised. Empty when the name has no letters."""
    tail = name.strip().lower().rsplit("/", 1)[-1]
    runs = _ALPHA_RUN.findall(tail)
    while len(runs) > 1 and runs[0] in _VENDORS:
        runs.pop(0)
    return runs[0] if runs else ""
