"""Each report kind's options as one frozen dataclass: the one home of their names, types, defaults
and bounds, for the commands, the pages, the API and bundles alike.

Two levels of checking. Constructing an options object checks what makes a report meaningless
whoever asks (a negative bootstrap, thresholds --require-thresholds refuses): the commands build
options so, from arguments their own user typed. Options that come from elsewhere, a bundle (an
untrusted file), a page's query string or an API request, go through `from_canonical`,
`from_words` or `from_query`, which also hold every value to its type and to bounds on what a
computation may cost this machine (bootstrap replicates and synthetic golds are capped; no option
names a path or this machine's processes). Every refusal is a ReportError naming the field.

`canonical()` is the options' one JSON form (every field, typed): what a bundle and a stored report
carry and what a stored report's key hashes. `argv()` gives back the command-line words of the
options that differ from the defaults (a report's readable name: `consensus --bootstrap 5`).
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, Literal, TypeVar

from django.conf import settings

from adjudication.analytics.estimates import GROUP_FIELDS, EstimateError, parse_estimate_target
from adjudication.errors import ApplicationError
from adjudication.validators import is_plain_integer


class ReportError(ApplicationError):
    """A report that cannot be computed on these data, or options a report may not take; the
    message is one sentence for the user, `field` the option at fault when one is."""


Kind = Literal["int", "float", "str", "flag", "choice"]
Bound = int | float | Callable[[], int]

SEED_MAX = 2**32 - 1  # NumPy's seeds
NAME_MAX = 200  # a reader, checkpoint or task-type word
ID_MAX = 2**63 - 1
# Synthetic golds an audit report may ask for: docs/audit.md's runs use 300; each adds some thirty
# variants per reader.
MAX_SYNTHETIC = 500
# Command-line options that name where a report reads or writes, or how it prints: a report's
# source and output are its caller's (a bundle's dataset, a page's), never an option's.
RESERVED = ("--dataset", "--input", "--golds", "--json", "--out", "--no-progress", "--items")
# What a computation may use of this machine is this machine's to say.
MACHINE = ("--processes", "--budget")
TRUE_WORDS, FALSE_WORDS = ("1", "true", "on", "yes"), ("0", "false", "off", "no", "")


def max_bootstrap() -> int:
    """BUNDLE_MAX_BOOTSTRAP: the most bootstrap replicates options from a bundle, a page or the API
    may ask for (each consensus replicate refits the model; 100,000 kept a replay running for over
    24 minutes)."""
    return int(getattr(settings, "BUNDLE_MAX_BOOTSTRAP", 2000))


def _bound(bound: Bound | None) -> int | float | None:
    return bound() if callable(bound) else bound


@dataclass(frozen=True)
class Option:
    """What the edges know of one field: its type, command-line flag and bounds."""

    kind: Kind
    flag: str = ""  # default: --the-field-name
    aliases: tuple[str, ...] = ()
    low: Bound | None = None
    high: Bound | None = None
    choices: tuple[str, ...] = ()
    repeat: bool = False
    # False: the command-line only (a file report's option), never taken from a bundle or a query.
    shared: bool = True
    empty: bool = False  # a str option that may be "" (the page's reference: none)


def option(default: Any, kind: Kind, **spec: Any) -> Any:
    """A dataclass field with its Option; a repeated option's default is the empty tuple."""
    return field(default=default, metadata={"option": Option(kind, **spec)})


