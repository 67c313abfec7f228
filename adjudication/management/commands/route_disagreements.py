from __future__ import annotations

from django.core.management.base import CommandError, CommandParser

from adjudication.management.arguments import dataset_named
from adjudication.management.base import ApplicationCommand
from adjudication.models import RoutingPolicy
from adjudication.routing.rules import Compare, Priority
from adjudication.routing.services import review_items_route, routing_policy_create
from adjudication.routing.specs import PolicySpec


class Command(ApplicationCommand):
    help = (
        "Route the responses a panel of readers disputes (plus optional random controls) into review items. "
        "Creates the policy on first use; re-running adds only newly disputed responses. With --priority "
        "information: the responses whose labels most narrow the uncertainty of --target (disputed or not), "
        "at most --budget, a --control-fraction of them drawn at random; re-running refits the priorities."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--policy", required=True, help="policy name (created with the options below if new)")
        parser.add_argument("--panel", action="append", default=[], help="reader name (repeatable, at least two)")
        parser.add_argument("--compare", choices=RoutingPolicy.Compare.values, default="either")
        parser.add_argument(
            "--missing-disagrees",
            action="store_true",
            help="count no_answer / timeout / error as disagreeing with a found answer",
        )
        parser.add_argument("--control-fraction", type=float, default=0.0)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--priority", choices=RoutingPolicy.Priority.values, default="disagreement")
        parser.add_argument(
            "--target",
            default="",
            help="with --priority information: accuracy, accuracy:<checkpoint>, reader:<producer>, bias:<producer>, "
            "false-accept:<producer>, false-reject:<producer> or format-share:<base>,<rl>[,<reader>]",
        )
        parser.add_argument(
            "--budget", type=int, default=None, help="with --priority information: route at most this many items"
        )

    def handle(
        self,
        *args,
        dataset: str,
        policy: str,
        panel: list[str],
        compare: Compare,  # argparse's choices
        missing_disagrees: bool,
        control_fraction: float,
        seed: int,
        priority: Priority,  # argparse's choices
        target: str,
        budget: int | None,
        **options,
    ) -> None:
        ds = dataset_named(dataset)
        existing = RoutingPolicy.objects.filter(dataset=ds, name=policy).first()
        if existing is None:
            spec = PolicySpec(
                panel=tuple(panel),
                compare=compare,
                missing_is_disagreement=missing_disagrees,
                control_fraction=control_fraction,
                seed=seed,
                priority=priority,
                target=target,
                budget=budget,
            )
            existing = routing_policy_create(dataset=ds, name=policy, spec=spec)
        elif panel and sorted(panel) != sorted(existing.panel.values_list("name", flat=True)):
            raise CommandError(f"policy {policy!r} exists with another panel; choose a new policy name")
        report = review_items_route(policy=existing)
        if existing.priority == RoutingPolicy.Priority.INFORMATION:
            self.stdout.write(
                f"policy {existing}: {report.created} new review items ({report.informative} by information for "
                f"{existing.target}, {report.controls} random controls); budget "
                f"{existing.budget if existing.budget is not None else 'none'}; "
                + (f"{report.refreshed} replaced responses routed again; " if report.refreshed else "")
                + f"{report.queued} items added to the policy's queues; open items' priorities refitted"
            )
            return
        self.stdout.write(
            f"policy {existing}: {report.created} new review items ({report.disputed} disputed, {report.controls} "
            f"controls); {report.agreeing} undisputed; {report.pending} responses still missing a panel reading"
            + (f"; {report.refreshed} replaced responses routed again" if report.refreshed else "")
            + f"; {report.queued} items added to the policy's queues"
        )
