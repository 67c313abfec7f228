"""What the harness importer tests share: importing a log through the command, and the error it refuses with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.management.base import CommandError

from tests.conftest import run_command


def import_log(path: Path, dataset: str = "d", **options: Any) -> str:
    return run_command("import_responses", str(path), dataset=dataset, no_progress=True, **options)


def import_refusal(path: Path, **options: Any) -> str:
    with pytest.raises(CommandError) as err:
        import_log(path, dataset="bad", **options)
    return str(err.value)
