"""Write a bundle of a dataset and its reports; load one into a fresh database and replay it.

The archive is a zip of JSON members:
  manifest.json          format, version, dataset, what was left out, every member's sha256 and rows
  environment.json       the platform's git commit, Python, every installed package and its version
  readers.json           each reader spec's name, version, config and config hash, and whether the
                         registry here still has that reader (its current version and hash)
  tables/<table>.jsonl   one row per line (contents.TABLES)
  reports/<n>-<kind>.json  {"kind", "options", "params", "result"}: the numbers as computed
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import platform
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.color import no_style
from django.core.serializers.json import DjangoJSONEncoder
from django.db import DatabaseError, connection, models, transaction

from adjudication.analytics.reports import default_spec
from adjudication.analytics.selectors import read_snapshot
from adjudication.archives import ArchiveError, BoundedMember, BoundedZip
from adjudication.bundles import checks, contents, reports
from adjudication.bundles.compare import Difference, differences
from adjudication.errors import ApplicationError
from adjudication.models import Dataset, ReaderSpec

FORMAT = "adjudication-bundle"
VERSION = 1
MANIFEST = "manifest.json"
SIGNATURE = "manifest.sig"  # {"algorithm": "hmac-sha256", "hmac": hex} over manifest.json's bytes
LOAD_BATCH = 2000  # rows per INSERT while loading: memory stays bounded however large the table


class BundleError(ApplicationError, ValueError):
    """A bundle that cannot be read or loaded: the message names the file, the member, the line and
    the field. Still a ValueError, as before the one base, for the callers that catch it as one."""


class _Encoder(DjangoJSONEncoder):
    def default(self, o: Any) -> Any:
        # DjangoJSONEncoder cuts date-times to milliseconds; the newest label is found by its time.
        if isinstance(o, datetime):
            return o.isoformat()
        return super().default(o)


def _dumps(value: Any) -> str:
    # ensure_ascii: model text may hold lone surrogates, which UTF-8 cannot write but a JSON
    # escape can (and json.loads gives them back); NUL becomes \u0000 the same way.
    return json.dumps(value, cls=_Encoder, ensure_ascii=True, sort_keys=True, separators=(",", ":"))


def environment() -> dict[str, Any]:
    """Where the numbers were computed: commit, interpreter and every installed distribution (the
    readers' verdicts depend on math-verify, SymPy and the ANTLR runtime; the statistics on NumPy,
    SciPy, statsmodels, scikit-learn and crowd-kit)."""
    packages = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            packages[name.lower()] = dist.version
    return {
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "database": connection.vendor,
        "packages": dict(sorted(packages.items())),
    }


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(settings.BASE_DIR), *args], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def readers_table(dataset: Dataset) -> list[dict[str, Any]]:
    """Every reader spec of the dataset, with what this registry has under its name."""
    from readers import registry

    known = registry.snapshot()
    out = []
    for spec in ReaderSpec.objects.filter(id__in=contents.spec_ids(dataset)).order_by("kind", "name", "version", "id"):
        row: dict[str, Any] = {
            "id": spec.id,
            "name": spec.name,
            "version": spec.version,
            "kind": spec.kind,
            "config": spec.config,
            "config_hash": spec.config_hash,
        }
        if spec.kind == "rule" and spec.name in known:
            current = registry.get(spec.name)
            row["registry_here"] = {"version": current.version, "config_hash": current.config_hash}
        out.append(row)
    return out


@dataclass
class BundleSummary:
    path: Path
    bytes: int
    rows: dict[str, int]
    reports: list[str]
    skipped: list[str] = field(default_factory=list)


def _text_dependent(
    specs_and_results: list[tuple[reports.ReportSpec, dict[str, Any]]], dataset: Dataset
) -> list[list[str]]:
    """For a --no-text bundle: where each report's numbers come from the texts themselves (format
    share's box rate reads the responses), found by computing the reports again with the texts
    replaced by their hashes, as the replay will see them, inside a savepoint rolled back after."""
    sid = transaction.savepoint()
    try:
        for key, column in sorted(contents.PRIVATE_TEXT):
            table = contents.TABLE_BY_KEY[key]
            rows = list(table.rows(dataset).exclude(**{f"{column}__isnull": True}).only("pk", column))
            for row in rows:
                setattr(row, column, contents.text_hash(getattr(row, column)))
            table.model._base_manager.bulk_update(rows, [column], batch_size=1000)
        out: list[list[str]] = []
        for spec, result in specs_and_results:
            if spec.kind in reports.GOLDS_ONLY:
                out.append([])
                continue
            hidden = reports.compute(spec, dataset=dataset)
            out.append(
                [d.path for d in differences(result, hidden, ignore=reports.VOLATILE.get(spec.kind, frozenset()))]
            )
        return out
    finally:
        transaction.savepoint_rollback(sid)


def bundle_write(
    *,
    dataset: Dataset,
    out: Path,
    report_specs: Sequence[reports.ReportSpec] | None = None,
    text: bool = True,
) -> BundleSummary:
    """Write the bundle to `out` (atomically: a temporary file renamed at the end). Without
    report_specs, every default report that computes on this dataset (the others are listed as
    skipped, with the reason); a report asked for by name that fails is an error."""
    asked = report_specs is not None
    specs = (
        list(report_specs)
        if report_specs is not None
        else [default_spec(k, dataset=dataset) for k in reports.DEFAULT_KINDS]
    )
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # Beside the target (one file system, so the rename is atomic), made by open() under the
    # process's umask: the bundle is meant to be handed on, not private like mkstemp's files.
    tmp = out.parent / f".{out.name}.{os.getpid()}.{os.urandom(4).hex()}.part"
    members: dict[str, dict[str, Any]] = {}
    computed: list[dict[str, Any]] = []
    skipped: list[str] = []
    try:
        with read_snapshot(read_only=text):  # the bundled numbers are the numbers of the bundled rows
            done: list[tuple[reports.ReportSpec, dict[str, Any]]] = []
            for spec in specs:
                try:
                    done.append((spec, reports.stored(spec, dataset=dataset)))
                except reports.ReportError as exc:
                    if asked:
                        raise
                    skipped.append(str(exc))
            needs_text = [[] for _ in done] if text else _text_dependent(done, dataset)
            computed = [
                {**reports.spec_stored(spec), "result": result, "text_dependent": paths}
                for (spec, result), paths in zip(done, needs_text, strict=True)
            ]
            with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
                rows: dict[str, int] = {}
                for table in contents.TABLES:
                    name = f"tables/{table.key}.jsonl"
                    digest, n = _write_lines(
                        zf, name, (_dumps(r) for r in contents.export_rows(table, dataset, text=text))
                    )
                    rows[table.key] = n
                    members[name] = {"sha256": digest, "rows": n}
                for i, report in enumerate(computed):
                    name = f"reports/{i:02d}-{report['kind']}.json"
                    members[name] = {"sha256": _write(zf, name, _dumps(report))}
                members["environment.json"] = {"sha256": _write(zf, "environment.json", _dumps(environment()))}
                members["readers.json"] = {"sha256": _write(zf, "readers.json", _dumps(readers_table(dataset)))}
                manifest: dict[str, Any] = {
                    "format": FORMAT,
                    "version": VERSION,
                    "created_at": datetime.now(UTC).isoformat(),
                    "dataset": dataset.name,
                    "text": text,
                    "reports": [
                        {"member": f"reports/{i:02d}-{spec.kind}.json", "describe": spec.describe()}
                        for i, (spec, _result) in enumerate(done)
                    ],
                    "skipped_reports": skipped,
                    "left_out": contents.LEFT_OUT,
                    "members": members,
                }
                manifest_bytes = json.dumps(manifest, indent=2, ensure_ascii=True, sort_keys=True).encode("ascii")
                zf.writestr(MANIFEST, manifest_bytes)
                key = signing_key()
                if key:
                    zf.writestr(SIGNATURE, json.dumps({"algorithm": "hmac-sha256", "hmac": _hmac(key, manifest_bytes)}))
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return BundleSummary(
        path=out,
        bytes=out.stat().st_size,
        rows=rows,
        reports=[m["describe"] for m in manifest["reports"]],
        skipped=skipped,
    )


def _write(zf: zipfile.ZipFile, name: str, text: str) -> str:
    data = text.encode("ascii")
    zf.writestr(name, data)
    return hashlib.sha256(data).hexdigest()


def _write_lines(zf: zipfile.ZipFile, name: str, lines: Iterator[str]) -> tuple[str, int]:
    digest = hashlib.sha256()
    n = 0
    with zf.open(name, "w") as fh:
        for line in lines:
            data = (line + "\n").encode("ascii")
            digest.update(data)
            fh.write(data)
            n += 1
    return digest.hexdigest(), n


# ---- reading a bundle ---------------------------------------------------------------------------


@dataclass
class Bundle:
    path: Path
    manifest: dict[str, Any]
    zf: BoundedZip
    manifest_bytes: bytes = b""

    def verify_signature(self, key: bytes) -> None:
        """The manifest's HMAC under `key` (the manifest holds every member's sha256, so it covers
        the whole bundle); BundleError when the bundle is unsigned or the signature differs."""
        raw = self._read(SIGNATURE, missing=f"not signed (no {SIGNATURE}); refused under --verify-signature")
        try:
            doc = checks.loads(raw, where=f"{self.path}: {SIGNATURE}")
        except ValueError as exc:
            raise BundleError(str(exc)) from None
        given = doc.get("hmac") if isinstance(doc, dict) else None
        if not isinstance(doc, dict) or doc.get("algorithm") != "hmac-sha256" or not isinstance(given, str):
            raise BundleError(f"{self.path}: {SIGNATURE}: not an hmac-sha256 signature")
        if not hmac.compare_digest(given.encode("ascii", "replace"), _hmac(key, self.manifest_bytes).encode("ascii")):
            raise BundleError(
                f"{self.path}: {SIGNATURE}: the signature does not match (altered after signing, or another key)"
            )

    @property
    def dataset(self) -> str:
        return str(self.manifest["dataset"])

    @property
    def has_text(self) -> bool:
        return bool(self.manifest.get("text", True))

    def _read(self, name: str, *, missing: str) -> bytes:
        """A member whole, within the archive's caps; BundleError saying `missing` if it is absent."""
        try:
            return self.zf.read(name)
        except KeyError:
            raise BundleError(f"{self.path}: {missing}") from None
        except ArchiveError as exc:
            raise BundleError(f"{self.path}: {exc}") from None

    def member_bytes(self, name: str) -> bytes:
        expected = (self.manifest["members"].get(name) or {}).get("sha256")
        if expected is None:
            raise BundleError(f"{self.path}: member {name} is not in the manifest")
        data = self._read(name, missing=f"member {name} is listed in the manifest but missing")
        if hashlib.sha256(data).hexdigest() != expected:
            raise BundleError(f"{self.path}: member {name}: sha256 differs from the manifest (the file was altered)")
        return data

    def member_json(self, name: str) -> Any:
        data = self.member_bytes(name)
        try:
            return checks.loads(data, where=f"{self.path}: member {name}")
        except ValueError as exc:
            raise BundleError(str(exc)) from None

    def rows(self, table: contents.Table) -> Iterator[tuple[int, dict[str, Any]]]:
        """The member's rows, streamed (a table of millions of readings is never held whole); its
        sha256 is checked once the last line is read, so a caller loading inside a transaction
        rolls back an altered member."""
        name = f"tables/{table.key}.jsonl"
        if name not in self.manifest["members"]:
            return  # a table this bundle's version did not have
        expected = self.manifest["members"][name].get("sha256")
        digest = hashlib.sha256()
        try:
            handle = self.zf.open(name)
        except KeyError:
            raise BundleError(f"{self.path}: member {name} is listed in the manifest but missing") from None
        with handle:
            for lineno, raw in enumerate(_lines(handle, path=self.path), 1):
                digest.update(raw)
                try:
                    row = checks.loads(raw, where=f"{self.path}: {name} line {lineno}")
                except ValueError as exc:
                    raise BundleError(str(exc)) from None
                if not isinstance(row, dict):
                    raise BundleError(f"{self.path}: {name} line {lineno}: not an object")
                yield lineno, row
        if digest.hexdigest() != expected:
            raise BundleError(f"{self.path}: member {name}: sha256 differs from the manifest (the file was altered)")


