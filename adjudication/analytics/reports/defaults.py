"""The readers a report of a dataset uses where its user names none: one default for every report
command (`format_share`, `estimate`, `report`), `bundle --report`, the analytics page and the
managers' landing card. It is analytics.selectors.report_readers: the readers the analytics page
was last set to, else the harness reader of the dataset's benchmarks (MMLU-Pro's released
harness for MMLU-Pro, lm-eval's multiple-choice filter for other multiple-choice data, the box for
maths) beside `fixed`, over the `base` checkpoint.

The defaults are resolved before the options are built, so that options always name their
readers: a report stored or bundled without naming them has the key and the options it would have
had the user named the same readers, and a bundle written before keeps replaying the readers it
names (or, with older option words, the options classes' own defaults, which stay `boxed`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from adjudication.analytics.reports.options import OPTIONS, ReportOptions, ReportSpec, named_options, parse_report

if TYPE_CHECKING:
    from adjudication.models import Dataset


@dataclass(frozen=True)
class ReaderFields:
    """A kind's option fields that take the dataset's default readers, and how its user names the
    reported one (for the note)."""

    reported: str
    fixed: str | None
    base: str
    flag: str


READER_FIELDS: dict[str, ReaderFields] = {
    "format_share": ReaderFields("reported_reader", "fixed_reader", "base_checkpoint", "--reported-reader"),
    "estimates": ReaderFields("reported", None, "base", "--reported"),
    "analytics": ReaderFields("reported", "fixed", "base", "reported="),
}


@dataclass(frozen=True)
class Resolved:
    """The option values to build a report's options from (the given ones, and the dataset's
    readers for the reader fields not given), and the line saying which reported reader the report
    uses and why (None for a kind without one)."""

    values: dict[str, Any]
    note: str | None


def readers_resolved(kind: str, *, dataset: Dataset | None, given: Mapping[str, Any]) -> Resolved:
    """`given`: the option values the user named (by field). A file (`dataset` None) has no stored
    benchmarks or page setting: its reader fields left out keep the options' own defaults."""
    fields = READER_FIELDS.get(kind)
    values = dict(given)
    if fields is None:
        return Resolved(values, None)
    if fields.reported in given:
        why = f"named with {fields.flag}"
    elif dataset is None:
        values[fields.reported] = _default(kind, fields.reported)
        why = f"the default for a file; name another with {fields.flag}"
    else:
        from adjudication.analytics.selectors import report_readers

        readers = report_readers(dataset=dataset)
        chosen = {fields.reported: readers.reported, fields.base: readers.base}
        if fields.fixed is not None:
            chosen[fields.fixed] = readers.fixed
        values.update({name: value for name, value in chosen.items() if name not in given})
        why = readers.why
    return Resolved(values, f"reported reader: {values[fields.reported]} ({why})")


def spec_resolved(text: str, *, dataset: Dataset) -> tuple[ReportSpec, str | None]:
    """`KIND [OPTIONS]` as `report` and `bundle --report` take it, with the dataset's readers for
    the reader options the text leaves out (parse_report's ReportError on a bad text)."""
    spec = parse_report(text)
    named = named_options(text)
    resolved = readers_resolved(spec.kind, dataset=dataset, given={name: getattr(spec.options, name) for name in named})
    return ReportSpec(spec.kind, _replaced(spec.options, resolved.values)), resolved.note


def options_from_query(
    kind: str, query: Mapping[str, Any], *, dataset: Dataset, ignore: tuple[str, ...] = ()
) -> ReportOptions:
    """A kind's options from a page's or the API's query string (ReportOptions.from_query), the
    reader options it leaves out or empty the dataset's."""
    options = OPTIONS[kind].from_query(query, ignore=ignore)
    named = [k for k in query if k not in ignore and _last(query, k) != ""]
    given = {name: getattr(options, name) for name in named}
    return _replaced(options, readers_resolved(kind, dataset=dataset, given=given).values)


def default_spec(kind: str, *, dataset: Dataset) -> ReportSpec:
    """A kind's report with its defaults, the reader options the dataset's."""
    return ReportSpec(kind, OPTIONS[kind](**readers_resolved(kind, dataset=dataset, given={}).values))


def _replaced(options: ReportOptions, values: dict[str, Any]) -> ReportOptions:
    changed = {name: value for name, value in values.items() if getattr(options, name) != value}
    return replace(options, **changed) if changed else options


def _last(query: Mapping[str, Any], key: str) -> Any:
    return query.getlist(key)[-1] if hasattr(query, "getlist") else query[key]


def _default(kind: str, name: str) -> Any:
    return next(f.default for f in OPTIONS[kind]._fields() if f.name == name)
