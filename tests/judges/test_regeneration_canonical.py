"""LLM readings store a canonical answer too (loopback server): regeneration's option letter or
generated answer is canonicalised, a redone failed reading gets one, and a judge's verdict has none."""

from __future__ import annotations

import pytest

from ..conftest import math_row, mc_row
from .conftest import regen

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "reply, canonical",
    [
        (" \\dfrac{144}{2}", "72"),
        (" x = \\frac{1}{2}", "0.5"),
        (" 12\\,000", "12000"),
        (" \\frac{2}{6}", "1/3"),
    ],
)
def test_a_generated_math_answer_is_stored_raw_with_its_canonical_form(
    loopback, make_endpoint, make_dataset, reply, canonical
):
    ds = make_dataset([math_row(0)], n_mc=0)
    loopback.reply = reply
    r = regen(ds, make_endpoint())["math-0"]
    assert r.answer == reply.strip()
    assert r.canonical == canonical


def test_a_regenerated_option_letter_is_its_own_canonical_answer(loopback, make_endpoint, make_dataset):
    ds = make_dataset([mc_row(0)], n_mc=0)
    loopback.omit_logprobs = True
    loopback.reply = " (C) Merton"
    r = regen(ds, make_endpoint(logprob_method="chat_top_logprobs"))["mc-0"]
    assert (r.answer, r.canonical, r.verdict) == ("C", "C", "incorrect")


def test_a_redone_failed_regeneration_gets_its_canonical_answer(loopback, make_endpoint, make_dataset, settings):
    settings.LLM_RETRY_MAX_ATTEMPTS = "1"
    ds = make_dataset([math_row(0)], n_mc=0)
    loopback.fault_for = lambda body, n: {"status": 500}
    ep = make_endpoint(max_concurrency=1)
    assert regen(ds, ep)["math-0"].canonical is None
    loopback.fault_for = None
    loopback.reply = " \\frac{144}{2}"
    r = regen(ds, ep, retry_errors=True)["math-0"]
    assert (r.verdict, r.canonical) == ("correct", "72")
