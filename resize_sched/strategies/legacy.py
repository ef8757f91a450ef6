"""``legacy``: Nova's resize claims, kept as the baseline.

The server's old allocation moves to the migration before scheduling and the
full new flavor is asked of every host, the source included. On the source
that counts the server twice (the migration keeps ``old``, the server claims
``new`` on top), which is why a full host cannot be resized in place.
"""

from resize_sched.resources import Allocations, Resources
from resize_sched.strategies.base import ClaimStrategy, Holdings, ResizeFacts


class LegacyStrategy(ClaimStrategy):
    name = "legacy"

    def prepare(self, facts: ResizeFacts) -> Holdings:
        return Holdings(migration=facts.original)

    def source_request(self, facts: ResizeFacts) -> Resources:
        return dict(facts.new)

    def claim(self, facts: ResizeFacts, dest: str, allocation_request: Allocations) -> Holdings:
        return Holdings(server=allocation_request, migration=facts.original)