@dataclass(frozen=True)
class _Field:
    name: str
    option: Option
    default: Any

    @property
    def flag(self) -> str:
        return self.option.flag or "--" + self.name.replace("_", "-")

    def text_value(self, text: str, *, label: str) -> Any:
        """One value from text (a command-line word, a query parameter), typed and bounded."""
        o = self.option
        if o.kind == "flag":
            if text.lower() not in (*TRUE_WORDS, *FALSE_WORDS):
                raise ReportError(f"{label} must be true or false, not {text[:50]!r}", field=self.name)
            return text.lower() in TRUE_WORDS
        if o.kind in ("choice", "str"):
            return self.checked(text, label=label)
        try:
            number: int | float = int(text) if o.kind == "int" else float(text)
        except ValueError:
            raise ReportError(
                f"{label} must be a{'n integer' if o.kind == 'int' else ' number'}", field=self.name
            ) from None
        return self.checked(number, label=label, shown=text[:50])

    def checked(self, value: Any, *, label: str, shown: str | None = None) -> Any:
        """A value of the field's JSON type, in its choices and bounds."""
        o, name = self.option, self.name
        if value is None and self.default is None:
            return None
        if o.kind == "flag":
            if not isinstance(value, bool):
                raise ReportError(f"{label} must be true or false", field=name)
            return value
        if o.kind == "choice":
            if value not in o.choices:
                raise ReportError(f"{label} must be one of {', '.join(o.choices)}, not {str(value)[:50]!r}", field=name)
            return value
        if o.kind == "str":
            if not isinstance(value, str) or len(value) > NAME_MAX or "\x00" in value:
                ok = False
            else:
                ok = bool(value) or o.empty
            if not ok:
                raise ReportError(
                    f"{label} must be a string of at most {NAME_MAX} characters"
                    if o.empty
                    else f"{label} must be a name of 1 to {NAME_MAX} characters",
                    field=name,
                )
            return value
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if o.kind == "int" and not (number and isinstance(value, int)):
            raise ReportError(f"{label} must be an integer", field=name)
        if not number:
            raise ReportError(f"{label} must be a number", field=name)
        low, high = _bound(o.low), _bound(o.high)
        if not ((low is None or value >= low) and (high is None or value <= high)):  # NaN fails too
            raise ReportError(
                f"{label} must be between {low} and {high}, not {shown if shown is not None else value}", field=name
            )
        return float(value) if o.kind == "float" else value


Opts = TypeVar("Opts", bound="ReportOptions")