def _lines(handle: BoundedMember, *, path: Path) -> Iterator[bytes]:
    try:
        yield from handle
    except ArchiveError as exc:
        raise BundleError(f"{path}: {exc}") from None


def bundle_open(path: Path) -> Bundle:
    """Open and check a bundle: a zip, a manifest of this format and version, every member listed."""
    path = Path(path)
    try:
        zf = BoundedZip(path)
    except FileNotFoundError:
        raise BundleError(f"{path}: no such file") from None
    except ArchiveError as exc:  # before BadZipFile, which it is
        raise BundleError(f"{path}: {exc}") from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise BundleError(f"{path}: not a bundle (not a zip archive: {exc})") from None
    try:
        raw = zf.read(MANIFEST)
        manifest = checks.loads(raw, where=f"{path}: {MANIFEST}")
        checks.manifest(manifest, where=f"{path}: {MANIFEST}", format_name=FORMAT, version=VERSION)
    except KeyError:
        zf.close()
        raise BundleError(f"{path}: not a bundle (no {MANIFEST})") from None
    except ArchiveError as exc:
        zf.close()
        raise BundleError(f"{path}: {exc}") from None
    except ValueError as exc:
        zf.close()
        raise BundleError(str(exc)) from None
    return Bundle(path=path, manifest=manifest, zf=zf, manifest_bytes=raw)


