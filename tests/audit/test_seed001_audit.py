"""The seed-convention audit (readers.math.seed001 + seed 001's contract assignments) reproduces seed
001's findings in the seed's direction, on the bundled synthetic golds and, when present, on the
MATH-500 + GSM8K golds (../shared/data)."""

from __future__ import annotations

import csv
import json

import pytest

from readers.audit.contracts import CONTRACT_OVERRIDES, SEED001_READERS, SEED_STRATA
from readers.audit.golds import GoldsError, load_golds_tagged
from readers.audit.runner import BUCKETS, OUR_READERS, SEED_READERS, resolve_readers, run_audit
from readers.audit.synthetic import synthetic_golds
from readers.audit.transforms import BY_NAME, STRATA, simple_fraction

from .conftest import load_real_golds

MVL, MVE, SS, SC = SEED001_READERS
# Corpus-like golds (written here, MATH / GSM8K answer forms) beside the synthetic ones.
CORPUS = [
    "42",
    "\\frac{1}{2}",
    "3\\sqrt{2}",
    "\\frac{3}{4}",
    "0.15",
    "10000",
    "(a+5)(b+2)",
    "3\\pm\\sqrt{2}",
    "\\frac{\\pi}{6}",
    "65,960",
    "18",
    "2x+3",
    "\\sqrt{5}",
    "-7",
]
STEP_GOLDS = [
    "3",
    "9",
    "10",
    "57",
    "100",
    "512",
    "1000",
    "9998",
    "9999",
    "10000",
    "12345",
    "99999",
    "100000",
    "123456",
    "987654321",
]


@pytest.fixture(scope="module")
def bundled(pool, tmp_path_factory):
    synthetic = synthetic_golds(26)
    out = tmp_path_factory.mktemp("seed001")
    sources = dict.fromkeys(synthetic, "synthetic")
    result = run_audit(CORPUS + synthetic, list(SEED_READERS), out, pool=pool, gold_sources=sources)
    return result, out


def test_the_default_reader_set_is_seed_001s_four():
    assert list(SEED_READERS) == resolve_readers(None) == resolve_readers(["seed001"])
    assert resolve_readers(["ours"]) == list(OUR_READERS)
    assert resolve_readers(["seed001,strip-string"]) == [*SEED001_READERS, "strip-string"]


def test_every_stratum_has_a_seed_mapping_entry():
    assert set(STRATA) <= set(SEED_STRATA)
    for reader, table in CONTRACT_OVERRIDES.items():
        assert set(table) <= set(STRATA), reader


def test_whitespace_dominates_math_verify_latex_failures(bundled):
    result, _out = bundled
    eb = result.summary["error_budget"][MVL]
    top, cell = next(iter(eb["strata"].items()))
    assert top == "whitespace_punct" and cell["share"] > 0.5, eb
    # every one of them a rejection, not an execution failure (seed Table 1: 100 % coverage)
    assert result.summary["readers"][MVL]["coverage"] == 1.0


def test_the_cascades_residual_is_execution_failure(bundled):
    result, _out = bundled
    r = result.summary["readers"][SC]
    assert r["coverage"] < 1.0 and r["judged"] == 1.0 and r["rejected"] == 0


def test_table_8_pairs_in_the_audit(bundled):
    result, _out = bundled
    rec = {(r["reader"], r["gold"], r["transform"]): r["verdict"] for r in result.records()}
    assert rec[(MVL, "\\frac{1}{2}", "identity")] == "correct"
    assert rec[(MVL, "\\frac{1}{2}", "trailing_period")] != "correct"
    assert rec[(MVE, "\\frac{1}{2}", "trailing_period")] != "correct"
    assert rec[(MVL, "\\frac{1}{2}", "trailing_escaped_newline")] != "correct"
    assert rec[(MVE, "\\frac{1}{2}", "trailing_escaped_newline")] != "correct"
    assert rec[(MVL, "\\frac{1}{2}", "frac_to_dfrac")] == "correct"
    assert rec[(MVE, "\\frac{1}{2}", "frac_to_dfrac")] != "correct"
    assert rec[(MVL, "(a+5)(b+2)", "left_right")] == "correct"
    assert rec[(MVE, "(a+5)(b+2)", "left_right")] != "correct"
    assert rec[(SS, "3\\pm\\sqrt{2}", "thin_space")] != "correct"
    assert rec[(MVL, "3\\pm\\sqrt{2}", "thin_space")] == "correct"


def test_seed_contract_assignments_apply(bundled):
    result, _out = bundled
    scopes = {(r["reader"], r["stratum"], r["scope"]) for r in result.strata_rows}
    assert (SS, "unreduced", "out-of-contract") in scopes and (SS, "unreduced", "in-contract") not in scopes
    assert (MVE, "fraction_display", "out-of-contract") in scopes
    assert (MVE, "math_mode", "in-contract") in scopes  # a LaTeX form, in by the seed's assignment
    shown = {(o["reader"], o["stratum"]): o["in_contract"] for o in result.summary["contract_overrides"]}
    assert shown[(SS, "unreduced")] is False and shown[(SS, "sets")] is False and shown[(MVL, "sets")] is True