@dataclass(frozen=True)
class ReportOptions:
    """The base of every kind's options (see the module's docstring)."""

    kind: ClassVar[str]

    @classmethod
    def _fields(cls) -> list[_Field]:
        out = []
        for f in fields(cls):
            default = f.default if f.default is not MISSING else None
            out.append(_Field(f.name, f.metadata["option"], default))
        return out

    def canonical(self) -> dict[str, Any]:
        """Every field a report may carry (all but a file's own options), typed, as JSON."""
        return {f.name: _jsonable(getattr(self, f.name)) for f in self._fields() if f.option.shared}

    @property
    def key(self) -> str:
        """sha256 of the canonical options as JSON (one stored report per key and data version)."""
        return canonical_key(self.canonical())

    @classmethod
    def from_canonical(cls: type[Opts], data: Any, *, where: str = "options") -> Opts:
        """Options from their canonical JSON (a field left out takes its default); ReportError naming
        the field for an unknown one or a value of the wrong type or out of bounds."""
        if not isinstance(data, dict):
            raise ReportError(f"{where} must be an object")
        known = {f.name: f for f in cls._fields() if f.option.shared}
        values: dict[str, Any] = {}
        for key, value in data.items():
            f = known.get(key) if isinstance(key, str) else None
            if f is None:
                raise ReportError(
                    f"{where}: {str(key)[:50]!r} is not an option of a {cls.kind} report "
                    f"({', '.join(known) or 'none'})",
                    field=str(key)[:50],
                )
            label = f"{where}: {key}"
            if value is None and f.default is None:
                values[key] = None
            elif f.option.repeat:
                if not isinstance(value, list):
                    raise ReportError(f"{label} must be a list", field=key)
                values[key] = tuple(f.checked(v, label=label) for v in value)
            else:
                values[key] = f.checked(value, label=label)
        return cls._made(values, where=where)

    @classmethod
    def from_words(cls: type[Opts], words: Any, *, where: str) -> Opts:
        """Options from command-line words (`["--bootstrap", "50"]`, or `--bootstrap=50`) as a
        bundle's `--report` and an old bundle carry them; ReportError naming the option otherwise."""
        if not isinstance(words, (list, tuple)) or not all(isinstance(w, str) for w in words):
            raise ReportError(f"{where}: field 'options' must be a list of strings")
        shared = [f for f in cls._fields() if f.option.shared]
        allowed = {flag: f for f in shared for flag in (f.flag, *f.option.aliases)}
        values: dict[str, Any] = {}
        i = 0
        while i < len(words):
            name, sep, inline = words[i].partition("=")
            i += 1
            if name in RESERVED:
                raise ReportError(f"{where}: {name} is set by the bundle (the bundled dataset, JSON output)")
            if name in MACHINE:
                raise ReportError(f"{where}: {name} is not taken from a bundle (this machine's settings say it)")
            f = allowed.get(name)
            if f is None:
                known = ", ".join(f.flag for f in shared) or "none"
                raise ReportError(
                    f"{where}: {name[:50]!r} is not an option a bundled {cls.kind} report may carry ({known})"
                )
            if f.option.kind == "flag":
                if sep:
                    raise ReportError(f"{where}: {name} takes no value", field=f.name)
                value: Any = True
            else:
                if not sep:
                    if i >= len(words):
                        raise ReportError(f"{where}: {name} needs a value", field=f.name)
                    inline = words[i]
                    i += 1
                value = f.text_value(inline, label=f"{where}: {f.flag}")
            if f.option.repeat:
                values[f.name] = (*values.get(f.name, ()), value)
            elif f.name in values:
                raise ReportError(f"{where}: {name} is given twice", field=f.name)
            else:
                values[f.name] = value
        return cls._made(values, where=where)

    @classmethod
    def from_query(cls: type[Opts], query: Mapping[str, Any], *, ignore: tuple[str, ...] = ()) -> Opts:
        """Options from a query string (a QueryDict: a repeated option repeats its parameter; a
        flag is true/false); a parameter that is no option, or a bad value, is a ReportError
        naming it."""
        known = {f.name: f for f in cls._fields() if f.option.shared}
        values: dict[str, Any] = {}
        for key in query:
            if key in ignore:
                continue
            f = known.get(key)
            if f is None:
                raise ReportError(
                    f"{key[:50]!r} is not an option of a {cls.kind} report ({', '.join(known) or 'none'})",
                    field=key[:50],
                )
            texts = query.getlist(key) if hasattr(query, "getlist") else [query[key]]
            if f.option.repeat:
                values[key] = tuple(f.text_value(t, label=key) for t in texts if t != "")
            elif texts and texts[-1] != "":  # an empty form field: the default
                values[key] = f.text_value(texts[-1], label=key)
        return cls._made(values, where="")

    @classmethod
    def from_arguments(cls: type[Opts], arguments: Mapping[str, Any]) -> Opts:
        """Options from a command's parsed arguments (its options' dests are the fields' names;
        anything else, such as --verbosity, is not an option of the report)."""
        values = {}
        for f in cls._fields():
            if f.name in arguments:
                value = arguments[f.name]
                values[f.name] = tuple(value) if f.option.repeat and value is not None else value
        return cls(**values)

    @classmethod
    def _made(cls: type[Opts], values: dict[str, Any], *, where: str) -> Opts:
        try:
            return cls(**values)
        except ReportError as exc:
            raise ReportError(f"{where}: {exc.message}" if where else exc.message, field=exc.field) from None

    def _changed(self) -> list[tuple[_Field, Any]]:
        return [(f, getattr(self, f.name)) for f in self._fields() if getattr(self, f.name) != f.default]

    def argv(self) -> list[str]:
        """The command-line words of the options that differ from the defaults, in field order."""
        words: list[str] = []
        for f, value in self._changed():
            if f.option.kind == "flag":
                words.append(f.flag)
            else:
                for v in value if f.option.repeat else (value,):
                    words += [f.flag, str(v)]
        return words

    def arguments(self) -> dict[str, Any]:
        """The options that differ from the defaults, by field name (repeated ones as lists)."""
        return {f.name: _jsonable(value) for f, value in self._changed()}

    def describe(self) -> str:
        """The report's readable name: `consensus --bootstrap 5 --seed 1`."""
        return " ".join([self.kind, *self.argv()])


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def canonical_key(data: dict[str, Any]) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _need(ok: bool, message: str, name: str) -> None:
    if not ok:
        raise ReportError(message, field=name)


_SEED = {"low": 0, "high": SEED_MAX}
_BOOTSTRAP = {"low": 0, "high": max_bootstrap}


