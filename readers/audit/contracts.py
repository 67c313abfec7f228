"""Seed 001's published assignments, as data the audit applies and the report shows.

* `SEED001_READERS`: the four verifiers of seed 001 under its own conventions (readers.math.seed001);
  `--readers seed001` selects exactly these, and they are the audit's default.
* `SEED_STRATA`: our strata -> seed 001's S1–S14 where the seed names the stratum. The seed
  names nine of its fourteen (S1, S2, S4, S5, S6, S7, S9, S10, S14, in Tables 2, 3 and 7); S3, S8
  and S11–S13 are never named, so none of our strata is mapped to them, and strata the seed does
  not have (identity, term order, ...) map to None ("ours").
* `CONTRACT_OVERRIDES` (reader x stratum -> in / out of contract): the seed decides contracts by
  stratum, not by answer form (its in-contract n per verifier, Table 1, is the full certified n
  minus whole strata: strip-string 28,570 = 31,266 - S10 634 - S14 2,062; mv-expr 22,953 =
  31,266 - S1 4,146 - S4 1,067 - S7 404 - S10 634 - S14 2,062; Table 7 lists the same strata as
  out of contract). Where an override names a (reader, stratum), it decides; elsewhere the
  reader's form contract does (docs/contract-matrix.md).
"""

from __future__ import annotations

from collections.abc import Mapping

SEED001_READERS: tuple[str, ...] = (
    "math-verify-latex-seed001",
    "math-verify-expr-seed001",
    "strip-string-deepseek",
    "sympy-cascade-seed001",
)
# Seed 001's abbreviations (Tables 1–8: V1 = mv-expr, V2 = mv-latex, V3 = strip-string, V4 = sympy-cascade).
SEED001_LABELS: dict[str, str] = {
    "math-verify-expr-seed001": "V1 mv-expr",
    "math-verify-latex-seed001": "V2 mv-latex",
    "strip-string-deepseek": "V3 strip-string",
    "sympy-cascade-seed001": "V4 sympy-cascade",
}

# our stratum -> (seed id, seed name); None = a stratum of ours the seed does not have
SEED_STRATA: dict[str, tuple[str, str] | None] = {
    "identity": None,
    "fraction_display": ("S1", "frac display"),
    "fraction_decimal": ("S2", "frac/decimal"),
    "number_format": None,
    "delimiters": ("S4", "delimiters"),
    "math_mode": ("S5", "math-mode"),
    "whitespace_punct": ("S6", "whitespace"),
    "sqrt_exponent": ("S7", "sqrt/exponent"),
    "grouping": ("S9", "grouping"),
    "term_order": None,
    "multiplication": None,
    "sets": ("S10", "sets"),
    "unreduced": ("S14", "unreduced"),
    "markup": None,
    # CONTRACT-DEP: the seed's Table 6 input classes (no S-number given)
    "boxing": ("T6", "boxed"),
    "units": ("T6", "with unit"),
    "text_prefix": ("T6", "text prefix"),
    "percent": ("T6", "percent"),
    "scientific": ("T6", "scientific"),
    "thousands": None,
    "list_order": None,
    # ADVERSARIAL: the seed's off-by-one probe (Table 4, Figure 3); the others are ours
    "off_by_one": ("T4", "off-by-one"),
    "sign_flip": None,
    "wrong_fraction": None,
    "dropped_term": None,
    "near_miss": None,
    "wrong_structure": None,
}
SEED_UNNAMED = ("S3", "S8", "S11", "S12", "S13")

_SEED_CERTIFIED = (
    "fraction_display",
    "fraction_decimal",
    "delimiters",
    "math_mode",
    "whitespace_punct",
    "sqrt_exponent",
    "grouping",
    "sets",
    "unreduced",
)


def _assign(out: tuple[str, ...]) -> dict[str, bool]:
    return {s: s not in out for s in _SEED_CERTIFIED}


Overrides = Mapping[str, Mapping[str, bool]]

# reader -> stratum -> True (in contract) / False (out of contract)
CONTRACT_OVERRIDES: dict[str, dict[str, bool]] = {
    "math-verify-latex-seed001": _assign(()),
    "math-verify-expr-seed001": _assign(("fraction_display", "delimiters", "sqrt_exponent", "sets", "unreduced")),
    "strip-string-deepseek": _assign(("sets", "unreduced")),
    "sympy-cascade-seed001": _assign(()),
}


def seed_stratum_label(stratum: str) -> str:
    """ "S6 whitespace" / "T6 boxed" / "ours"."""
    mapped = SEED_STRATA.get(stratum)
    return f"{mapped[0]} {mapped[1]}" if mapped else "ours"


def parse_override(text: str) -> tuple[str, str, bool]:
    """`READER:STRATUM:in|out` -> (reader, stratum, in_contract). ValueError names what is wrong."""
    parts = text.split(":")
    if len(parts) != 3 or parts[2] not in ("in", "out") or not parts[0] or not parts[1]:
        raise ValueError(f"contract override {text!r}: expected READER:STRATUM:in|out")
    return parts[0], parts[1], parts[2] == "in"


def override_rows(overrides: Overrides, readers: list[str]) -> list[dict[str, object]]:
    """The override table of the audited readers, for the report: one row per (reader, stratum)."""
    rows = []
    for reader in readers:
        for stratum, inside in overrides.get(reader, {}).items():
            rows.append(
                {
                    "reader": reader,
                    "stratum": stratum,
                    "seed_stratum": seed_stratum_label(stratum),
                    "in_contract": bool(inside),
                }
            )
    return rows
