"""The reports a bundle can carry, and how each is computed: by the same code the user ran, so that
the numbers a replay compares are the numbers the command prints.

* `format_share`, `agreement`, `consensus`: the management command for the bundled dataset with
  `--json` and the report's own options (`consensus --by checkpoint --bootstrap 50`); its JSON output.
* `audit`: `audit_verifiers` for the bundled dataset plus options, into a scratch directory; its
  summary.json.
* `audit_run`: a stored audit run of the dataset (`audit_run run=ID`): the bundle carries the
  summary the run stored; the replay runs that audit again (audit.services.audit_summary).
* `analytics`: the analytics page's whole report (`analytics.services.report_body`) for the
  parameters given as key=value (`analytics n_boot=200 seed=1 reported=boxed`), those of
  analytics.report.Params.

A bundle is untrusted: its options are never handed to a command line. Each word is parsed against
the kind's allow-list (OPTIONS) into a typed, bounded value, and the command is called with those
values as keyword arguments. No option names a path (the replay's outputs go to its scratch
directory), and none sets how much of this machine a replay may use (`--processes`, `--budget`
come from this machine's settings; bootstrap replicates and synthetic golds are capped).
"""

from __future__ import annotations

import json
import shlex
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from io import StringIO
from pathlib import Path
from typing import Any, Literal

from django.conf import settings
from django.core.management import CommandError, call_command

from adjudication.models import AuditRun, Dataset
from adjudication.validators import is_plain_integer

COMMAND_KINDS = ("format_share", "agreement", "consensus")
KINDS = (*COMMAND_KINDS, "audit", "audit_run", "analytics")
DEFAULT_KINDS = ("format_share", "agreement", "consensus")
# Options the bundle sets itself: the source is the bundled dataset, the output JSON in scratch.
RESERVED = ("--dataset", "--input", "--golds", "--json", "--out", "--no-progress", "--items")
# What a replay may use of this machine is this machine's to say.
MACHINE = ("--processes", "--budget")
# Audits read the golds (which --no-text keeps), never a response.
GOLDS_ONLY = ("audit", "audit_run")
# Keys that vary from run to run without being numbers of the report.
VOLATILE: dict[str, frozenset[str]] = {
    # How fast the machine read the variants, not what the readers said.
    "audit": frozenset({"throughput"}),
    "audit_run": frozenset({"throughput"}),
    "analytics": frozenset({"elapsed_s"}),
}
# Synthetic golds an audit report may ask for: docs/audit.md's runs use 300; each adds some thirty
# variants per reader.
MAX_SYNTHETIC = 500
SEED_MAX = 2**32 - 1  # NumPy's seeds
NAME_MAX = 200  # a reader, checkpoint or task-type word
ID_MAX = 2**63 - 1


def max_bootstrap() -> int:
    """BUNDLE_MAX_BOOTSTRAP: the most bootstrap replicates a bundled report may ask for (each
    consensus replicate refits the model; 100,000 kept a replay running for over 24 minutes)."""
    return int(getattr(settings, "BUNDLE_MAX_BOOTSTRAP", 2000))


class ReportError(ValueError):
    """A report that cannot be computed on these data, with the command's own message; or report
    options or parameters a bundle may not carry."""


Kind = Literal["int", "float", "str", "flag", "choice"]
Bound = int | float | Callable[[], int]


@dataclass(frozen=True)
class Option:
    """One option a bundled report may carry: its flags, the command's keyword, its type and bounds."""

    flags: tuple[str, ...]
    dest: str
    kind: Kind
    low: Bound | None = None
    high: Bound | None = None
    choices: tuple[str, ...] = ()
    repeat: bool = False

    def value(self, text: str, *, where: str) -> Any:
        flag = self.flags[0]
        if self.kind == "choice":
            if text not in self.choices:
                raise ReportError(f"{where}: {flag} must be one of {', '.join(self.choices)}, not {text[:50]!r}")
            return text
        if self.kind == "str":
            if not text or len(text) > NAME_MAX or "\x00" in text:
                raise ReportError(f"{where}: {flag} must be a name of 1 to {NAME_MAX} characters")
            return text
        try:
            number: int | float = int(text) if self.kind == "int" else float(text)
        except ValueError:
            raise ReportError(f"{where}: {flag} must be a{'n integer' if self.kind == 'int' else ' number'}") from None
        low, high = _bound(self.low), _bound(self.high)
        if not ((low is None or number >= low) and (high is None or number <= high)):  # NaN fails too
            raise ReportError(f"{where}: {flag} must be between {low} and {high}, not {text[:50]}")
        return number


def _bound(bound: Bound | None) -> int | float | None:
    return bound() if callable(bound) else bound


def _opt(flag: str, kind: Kind, **more: Any) -> Option:
    aliases = tuple(more.pop("aliases", ()))
    dest = more.pop("dest", flag.removeprefix("--").replace("-", "_"))
    return Option((flag, *aliases), dest, kind, **more)


