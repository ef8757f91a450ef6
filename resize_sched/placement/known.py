"""What a resize's two consumers are known to hold: ours, other services', and the generations.

:class:`Known` is the record the transition executor keeps on the migration
(its ``holdings``) so that no read is needed before a write: what the server
and the migration consumers hold for us, what other services hold on them
(see :mod:`resize_sched.placement.foreign`), and the consumer generations
those were read or written at. :func:`next_generation` is how a write moves
a generation on, as Placement does.
"""

from dataclasses import dataclass, field
from typing import Any

from resize_sched.placement import foreign
from resize_sched.placement.client import ConsumerAllocations
from resize_sched.strategies.base import Holdings


@dataclass(frozen=True)
class Known:
    """Holdings plus the consumer generations they were read or written at.

    :ivar holdings: what the two consumers hold for us (the classes the
        resize's flavors ask; see :mod:`resize_sched.placement.foreign`):
        all a strategy, the journal and the migration's records ever see.
    :ivar foreign: what other services hold on the same consumers, as last
        read; every write carries it through unchanged.
    """

    holdings: Holdings
    server_generation: int | None
    migration_generation: int | None
    foreign: Holdings = field(default_factory=Holdings)

    def to_dict(self) -> dict[str, Any]:
        data = {
            **self.holdings.to_dict(),
            "generations": {
                "server": self.server_generation,
                "migration": self.migration_generation,
            },
        }
        if self.foreign.server or self.foreign.migration:
            data["foreign"] = self.foreign.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Known":
        gens = data.get("generations") or {}
        return cls(
            Holdings.from_dict(data),
            gens.get("server"),
            gens.get("migration"),
            Holdings.from_dict(data.get("foreign") or {}),
        )

    def whole(self, consumer: str) -> dict[str, dict[str, int]]:
        """What ``consumer`` (``server`` or ``migration``) holds in all."""
        return foreign.merge(getattr(self.holdings, consumer), getattr(self.foreign, consumer))


def next_generation(previous: int | None, allocations: dict) -> int | None:
    """The generation of a consumer after a write of ``allocations`` (None: deleted)."""
    # NOTE: Placement creates a consumer at generation 1 and adds one per
    # write; a write that empties a consumer deletes it. As the only writer of
    # our consumers we can track this instead of reading before each write; a
    # wrong guess costs one conflict and one re-read, never a wrong write.
    if not allocations:
        return None
    return 1 if previous is None else previous + 1


def ours_of(migration: Any) -> frozenset[str]:
    """The classes ours on a migration's two consumers: those its old and
    new flavors ask (see :mod:`resize_sched.placement.foreign`)."""
    return foreign.classes(migration.old_resources, migration.new_resources)


def known_from(migration: Any, server: ConsumerAllocations, mig: ConsumerAllocations) -> Known:
    """:class:`Known` from a read of both consumers of ``migration``."""
    ours = ours_of(migration)
    server_ours, server_theirs = foreign.split(server.allocations, ours)
    mig_ours, mig_theirs = foreign.split(mig.allocations, ours)
    return Known(
        Holdings(server=server_ours, migration=mig_ours),
        server.generation,
        mig.generation,
        Holdings(server=server_theirs, migration=mig_theirs),
    )
