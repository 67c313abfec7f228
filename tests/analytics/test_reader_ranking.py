"""Readers ranked by agreement with the final labels: by the interval's lower bound, and no rank
below a minimum n (issue 36 item 14)."""

from __future__ import annotations

from adjudication.analytics.ranking import RANK_MIN_N, rank_readers
from adjudication.analytics.reports.render import analytics_text
from adjudication.analytics.stats import proportion


def _row(reader: str, k: int, n: int) -> dict:
    p = proportion(k, n)
    return {"reader": reader, "kind": "rule", "n": n, "agreement": p["rate"], "agreement_ci": p["ci"]}


def test_a_perfect_score_on_three_items_ranks_below_a_good_one_on_many_and_gets_no_rank():
    """issue 36 item 14: a reader that read 3 items ranked first at 1.000 above `fixed` at n = 11."""
    ranked = rank_readers([_row("tiny", 3, 3), _row("fixed", 10, 11), _row("broad", 80, 100)])
    assert [r["reader"] for r in ranked] == ["broad", "fixed", "tiny"]
    by_name = {r["reader"]: r for r in ranked}
    assert by_name["broad"]["rank"] == 1 and by_name["fixed"]["rank"] == 2
    assert by_name["tiny"]["rank"] is None
    assert f"< {RANK_MIN_N}" in by_name["tiny"]["rank_withheld"]


def test_readers_above_the_minimum_are_ordered_by_the_lower_bound_not_the_point_estimate():
    """issue 36 item 14: 12 of 12 (lower bound 0.76) ranks below 95 of 100 (0.89)."""
    ranked = rank_readers([_row("small-perfect", 12, 12), _row("large", 95, 100)])
    assert [(r["reader"], r["rank"]) for r in ranked] == [("large", 1), ("small-perfect", 2)]
    assert ranked[0]["lower"] > ranked[1]["lower"]


def test_equal_lower_bounds_share_a_rank():
    ranked = rank_readers([_row("a", 20, 25), _row("b", 20, 25), _row("c", 5, 25)])
    assert [r["rank"] for r in ranked] == [1, 1, 3]


def test_the_command_line_text_shows_n_and_a_dash_for_a_withheld_rank():
    """issue 36 item 14: the analytics text lists each reader with n, and no position below the minimum."""
    ranking = rank_readers([_row("tiny", 3, 3), _row("fixed", 10, 11)])
    text = analytics_text({"headline": {"reader_ranking": ranking, "reader_ranking_min_n": RANK_MIN_N}})
    lines = [line for line in text.splitlines() if "tiny" in line or "fixed" in line]
    assert lines[0].split()[:2] == ["1.", "fixed"] and "(n=11)" in lines[0]
    assert lines[1].split()[:2] == ["–.", "tiny"] and "(n=3)" in lines[1]
