"""Fixtures of the analytics tests: stored reports computed on demand."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from adjudication.analytics.report import Params
from adjudication.analytics.services import report_request
from adjudication.models import AnalyticsReport, Dataset


@pytest.fixture
def computed(eager, django_capture_on_commit_callbacks) -> Callable[..., AnalyticsReport]:
    """computed(dataset, **query): the stored report the page shows for `query` (its parameters as
    the page's query string has them), requested and computed now: the task runs inline, as on
    the embedded default. Inside a test's transaction nothing commits, so the callbacks that
    transaction.on_commit holds are run by hand."""

    def compute(dataset: Dataset, **query: Any) -> AnalyticsReport:
        params = Params.from_query({k: str(v) for k, v in query.items()})
        with django_capture_on_commit_callbacks(execute=True):
            row = report_request(dataset=dataset, params=params)
        report = AnalyticsReport.objects.get(pk=row.pk)
        assert report.status == AnalyticsReport.Status.DONE, report.error
        return report

    return compute
