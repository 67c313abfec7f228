from __future__ import annotations

from django.core.management.base import CommandError, CommandParser

from adjudication.management.base import ApplicationCommand
from adjudication.models import ReviewQueue
from adjudication.review.queues.services import queue_sync


class Command(ApplicationCommand):
    help = (
        "Bring review queues in step with their routing policies: route newly disputed responses (after new "
        "readings) and add every policy item a queue does not hold yet."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("queues", nargs="*", help="queue names (default: every queue)")

    def handle(self, *args, queues: list[str], **options) -> None:
        found = ReviewQueue.objects.select_related("policy").order_by("name")
        if queues:
            found = found.filter(name__in=queues)
            unknown = sorted(set(queues) - set(found.values_list("name", flat=True)))
            if unknown:
                raise CommandError(f"no queue named {', '.join(map(repr, unknown))}")
        for queue in found:
            added = queue_sync(queue=queue)
            self.stdout.write(f"queue {queue.name}: {added} new items, {queue.items.count()} in all")
