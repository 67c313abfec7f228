"""The short-answer QA readers: SQuAD v1.1's normalize_answer / exact_match_score / f1_score
semantics (the official evaluate-v1.1.py), EVOUNA's lexical matching, gold aliases, abstentions and
hostile input."""

from __future__ import annotations

import pytest

from readers import Item, registry
from readers.hostile import hostile_items
from readers.qa import QAContains, QAExactMatch, QATokenF1, TokenF1Config, gold_aliases, normalize_answer, token_f1


def _read(name: str, response: str, gold: str) -> str:
    return registry.get(name).read(Item(response=response, gold=gold)).verdict


# --- upstream semantics (SQuAD v1.1 evaluate-v1.1.py) -----------------------------------------


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("The Eiffel Tower!", "eiffel tower"),  # lower, punctuation, leading article
        ("  a   cat,  an owl  ", "cat owl"),  # articles as whole words, whitespace collapsed
        ("theatre and anthem", "theatre and anthem"),  # "the"/"an" inside a word stay
        ("U.S.A.", "usa"),  # punctuation is deleted, not replaced by a space
        ("rock-n-roll", "rocknroll"),
        ("A.", ""),  # the article survives punctuation removal, then goes: order matters
        ("Paris–Roubaix", "paris–roubaix"),  # string.punctuation is ASCII only: the en dash stays
        ("ÉCOLE", "école"),
    ],
)
def test_normalisation_is_squads_normalize_answer(text, normalized):
    assert normalize_answer(text) == normalized


def test_token_f1_is_squads_bag_of_tokens_overlap():
    # precision 1/2, recall 1/1 -> 2/3; repeated tokens count with multiplicity (Counter &)
    assert token_f1("eiffel tower", "tower") == pytest.approx(2 / 3)
    assert token_f1("tower tower", "tower") == pytest.approx(2 / 3)
    assert token_f1("new york city", "new york") == pytest.approx(0.8)
    assert token_f1("paris", "london") == 0.0
    assert token_f1("", "") == 0.0  # v1.1 has no empty-string special case: no shared token is 0


def test_exact_match_compares_normalised_strings():
    assert _read("qa-exact-match", "The Beatles.", "beatles") == "correct"
    assert _read("qa-exact-match", "The Beatles were a band", "beatles") == "incorrect"


def test_contains_is_evounas_plain_substring():
    assert _read("qa-contains", "I think it was the Beatles, in 1962.", "The Beatles") == "correct"
    # upstream's lexical match is a substring test, not a token test
    assert _read("qa-contains", "It was a party.", "art") == "correct"
    assert _read("qa-contains", "It was the Rolling Stones.", "The Beatles") == "incorrect"


def test_token_f1_threshold_comes_from_the_config():
    item = Item(response="the tall eiffel tower in paris", gold="Eiffel Tower")  # F1 = 2*(2/5*1)/(2/5+1) = 4/7
    assert QATokenF1().read(item).verdict == "correct"
    assert QATokenF1().read(item).detail["score"] == pytest.approx(4 / 7, abs=1e-6)
    assert QATokenF1(TokenF1Config(threshold=0.6)).read(item).verdict == "incorrect"
    with pytest.raises(ValueError, match="threshold"):
        QATokenF1(TokenF1Config(threshold=0.0))


# --- gold aliases ------------------------------------------------------------------------------


def test_slash_joined_aliases_are_split_and_the_whole_gold_kept():
    assert gold_aliases("Sam Walton/Samuel Moore Walton") == [
        "Sam Walton/Samuel Moore Walton",
        "Sam Walton",
        "Samuel Moore Walton",
    ]
    assert _read("qa-exact-match", "Samuel Moore Walton", "Sam Walton/Samuel Moore Walton") == "correct"
    # a gold that merely contains the separator still matches itself
    assert _read("qa-exact-match", "AC/DC", "AC/DC") == "correct"


def test_a_json_array_gold_lists_its_aliases_and_no_separator_means_one_alias():
    assert gold_aliases('["Paris", "Paris, France", ""]') == ["Paris", "Paris, France"]
    assert _read("qa-exact-match", "paris france", '["Paris", "Paris, France"]') == "correct"
    assert gold_aliases("1/2", separator=None) == ["1/2"]
    assert QAExactMatch(QAExactMatch.Config(alias_separator=None)).read(Item(response="1", gold="1/2")).verdict == (
        "incorrect"
    )
    assert QAExactMatch().read(Item(response="1", gold="1/2")).verdict == "correct"  # the default splits


def test_the_best_alias_decides_and_is_named():
    reading = QATokenF1().read(Item(response="Samuel Walton", gold="Sam Walton/Samuel Moore Walton"))
    assert reading.verdict == "correct"
    assert reading.detail["alias"] == "Samuel Moore Walton" and reading.detail["score"] == pytest.approx(0.8)


# --- abstentions and hostile input -------------------------------------------------------------


@pytest.mark.parametrize("reader", [QAExactMatch, QAContains, QATokenF1])
def test_empty_answers_abstain_and_an_empty_gold_is_an_error(reader):
    # upstream would find an empty gold in every response; here it is no verdict
    assert reader().read(Item(response="anything", gold="The")).verdict == "error"
    assert reader().read(Item(response="anything", gold=" / ")).verdict == "error"
    assert reader().read(Item(response="  ...  ", gold="Paris")).verdict == "no_answer"
    assert reader().read(Item(response="", gold="Paris")).verdict == "no_answer"


@pytest.mark.parametrize("name", ["qa-exact-match", "qa-contains", "qa-token-f1"])
def test_hostile_inputs_get_a_verdict_in_process(name):
    reader = registry.get(name)
    for family, item in hostile_items(48, seed=3):
        reading = reader.read(Item(response=item.response, gold="beta/\x00\ud800 gold"))
        assert reading.verdict in ("correct", "incorrect", "no_answer"), family
        assert reading.answer is None or len(reading.answer) <= 1_000
    huge = "word " * 400_000
    assert reader.read(Item(response=huge, gold=huge)).verdict == "correct"


def test_a_multiple_choice_item_is_out_of_contract():
    item = Item(response="The answer is (B).", gold="B", choices=("alpha", "beta", "gamma"))
    for reader in (QAExactMatch(), QAContains(), QATokenF1()):
        assert reader.read(item).verdict == "error"


def test_the_three_are_registered_for_short_text():
    rows = {r["name"]: r for r in registry.describe()}
    for name in ("qa-exact-match", "qa-contains", "qa-token-f1"):
        assert rows[name]["contract"] == ["short_text"] and rows[name]["upstream"]
