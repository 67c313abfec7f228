"""The panel `manage.py read` and the pipeline run when no reader is named."""

from __future__ import annotations

from adjudication.pipeline.selectors import default_panel


def test_the_short_answer_qa_readers_run_when_named_not_in_the_default_panel() -> None:
    # They would vote on every multiple-choice and maths response.
    panel = default_panel()
    assert "fixed" in panel and not {"qa-exact-match", "qa-contains", "qa-token-f1"} & set(panel)
