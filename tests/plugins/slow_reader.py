"""A deliberately slow reader, loaded into worker processes with READER_PLUGINS, so that a test
can kill a worker while it is in the middle of a run.

A declarative plugin: READER_PLUGINS registers `READERS` in the worker processes; the test process
holds the same entries in a `registry.scoped(READERS)` block, so nothing outlives the test there."""

from __future__ import annotations

import time

from readers.base import Item, Reader, Reading
from readers.registry import Entry


class SlowReader(Reader):
    name = "test-slow"
    version = "1"
    contract = frozenset({"option_letter"})

    def read(self, item: Item) -> Reading:
        time.sleep(0.03)
        letter = item.response.strip()[-1:] or None
        return Reading(verdict="correct" if letter == item.gold else "incorrect", answer=letter, normalized=letter)


READERS = (Entry("test-slow", SlowReader, "sleeps 30 ms per item (tests only)"),)
