"""docs/audit.md carries the transform table generated from the code."""

from __future__ import annotations

from readers.audit.transforms import transform_table_markdown

from ..conftest import ROOT


def test_docs_transform_table_is_in_step_with_the_suite():
    doc = (ROOT / "docs" / "audit.md").read_text(encoding="utf-8")
    assert transform_table_markdown() in doc, (
        "docs/audit.md is out of date: paste readers.audit.transforms.transform_table_markdown()"
    )


def test_readme_points_at_the_audit():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "## Metamorphic verifier audit" in readme and "audit_verifiers" in readme
