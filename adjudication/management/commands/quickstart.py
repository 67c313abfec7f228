from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from adjudication.pipeline.selectors import dataset_get, reader_summary
from readers.summary import render

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data" / "quickstart.jsonl"


class Command(BaseCommand):
    help = (
        "The quickstart: migrate, import the bundled sample data, run the reader panel, print the "
        "per-reader table, and serve the UI on localhost."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", default="quickstart")
        parser.add_argument("--addrport", default="127.0.0.1:8000")
        parser.add_argument("--no-serve", action="store_true", help="stop after printing the table")

    def handle(self, *args, dataset: str, addrport: str, no_serve: bool, **options) -> None:
        call_command("migrate", verbosity=0, interactive=False)
        call_command("import_responses", str(SAMPLE), dataset=dataset, no_progress=True, stdout=self.stdout)
        call_command("run_readers", dataset=dataset, stdout=self.stdout)
        ds = dataset_get(name=dataset)
        self.stdout.write(
            "\nPer-reader summary (coverage = returned a verdict; extracted = found an answer; "
            "accuracy = correct / all):\n"
        )
        self.stdout.write(render(reader_summary(dataset=ds), group_label="benchmark/ckpt"))
        user_model = get_user_model()
        # A known password is only acceptable on the embedded local default, never with a real database.
        if settings.EMBEDDED and not user_model.objects.filter(username="demo").exists():
            user_model.objects.create_superuser("demo", "demo@localhost", "demo")
            self.stdout.write("\nCreated the local superuser demo / demo (embedded default only).")
        if no_serve:
            return
        self.stdout.write(f"\nServing the UI on http://{addrport}/  (log in as demo / demo; Ctrl-C stops)\n")
        call_command("runserver", addrport, use_reloader=False)
