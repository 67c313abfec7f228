"""run_readers reaches Answer Regeneration through the pipeline's producer registry, which the judges
app fills at start-up; without the judges app the registry says so."""

from __future__ import annotations

import pytest

from adjudication.pipeline import producers
from adjudication.pipeline.producers import ProducerUnavailable, endpoint_producer
from judges.management.regeneration import regeneration_run


def test_the_judges_app_registers_regeneration_at_start_up() -> None:
    assert endpoint_producer("regeneration") is regeneration_run


def test_without_the_judges_app_the_registry_says_it_is_not_installed(monkeypatch) -> None:
    monkeypatch.setattr(producers, "_PRODUCERS", {})
    with pytest.raises(ProducerUnavailable, match="judges app, which is not installed"):
        endpoint_producer("regeneration")
