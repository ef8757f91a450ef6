"""The executor's writes to a server's own consumer, outside any migration.

Case 5 of :mod:`resize_sched.placement.executor`: a build's claim, the
give-back of a claim that lost to a delete, a delete's release and a reap
write one consumer, the server's, with no migration to journal them on. They
follow the same rule as a resize's transitions, with the server journal
(:mod:`resize_sched.db.server_journal_api`) in the migration journal's place:

1. the intent is journaled under the server's row lock, where the write is
   checked to be still wanted (as expected; a write that holds anything only
   while no delete has been asked for);
2. one ``PUT /allocations/{server}`` carries the consumer generation read
   (a claim: none, so Placement refuses it if the consumer exists);
3. the entry becomes ``applied`` (a claim's: in the transaction that
   records the host) or ``abandoned``; when Placement cannot be reached it
   stays ``intended``, and is settled by reading Placement later.

A claim that creates the consumer has no generation Placement could refuse a
late copy on. Once the delete has released everything such a copy is simply
accepted; the reaper (:mod:`resize_sched.conductor.reaper`) finds it on our
providers and gives it back through :meth:`ServerTransitions.apply_server`.
"""

from collections.abc import Callable
from typing import Any

from oslo_log import log as logging

from resize_sched import exception
from resize_sched import resources as rs
from resize_sched.db import states
from resize_sched.placement import foreign
from resize_sched.placement.client import (
    INSTANCE,
    ConsumerAllocations,
    ConsumerWrite,
    PlacementClient,
)

LOG = logging.getLogger(__name__)

Allocations = dict[str, dict[str, int]]
AllocationsFn = Callable[[Allocations], Allocations]


def only_takes_away(current: Allocations, goal: Allocations) -> bool:
    """Whether going from ``current`` to ``goal`` only removes amounts."""
    return all(
        amount <= current.get(rp, {}).get(rc, 0)
        for rp, amounts in goal.items()
        for rc, amount in amounts.items()
    )


def server_classes(server: Any) -> frozenset[str] | None:
    """The classes ours on a server's consumer: those its flavor asks (see
    :mod:`resize_sched.placement.foreign`); None when its stored flavor
    cannot be read (then the whole consumer is taken as ours)."""
    try:
        return foreign.classes(rs.stored_request(server.flavor).resources)
    except (ValueError, KeyError, TypeError):
        return None


def _over(held: ConsumerAllocations, server: Any, allocations: Allocations) -> ConsumerWrite:
    """A write of ``allocations`` over the server's consumer as ``held`` was
    read: at its generation, with its project, user and type (the server's
    where the consumer has none)."""
    return ConsumerWrite(
        allocations,
        held.project_id or server.project_id,
        held.user_id or server.user_id,
        held.generation,
        held.consumer_type or INSTANCE,
    )


