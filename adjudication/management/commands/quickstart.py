from __future__ import annotations

from io import StringIO
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError, CommandParser

from adjudication.accounts.services import demo_users_ensure
from adjudication.analytics.headline import headline_lines
from adjudication.analytics.report import Params
from adjudication.analytics.selectors import report_parts, report_readers
from adjudication.analytics.services import analytics_choice_set, report_compute, report_for_view
from adjudication.errors import ApplicationError
from adjudication.ingest.services import ImportFailed, responses_import
from adjudication.management.base import ApplicationCommand
from adjudication.models import Reading, ReviewQueue
from adjudication.pipeline.selectors import dataset_get, reader_summary
from adjudication.review.queues.selectors import queue_strata
from adjudication.review.queues.services import queue_create, queue_sync
from adjudication.review.queues.specs import QueueSpec
from adjudication.routing.specs import PolicySpec
from readers.summary import render

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data" / "quickstart.jsonl"
DEMO_USER = ("demo", "demo")
# One account per role, so that two annotators can label the same items (the queue's overlap is 2),
# an adjudicator settle their conflicts, and a manager watch, each seeing only what their role sees.
# The password is the username: made only on the embedded local default, like demo / demo.
DEMO_ROLE_USERS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("annotator1", "annotator1", ("annotator",)),
    ("annotator2", "annotator2", ("annotator",)),
    ("adjudicator", "adjudicator", ("adjudicator",)),
    ("manager", "manager", ("manager",)),
)


def _base_url(addrport: str) -> str:
    """What a browser on this machine opens for runserver's ADDRPORT ("8001", "0.0.0.0:8000", "[::1]:8000")."""
    host, _, port = addrport.rpartition(":")
    if not host:
        host = "127.0.0.1"
    if host in ("0.0.0.0", "[::]", "::"):
        host = "localhost"
    return f"http://{host}:{port}"