_SEED = _opt("--seed", "int", low=0, high=SEED_MAX)
_BOOTSTRAP = _opt("--bootstrap", "int", low=0, high=max_bootstrap)
OPTIONS: dict[str, tuple[Option, ...]] = {
    "format_share": (
        _opt("--reported-reader", "str"),
        _opt("--fixed-reader", "str"),
        _opt("--base-checkpoint", "str"),
        _opt("--min-reported-gain", "float", low=-100.0, high=100.0),
        _opt("--min-extraction-rate", "float", low=0.0, high=1.0),
        _opt("--require-thresholds", "flag"),
        _opt("--by", "choice", choices=("task_type", "benchmark")),
        _opt("--task-type", "str", repeat=True),
        _BOOTSTRAP,
        _SEED,
    ),
    "agreement": (_opt("--no-answer", "choice", choices=("incorrect", "exclude")), _SEED),
    "consensus": (
        _opt("--by", "choice", choices=("checkpoint", "model", "benchmark")),
        _opt("--model", "choice", choices=("dawid-skene", "mace")),
        _BOOTSTRAP,
        _SEED,
        _opt("--group-duplicates", "float", low=0.0, high=1.0),
        _opt("--human-weight", "int", low=1, high=1000),
    ),
    "audit": (
        _opt("--readers", "str", repeat=True, aliases=("--reader",)),
        _opt("--contract-override", "str", repeat=True, dest="contract_overrides"),
        _opt("--no-seed-contracts", "flag"),
        _opt("--synthetic", "int", low=0, high=MAX_SYNTHETIC),
    ),
}


def parse_options(kind: str, words: Any, *, where: str) -> dict[str, Any]:
    """A report's option words (`["--bootstrap", "50"]`, or `--bootstrap=50`) into the command's
    keyword arguments, typed and bounded; ReportError naming the option otherwise."""
    if not isinstance(words, (list, tuple)) or not all(isinstance(w, str) for w in words):
        raise ReportError(f"{where}: field 'options' must be a list of strings")
    allowed = {flag: option for option in OPTIONS.get(kind, ()) for flag in option.flags}
    out: dict[str, Any] = {}
    i = 0
    while i < len(words):
        name, sep, inline = words[i].partition("=")
        i += 1
        if name in RESERVED:
            raise ReportError(f"{where}: {name} is set by the bundle (the bundled dataset, JSON output)")
        if name in MACHINE:
            raise ReportError(f"{where}: {name} is not taken from a bundle (this machine's settings say it)")
        option = allowed.get(name)
        if option is None:
            known = ", ".join(o.flags[0] for o in OPTIONS.get(kind, ())) or "none"
            raise ReportError(f"{where}: {name[:50]!r} is not an option a bundled {kind} report may carry ({known})")
        if option.kind == "flag":
            if sep:
                raise ReportError(f"{where}: {name} takes no value")
            value: Any = True
        else:
            if not sep:
                if i >= len(words):
                    raise ReportError(f"{where}: {name} needs a value")
                inline = words[i]
                i += 1
            value = option.value(inline, where=where)
        if option.repeat:
            out.setdefault(option.dest, []).append(value)
        elif option.dest in out:
            raise ReportError(f"{where}: {name} is given twice")
        else:
            out[option.dest] = value
    return out


@dataclass(frozen=True)
class ReportSpec:
    kind: str
    options: tuple[str, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)  # analytics: Params.canonical(); audit_run: {"run": ID}

    def describe(self) -> str:
        if self.kind in ("analytics", "audit_run"):
            return self.kind + " " + " ".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return " ".join([self.kind, *self.options])

    def arguments(self) -> dict[str, Any]:
        """The command's keyword arguments for the options (checked again: a spec may come from a bundle)."""
        return parse_options(self.kind, list(self.options), where=f"report {self.describe()!r}")

    @classmethod
    def from_stored(cls, report: Any, *, where: str) -> ReportSpec:
        """A bundle's report member back into a spec, every field checked: the kind known, the
        options those of the kind's allow-list, the parameters of the right types and bounds."""
        if not isinstance(report, dict):
            raise ReportError(f"{where}: not an object")
        kind = report.get("kind")
        if kind not in KINDS:
            raise ReportError(f"{where}: field 'kind' must be one of {', '.join(KINDS)}")
        options = report.get("options", [])
        params = report.get("params", {})
        if not isinstance(params, dict):
            raise ReportError(f"{where}: field 'params' must be an object")
        for key in ("text_dependent",):
            value = report.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ReportError(f"{where}: field {key!r} must be a list of strings")
        if "result" not in report:
            raise ReportError(f"{where}: field 'result' is missing")
        parse_options(kind, options, where=f"{where}: field 'options'")
        if kind in ("analytics", "audit_run") and options:
            raise ReportError(f"{where}: field 'options': a {kind} report takes parameters, not options")
        if kind == "analytics":
            params = checked_analytics_params(params, where=f"{where}: field 'params'")
        elif kind == "audit_run":
            run = params.get("run")
            if set(params) != {"run"} or not isinstance(run, int) or isinstance(run, bool) or not 1 <= run <= ID_MAX:
                raise ReportError(f"{where}: field 'params' must be {{\"run\": ID}} with ID a positive integer")
        elif params:
            raise ReportError(f"{where}: field 'params': a {kind} report takes options, not parameters")
        return cls(kind, tuple(options), params)


