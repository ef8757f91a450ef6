"""``max_flavor``: keep what is held, ask the source only for the increase.

Nothing moves before scheduling. Every other host is asked for the new flavor;
the source is asked only for the per-class increase ``new - old``, on the
providers that already hold each class (``in_tree=<source>`` for a class the
server does not hold yet; a numbered group's increase on the provider the
recorded map says holds that group). On the same host the server then holds
``max(old, new)`` until the resize is confirmed (shrink to ``new``) or
reverted (shrink to ``old``); shrinking always fits, so a same-host revert
can never be refused. On another
host one write moves ``old`` to the migration and claims ``new`` on the
destination.
"""

from collections.abc import Mapping

from resize_sched import group_map as gm
from resize_sched import resources as rs
from resize_sched.resources import Allocations, Resources
from resize_sched.strategies.base import ClaimStrategy, Holdings, ResizeFacts


class MaxFlavorStrategy(ClaimStrategy):
    name = "max_flavor"

    def prepare(self, facts: ResizeFacts) -> Holdings:
        return Holdings(server=facts.original)

    def source_request(self, facts: ResizeFacts) -> Resources:
        # NOTE: group by group when the map is known: one group growing while
        # another of the same class shrinks needs room though the total does not.
        placed = facts.group_increase()
        return facts.increase if placed is None else rs.total(placed)

    def source_placement(self, facts: ResizeFacts) -> Allocations:
        # NOTE: the increase of a class goes where the server holds that
        # class already (its vGPU's child, its disk's sharing provider), so
        # max(old, new) is taken provider by provider and a kept device stays
        # on its child; a class the server does not hold yet goes wherever
        # Placement finds room in the source's tree.
        added = self.source_groups(facts)
        if added:
            return {}  # NOTE: Placement places the new groups and the rest together
        # NOTE: two numbered groups may hold one class on two providers (a
        # vGPU on each GPU): each group's increase goes to its own provider,
        # as the recorded map says, not to the first that holds the class.
        placed = facts.group_increase()
        if placed is not None:
            return placed
        return rs.spread(facts.original, facts.increase) or {}

    def source_groups(self, facts: ResizeFacts) -> tuple[rs.RequestGroup, ...]:
        # NOTE: a numbered group the old flavor did not have (a second vGPU)
        # is a device of its own: added to the child the first one holds, it
        # would break group_policy=isolate; Placement is asked for it as a
        # group instead.
        held = {group.suffix for group in facts.old_groups}
        return tuple(group for group in facts.new_groups if group.suffix not in held)

    def claim_groups(
        self,
        facts: ResizeFacts,
        dest: str,
        allocation_request: Allocations,
        mappings: Mapping[str, list[str]] | None,
    ) -> gm.GroupProviders | None:
        if dest != facts.source:
            return super().claim_groups(facts, dest, allocation_request, mappings)
        # NOTE: the server keeps what it held: a group it held stays on its
        # provider, a new group is where the candidate put it.
        suffixes = [group.suffix for group in facts.new_groups]
        return gm.merged(facts.group_providers, mappings, suffixes)

    def claim(self, facts: ResizeFacts, dest: str, allocation_request: Allocations) -> Holdings:
        if dest == facts.source:
            return Holdings(server=rs.add_allocations(facts.original, allocation_request))
        return Holdings(server=allocation_request, migration=facts.original)
