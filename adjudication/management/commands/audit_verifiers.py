"""python manage.py audit_verifiers --golds FILE | --dataset NAME [--reader NAME ...] --out DIR

The metamorphic verifier audit of seed 001 (docs/audit.md). With --golds it never touches the
database (no system checks, no ORM): golds come one per line, or as JSONL with a "gold" field.
"""
from __future__ import annotations

import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = ("Metamorphic verifier audit (seed 001): rewrite every gold with the transform suite, read every "
            "variant with every reader in the isolation pool, write verdicts.jsonl, strata.csv, "
            "disagreement.csv, magnitude.csv and summary.json to --out.")
    # The --golds path must work with no database server at all.
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--golds", type=Path, help="golds, one per line, or JSONL with a 'gold' field")
        source.add_argument("--dataset", help="audit a stored dataset's distinct golds (uses the database)")
        parser.add_argument("--reader", action="append", dest="readers", default=None,
                            help="reader name (repeatable; default: the seed's four: math-verify-latex, "
                                 "math-verify-expr, strip-string, sympy-cascade; 'all' = every maths rule reader)")
        parser.add_argument("--out", type=Path, required=True, help="output directory")
        parser.add_argument("--budget", type=float, default=settings.READER_BUDGET_SECONDS,
                            help="hard wall-clock budget per reading, seconds")
        parser.add_argument("--processes", type=int, default=settings.READER_PROCESSES)
        parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")

    def handle(self, *args, golds: Path | None, dataset: str | None, readers: list[str] | None, out: Path,
               budget: float, processes: int, no_progress: bool, **options) -> None:
        from readers import registry
        from readers.audit.golds import GoldsError, load_golds
        from readers.audit.runner import SEED_READERS, audit_reader_choices, render_table, run_audit
        from readers.audit.transforms import build_variants

        if processes < 1:
            raise CommandError("--processes must be >= 1")
        if budget <= 0:
            raise CommandError("--budget must be > 0")
        names = list(SEED_READERS) if not readers else (
            audit_reader_choices() if "all" in readers else list(dict.fromkeys(readers)))
        known = set(registry.names())
        unknown = [n for n in names if n not in known]
        if unknown:
            raise CommandError(f"unknown reader(s): {', '.join(unknown)}. `manage.py readers` lists them.")

        if golds is not None:
            try:
                gold_list = load_golds(golds)
            except GoldsError as exc:
                raise CommandError(str(exc)) from exc
            skipped = 0
        else:
            from adjudication.models import Dataset
            from adjudication.services.audit import dataset_golds

            ds = Dataset.objects.filter(name=dataset).first()
            if ds is None:
                raise CommandError(f"no dataset named {dataset!r}")
            gold_list, skipped = dataset_golds(ds)
            if not gold_list:
                raise CommandError(f"dataset {dataset!r} has no open-ended golds to audit")

        n_variants = len(build_variants(gold_list))
        self.stderr.write(f"auditing {len(names)} reader(s) on {len(gold_list)} golds ({n_variants} variants"
                          + (f"; {skipped} multiple-choice questions skipped" if skipped else "") + ")")
        bar = None
        if not no_progress:
            from tqdm import tqdm

            bar = tqdm(total=n_variants * len(names), unit="verdict", file=sys.stderr, mininterval=0.5,
                       dynamic_ncols=True)

        def progress(reader: str, n: int) -> None:
            if bar is not None:
                bar.set_postfix_str(reader)
                bar.update(n)

        try:
            result = run_audit(gold_list, names, out, processes=processes, budget_s=budget, progress=progress)
        finally:
            if bar is not None:
                bar.close()
        self.stdout.write(render_table(result.summary))
        self.stdout.write(f"wrote {out}/verdicts.jsonl, strata.csv, disagreement.csv, magnitude.csv, summary.json")