@dataclass(frozen=True)
class FormatShareOptions(ReportOptions):
    """`format_share`: how much of each base→RL gain is format (docs/analytics.md)."""

    kind: ClassVar[str] = "format_share"
    reported_reader: str = option("boxed", "str")
    fixed_reader: str = option("fixed", "str")
    base_checkpoint: str = option("base", "str")
    min_reported_gain: float = option(0.0, "float", low=-100.0, high=100.0)
    min_extraction_rate: float = option(0.0, "float", low=0.0, high=1.0)
    require_thresholds: bool = option(False, "flag")
    by: str | None = option(None, "choice", choices=("task_type", "benchmark"))
    task_type: tuple[str, ...] = option((), "str", repeat=True)
    bootstrap: int = option(1000, "int", **_BOOTSTRAP)
    seed: int = option(0, "int", **_SEED)
    # With --fixed-reader human: the predictor of the prediction-powered block ("": the `fixed`
    # reader where it read the dataset, else the vote of every producer).
    predictor: str = option("", "str", empty=True)

    def __post_init__(self) -> None:
        _need(self.bootstrap >= 0, "--bootstrap must be 0 or more", "bootstrap")
        _need(
            0 <= self.min_extraction_rate <= 1,
            "--min-extraction-rate is a share between 0 and 1",
            "min_extraction_rate",
        )
        _need(
            not self.predictor or self.fixed_reader == "human",
            "--predictor is the predictor of the prediction-powered estimates, which only --fixed-reader human adds",
            "predictor",
        )

    def thresholds_checked(self) -> None:
        """--require-thresholds: refuse to run with either eligibility threshold left at 0 (checked
        when the report runs: a bundle may carry the flag with the thresholds it is given)."""
        if self.require_thresholds and (self.min_reported_gain <= 0 or self.min_extraction_rate <= 0):
            zero = [
                flag
                for flag, v in (
                    ("--min-reported-gain", self.min_reported_gain),
                    ("--min-extraction-rate", self.min_extraction_rate),
                )
                if v <= 0
            ]
            raise ReportError(
                f"--require-thresholds: {' and '.join(zero)} left at 0 (seed 000 pools only clearly "
                "positive gains with adequate extraction; choose the thresholds)",
                field="require_thresholds",
            )

    def pooled(self, obs: list[Any], *, task_types: dict[str, str] | None = None) -> dict[str, Any]:
        """The format share of these observations (analytics.format_share.compute) under these
        options, as JSON; the eligible comparisons pooled overall and `by` task type or benchmark."""
        from adjudication.analytics import format_share as fs
        from adjudication.analytics.stats import jsonable

        same = {name: getattr(self, name) for name in ("base_checkpoint", "min_reported_gain", "min_extraction_rate")}
        result = fs.compute(obs, **same, by=self.by, task_types=task_types, n_boot=self.bootstrap, seed=self.seed)
        return dict(jsonable(fs.strip_private(result)))

    def task_types(self) -> dict[str, str]:
        """["mmlu=multiple_choice", …] → {"mmlu": "multiple_choice"}; a clear error on a bad value."""
        from adjudication.analytics.format_share import normalise_task_type

        out = {}
        for value in self.task_type:
            bench, sep, kind = value.partition("=")
            _need(bool(sep and bench.strip()), f"--task-type {value!r}: expected BENCHMARK=TYPE", "task_type")
            try:
                out[bench.strip()] = normalise_task_type(kind)
            except ValueError as exc:
                raise ReportError(f"--task-type {value!r}: {exc}", field="task_type") from exc
        return out


@dataclass(frozen=True)
class AgreementOptions(ReportOptions):
    """`agreement`: producers (readers, LLM judges) against the human verdicts."""

    kind: ClassVar[str] = "agreement"
    # A file's breakdown fields (model,checkpoint): a dataset's report has every breakdown.
    by: str = option("", "str", shared=False)
    no_answer: str = option("incorrect", "choice", choices=("incorrect", "exclude"))
    seed: int = option(0, "int", **_SEED)