def parse_report(text: str) -> ReportSpec:
    """`KIND [OPTIONS]` (shell quoting) into a spec; ReportError on an unknown kind, an option the
    kind's allow-list does not have or out of its bounds, or an unknown analytics parameter."""
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
    parse_options(kind, rest, where=f"report {text!r}")
    return ReportSpec(kind, tuple(rest))


# The analytics report's parameters a bundle may carry, with their bounds (the page's own are the
# same for min_gain and min_extraction; n_boot and seed as for the commands).
_ANALYTICS_BOUNDS: dict[str, tuple[Bound, Bound]] = {
    "min_gain": (0.0, 100.0),
    "min_extraction": (0.0, 1.0),
    "n_boot": (0, max_bootstrap),
    "seed": (0, SEED_MAX),
}


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
    return checked_analytics_params(p.canonical(), where=where)


def checked_analytics_params(params: dict[str, Any], *, where: str) -> dict[str, Any]:
    """Analytics parameters as Params.canonical() gives them: known keys, each of its type and in
    its bounds; ReportError naming the key otherwise."""
    from adjudication.analytics.report import DISPLAY_ONLY, Params

    known = {f.name: f.type for f in fields(Params) if f.name not in DISPLAY_ONLY}
    out: dict[str, Any] = {}
    for key, value in params.items():
        kind = known.get(key)
        if kind is None:
            raise ReportError(f"{where}: {str(key)[:50]!r} is not a parameter ({', '.join(sorted(known))})")
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if kind == "int" and not (number and isinstance(value, int)):
            raise ReportError(f"{where}: {key} must be an integer")
        if kind == "float" and not number:
            raise ReportError(f"{where}: {key} must be a number")
        if kind == "str" and not (isinstance(value, str) and len(value) <= NAME_MAX and "\x00" not in value):
            raise ReportError(f"{where}: {key} must be a string of at most {NAME_MAX} characters")
        if key in _ANALYTICS_BOUNDS:
            low, high = (_bound(b) for b in _ANALYTICS_BOUNDS[key])
            assert low is not None and high is not None
            if not low <= value <= high:  # NaN fails too
                raise ReportError(f"{where}: {key} must be between {low} and {high}, not {value}")
        out[key] = float(value) if kind == "float" else value
    return out


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
        from readers import registry

        run = _audit_run(spec, dataset)
        # The run's row came from the bundle too: its readers are checked like any option.
        if (
            not isinstance(run.readers, list)
            or not 1 <= len(run.readers) <= 100
            or not all(isinstance(r, str) and len(r) <= NAME_MAX for r in run.readers)
        ):
            raise ReportError(f"report {spec.describe()!r}: the audit run's readers are not a list of reader names")
        with tempfile.TemporaryDirectory(prefix="bundle-audit-") as scratch:
            try:
                return audit_summary(run=run, out_dir=Path(scratch))
            except (ValueError, registry.UnknownReader) as exc:
                raise ReportError(f"report {spec.describe()!r}: {exc}") from None
    if spec.kind == "analytics":
        from adjudication.analytics.report import Params
        from adjudication.analytics.services import report_body

        return report_body(dataset=dataset, params=Params.from_stored(spec.params))
    arguments = spec.arguments()
    out, err = StringIO(), StringIO()
    try:
        if spec.kind == "audit":
            with tempfile.TemporaryDirectory(prefix="bundle-audit-") as scratch:
                call_command(
                    "audit_verifiers",
                    dataset=dataset.name,
                    out=scratch,
                    no_progress=True,
                    stdout=out,
                    stderr=err,
                    **arguments,
                )
                result: dict[str, Any] = json.loads((Path(scratch) / "summary.json").read_text(encoding="utf-8"))
                return result
        call_command(spec.kind, dataset=dataset.name, json=True, stdout=out, stderr=err, **arguments)
    except CommandError as exc:
        raise ReportError(f"report {spec.describe()!r}: {exc}") from None
    except SystemExit:  # argparse: a bad value; its message is on stderr
        raise ReportError(f"report {spec.describe()!r}: {err.getvalue().strip() or 'bad options'}") from None
    parsed: dict[str, Any] = json.loads(out.getvalue())
    return parsed
