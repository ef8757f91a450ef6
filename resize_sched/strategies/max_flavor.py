"""``max_flavor``: keep what is held, ask the source only for the increase.

Nothing moves before scheduling. Every other host is asked for the new flavor;
the source is asked only for the per-class increase ``new - old``, on the
providers that already hold each class; a numbered group's increase on the
provider the recorded map says holds that group; a numbered group the old
flavor did not have, whole, as a group; a class the server does not hold yet
wherever the scheduler finds it on the source (its tree, or a sharing
provider of its aggregates). On the same host the host then holds
``max(old, new)`` for the resize until it is confirmed or reverted, split
between the two consumers: the server holds exactly the new flavor (laid out
as it is kept, see :meth:`ClaimStrategy.kept`), the migration the excess
``max(old, new) - new`` on the providers that hold it. A confirm empties the
migration (a write Placement never refuses); a revert writes the server back
to ``old`` and empties the migration, which fits on the same capacity as long
as the host's inventory still admits the old flavor (a ``max_unit`` lowered
below it does not). On another host one write moves ``old`` to the
migration and claims ``new`` on the destination.
"""

from resize_sched import resources as rs
from resize_sched.resources import Allocations, Resources
from resize_sched.resources import group_map as gm
from resize_sched.strategies.base import ClaimStrategy, Holdings, ResizeFacts


class MaxFlavorStrategy(ClaimStrategy):
    name = "max_flavor"
    # NOTE: on the same host the server keeps what it held (see claim).
    claims_beside_held = True

    def prepare(self, facts: ResizeFacts) -> Holdings:
        return Holdings(server=facts.original)

    def source_request(self, facts: ResizeFacts) -> Resources:
        # NOTE: group by group when the map is known: one group growing while
        # another of the same class shrinks needs room though the total does not.
        added = self.source_groups(facts)
        if added:
            # NOTE: a new group is a device (or a guest NUMA cell) of its
            # own, asked whole whatever the class totals say: a same-size
            # resize that adds hw:numa_nodes, or splits one guest cell in
            # two, must still find the new group's provider.
            return rs.add(
                rs.total(self._held_increase(facts)),
                rs.add(
                    rs.total(rs.add_allocations(*({g.suffix: g.resources} for g in added))),
                    rs.increase(
                        gm.unnumbered_of(facts.old, facts.old_groups),
                        gm.unnumbered_of(facts.new, facts.new_groups),
                    ),
                ),
            )
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
            # NOTE: Placement places the new groups and the unnumbered
            # increase (in_tree); a group the server holds grows where it is,
            # judged beside Placement's candidate, never where the query
            # would put an unnumbered amount of its class.
            return self._held_increase(facts)
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

    @staticmethod
    def _held_increase(facts: ResizeFacts) -> Allocations:
        """The growth of the groups the server holds, each on its provider;
        with no map, on the first provider holding the class (as a resize
        without new groups does)."""
        placed = gm.held_increase(facts.old_groups, facts.new_groups, facts.group_providers)
        if placed is not None:
            return placed
        held = {group.suffix: group for group in facts.old_groups}
        grows = rs.total(
            rs.add_allocations(
                *(
                    {g.suffix: rs.increase(held[g.suffix].resources, g.resources)}
                    for g in facts.new_groups
                    if g.suffix in held
                )
            )
        )
        devices = {rp: res for rp, res in facts.original.items() if rp != facts.source}
        return rs.spread(devices, grows) or rs.spread(facts.original, grows) or {}

    def claim(self, facts: ResizeFacts, dest: str, allocation_request: Allocations) -> Holdings:
        if dest == facts.source:
            held = rs.add_allocations(facts.original, allocation_request)
            kept = self.kept(facts, held, dest)
            excess = gm.subtract(held, kept)
            if excess is None:
                # NOTE: the new flavor cannot be laid out inside what is held
                # (not ours to split): the server holds it all, and the
                # confirm shrinks it (the pre-split shape).
                return Holdings(server=held)
            return Holdings(server=kept, migration=excess)
        return Holdings(server=allocation_request, migration=facts.original)