def occupied_tables() -> list[str]:
    """The bundle tables that already hold rows here; a replay needs none (its ids are the bundle's,
    and reader specs, endpoints and judges are shared by every dataset of a database)."""
    return [t.key for t in contents.TABLES if not t.model._meta.auto_created and t.model._base_manager.exists()]


def bundle_load(*, bundle: Bundle) -> dict[str, int]:
    """Every row of the bundle into this (fresh) database, in one transaction: all or nothing.
    Each value is checked against its column (contents.build_instance), each primary key is new,
    and each key points at a row of this bundle (the database held none before, so a row here
    came from the bundle); whatever the database still refuses is named by its line."""
    occupied = occupied_tables()
    if occupied:
        raise BundleError(
            f"{bundle.path}: replay loads into a fresh database (its ids are the bundle's); this one already "
            f"holds rows of {', '.join(occupied)} (`manage.py replay` without --here uses a temporary one)"
        )
    counts: dict[str, int] = {}
    try:
        with transaction.atomic(), contents.keep_timestamps():
            loaded: set[str] = set()
            later: list[_Reference] = []  # keys to a table not loaded yet (a label revising a later one)
            for table in contents.TABLES:
                name = f"tables/{table.key}.jsonl"
                batch: list[tuple[int, Any]] = []
                n = 0
                for lineno, row in bundle.rows(table):
                    where = f"{bundle.path}: {name} line {lineno}"
                    try:
                        batch.append((lineno, contents.build_instance(table, row, where=where)))
                    except ValueError as exc:
                        raise BundleError(str(exc)) from None
                    if len(batch) >= LOAD_BATCH:
                        n += _insert(bundle, table, batch, loaded, later)
                        batch = []
                if batch:
                    n += _insert(bundle, table, batch, loaded, later)
                counts[table.key] = n
                loaded.add(table.key)
                if table.model is Dataset:
                    _check_dataset(bundle)
            _check_references(bundle, later)
            # Explicit ids leave PostgreSQL's sequences behind; the next insert would collide.
            sql = connection.ops.sequence_reset_sql(no_style(), [t.model for t in contents.TABLES])
            if sql:
                with connection.cursor() as cursor:
                    for statement in sql:
                        cursor.execute(statement)
    except DatabaseError as exc:  # a deferred constraint, checked at commit: nothing was loaded
        raise BundleError(f"{bundle.path}: the database refuses the bundle's rows ({_first_line(exc)})") from None
    return counts