@dataclass(frozen=True)
class ConsensusOptions(ReportOptions):
    """`consensus`: the panel's latent-class fit (docs/consensus.md)."""

    kind: ClassVar[str] = "consensus"
    by: str | None = option(None, "choice", choices=("checkpoint", "model", "benchmark"))
    model: str = option("dawid-skene", "choice", choices=("dawid-skene", "mace"))
    bootstrap: int = option(200, "int", **_BOOTSTRAP)
    seed: int = option(0, "int", **_SEED)
    group_duplicates: float | None = option(None, "float", low=0.0, high=1.0)
    human_weight: int = option(1, "int", low=1, high=1000)

    def __post_init__(self) -> None:
        _need(self.bootstrap >= 0, "--bootstrap must be 0 or more", "bootstrap")
        _need(
            self.group_duplicates is None or 0.5 < self.group_duplicates <= 1,
            "--group-duplicates must be in (0.5, 1]",
            "group_duplicates",
        )
        _need(self.human_weight >= 1, "--human-weight must be 1 or more", "human_weight")
        _need(
            self.human_weight == 1 or self.model == "dawid-skene",
            "--human-weight needs --model dawid-skene (MACE takes no known labels)",
            "human_weight",
        )


@dataclass(frozen=True)
class AuditOptions(ReportOptions):
    """`audit`: the metamorphic verifier audit of seed 001 (docs/audit.md)."""

    kind: ClassVar[str] = "audit"
    # None: seed 001's four verifiers (readers.audit.runner.resolve_readers).
    readers: tuple[str, ...] | None = option(None, "str", repeat=True, aliases=("--reader",))
    contract_overrides: tuple[str, ...] | None = option(None, "str", repeat=True, flag="--contract-override")
    no_seed_contracts: bool = option(False, "flag")
    synthetic: int = option(0, "int", low=0, high=MAX_SYNTHETIC)

    def __post_init__(self) -> None:
        _need(self.synthetic >= 0, "--synthetic must be >= 0", "synthetic")


@dataclass(frozen=True)
class AuditRunOptions(ReportOptions):
    """`audit_run`: a stored audit run of the dataset, run again."""

    kind: ClassVar[str] = "audit_run"
    run: int = option(0, "int", low=1, high=ID_MAX)

    def __post_init__(self) -> None:
        _need(self.run >= 1, "run: the id of one of the dataset's audit runs is required", "run")

    def describe(self) -> str:
        return f"audit_run run={self.run}"


@dataclass(frozen=True)
class AnalyticsOptions(ReportOptions):
    """The analytics page's report (analytics.report.Params holds these and the page's display
    choice; the canonical forms are one: a stored report's key hashes it)."""

    kind: ClassVar[str] = "analytics"
    reported: str = option("boxed", "str", empty=True)
    fixed: str = option("fixed", "str", empty=True)
    base: str = option("base", "str", empty=True)
    reference: str = option("", "str", empty=True)
    min_gain: float = option(0.0, "float", low=0.0, high=100.0)
    min_extraction: float = option(0.0, "float", low=0.0, high=1.0)
    pool_by: str = option("", "str", empty=True)
    n_boot: int = option(1000, "int", **_BOOTSTRAP)
    seed: int = option(0, "int", **_SEED)

    @classmethod
    def from_words(cls, words: Any, *, where: str) -> AnalyticsOptions:
        """`KEY=VALUE` words (`n_boot=200 seed=1`), as `bundle --report "analytics …"` takes them."""
        known = {f.name: f for f in cls._fields()}
        values: dict[str, Any] = {}
        for word in words:
            key, sep, text = word.partition("=")
            f = known.get(key) if sep else None
            if f is None:
                raise ReportError(f"{where}: {word!r} is not KEY=VALUE with KEY one of {', '.join(sorted(known))}")
            values[key] = text if f.option.kind == "str" else f.text_value(text, label=f"{where}: {key}")
        return cls.from_canonical(values, where=where)

    def describe(self) -> str:
        return "analytics " + " ".join(f"{k}={v}" for k, v in sorted(self.canonical().items()))


