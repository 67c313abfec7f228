from __future__ import annotations

from django.core.management.base import CommandError, CommandParser
from django.db import transaction

from adjudication.management.base import ApplicationCommand
from adjudication.models import ReviewQueue
from adjudication.review.queues.selectors import users_named
from adjudication.review.queues.services import queue_annotators_set, queue_state_set, queue_title_set


class Command(ApplicationCommand):
    help = (
        "Show or change a review queue: pause it (no new claims), close it (hidden from annotators), re-open it, "
        "set the title annotators see, assign or unassign annotators. Without options, prints the queue."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("queue", help="the queue's name")
        state = parser.add_mutually_exclusive_group()
        state.add_argument("--pause", action="store_const", const="paused", dest="state", help="no new claims")
        state.add_argument(
            "--close", action="store_const", const="closed", dest="state", help="hidden from annotators, no claims"
        )
        state.add_argument("--reopen", action="store_const", const="active", dest="state", help="active again")
        parser.add_argument("--title", default=None, help='what annotators see ("" for the default "Queue N")')
        parser.add_argument(
            "--assign", action="append", default=[], metavar="USER", help="add an annotator to the queue (repeatable)"
        )
        parser.add_argument(
            "--unassign",
            action="append",
            default=[],
            metavar="USER",
            help="take an annotator off the queue (repeatable); with nobody left, every annotator may label it",
        )

    def handle(
        self,
        *args,
        queue: str,
        state: str | None,
        title: str | None,
        assign: list[str],
        unassign: list[str],
        **options,
    ) -> None:
        found = ReviewQueue.objects.filter(name=queue).first()
        if found is None:
            raise CommandError(f"no queue named {queue!r}")
        both = sorted(set(assign) & set(unassign))
        if both:
            raise CommandError(f"both --assign and --unassign {', '.join(both)}")
        users, unknown = users_named(usernames=[*assign, *unassign])
        if unknown:
            raise CommandError(f"no user named {', '.join(map(repr, unknown))}")
        with transaction.atomic():
            if state is not None:
                queue_state_set(queue=found, state=state)
            if title is not None:
                queue_title_set(queue=found, title=title)
            if assign or unassign:
                keep = {u.pk: u for u in found.annotators.all()}
                for user in users:
                    if user.username in assign:
                        keep[user.pk] = user
                    else:
                        keep.pop(user.pk, None)
                queue_annotators_set(queue=found, annotators=list(keep.values()))
        assigned = sorted(found.annotators.values_list("username", flat=True))
        self.stdout.write(
            f"queue {found.name}: {found.state}; annotators see {found.display_title!r}; "
            + (f"assigned to {', '.join(assigned)}" if assigned else "open to every annotator")
        )