@dataclass(frozen=True)
class _Reference:
    where: str  # "<bundle>: <member> line N: field 'x_id'"
    table: str  # the key of the table it points into
    pk: int


def _check_dataset(bundle: Bundle) -> None:
    names = list(Dataset.objects.order_by("pk").values_list("name", flat=True)[:2])
    if names != [bundle.dataset]:
        raise BundleError(
            f"{bundle.path}: {MANIFEST}: field 'dataset' is {bundle.dataset!r}, but "
            f"tables/adjudication.Dataset.jsonl holds {', '.join(map(repr, names)) or 'no dataset'} "
            "(a bundle carries exactly its one dataset)"
        )


def _insert(
    bundle: Bundle, table: contents.Table, batch: list[tuple[int, Any]], loaded: set[str], later: list[_Reference]
) -> int:
    """One batch: its keys checked (new, and pointing into the bundle), then inserted."""
    name = f"tables/{table.key}.jsonl"
    model = table.model
    pk_name = model._meta.pk.attname
    seen: dict[Any, int] = {}
    for lineno, obj in batch:
        pk = getattr(obj, pk_name)
        if pk in seen:
            raise BundleError(
                f"{bundle.path}: {name} line {lineno}: field {pk_name!r}: {pk} is also the key of line {seen[pk]}"
            )
        seen[pk] = lineno
    taken = set(model._base_manager.filter(pk__in=list(seen)).values_list("pk", flat=True))
    if taken:
        pk = min(taken, key=lambda k: seen[k])
        raise BundleError(
            f"{bundle.path}: {name} line {seen[pk]}: field {pk_name!r}: {pk} is the key of an earlier line"
        )
    carried = set(contents.columns(table))
    for column in model._meta.concrete_fields:
        if not isinstance(column, models.ForeignKey) or column.attname not in carried:
            continue
        target = str(column.target_field.model._meta.label)
        if target not in contents.TABLE_BY_KEY:
            raise BundleError(
                f"{bundle.path}: {name}: field {column.attname!r} points at {target}, which a bundle does not carry"
            )
        refs: dict[Any, int] = {}
        for lineno, obj in batch:
            value = getattr(obj, column.attname)
            if value is not None and value not in refs:
                refs[value] = lineno
        if not refs:
            continue
        if target not in loaded:
            later += [
                _Reference(f"{bundle.path}: {name} line {line}: field {column.attname!r}", target, pk)
                for pk, line in refs.items()
            ]
            continue
        related = contents.TABLE_BY_KEY[target].model
        found = set(related._base_manager.filter(pk__in=list(refs)).values_list("pk", flat=True))
        missing = sorted(set(refs) - found, key=lambda k: refs[k])
        if missing:
            raise BundleError(
                f"{bundle.path}: {name} line {refs[missing[0]]}: field {column.attname!r}: {missing[0]} is not a row "
                f"of {target} in this bundle"
            )
    objs = [obj for _lineno, obj in batch]
    try:
        with transaction.atomic():
            model._base_manager.bulk_create(objs)
    except (DatabaseError, ValueError, TypeError, OverflowError):
        # The checks above hold what the bundle format promises; for what only the database
        # knows (a unique or check constraint), find the line it refuses, row by row.
        for lineno, obj in batch:
            try:
                with transaction.atomic():
                    model._base_manager.bulk_create([obj])
            except (DatabaseError, ValueError, TypeError, OverflowError) as exc:
                raise BundleError(
                    f"{bundle.path}: {name} line {lineno}: the database refuses the row ({_first_line(exc)})"
                ) from None
        raise  # pragma: no cover - the batch failed, so one of its rows does
    return len(objs)


