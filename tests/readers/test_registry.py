"""The registry: unique identities, declared contracts, and the published contract matrix."""
from __future__ import annotations

from pathlib import Path

from readers import ANSWER_FORMS
from readers import registry

DOC = Path(__file__).resolve().parents[2] / "docs" / "contract-matrix.md"


def test_every_reader_has_a_version_a_contract_and_a_distinct_identity():
    identities = set()
    for row in registry.describe():
        assert row["version"] and row["contract"], row["name"]
        assert set(row["contract"]) <= set(ANSWER_FORMS)
        identities.add((row["name"], row["version"], row["config_hash"]))
    assert len(identities) == len(registry.names())


def test_the_published_contract_matrix_matches_the_registry():
    assert DOC.read_text(encoding="utf-8").endswith(registry.contract_matrix_markdown())
