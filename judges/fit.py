"""Fitting a request into a server's context window by shortening the response it quotes.

A judge's prompt quotes the whole response, and a regeneration request the whole output: a long
one can exceed what the server's model holds (llama.cpp's server runs with 2,048 tokens by default,
SmolLM2 and many small judges have 8,192). The server then refuses the request with a 400 that
names its context length and how many tokens were asked for (OpenAI, vLLM and llama-cpp-python
all word it "maximum context length is N tokens"; llama.cpp's own server says "exceeds the
available context size" and gives `n_ctx` and `n_prompt_tokens`).

We never guess a tokenizer. The request is sent whole; on such a refusal the response is cut in
its middle, keeping its beginning and its end (where the final answer is), with a marker saying
how many characters were left out, and sent again: at most MAX_ROUNDS times. How much to cut comes
from the server's own numbers (tokens over the limit × characters per token of this request, plus
a margin), or half of what is left when the server gives none.

Pure Python: no Django, no network.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

MAX_ROUNDS = 3
MARKER = "\n\n[… {omitted} characters of the response omitted to fit the model's context …]\n\n"
# Left free below the context length on top of the completion's tokens: the characters-per-token
# estimate is an average, and the part cut out may tokenize denser than the rest.
_MARGIN_TOKENS = 16
_MARGIN_SHARE = 0.05

_OVERFLOW = re.compile(
    r"maximum context length|context_length_exceeded|exceeds? the available context size|exceed context window",
    re.IGNORECASE,
)
_CONTEXT = re.compile(
    r"maximum context length is (\d+)|context window of (\d+)|n_ctx\W{0,4}(\d+)",
    re.IGNORECASE,
)
# The prompt's tokens: "(2100 in the messages, 32 in the completion)", "(2100 in your prompt; ...",
# vLLM's "your request has 2100 input tokens", llama.cpp's "n_prompt_tokens": 2100.
_PROMPT = re.compile(
    r"\((\d+) in (?:the messages|your prompt)|request has (\d+) input tokens|n_prompt_tokens\W{0,4}(\d+)"
    r"|Requested tokens \((\d+)\)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Overflow:
    """A server's refusal of a request too long for its context (numbers when it gave them)."""

    context: int | None
    prompt_tokens: int | None
    message: str


def _first_int(pattern: re.Pattern[str], text: str) -> int | None:
    m = pattern.search(text)
    if m is None:
        return None
    return next(int(g) for g in m.groups() if g is not None)


def context_overflow(error: str) -> Overflow | None:
    """The overflow a 400's error text describes, or None when it is about something else."""
    if not _OVERFLOW.search(error or ""):
        return None
    m = _OVERFLOW.search(error)
    start = max(0, m.start() - 80) if m else 0
    return Overflow(
        context=_first_int(_CONTEXT, error),
        prompt_tokens=_first_int(_PROMPT, error),
        message=error[start : start + 300],
    )


def shortened(text: str, keep: int) -> str:
    """`text` with its middle replaced by the marker so that `keep` of its characters remain
    (half from its beginning, half from its end)."""
    if keep >= len(text):
        return text
    keep = max(0, keep)
    head = keep // 2
    tail = keep - head
    return text[:head] + MARKER.format(omitted=len(text) - keep) + (text[len(text) - tail :] if tail else "")


@dataclass
class Fit:
    """The response text of one job as it is currently sent: whole, or shortened after refusals.
    Shared by every call of the job, so that a later call starts from what already fitted."""

    original: str
    keep: int = -1
    rounds: int = 0
    last_refusal: str = ""
    context: int | None = None

    def __post_init__(self) -> None:
        if self.keep < 0:
            self.keep = len(self.original)

    @property
    def text(self) -> str:
        return shortened(self.original, self.keep)

    def shrink(self, overflow: Overflow, *, sent_chars: int, completion_tokens: int) -> bool:
        """Cut more of the response after `overflow`; False when nothing is left to cut or the
        rounds are spent (the refusal is then final)."""
        if self.rounds >= MAX_ROUNDS or self.keep <= 0:
            return False
        if overflow.context and overflow.prompt_tokens and sent_chars > 0:
            margin = max(_MARGIN_TOKENS, math.ceil(overflow.context * _MARGIN_SHARE))
            excess = overflow.prompt_tokens - (overflow.context - completion_tokens - margin)
            chars_per_token = sent_chars / overflow.prompt_tokens
            cut = math.ceil(max(1, excess) * chars_per_token)
        else:
            cut = math.ceil(self.keep / 2)
        self.keep = max(0, self.keep - max(1, cut))
        self.rounds += 1
        self.last_refusal = overflow.message
        self.context = overflow.context or self.context
        return True

    def detail(self) -> dict[str, Any] | None:
        """What the reading records when the response was shortened (None when it was sent whole)."""
        if not self.rounds:
            return None
        return {
            "original_chars": len(self.original),
            "kept_chars": min(self.keep, len(self.original)),
            "omitted_chars": max(0, len(self.original) - self.keep),
            "rounds": self.rounds,
            "context_tokens": self.context,
            "refusal": self.last_refusal,
        }