def _check_references(bundle: Bundle, later: list[_Reference]) -> None:
    by_table: dict[str, list[_Reference]] = {}
    for ref in later:
        by_table.setdefault(ref.table, []).append(ref)
    for key, refs in by_table.items():
        model = contents.TABLE_BY_KEY[key].model
        found: set[Any] = set()
        for i in range(0, len(refs), LOAD_BATCH):
            chunk = [r.pk for r in refs[i : i + LOAD_BATCH]]
            found |= set(model._base_manager.filter(pk__in=chunk).values_list("pk", flat=True))
        for ref in refs:
            if ref.pk not in found:
                raise BundleError(f"{ref.where}: {ref.pk} is not a row of {key} in this bundle")


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


@dataclass
class ReportReplay:
    describe: str
    member: str
    differences: list[Difference]
    error: str | None = None
    # Numbers a --no-text bundle cannot re-derive (found when it was written): listed, not failed.
    needs_text: list[Difference] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None and not self.differences


@dataclass
class ReplayResult:
    dataset: str
    rows: dict[str, int]
    reports: list[ReportReplay]
    environment_changes: dict[str, Any]
    reread: list[Any] | None = None

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.reports) and not any(r.changed for r in self.reread or [])

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "dataset": self.dataset,
            "rows": self.rows,
            "reports": [
                {
                    "report": r.describe,
                    "member": r.member,
                    "ok": r.ok,
                    "error": r.error,
                    "differences": [
                        {"path": d.path, "stored": d.stored, "recomputed": d.recomputed} for d in r.differences
                    ],
                    "needs_text": [d.path for d in r.needs_text],
                }
                for r in self.reports
            ],
            "environment_changes": self.environment_changes,
            "reread": None if self.reread is None else [r.as_dict() for r in self.reread],
        }


def signing_key() -> bytes:
    """BUNDLE_SIGNING_KEY: the HMAC key bundles are signed with and checked against ('' = none)."""
    return str(getattr(settings, "BUNDLE_SIGNING_KEY", "") or "").encode("utf-8")


