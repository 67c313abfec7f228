"""Fixtures for the LLM tests: a loopback OpenAI-compatible server on a real socket, endpoints
pointing at it, small datasets, and fast retry timing."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from adjudication.models import Dataset, Reading
from judges.models import Endpoint
from judges.services.regeneration import regenerations_create
from judges.testing.loopback import LoopbackServer

from ..conftest import FAST_RETRY, math_row, mc_row, run_command


@pytest.fixture(autouse=True)
def fast_retries(settings):
    for name, value in FAST_RETRY.items():
        setattr(settings, name, value)
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    os.environ.setdefault("no_proxy", "127.0.0.1,localhost")


@pytest.fixture
def service_env(service_env: dict[str, str]) -> dict[str, str]:
    """Child processes (the Celery worker) get the same fast retry timing."""
    service_env.update(FAST_RETRY)
    service_env.setdefault("NO_PROXY", "127.0.0.1,localhost")
    return service_env


@pytest.fixture
def loopback():
    server = LoopbackServer().start()
    yield server
    server.stop()


@pytest.fixture
def make_endpoint(loopback):
    from judges.models import Endpoint

    def make(name: str = "loop", **fields: Any) -> Endpoint:
        fields.setdefault("base_url", loopback.base_url)
        fields.setdefault("model", "loop-model")
        fields.setdefault("max_concurrency", 4)
        fields.setdefault("timeout_s", 5.0)
        return Endpoint.objects.create(name=name, **fields)

    return make


@pytest.fixture
def make_judge(make_endpoint):
    from judges.models import Judge

    def make(name: str = "sq", endpoint=None, **fields: Any) -> Judge:
        endpoint = endpoint or make_endpoint()
        return Judge.objects.create(name=name, endpoint=endpoint, **fields)

    return make


@pytest.fixture
def make_dataset(write_jsonl) -> Callable[..., Any]:
    from adjudication.models import Dataset

    def make(rows: list[dict] | None = None, name: str = "d", n_mc: int = 4, n_math: int = 2) -> Dataset:
        if rows is None:
            rows = [mc_row(i) for i in range(n_mc)] + [math_row(i) for i in range(n_math)]
        run_command("import_responses", str(write_jsonl(rows, name=f"{name}.jsonl")), dataset=name, no_progress=True)
        return Dataset.objects.get(name=name)

    return make


def response_ids(dataset) -> list[int]:
    return list(dataset.responses.order_by("id").values_list("id", flat=True))


def regen(dataset: Dataset, endpoint: Endpoint, **kw: Any) -> dict[str, Reading]:
    """Regenerate every response of `dataset` on `endpoint`; the regeneration readings by external id."""
    regenerations_create(endpoint=endpoint, response_ids=response_ids(dataset), **kw)
    return {
        r.response.external_id: r
        for r in Reading.objects.filter(reader_spec__name="regeneration").select_related("response", "reader_spec")
    }
