"""The reports a bundle can carry: a report kind and its canonical options (adjudication.analytics
.reports), computed by report_compute, the function every command, page and API calls, so that
the numbers a replay compares are the numbers the command prints.

* `format_share`, `agreement`, `consensus`, `audit`: the report of the bundled dataset with the
  options given (`consensus --by checkpoint --bootstrap 50`).
* `audit_run`: a stored audit run of the dataset (`audit_run run=ID`): the bundle carries the
  summary the run stored; the replay runs that audit again.
* `analytics`: the analytics page's whole report for the parameters given as key=value
  (`analytics n_boot=200 seed=1 reported=boxed`).

A bundle is untrusted: its options are checked field by field (ReportOptions.from_canonical: the
type and bounds of each). A bundle written before options were stored canonical carries them as
command-line words (and the analytics and audit_run parameters apart, as `params`): those are
parsed through the same options (ReportOptions.from_words), so that an old bundle still opens and
replays. No option names a path (the replay's outputs go to its scratch directory), and none sets
how much of this machine a replay may use (reader processes and budgets come from this machine's
settings; bootstrap replicates and synthetic golds are capped).
"""

from __future__ import annotations

from typing import Any

from adjudication.analytics.reports import (
    KINDS,
    OPTIONS,
    AuditRunOptions,
    ReportError,
    ReportSpec,
    audit_run_of,
    report_compute,
)
from adjudication.models import AuditRun, Dataset

DEFAULT_KINDS = ("format_share", "agreement", "consensus")
# Audits read the golds (which --no-text keeps), never a response.
GOLDS_ONLY = ("audit", "audit_run")
# Keys that vary from run to run without being numbers of the report.
VOLATILE: dict[str, frozenset[str]] = {
    # How fast the machine read the variants, not what the readers said.
    "audit": frozenset({"throughput"}),
    "audit_run": frozenset({"throughput"}),
    "analytics": frozenset({"elapsed_s"}),
}
# Kinds whose old bundles carried parameters (`params`) rather than option words.
PARAMETER_KINDS = ("analytics", "audit_run")


def spec_stored(spec: ReportSpec) -> dict[str, Any]:
    """What a bundle's report member says of the report beside its result: the kind and the
    canonical options."""
    return {"kind": spec.kind, "options": spec.options.canonical()}


def spec_from_stored(report: Any, *, where: str) -> ReportSpec:
    """A bundle's report member back into a spec, every field checked: the kind known, the options
    those of the kind (canonical, or an older bundle's command-line words and parameters) of the
    right types and in bounds."""
    if not isinstance(report, dict):
        raise ReportError(f"{where}: not an object")
    kind = report.get("kind")
    if kind not in KINDS:
        raise ReportError(f"{where}: field 'kind' must be one of {', '.join(KINDS)}")
    options = report.get("options", [])
    params = report.get("params", {})
    if not isinstance(params, dict):
        raise ReportError(f"{where}: field 'params' must be an object")
    value = report.get("text_dependent", [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ReportError(f"{where}: field 'text_dependent' must be a list of strings")
    if "result" not in report:
        raise ReportError(f"{where}: field 'result' is missing")
    options_class = OPTIONS[kind]
    if isinstance(options, dict):
        if params:
            raise ReportError(f"{where}: field 'params': a bundle with canonical options carries no parameters")
        return ReportSpec(kind, options_class.from_canonical(options, where=f"{where}: field 'options'"))
    # Written before options were stored canonical: command-line words, or parameters.
    if kind in PARAMETER_KINDS:
        if not isinstance(options, list) or not all(isinstance(w, str) for w in options):
            raise ReportError(f"{where}: field 'options' must be a list of strings")
        if options:
            raise ReportError(f"{where}: field 'options': a {kind} report takes parameters, not options")
        if kind == "audit_run":
            run = params.get("run")
            if set(params) != {"run"} or not isinstance(run, int) or isinstance(run, bool) or not run >= 1:
                raise ReportError(f"{where}: field 'params' must be {{\"run\": ID}} with ID a positive integer")
        return ReportSpec(kind, options_class.from_canonical(params, where=f"{where}: field 'params'"))
    if params:
        raise ReportError(f"{where}: field 'params': a {kind} report takes options, not parameters")
    return ReportSpec(kind, options_class.from_words(options, where=f"{where}: field 'options'"))


def stored(spec: ReportSpec, *, dataset: Dataset) -> dict[str, Any]:
    """The numbers a bundle carries: a stored audit run's summary as the run stored it, every
    other report as computed now."""
    if isinstance(spec.options, AuditRunOptions):
        try:
            run = audit_run_of(dataset, spec.options)
        except ReportError as exc:
            raise ReportError(f"report {spec.describe()!r}: {exc}") from None
        if run.status != AuditRun.Status.DONE or not isinstance(run.summary, dict):
            raise ReportError(f"report {spec.describe()!r}: the audit run is {run.status}, not done")
        return run.summary
    return compute(spec, dataset=dataset)


def compute(spec: ReportSpec, *, dataset: Dataset) -> dict[str, Any]:
    """The report's JSON computed now (an audit into a scratch directory of its own), by this
    machine's settings for what it may use of it."""
    try:
        return report_compute(spec.kind, source=dataset, options=spec.options)
    except ReportError as exc:
        raise ReportError(f"report {spec.describe()!r}: {exc}", field=exc.field) from None