class Command(ApplicationCommand):
    help = (
        "The quickstart on the embedded default: migrate, import the bundled sample, read it with the rule-reader "
        "panel, route the responses on which the harness reader (boxed) and the fixed reader disagree into a "
        "review queue, compute the analytics report, print the headline (reported vs fixed gain, format share, "
        "box rates, disputed responses per benchmark) and the URLs, and serve the UI."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", default="quickstart")
        parser.add_argument(
            "--addrport",
            default="127.0.0.1:8000",
            help="where the UI is served, as runserver takes it: PORT or HOST:PORT (default 127.0.0.1:8000)",
        )
        parser.add_argument("--no-serve", action="store_true", help="stop after printing the headline")
        parser.add_argument("--table", action="store_true", help="also print the per-reader table")

    def handle(self, *args, dataset: str, addrport: str, no_serve: bool, table: bool, **options) -> None:
        call_command("migrate", verbosity=0, interactive=False)
        try:
            imported = responses_import(path=SAMPLE, dataset_name=dataset)
        except ImportFailed as exc:
            raise CommandError(str(exc)) from exc
        ds = dataset_get(name=dataset)
        runs = ds.runs.all()
        shape = " x ".join(f"{len({getattr(r, f) for r in runs})} {f}s" for f in ("model", "checkpoint", "benchmark"))
        self.stdout.write(
            f"Dataset {dataset!r}: {imported.created} responses imported, {imported.unchanged} already there "
            f"({shape}; {ds.questions.count()} questions)."
        )
        before = Reading.objects.filter(response__dataset=ds).count()
        # run_readers prints a line per reader; the quickstart says it in one.
        call_command("run_readers", dataset=dataset, stdout=StringIO())
        readings = Reading.objects.filter(response__dataset=ds).count()
        n_readers = Reading.objects.filter(response__dataset=ds).values("reader_spec").distinct().count()
        self.stdout.write(f"Read by {n_readers} rule readers: {readings - before} new readings, {readings} in all.")
        if not report_readers(dataset=ds).chosen:
            # The sample is seed 000's story, whose harness read only the box on both benchmarks:
            # the quickstart sets its analytics to it (a manager's later choice on the page stays).
            analytics_choice_set(dataset=ds, reported="boxed", fixed="fixed", base="base")
        queue = self._review_queue(ds)
        if settings.EMBEDDED and not get_user_model().objects.filter(username=DEMO_USER[0]).exists():
            # A known password is only acceptable on the embedded local default, never with a real database.
            get_user_model().objects.create_superuser(DEMO_USER[0], "demo@localhost", DEMO_USER[1])
        if settings.EMBEDDED:
            demo_users_ensure(accounts=DEMO_ROLE_USERS)
        params = Params.from_query({}, readers=report_readers(dataset=ds))
        state = report_for_view(dataset=ds, params=params)
        if state.pending is not None:
            # Real workers would compute it; the quickstart wants the numbers now (the claim is a
            # compare-and-set, so a worker that picks the same report up meanwhile is harmless).
            report_compute(report_id=state.pending.pk)
            state = report_for_view(dataset=ds, params=params)
        if state.report is None:
            reason = state.failed.error if state.failed else "no report"
            raise CommandError(f"the analytics report could not be computed: {reason}")
        headline = report_parts(report=state.report, parts=["headline"])["headline"]
        self.stdout.write("")
        for line in headline_lines(headline):
            self.stdout.write(line)
        panel = " and ".join(sorted(queue.policy.panel.values_list("name", flat=True)))
        strata = queue_strata(queue=queue)
        self.stdout.write(
            f"  disputed = responses on which {panel} disagree (or one found no answer); review queue "
            f"{queue.name!r} holds them, {strata['control']} controls (a random tenth of the rest) and "
            f"{strata['unreadable']} of the {strata['unreadable_total']} responses neither reader could read: "
            f"{queue.items.count()} items."
        )
        if table:
            self.stdout.write(
                "\nPer-reader summary (coverage = returned a verdict; extracted = found an answer; "
                "accuracy = correct / all):"
            )
            self.stdout.write(render(reader_summary(dataset=ds), group_label="benchmark/ckpt"))
        base = _base_url(addrport)
        login = f"log in as {DEMO_USER[0]} / {DEMO_USER[1]}" if settings.EMBEDDED else "log in as a manager"
        self.stdout.write(f"\nOpen ({login}):")
        self.stdout.write(f"  analytics  {base}/analytics/{ds.pk}/")
        self.stdout.write(f"  review     {base}/review/?queue={queue.pk}")
        self.stdout.write(f"  datasets   {base}/   (the per-reader table: {base}/datasets/{ds.pk}/ or --table)")
        if settings.EMBEDDED:
            annotators = " and ".join(f"{u} / {p}" for u, p, roles in DEMO_ROLE_USERS if roles == ("annotator",))
            adjudicator, manager = (f"{u} / {p}" for u, p, roles in DEMO_ROLE_USERS if roles[0] != "annotator")
            self.stdout.write(
                f"One account per role (this machine only): annotators {annotators}, adjudicator "
                f"{adjudicator}, manager {manager}."
            )
            self.stdout.write(
                f"  Two annotators label each item (overlap {queue.overlap}); what they disagree on waits for "
                f"the adjudicator at {base}/adjudicate/"
            )
        if no_serve:
            return
        self.stdout.write(f"\nServing the UI on {base}/ (Ctrl-C stops)\n")
        call_command("runserver", addrport, use_reloader=False)

    def _review_queue(self, ds) -> ReviewQueue:
        """The quickstart's queue: the responses the harness reader and the fixed reader dispute
        (one finding no answer counts), plus a random tenth of the rest as controls, each item for
        two annotators (overlap 2: their agreement, and the adjudication of their conflicts, can be
        tried); made once, brought up to date on later runs."""
        params = Params.from_query({}, readers=report_readers(dataset=ds))
        name = f"{ds.name}-review"
        queue = ReviewQueue.objects.filter(name=name, dataset=ds).first()
        if queue is not None:
            queue_sync(queue=queue)
            return queue
        spec = QueueSpec(
            name=name,
            overlap=2,
            title="Quickstart: which answer did the response give?",
            routing=PolicySpec(
                panel=(params.reported, params.fixed), missing_is_disagreement=True, control_fraction=0.1
            ),
        )
        try:
            return queue_create(dataset=ds, spec=spec)
        except ApplicationError as exc:
            # Said with what the quickstart was doing: the user ran no queue command.
            raise CommandError(f"the quickstart's review queue could not be made: {exc}") from exc
