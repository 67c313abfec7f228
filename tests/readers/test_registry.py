"""The registry: unique identities, declared contracts, the published contract matrix, scopes,
`require`, and plugins."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from readers import ANSWER_FORMS, Item, Reader, Reading, registry

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


class _Probe(Reader):
    name = "test-probe"
    version = "0"

    def read(self, item: Item) -> Reading:
        return Reading("correct", answer=item.response)


def test_a_scoped_reader_exists_inside_its_block_only():
    before = registry.names()
    with registry.scoped({"test-probe": _Probe}):
        assert registry.names() == [*before, "test-probe"]
        assert registry.get("test-probe").read(Item(response="x", gold="x")).answer == "x"
    assert registry.names() == before
    with pytest.raises(registry.UnknownReader):
        registry.get("test-probe")


def test_a_scope_may_shadow_a_name_and_works_as_a_decorator():
    class Shadow(_Probe):
        name = "boxed"

    @registry.scoped({"boxed": Shadow})
    def inside() -> str:
        return type(registry.get("boxed")).__name__

    assert inside() == "Shadow"
    assert type(registry.get("boxed")).__name__ == "BoxedReader"


def test_require_keeps_order_drops_duplicates_and_names_every_unknown_reader():
    assert registry.require(["fixed", "boxed", "fixed"]) == ["fixed", "boxed"]
    with pytest.raises(registry.UnknownReader) as info:
        registry.require(["fixed", "nope-1", "nope-2"])
    err = info.value
    assert isinstance(err, KeyError)  # existing `except KeyError` callers keep working
    assert err.unknown == ["nope-1", "nope-2"] and "fixed" in err.known
    assert str(err).startswith("unknown readers 'nope-1', 'nope-2'; known readers: ")


PLUGIN = """
from readers.base import Reader, Reading
from readers.registry import Entry, register

class Table(Reader):
    name = "table-plugin"
    version = "0"
    def read(self, item):
        return Reading("no_answer")

class Calls(Table):
    name = "calling-plugin"

READERS = (Entry("table-plugin", Table, "declared"),)
register("calling-plugin", Calls, "registered at import")
"""


@pytest.mark.system  # a child process
def test_reader_plugins_declare_a_table_or_register_themselves(tmp_path):
    (tmp_path / "my_plugin.py").write_text(PLUGIN, encoding="utf-8")
    code = (
        "import sys, readers; from readers import registry; assert 'sympy' not in sys.modules; "
        "names = registry.names(); print(sorted(names[-2:])); assert 'sympy' in sys.modules"
    )
    env = {
        **os.environ,
        "READER_PLUGINS": "my_plugin",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(Path(__file__).resolve().parents[2])]),
    }
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['calling-plugin', 'table-plugin']"
