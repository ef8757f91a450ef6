"""``max_flavor``: keep what is held, ask the source only for the increase.

Nothing moves before scheduling. Every other host is asked for the new flavor;
the source is asked (``in_tree=<source>``) only for the per-class increase
``new - old``. On the same host the server then holds ``max(old, new)`` until
the resize is confirmed (shrink to ``new``) or reverted (shrink to ``old``);
shrinking always fits, so a same-host revert can never be refused. On another
host one write moves ``old`` to the migration and claims ``new`` on the
destination.
"""

from resize_sched import resources as rs
from resize_sched.resources import Allocations, Resources
from resize_sched.strategies.base import ClaimStrategy, Holdings, ResizeFacts


class MaxFlavorStrategy(ClaimStrategy):
    name = "max_flavor"

    def prepare(self, facts: ResizeFacts) -> Holdings:
        return Holdings(server=facts.original)

    def source_request(self, facts: ResizeFacts) -> Resources:
        return facts.increase

    def claim(self, facts: ResizeFacts, dest: str, allocation_request: Allocations) -> Holdings:
        if dest == facts.source:
            return Holdings(server=rs.add_allocations(facts.original, allocation_request))
        return Holdings(server=allocation_request, migration=facts.original)
