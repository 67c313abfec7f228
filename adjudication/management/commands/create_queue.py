from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError, CommandParser

from adjudication.management.arguments import add_policy_arguments, dataset_named, policy_spec_of
from adjudication.management.base import ApplicationCommand
from adjudication.models import RoutingPolicy
from adjudication.review.queues.selectors import users_named
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec


class Command(ApplicationCommand):
    help = (
        "Create a review queue over a dataset's disputed responses. Without --policy, a routing policy is "
        "made from --panel (default: the rule readers of the dataset's task types that have read it)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--name", required=True)
        parser.add_argument("--policy", default=None, help="an existing routing policy of the dataset")
        parser.add_argument("--panel", action="append", default=None, help="reader name (repeatable)")
        parser.add_argument("--overlap", type=int, default=2, help="labels per item (default 2)")
        parser.add_argument("--lease-seconds", type=int, default=900)
        parser.add_argument("--hide-candidates", action="store_true", help="do not show the readers' answers")
        parser.add_argument("--judge-correctness", action="store_true", help="annotators also judge vs the gold")
        add_policy_arguments(parser)
        parser.add_argument("--title", default="", help='what annotators see (default "Queue N")')
        parser.add_argument(
            "--guidelines-file",
            type=Path,
            default=None,
            help="the annotators' guidelines, Markdown (default: the built-in ones for the task)",
        )
        parser.add_argument(
            "--annotator",
            action="append",
            default=[],
            dest="annotators",
            help="only this user sees and claims the queue (repeatable; default: every annotator)",
        )

    def handle(
        self,
        *args,
        dataset: str,
        name: str,
        policy: str | None,
        panel: list[str] | None,
        overlap: int,
        lease_seconds: int,
        hide_candidates: bool,
        judge_correctness: bool,
        title: str,
        guidelines_file: Path | None,
        annotators: list[str],
        **options,
    ) -> None:
        ds = dataset_named(dataset)
        users, unknown = users_named(usernames=annotators)
        if unknown:
            raise CommandError(f"--annotator: no user named {', '.join(map(repr, unknown))}")
        guidelines = None
        if guidelines_file is not None:
            try:
                guidelines = guidelines_file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"{guidelines_file}: cannot read the guidelines ({exc})") from exc
        routing = None
        if policy:
            routing = RoutingPolicy.objects.filter(dataset=ds, name=policy).first()
            if routing is None:
                raise CommandError(f"no routing policy {policy!r} on dataset {dataset!r}")
        spec = QueueSpec(
            name=name,
            overlap=overlap,
            lease_seconds=lease_seconds,
            show_candidates=not hide_candidates,
            judge_correctness=judge_correctness,
            title=title,
            guidelines=guidelines,
            routing=policy_spec_of(options, panel=panel or ()),
        )
        queue = queue_create(dataset=ds, spec=spec, policy=routing, annotators=users)
        self.stdout.write(f"queue {queue.name}: {queue.items.count()} items, overlap {queue.overlap}")
        if users:
            self.stdout.write(f"assigned to {', '.join(u.username for u in users)}")
