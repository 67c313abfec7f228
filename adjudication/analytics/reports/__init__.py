"""Reports: one home for every report kind (format_share, agreement, consensus, audit, audit_run
and the analytics page's report).

- `options`: each kind's frozen options dataclass (names, types, defaults, bounds), its canonical
  JSON and the checks at every edge (a bundle, a query string, the API);
- `compute`: `report_compute(kind, source=dataset or file, options=...)`, the report's JSON;
- `render`: each kind's text;
- `defaults`: the dataset's readers for the reader options a user leaves out (one default for
  the commands, `bundle --report`, the analytics page and its landing card).

The commands parse their arguments into options, call report_compute and render; the report pages,
their API, the stored-report task, bundles and their replay call the same function, so the number a
page shows is the number the command prints is the number a bundle replays.

A new kind is an options class in `options`, a compute function in `compute` and a text in
`render`; nothing else changes (the prediction-powered `estimates` of issue 34 came so).
"""

from adjudication.analytics.reports.compute import AuditProgress, Machine, audit_run_of, report_compute
from adjudication.analytics.reports.defaults import default_spec, options_from_query, readers_resolved, spec_resolved
from adjudication.analytics.reports.options import (
    KINDS,
    OPTIONS,
    AgreementOptions,
    AnalyticsOptions,
    AuditOptions,
    AuditRunOptions,
    ConsensusOptions,
    EstimatesOptions,
    FormatShareOptions,
    ReportError,
    ReportOptions,
    ReportSpec,
    max_bootstrap,
    parse_report,
)
from adjudication.analytics.reports.render import report_json, report_text

__all__ = [
    "KINDS",
    "OPTIONS",
    "AgreementOptions",
    "AnalyticsOptions",
    "AuditOptions",
    "AuditProgress",
    "AuditRunOptions",
    "ConsensusOptions",
    "EstimatesOptions",
    "FormatShareOptions",
    "Machine",
    "ReportError",
    "ReportOptions",
    "ReportSpec",
    "audit_run_of",
    "default_spec",
    "max_bootstrap",
    "options_from_query",
    "parse_report",
    "readers_resolved",
    "report_compute",
    "report_json",
    "report_text",
    "spec_resolved",
]