def test_identity_and_sources_in_every_output(bundled):
    result, out = bundled
    ident = result.summary["reader_identity"]
    assert set(ident) == set(SEED001_READERS)
    assert all(ident[r]["version"] and len(ident[r]["config_hash"]) == 16 for r in ident)
    line = json.loads((out / "verdicts.jsonl").open(encoding="utf-8").readline())
    assert line["reader_config_hash"] == ident[line["reader"]]["config_hash"] and line["reader_version"]
    assert line["gold_source"] in ("corpus", "synthetic") and "seed_stratum" in line
    for name, col in (
        ("strata.csv", "reader_config_hash"),
        ("magnitude.csv", "reader_config_hash"),
        ("disagreement.csv", "reader_a_config_hash"),
    ):
        rows = list(csv.DictReader((out / name).open(encoding="utf-8")))
        assert rows and all(len(row[col]) == 16 for row in rows), name
    saved = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert saved["reader_identity"] == ident
    assert saved["gold_sources"] == {"corpus": len(CORPUS), "synthetic": 26}
    corpus = saved["self_validation_by_source"]["corpus"][MVL]
    synthetic = saved["self_validation_by_source"]["synthetic"][MVL]
    assert corpus["n"] + synthetic["n"] == saved["readers"][MVL]["n"]


def test_the_cascade_step_at_ten_thousand(pool, tmp_path):
    suite = [BY_NAME["identity"], BY_NAME["off_by_one_plus"], BY_NAME["off_by_one_minus"]]
    result = run_audit(STEP_GOLDS, list(SEED_READERS), tmp_path, pool=pool, transforms=suite)
    ob = result.summary["off_by_one"]
    assert ob[SC] == {"<10": 0.0, "1e1": 0.0, "1e2": 0.0, "1e3": 0.0, "1e4": 1.0, ">=1e5": 1.0}
    for name in (MVL, MVE, SS):
        assert ob[name] == dict.fromkeys(BUCKETS, 0.0), name


def test_golds_file_source_tags(tmp_path):
    path = tmp_path / "golds.jsonl"
    path.write_text('{"gold": "1"}\n{"gold": "2", "source": "synthetic"}\n{"gold": "1", "source": "synthetic"}\n')
    assert load_golds_tagged(path) == [("1", "corpus"), ("2", "synthetic")]
    path.write_text('{"gold": "1", "source": "made-up"}\n')
    with pytest.raises(GoldsError, match=r"golds\.jsonl, line 1: field 'source'"):
        load_golds_tagged(path)


def test_synthetic_golds_are_deterministic_and_cover_sets_and_intervals():
    golds = synthetic_golds(52)
    assert golds == synthetic_golds(52) and golds[:13] == synthetic_golds(13) and len(set(golds)) == 52
    assert any(g.startswith("\\{") for g in golds) and any(g.endswith((")", "]")) and "," in g for g in golds)


@pytest.mark.system  # reads ../shared/data
def test_seed_conventions_on_real_golds(pool, tmp_path):
    sample = load_real_golds()[::8]
    result = run_audit(sample, list(SEED_READERS), tmp_path, pool=pool)
    eb = result.summary["error_budget"][MVL]
    top, cell = next(iter(eb["strata"].items()))
    assert top == "whitespace_punct" and cell["share"] > 0.5, eb
    r = result.summary["readers"]
    assert r[SC]["judged"] == 1.0 and r[SC]["coverage"] < 1.0
    assert r[MVL]["coverage"] == r[MVE]["coverage"] == r[SS]["coverage"] == 1.0


def test_figures_escape_reader_names_and_draw_the_step(bundled):
    from adjudication.audit.figures import audit_figures

    result, _out = bundled
    summary = dict(result.summary)
    summary["readers"] = {"<script>x</script>": summary["readers"][SC], **summary["readers"]}
    figs = audit_figures(summary)
    assert set(figs) == {"figure_self_validation", "figure_error_budget", "figure_magnitude"}
    assert all(f.startswith("<svg") for f in figs.values())
    assert "<script>" not in "".join(figs.values()) and "&lt;script&gt;" in figs["figure_self_validation"]
    assert 'fill="url(#hatch)"' in figs["figure_error_budget"]  # the cascade's execution failures


@pytest.mark.parametrize("gold", ["\\frac{²}{3}", "\\frac{2}{³}"])
def test_a_fraction_of_superscript_digits_is_not_a_simple_fraction(gold):
    """A "²" passes str.isdigit() and int("²") raises: the audit's transforms took every gold apart so."""
    assert simple_fraction(gold) is None
