"""``drop_and_reclaim``: free the source before scheduling, take it back if unused.

The server's old allocation is dropped before scheduling (its amounts stay
recorded on the migration row), so the source competes for the new flavor on
the room the server really leaves. If another host is chosen, one write claims
``new`` there and re-claims ``old`` on the source for the migration; should
someone have taken that room in between, the claim is refused and the next
alternate is tried.

Between the drop and the claim (the "drop window") the source's room is not
held by anyone: a restore or a same-host revert may be refused, and then fails
cleanly and can be retried.
"""

from resize_sched.resources import Allocations, Resources
from resize_sched.strategies.base import ClaimStrategy, Holdings, ResizeFacts


class DropAndReclaimStrategy(ClaimStrategy):
    name = "drop_and_reclaim"

    def prepare(self, facts: ResizeFacts) -> Holdings:
        return Holdings()

    def source_request(self, facts: ResizeFacts) -> Resources:
        return dict(facts.new)

    def claim(self, facts: ResizeFacts, dest: str, allocation_request: Allocations) -> Holdings:
        if dest == facts.source:
            return Holdings(server=allocation_request)
        return Holdings(server=allocation_request, migration=facts.original)
