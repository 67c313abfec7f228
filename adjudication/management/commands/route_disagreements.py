from __future__ import annotations

from django.core.management.base import CommandError, CommandParser

from adjudication.management.arguments import add_policy_arguments, dataset_named, policy_spec_of
from adjudication.management.base import ApplicationCommand
from adjudication.models import RoutingPolicy
from adjudication.routing.services import review_items_route, routing_policy_create


class Command(ApplicationCommand):
    help = (
        "Route the responses a panel of readers disputes (plus optional random controls) into review items. "
        "Creates the policy on first use; re-running adds only newly disputed responses. With --priority "
        "information: responses drawn with probabilities that grow with how much their labels narrow the "
        "uncertainty of --target (disputed or not), about --budget of them, every response with a known "
        "probability; drawn once (re-running adds nothing). With --sampling greedy (unfit for estimates): the "
        "highest label values, at most --budget, a --control-fraction of them drawn at random; re-running "
        "refits the priorities."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--policy", required=True, help="policy name (created with the options below if new)")
        parser.add_argument("--panel", action="append", default=[], help="reader name (repeatable, at least two)")
        add_policy_arguments(parser)

    def handle(self, *args, dataset: str, policy: str, panel: list[str], **options) -> None:
        ds = dataset_named(dataset)
        existing = RoutingPolicy.objects.filter(dataset=ds, name=policy).first()
        if existing is None:
            spec = policy_spec_of(options, panel=panel)
            existing = routing_policy_create(dataset=ds, name=policy, spec=spec)
        elif panel and sorted(panel) != sorted(existing.panel.values_list("name", flat=True)):
            raise CommandError(f"policy {policy!r} exists with another panel; choose a new policy name")
        report = review_items_route(policy=existing)
        information = existing.priority == RoutingPolicy.Priority.INFORMATION
        if information and existing.sampling == RoutingPolicy.Sampling.RANDOMIZED:
            design = existing.design
            self.stdout.write(
                f"policy {existing}: {report.created} new review items drawn for {existing.target} (randomized: "
                f"expected {design.get('expected', 0):g} of {design.get('population', 0)} responses, each with a "
                f"known probability, at least {design.get('pi_min', 0):.4g}; drawn once, so routing again adds none); "
                + (f"{report.refreshed} replaced responses routed again; " if report.refreshed else "")
                + f"{report.queued} items added to the policy's queues"
            )
            return
        if information:
            self.stdout.write(
                f"policy {existing}: {report.created} new review items ({report.informative} by information for "
                f"{existing.target}, {report.controls} random controls); budget "
                f"{existing.budget if existing.budget is not None else 'none'}; "
                + (f"{report.refreshed} replaced responses routed again; " if report.refreshed else "")
                + f"{report.queued} items added to the policy's queues; open items' priorities refitted "
                "(greedy: unfit for estimates)"
            )
            return
        self.stdout.write(
            f"policy {existing}: {report.created} new review items ({report.disputed} disputed, {report.controls} "
            f"controls); {report.agreeing} undisputed; {report.pending} responses still missing a panel reading"
            + (f"; {report.refreshed} replaced responses routed again" if report.refreshed else "")
            + f"; {report.queued} items added to the policy's queues"
        )