def _hmac(key: bytes, data: bytes) -> str:
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def bundle_verify(bundle: Bundle) -> None:
    """--verify-signature: the bundle signed with this machine's BUNDLE_SIGNING_KEY, or BundleError."""
    key = signing_key()
    if not key:
        raise BundleError(
            f"{bundle.path}: --verify-signature needs BUNDLE_SIGNING_KEY set (the key it was signed with)"
        )
    bundle.verify_signature(key)


def bundle_replay(*, path: Path, reread: bool = False, verify_signature: bool = False) -> ReplayResult:
    """Load the bundle into this fresh database, recompute every report and compare it with the
    stored numbers; with reread, also re-run every rule reader on the stored texts; with
    verify_signature, refuse a bundle not signed with BUNDLE_SIGNING_KEY before anything is read."""
    bundle = bundle_open(path)
    try:
        if verify_signature:
            bundle_verify(bundle)
        if reread and not bundle.has_text:
            raise BundleError(f"{bundle.path}: made with --no-text: there are no texts to re-read")
        stored_reports = []
        # Every report checked before a row is loaded: a bad one refuses the bundle, not half a replay.
        for m in bundle.manifest["reports"]:
            stored = bundle.member_json(m["member"])
            try:
                spec = reports.spec_from_stored(stored, where=f"{bundle.path}: {m['member']}")
            except reports.ReportError as exc:
                raise BundleError(str(exc)) from None
            stored_reports.append((m["member"], spec, stored))
        stored_env = bundle.member_json("environment.json")
        try:
            checks.environment(stored_env, where=f"{bundle.path}: environment.json")
        except ValueError as exc:
            raise BundleError(str(exc)) from None
        rows = bundle_load(bundle=bundle)
    finally:
        bundle.zf.close()
    dataset = Dataset.objects.get(name=bundle.dataset)
    replays = []
    for member, spec, stored in stored_reports:
        try:
            now = reports.compute(spec, dataset=dataset)
        except reports.ReportError as exc:
            replays.append(ReportReplay(spec.describe(), member, [], error=str(exc)))
            continue
        diff = differences(stored["result"], now, ignore=reports.VOLATILE.get(spec.kind, frozenset()))
        textual = set(stored.get("text_dependent") or ())
        replays.append(
            ReportReplay(
                spec.describe(),
                member,
                [d for d in diff if d.path not in textual],
                needs_text=[d for d in diff if d.path in textual],
            )
        )
    rereads = None
    if reread:
        from adjudication.bundles.reread import reread_rule_readers

        rereads = reread_rule_readers(dataset=dataset)
    return ReplayResult(
        dataset=dataset.name,
        rows=rows,
        reports=replays,
        environment_changes=environment_changes(stored_env, environment()),
        reread=rereads,
    )


def environment_changes(then: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    """What differs between the bundle's environment and this one: the commit, Python, and each
    package added, removed or at another version."""
    out: dict[str, Any] = {}
    for key in ("git_commit", "python"):
        if then.get(key) != now.get(key):
            out[key] = {"bundle": then.get(key), "here": now.get(key)}
    a, b = then.get("packages") or {}, now.get("packages") or {}
    packages = {
        name: {"bundle": a.get(name), "here": b.get(name)}
        for name in sorted(set(a) | set(b))
        if a.get(name) != b.get(name)
    }
    if packages:
        out["packages"] = packages
    return out


def replay_in_scratch_database(*, path: Path, reread: bool, as_json: bool, verify_signature: bool = False) -> int:
    """Run `manage.py replay --here` in a child process on a new SQLite file (migrated first), so
    that a replay never touches the database this process is configured with. Its output passes
    through; returns its exit status."""
    with tempfile.TemporaryDirectory(prefix="replay-") as scratch:
        env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{Path(scratch) / 'replay.sqlite3'}",
            "SECRET_KEY": os.environ.get("SECRET_KEY") or "replay-scratch-" + os.urandom(8).hex(),
        }
        # The embedded default: Celery eager, no broker needed.
        for name in ("CELERY_BROKER_URL", "REDIS_URL"):
            env.pop(name, None)
        manage = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py")]
        migrate = subprocess.run([*manage, "migrate", "--no-input", "-v", "0"], env=env, check=False)
        if migrate.returncode != 0:
            return migrate.returncode
        args = [*manage, "replay", str(Path(path).resolve()), "--here"]
        if reread:
            args.append("--reread")
        if as_json:
            args.append("--json")
        if verify_signature:
            args.append("--verify-signature")
        return subprocess.run(args, env=env, check=False).returncode
