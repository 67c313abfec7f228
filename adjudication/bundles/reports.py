"""The reports a bundle can carry, and how each is computed: by the same code the user ran, so that
the numbers a replay compares are the numbers the command prints.

* `format_share`, `agreement`, `consensus`: the management command with `--dataset NAME --json`
  plus the report's own options (`consensus --by checkpoint --bootstrap 50`); its JSON output.
* `audit`: `audit_verifiers --dataset NAME` plus options, into a scratch directory; its
  summary.json.
* `audit_run`: a stored audit run of the dataset (`audit_run run=ID`): the bundle carries the
  summary the run stored; the replay runs that audit again (audit.services.audit_summary).
* `analytics`: the analytics page's whole report (`analytics.services.report_body`) for the
  parameters given as key=value (`analytics n_boot=200 seed=1 reported=boxed`), those of
  analytics.report.Params.
"""

from __future__ import annotations

import json
import shlex
import tempfile
from dataclasses import dataclass, field, fields
from io import StringIO
from pathlib import Path
from typing import Any

from django.core.management import CommandError, call_command

from adjudication.models import AuditRun, Dataset
from adjudication.validators import is_plain_integer

COMMAND_KINDS = ("format_share", "agreement", "consensus")
KINDS = (*COMMAND_KINDS, "audit", "audit_run", "analytics")
DEFAULT_KINDS = ("format_share", "agreement", "consensus")
# Options the bundle sets itself: the source is the bundled dataset, the output JSON.
RESERVED = ("--dataset", "--input", "--golds", "--json", "--out", "--no-progress", "--items")
# Audits read the golds (which --no-text keeps), never a response.
GOLDS_ONLY = ("audit", "audit_run")
# Keys that vary from run to run without being numbers of the report.
VOLATILE: dict[str, frozenset[str]] = {
    # How fast the machine read the variants, not what the readers said.
    "audit": frozenset({"throughput"}),
    "audit_run": frozenset({"throughput"}),
    "analytics": frozenset({"elapsed_s"}),
}


class ReportError(ValueError):
    """A report that cannot be computed on these data, with the command's own message."""


@dataclass(frozen=True)
class ReportSpec:
    kind: str
    options: tuple[str, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)  # analytics only: Params.canonical()

    def describe(self) -> str:
        if self.kind in ("analytics", "audit_run"):
            return self.kind + " " + " ".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return " ".join([self.kind, *self.options])


def parse_report(text: str) -> ReportSpec:
    """`KIND [OPTIONS]` (shell quoting) into a spec; ReportError on an unknown kind, a reserved
    option or an unknown analytics parameter."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ReportError(f"report {text!r}: {exc}") from None
    if not words or words[0] not in KINDS:
        raise ReportError(f"report {text!r}: the kind must be one of {', '.join(KINDS)}")
    kind, rest = words[0], words[1:]
    if kind == "audit_run":
        if len(rest) != 1 or not rest[0].startswith("run=") or not is_plain_integer(rest[0][4:]):
            raise ReportError(f"report {text!r}: write audit_run run=ID (an audit run of the dataset)")
        return ReportSpec(kind, params={"run": int(rest[0][4:])})
    if kind == "analytics":
        return ReportSpec(kind, params=analytics_params(rest, where=f"report {text!r}"))
    for word in rest:
        name = word.split("=", 1)[0]
        if name in RESERVED:
            raise ReportError(f"report {text!r}: {name} is set by the bundle (the bundled dataset, JSON output)")
    return ReportSpec(kind, tuple(rest))


def analytics_params(words: list[str], *, where: str) -> dict[str, Any]:
    from adjudication.analytics.report import DISPLAY_ONLY, Params

    known = {f.name: f for f in fields(Params) if f.name not in DISPLAY_ONLY}
    p = Params()
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or key not in known:
            raise ReportError(f"{where}: {word!r} is not KEY=VALUE with KEY one of {', '.join(sorted(known))}")
        kind = known[key].type
        try:
            setattr(p, key, float(value) if kind == "float" else int(value) if kind == "int" else value)
        except ValueError:
            raise ReportError(f"{where}: {key} must be a{'n integer' if kind == 'int' else ' number'}") from None
    return p.canonical()


def _audit_run(spec: ReportSpec, dataset: Dataset) -> AuditRun:
    run_id = spec.params.get("run")
    if run_id is not None:
        try:
            return AuditRun.objects.get(pk=run_id, dataset=dataset)
        except AuditRun.DoesNotExist:
            pass
    raise ReportError(f"report {spec.describe()!r}: dataset {dataset.name!r} has no such audit run")


def stored(spec: ReportSpec, *, dataset: Dataset) -> dict[str, Any]:
    """The numbers a bundle carries: a stored audit run's summary as the run stored it, every
    other report as computed now."""
    if spec.kind == "audit_run":
        run = _audit_run(spec, dataset)
        if run.status != AuditRun.Status.DONE or not isinstance(run.summary, dict):
            raise ReportError(f"report {spec.describe()!r}: the audit run is {run.status}, not done")
        return run.summary
    return compute(spec, dataset=dataset)


def compute(spec: ReportSpec, *, dataset: Dataset) -> dict[str, Any]:
    """The report's JSON as its command (or the analytics page, or the audit run) computes it now."""
    if spec.kind == "audit_run":
        from adjudication.audit.services import audit_summary

        run = _audit_run(spec, dataset)
        with tempfile.TemporaryDirectory(prefix="bundle-audit-") as scratch:
            try:
                return audit_summary(run=run, out_dir=Path(scratch))
            except ValueError as exc:
                raise ReportError(f"report {spec.describe()!r}: {exc}") from None
    if spec.kind == "analytics":
        from adjudication.analytics.report import Params
        from adjudication.analytics.services import report_body

        return report_body(dataset=dataset, params=Params.from_stored(spec.params))
    out, err = StringIO(), StringIO()
    try:
        if spec.kind == "audit":
            with tempfile.TemporaryDirectory(prefix="bundle-audit-") as scratch:
                call_command(
                    "audit_verifiers",
                    "--dataset",
                    dataset.name,
                    "--out",
                    scratch,
                    "--no-progress",
                    *spec.options,
                    stdout=out,
                    stderr=err,
                )
                result: dict[str, Any] = json.loads((Path(scratch) / "summary.json").read_text(encoding="utf-8"))
                return result
        call_command(spec.kind, "--dataset", dataset.name, "--json", *spec.options, stdout=out, stderr=err)
    except CommandError as exc:
        raise ReportError(f"report {spec.describe()!r}: {exc}") from None
    except SystemExit:  # argparse: an unknown option or a bad value; its message is on stderr
        raise ReportError(f"report {spec.describe()!r}: {err.getvalue().strip() or 'bad options'}") from None
    parsed: dict[str, Any] = json.loads(out.getvalue())
    return parsed
