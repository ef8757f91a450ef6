"""The one writer of a resize's allocations.

Every change to what a server and its migration hold in Placement goes
through :meth:`TransitionExecutor.apply`:

1. work out which consumers change (none: nothing is written or journaled);
2. journal the intent (what was held, the target) on the migration;
3. write it in ONE generation-checked request: ``PUT /allocations/{consumer}``
   when one consumer changes, ``POST /allocations`` when both do, so the
   transition happens entirely or not at all;
4. record the result: the journal entry becomes ``applied`` and the
   migration's ``holdings`` (allocations and consumer generations) are what
   the next transition starts from, so no read is needed before a write.

A consumer-generation conflict (someone else wrote one of the consumers)
re-reads both consumers and retries, a bounded number of times. A capacity
refusal is never retried: it is the caller's to handle (next alternate, or
fail). When Placement is unreachable the entry stays ``intended`` and the
known holdings are forgotten: whether the write landed is settled by reading
Placement, at the next transition or by crash recovery.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from oslo_log import log as logging

from resize_sched import exception
from resize_sched.placement.client import (
    INSTANCE,
    MIGRATION,
    ConsumerWrite,
    PlacementClient,
)
from resize_sched.strategies.base import Holdings

LOG = logging.getLogger(__name__)

TargetFn = Callable[[Holdings], Holdings]


@dataclass(frozen=True)
class Known:
    """Holdings plus the consumer generations they were read or written at."""

    holdings: Holdings
    server_generation: int | None
    migration_generation: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.holdings.to_dict(),
            "generations": {
                "server": self.server_generation,
                "migration": self.migration_generation,
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Known":
        gens = data.get("generations") or {}
        return cls(Holdings.from_dict(data), gens.get("server"), gens.get("migration"))


def _next_generation(previous: int | None, allocations: dict) -> int | None:
    # NOTE: Placement creates a consumer at generation 1 and adds one per
    # write; a write that empties a consumer deletes it. As the only writer of
    # our consumers we can track this instead of reading before each write; a
    # wrong guess costs one conflict and one re-read, never a wrong write.
    if not allocations:
        return None
    return 1 if previous is None else previous + 1


class TransitionExecutor:
    """Applies allocation transitions for migrations, journaled and atomic.

    :param client: the Placement client.
    :param db: the :class:`resize_sched.db.api.Database`.
    :param conflict_retries: re-reads and re-sends after a generation conflict.
    """

    def __init__(self, client: PlacementClient, db: Any, conflict_retries: int = 3) -> None:
        self.client = client
        self.db = db
        self.conflict_retries = conflict_retries

    def read(self, migration: Any) -> Known:
        """Read both consumers' actual allocations from Placement."""
        server = self.client.get_allocations(migration.server_uuid)
        mig = self.client.get_allocations(migration.uuid)
        return Known(
            Holdings(server=server.allocations, migration=mig.allocations),
            server.generation,
            mig.generation,
        )

    def known(self, migration: Any) -> Known:
        """What the migration row says is held, or a fresh read if unknown."""
        if migration.holdings:
            return Known.from_dict(migration.holdings)
        return self.read(migration)

    def apply(self, migration: Any, phase: str, target: Holdings | TargetFn) -> Any:
        """Move both consumers of ``migration`` to ``target`` in one write.

        :param migration: the migration row (``uuid``, ``server_uuid``,
            ``project_id``, ``user_id``, ``holdings``).
        :param phase: a label for the journal and logs (``prepare``, ``claim``...).
        :param target: the target holdings, or a function of the current ones
            (re-evaluated after a generation conflict).
        :returns: the updated migration row.
        :raises ClaimRefused: Placement lacks the capacity; nothing changed.
        :raises PlacementUnavailable: Placement could not be reached; the
            outcome is unknown and left to be read back.
        :raises PlacementConflict: still a generation conflict after
            ``conflict_retries`` re-reads; nothing changed, and the known
            holdings are forgotten so the next apply reads first.
        :raises PlacementError: any other refusal; nothing changed.
        """
        current = self.known(migration)
        for attempt in range(self.conflict_retries + 1):
            goal = target(current.holdings) if callable(target) else target
            writes = self._writes(migration, current, goal)
            if not writes:
                LOG.debug("Migration %s %s: nothing to change", migration.uuid, phase)
                return self._remember(migration, current)
            entry = self.db.journal_intend(
                migration.uuid,
                phase=phase,
                before=current.to_dict(),
                target=goal.to_dict(),
            )
            try:
                if len(writes) == 1:
                    ((consumer, write),) = writes.items()
                    self.client.put_allocations(consumer, write)
                else:
                    self.client.post_allocations(writes)
            except exception.ConsumerGenerationConflict as exc:
                self.db.journal_mark(entry.id, "abandoned", detail=str(exc))
                if attempt == self.conflict_retries:
                    # NOTE: out of retries. The known holdings are wrong, so
                    # forget them: the next transition reads the truth first.
                    self.db.migration_update(migration.uuid, holdings=None)
                    break
                LOG.info(
                    "Migration %s %s: generation conflict (attempt %d of %d), re-reading",
                    migration.uuid,
                    phase,
                    attempt + 1,
                    self.conflict_retries + 1,
                )
                current = self.read(migration)
                continue
            except exception.PlacementUnavailable:
                # NOTE: the write may or may not have landed (a time-out after
                # sending). Leave the entry intended and forget the holdings, so
                # the next transition or recovery reads the truth first.
                self.db.migration_update(migration.uuid, holdings=None)
                raise
            except exception.PlacementError as exc:
                self.db.journal_mark(entry.id, "abandoned", detail=str(exc))
                raise
            self.db.journal_mark(entry.id, "applied")
            done = Known(
                goal,
                _next_generation(current.server_generation, goal.server)
                if migration.server_uuid in writes
                else current.server_generation,
                _next_generation(current.migration_generation, goal.migration)
                if migration.uuid in writes
                else current.migration_generation,
            )
            LOG.info(
                "Migration %s %s applied: server %s, migration %s",
                migration.uuid,
                phase,
                goal.server,
                goal.migration,
            )
            return self._remember(migration, done)
        raise exception.PlacementConflict(
            method="POST",
            url="/allocations",
            placement_code="placement.concurrent_update",
            detail=f"still conflicting after {self.conflict_retries} re-reads",
        )

    def _writes(self, migration: Any, current: Known, goal: Holdings) -> dict[str, ConsumerWrite]:
        writes: dict[str, ConsumerWrite] = {}
        if goal.server != current.holdings.server:
            writes[migration.server_uuid] = ConsumerWrite(
                allocations=goal.server,
                project_id=migration.project_id,
                user_id=migration.user_id,
                generation=current.server_generation,
                consumer_type=INSTANCE,
            )
        if goal.migration != current.holdings.migration:
            writes[migration.uuid] = ConsumerWrite(
                allocations=goal.migration,
                project_id=migration.project_id,
                user_id=migration.user_id,
                generation=current.migration_generation,
                consumer_type=MIGRATION,
            )
        return writes

    def _remember(self, migration: Any, known: Known) -> Any:
        if migration.holdings == known.to_dict():
            return migration
        return self.db.migration_update(migration.uuid, holdings=known.to_dict())