@dataclass(frozen=True)
class EstimatesOptions(ReportOptions):
    """`estimates`: each headline number machine only, human only and prediction-powered
    (docs/estimates.md). Empty target: the headline set; empty predictor: the fixed reader, else
    the vote; empty policy: the design's own choice of labels."""

    kind: ClassVar[str] = "estimates"
    target: str = option("", "str", empty=True)
    predictor: str = option("", "str", empty=True)
    policy: str = option("", "str", empty=True)
    by: str = option("checkpoint", "choice", choices=GROUP_FIELDS)
    base: str = option("base", "str")
    reported: str = option("boxed", "str")
    seed: int = option(0, "int", **_SEED)

    def __post_init__(self) -> None:
        if self.target:
            try:
                parse_estimate_target(self.target)
            except EstimateError as exc:
                raise ReportError(f"target: {exc.message}", field="target") from None


@dataclass(frozen=True)
class JudgeCardOptions(ReportOptions):
    """`judge_card`: each producer's judge-bias card (docs/analytics.md, "The judge-bias card").
    `preferred` is the analytics page's scope: the labelled controls when there are any, else every
    reviewed item."""

    kind: ClassVar[str] = "judge_card"
    scope: str = option("preferred", "choice", choices=("preferred", "reviewed", "controls", "disputed"))
    seed: int = option(0, "int", **_SEED)


OPTIONS: dict[str, type[ReportOptions]] = {
    cls.kind: cls
    for cls in (
        FormatShareOptions,
        AgreementOptions,
        ConsensusOptions,
        AuditOptions,
        AuditRunOptions,
        AnalyticsOptions,
        EstimatesOptions,
        JudgeCardOptions,
    )
}
KINDS = tuple(OPTIONS)


@dataclass(frozen=True)
class ReportSpec:
    """One report: its kind and its options. What a bundle carries (kind + canonical options) and
    what a stored report's row holds as its parameters (`stored()`)."""

    kind: str
    options: ReportOptions

    @classmethod
    def default(cls, kind: str) -> ReportSpec:
        return cls(kind, OPTIONS[kind]())

    def describe(self) -> str:
        return self.options.describe()

    def arguments(self) -> dict[str, Any]:
        return self.options.arguments()

    def canonical(self) -> dict[str, Any]:
        """A stored report row's parameters. The analytics page's report keeps the form it always
        had (its options alone: rows stored before this kind had a name stay current); every
        other kind names itself."""
        if self.kind == AnalyticsOptions.kind:
            return self.options.canonical()
        return {"report": self.kind, "options": self.options.canonical()}

    @property
    def key(self) -> str:
        return canonical_key(self.canonical())

    @classmethod
    def from_row(cls, params: dict[str, Any]) -> ReportSpec:
        """Back from a stored report row's parameters (what canonical() gave)."""
        kind = params.get("report", AnalyticsOptions.kind)
        options_class = OPTIONS.get(kind)
        if options_class is None:
            raise ReportError(f"{str(kind)[:50]!r} is not a report kind ({', '.join(KINDS)})")
        stored = params["options"] if "report" in params else params
        return cls(kind, options_class.from_canonical(stored))


def named_options(text: str) -> frozenset[str]:
    """The option fields a `KIND [OPTIONS]` text names itself (what parse_report took from its
    words rather than from the defaults): the fields whose defaults a dataset may set instead
    (reports.defaults) are those it leaves out. Call it on a text parse_report accepted."""
    words = shlex.split(text)
    kind, rest = words[0], words[1:]
    fields_ = OPTIONS[kind]._fields()
    if kind in ("analytics", "audit_run"):
        known = {f.name for f in fields_}
        return frozenset(k for k, sep, _ in (w.partition("=") for w in rest) if sep and k in known)
    flags = {flag: f.name for f in fields_ for flag in (f.flag, *f.option.aliases)}
    return frozenset(flags[w.partition("=")[0]] for w in rest if w.partition("=")[0] in flags)


def parse_report(text: str) -> ReportSpec:
    """`KIND [OPTIONS]` (shell quoting), as `manage.py report` and `bundle --report` take it, into a
    spec; ReportError on an unknown kind, an option the kind does not have or out of its bounds, or
    an unknown analytics parameter."""
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
        return ReportSpec(kind, AuditRunOptions.from_canonical({"run": int(rest[0][4:])}, where=f"report {text!r}"))
    if kind == "analytics":
        return ReportSpec(kind, AnalyticsOptions.from_words(rest, where=f"report {text!r}"))
    return ReportSpec(kind, OPTIONS[kind].from_words(rest, where=f"report {text!r}"))
