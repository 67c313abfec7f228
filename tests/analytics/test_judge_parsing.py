"""analytics.parsing: each LLM judge's parse-failure rate and its parser's disagreement with the
upstream parser of its template, from counts of what the judges recorded on their readings."""

from __future__ import annotations

from adjudication.analytics.parsing import FLAG_RATE, ParsingCount, judge_parsing, parsing_text


def test_rates_are_over_the_replies_received_and_calls_without_a_reply_are_apart():
    out = judge_parsing(
        [
            ParsingCount("xv", "parsed", "xverify_exact_label", False, 6),
            ParsingCount("xv", "unparsed", "xverify_exact_label", False, 3),
            ParsingCount("xv", "unparsed", "xverify_exact_label", True, 1),
            ParsingCount("xv", "call_failed", "", None, 5),
        ]
    )["xv"]
    assert (out["replies"], out["calls_failed"]) == (10, 5)
    assert (out["unparsed"]["k"], out["unparsed"]["n"], out["unparsed"]["rate"]) == (4, 10, 0.4)
    assert (out["parser_disagreement"]["k"], out["parser_disagreement"]["n"]) == (1, 10)
    assert out["upstream_parser"] == "xverify_exact_label"
    lo, hi = out["unparsed"]["ci"]
    assert lo < 0.4 < hi


def test_readings_written_before_the_comparison_was_recorded_are_counted_apart():
    out = judge_parsing(
        [ParsingCount("sq", "parsed", "", None, 4), ParsingCount("sq", "parsed", "simpleqa_first_capital", True, 2)]
    )["sq"]
    assert out["parser_disagreement"]["n"] == 2 and out["parser_disagreement_unrecorded"] == 4
    assert "4 not compared" in parsing_text({"sq": out})[0]


def test_a_rate_above_the_threshold_is_flagged_and_one_at_it_is_not():
    n = 100
    at = round(FLAG_RATE * n)
    quiet = judge_parsing(
        [ParsingCount("j", "unparsed", "u", False, at), ParsingCount("j", "parsed", "u", False, n - at)]
    )["j"]
    assert quiet["flags"] == []
    loud = judge_parsing(
        [ParsingCount("j", "unparsed", "u", True, at + 1), ParsingCount("j", "parsed", "u", False, n - at - 1)]
    )["j"]
    assert len(loud["flags"]) == 2
    assert "unparsed" in loud["flags"][0] and "left out of the bias figures" in loud["flags"][0]
    assert "depend on the parser" in loud["flags"][1]


def test_a_judge_with_no_reply_has_no_rate_rather_than_zero():
    out = judge_parsing([ParsingCount("j", "call_failed", "", None, 3)])["j"]
    assert out["unparsed"]["rate"] is None and out["parser_disagreement"]["rate"] is None and out["flags"] == []
