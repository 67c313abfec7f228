"""python manage.py audit_verifiers --golds FILE | --dataset NAME [--readers seed001|ours|all|NAME ...] --out DIR

The metamorphic verifier audit of seed 001 (docs/audit.md). With --golds it never touches the
database (no system checks, no ORM): golds come one per line, or as JSONL with a "gold" field.
"""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from adjudication.management.arguments import add_file_or_dataset_arguments, add_isolation_arguments, dataset_named


class Command(BaseCommand):
    help = (
        "Metamorphic verifier audit (seed 001): rewrite every gold with the transform suite, read every "
        "variant with every reader in the isolation pool, write verdicts.jsonl, strata.csv, "
        "disagreement.csv, magnitude.csv and summary.json to --out."
    )
    # The --golds path must work with no database server at all.
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        add_file_or_dataset_arguments(
            parser,
            file_option="--golds",
            file_help="golds, one per line, or JSONL with a 'gold' field",
            dataset_help="audit a stored dataset's distinct golds (uses the database)",
        )
        parser.add_argument(
            "--readers",
            "--reader",
            action="append",
            dest="readers",
            default=None,
            help="reader names or sets, repeatable or comma-separated. Default: 'seed001' = seed "
            "001's four verifiers under its own conventions (math-verify-latex-seed001, "
            "math-verify-expr-seed001, strip-string-deepseek, sympy-cascade-seed001); 'ours' "
            "= our variants (math-verify-latex, math-verify-expr, strip-string, "
            "sympy-cascade); 'all' = every maths rule reader",
        )
        parser.add_argument(
            "--contract-override",
            action="append",
            dest="contract_overrides",
            default=None,
            metavar="READER:STRATUM:in|out",
            help="put a stratum in or out of a reader's contract (repeatable), on top of seed "
            "001's published assignments (readers/audit/contracts.py)",
        )
        parser.add_argument(
            "--no-seed-contracts",
            action="store_true",
            help="do not apply seed 001's stratum assignments: form contracts only",
        )
        parser.add_argument(
            "--synthetic",
            type=int,
            default=0,
            metavar="N",
            help="add N synthetic golds in MATH answer forms (tagged synthetic; seed 001 §2.5)",
        )
        parser.add_argument("--out", type=Path, required=True, help="output directory")
        add_isolation_arguments(parser)
        parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")

    def handle(
        self,
        *args,
        golds: Path | None,
        dataset: str | None,
        readers: list[str] | None,
        out: Path,
        budget: float,
        processes: int,
        no_progress: bool,
        contract_overrides: list[str] | None,
        no_seed_contracts: bool,
        synthetic: int,
        **options,
    ) -> None:
        from readers import registry
        from readers.audit.contracts import CONTRACT_OVERRIDES, parse_override
        from readers.audit.golds import GoldsError, load_golds_tagged
        from readers.audit.runner import render_table, resolve_readers, run_audit
        from readers.audit.synthetic import synthetic_golds
        from readers.audit.transforms import STRATA, build_variants

        if processes < 1:
            raise CommandError("--processes must be >= 1")
        if budget <= 0:
            raise CommandError("--budget must be > 0")
        if synthetic < 0:
            raise CommandError("--synthetic must be >= 0")
        try:
            names = registry.require(resolve_readers(readers))
        except registry.UnknownReader as exc:
            raise CommandError(f"{exc}. Reader sets: seed001, ours, all.") from None
        overrides: dict[str, dict[str, bool]] = (
            {} if no_seed_contracts else {r: dict(v) for r, v in CONTRACT_OVERRIDES.items()}
        )
        for text in contract_overrides or []:
            try:
                reader, stratum, inside = parse_override(text)
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
            if reader not in names:
                raise CommandError(f"contract override {text!r}: reader {reader!r} is not audited")
            if stratum not in STRATA:
                raise CommandError(
                    f"contract override {text!r}: unknown stratum {stratum!r} (strata: {', '.join(STRATA)})"
                )
            overrides.setdefault(reader, {})[stratum] = inside

        sources: dict[str, str] = {}
        if golds is not None:
            try:
                tagged = load_golds_tagged(golds)
            except GoldsError as exc:
                raise CommandError(str(exc)) from exc
            gold_list = [g for g, _s in tagged]
            sources = dict(tagged)
            skipped = 0
        else:
            from adjudication.audit.selectors import dataset_golds

            assert dataset is not None  # add_file_or_dataset_arguments: the file or --dataset, one required
            ds = dataset_named(dataset)
            gold_list, skipped = dataset_golds(ds)
            if not gold_list:
                raise CommandError(f"dataset {dataset!r} has no open-ended golds to audit")

        for gold in synthetic_golds(synthetic):
            if gold not in sources:
                gold_list.append(gold)
                sources[gold] = "synthetic"
        n_variants = len(build_variants(gold_list))
        self.stderr.write(
            f"auditing {len(names)} reader(s) on {len(gold_list)} golds ({n_variants} variants"
            + (f"; {skipped} multiple-choice questions skipped" if skipped else "")
            + ")"
        )
        bar = None
        if not no_progress:
            from tqdm import tqdm

            bar = tqdm(
                total=n_variants * len(names), unit="verdict", file=sys.stderr, mininterval=0.5, dynamic_ncols=True
            )

        def progress(reader: str, n: int) -> None:
            if bar is not None:
                bar.set_postfix_str(reader)
                bar.update(n)

        try:
            result = run_audit(
                gold_list,
                names,
                out,
                processes=processes,
                budget_s=budget,
                progress=progress,
                contract_overrides=overrides,
                gold_sources=sources,
            )
        finally:
            if bar is not None:
                bar.close()
        self.stdout.write(render_table(result.summary))
        self.stdout.write(f"wrote {out}/verdicts.jsonl, strata.csv, disagreement.csv, magnitude.csv, summary.json")