class ServerTransitions:
    """Journaled, generation-checked writes to a server's own consumer.

    A mixin of :class:`~resize_sched.placement.executor.TransitionExecutor`,
    which provides ``client``, ``db`` and ``conflict_retries``.
    """

    client: PlacementClient
    db: Any
    conflict_retries: int

    def claim_server(
        self, server: Any, allocations: Allocations, *, expected: dict[str, Any]
    ) -> tuple[int, int]:
        """Claim ``allocations`` for a server whose consumer holds nothing of ours yet.

        A provider generation conflict (a concurrent claim on the same
        provider) while the consumer still does not exist is sent again, up
        to ``conflict_retries`` times. A consumer that exists holding only
        what other services put there (a port's bandwidth) is claimed
        beside it, at the generation read, their part carried unchanged.

        :param expected: the server's state the claim is for (build:
            ``BUILD``/``scheduling``), checked under its row lock with "no
            delete asked for".
        :returns: the claim's journal entry id, ``intended``: the caller
            marks it ``applied`` in the transaction that records the host
            (:meth:`~resize_sched.db.server_journal_api.ServerJournalApi.server_advance`);
            and the consumer's generation once the claim is written.
        :raises ServerStateConflict: the server moved on (a delete was
            asked for); nothing was written.
        :raises ServerNotFound: the server is gone; nothing was written.
        :raises ClaimRefused: no room; the entry is ``abandoned``.
        :raises ConsumerGenerationConflict: still conflicting, or the
            consumer exists (an earlier claim of the same build landed);
            the entry is ``abandoned``.
        :raises PlacementUnavailable: the outcome is unknown; the entry
            stays ``intended``.
        """
        entry = self.db.server_journal_intend(
            server.uuid, phase="claim", before={}, target=allocations, expected=expected
        )
        write = ConsumerWrite(allocations, server.project_id, server.user_id, None, INSTANCE)
        ours = foreign.classes(*allocations.values()) | (server_classes(server) or frozenset())
        attempt = 0
        while True:
            try:
                self.client.put_allocations(server.uuid, write)
                return int(entry.id), 1 if write.generation is None else write.generation + 1
            except exception.ConsumerGenerationConflict as exc:
                # NOTE: Placement answers a provider's generation conflict (a
                # concurrent claim there) as a consumer's; a consumer that
                # still does not exist, or holds only other services'
                # allocations, may be claimed again.
                held = self.client.get_allocations(server.uuid)
                mine, theirs = foreign.split(held.allocations, ours)
                if attempt == self.conflict_retries or mine:
                    self.db.server_journal_mark(entry.id, states.JOURNAL_ABANDONED, str(exc))
                    raise
                if held.generation is not None:
                    write = _over(held, server, foreign.merge(allocations, theirs))
                attempt += 1
                LOG.info("Build of %s: generation conflict, claiming again", server.uuid)
            except exception.PlacementUnavailable:
                raise
            except exception.PlacementError as exc:
                self.db.server_journal_mark(entry.id, states.JOURNAL_ABANDONED, str(exc))
                raise

    def settle_server(self, server_uuid: str, held: Allocations) -> dict[int, str]:
        """Mark the server's ``intended`` entries by what its consumer holds now.

        Equal to its target: ``applied``; equal to what was held before:
        ``abandoned``; else left (``unknown``). A claim settled ``abandoned``
        may still land late (its consumer is empty: there is no generation
        to fence); once the server is deleted the reaper gives it back.

        :returns: entry id -> verdict.
        """
        verdicts: dict[int, str] = {}
        for entry in self.db.server_journal_list(server_uuid):
            if entry.state != states.JOURNAL_INTENDED:
                continue
            if held == entry.target:
                verdicts[entry.id] = states.JOURNAL_APPLIED
            elif held == entry.before:
                verdicts[entry.id] = states.JOURNAL_ABANDONED
            else:
                verdicts[entry.id] = "unknown"
                continue
            self.db.server_journal_mark(
                entry.id, verdicts[entry.id], detail="settled by reading Placement"
            )
            LOG.info(
                "Server %s %s (journal entry %s): settled %s by reading Placement",
                server_uuid,
                entry.phase,
                entry.seq,
                verdicts[entry.id],
            )
        return verdicts

    def apply_server(
        self,
        server: Any,
        phase: str,
        target: Allocations | AllocationsFn,
        *,
        expected: dict[str, Any] | None = None,
        ours: frozenset[str] | None = None,
    ) -> bool:
        """Move the server's consumer to ``target``, from what it holds now.

        Read first, its entries still ``intended`` settled by that read, then
        one journaled write with the generation read; a generation conflict
        is read again and retried, a bounded number of times.

        :param target: the allocations, or a function of those held now
            (re-evaluated after a conflict).
        :param ours: the classes ``target`` is about: what the consumer
            holds of other classes (another service's) is carried through
            unchanged, and neither the target nor the journal sees it.
            None: the whole consumer (a delete, a reap).
        :param expected: the server's state the write is for (None: any);
            a write that holds anything also needs the server live with no
            delete asked for.
        :returns: whether anything was written.
        :raises ServerStateConflict, ServerNotFound: the write is no longer
            wanted; nothing was written.
        :raises PlacementConflict: still conflicting after the retries.
        :raises PlacementError: as from the client; an entry whose outcome is
            unknown (Placement unreachable) stays ``intended``.
        """
        for attempt in range(self.conflict_retries + 1):
            current = self.client.get_allocations(server.uuid)
            mine, theirs = (
                (current.allocations, {})
                if ours is None
                else foreign.split(current.allocations, ours)
            )
            self.settle_server(server.uuid, mine)
            goal = target(mine) if callable(target) else target
            if goal == mine:
                return False
            entry = self.db.server_journal_intend(
                server.uuid,
                phase=phase,
                before=mine,
                target=goal,
                expected=expected,
                releasing=only_takes_away(mine, goal),
            )
            try:
                self.client.put_allocations(
                    server.uuid, _over(current, server, foreign.merge(goal, theirs))
                )
            except exception.ConsumerGenerationConflict as exc:
                self.db.server_journal_mark(entry.id, states.JOURNAL_ABANDONED, str(exc))
                LOG.info(
                    "Server %s %s: generation conflict (attempt %d of %d), re-reading",
                    server.uuid,
                    phase,
                    attempt + 1,
                    self.conflict_retries + 1,
                )
                continue
            except exception.PlacementUnavailable:
                raise
            except exception.PlacementError as exc:
                self.db.server_journal_mark(entry.id, states.JOURNAL_ABANDONED, str(exc))
                raise
            self.db.server_journal_mark(entry.id, states.JOURNAL_APPLIED)
            LOG.info("Server %s %s applied: %s", server.uuid, phase, goal)
            return True
        raise exception.PlacementConflict(
            method="PUT",
            url=f"/allocations/{server.uuid}",
            placement_code="placement.concurrent_update",
            detail=f"still conflicting after {self.conflict_retries} re-reads",
        )

    def release_server(
        self,
        server: Any,
        phase: str = "release",
        *,
        expected: dict[str, Any] | None = None,
        whole: bool = True,
    ) -> bool:
        """Empty the server's consumer, from what it holds now (journaled).

        :param whole: give back the whole consumer, what other services put
            on it too (a delete, as Nova's); False: only what its flavor
            accounts for, theirs carried through (a spawn that failed).
        :returns: whether it held anything (of what is given back).
        """
        ours = None if whole else server_classes(server)
        return self.apply_server(server, phase, {}, expected=expected, ours=ours)
