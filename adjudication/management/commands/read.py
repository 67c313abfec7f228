from __future__ import annotations

import contextlib
import json
import sys
from collections import Counter
from pathlib import Path

from django.core.management.base import CommandError, CommandParser

from adjudication.ingest.harnesses import iter_rows
from adjudication.management.arguments import add_isolation_arguments, add_reader_argument
from adjudication.management.base import ApplicationCommand
from readers import Item
from readers import registry as reader_registry
from readers.summary import decided_by, render, rule_table, summarise


class Command(ApplicationCommand):
    help = (
        "Run readers on a file (canonical JSONL, lighteval details, an inspect-ai log) without any database: "
        "one output line per (id, reader) "
        "and a per-reader table of coverage, extraction rate and accuracy."
    )
    # No system checks and no ORM: this must work with no database server at all.
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("input", type=Path)
        add_reader_argument(
            parser,
            required=True,
            help="reader name (repeatable); 'all' = the default rule-reader panel of the file's task types",
        )
        parser.add_argument("--out", type=Path, default=None, help="JSONL output (default: stdout, table on stderr)")
        parser.add_argument(
            "--explain",
            action="store_true",
            help="add to each line the rules that decided (extraction rule, equality rule, tolerance) "
            "and print how often each rule decided, per reader",
        )
        add_isolation_arguments(parser)

    def handle(
        self,
        *args,
        input: Path,  # noqa: A002
        readers: list[str],
        out: Path | None,
        explain: bool,
        budget: float,
        processes: int,
        **options,
    ) -> None:
        from adjudication.pipeline.selectors import default_panel, question_task_type
        from readers.isolation.pool import IsolatedPool

        try:
            reader_registry.require([r for r in readers if r != "all"])
        except reader_registry.UnknownReader as exc:
            raise CommandError(str(exc)) from None
        rows = list(iter_rows(input, fmt=None))  # canonical JSONL, lighteval details or an inspect-ai log
        # Each item carries its task type (declared in its meta, else read off it): a reader outside
        # it answers not_applicable without running, as in the pipeline.
        items = [
            Item(
                response=r.response,
                gold=r.gold,
                choices=r.choices,
                question=r.question,
                task_type=question_task_type(choices=r.choices, gold=r.gold, meta=r.meta),
            )
            for r in rows
        ]
        # 'all': the panel of the file's task types, as a dataset of these rows would be read;
        # readers named beside it are added.
        panel = default_panel(task_types={item.task_type for item in items if item.task_type})
        names = list(dict.fromkeys(name for r in readers for name in (panel if r == "all" else [r])))
        records = []
        rule_counts: Counter[tuple[str, str]] = Counter()
        with contextlib.ExitStack() as stack:
            sink = stack.enter_context(open(out, "w", encoding="utf-8", errors="surrogatepass")) if out else sys.stdout
            with IsolatedPool(processes=processes, budget_s=budget) as pool:
                for name in names:
                    for row, (reading, _ms) in zip(rows, pool.read_many(name, items), strict=True):
                        # The canonical answer (made by the pool's worker), then the raw one and its span.
                        line: dict[str, object] = {
                            "id": row.id,
                            "reader": name,
                            "canonical": reading.canonical,
                            "answer": reading.answer,
                            "span": list(reading.span) if reading.span else None,
                            "verdict": reading.verdict,
                        }
                        if explain:
                            decided = decided_by(reading)
                            line["explain"] = decided
                            rule_counts[(name, decided["rule"] or "-")] += 1
                        sink.write(json.dumps(line, ensure_ascii=False) + "\n")
                        records.append((name, row.checkpoint or "-", reading.verdict))
        table = render(summarise(records), group_label="checkpoint")
        (self.stdout if out else self.stderr).write(table)
        if explain:
            (self.stdout if out else self.stderr).write(rule_table(rule_counts))
