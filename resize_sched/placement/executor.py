"""The one writer of our consumers' allocations.

Every change to what a server and its migration hold in Placement goes
through :meth:`TransitionExecutor.apply` (a server alone: case 5):

1. work out which consumers change (none: nothing is written or journaled);
2. journal the intent (what was held, the target) on the migration;
3. write it in ONE generation-checked request: ``PUT /allocations/{consumer}``
   when one consumer changes, ``POST /allocations`` when both do, so the
   transition happens entirely or not at all;
4. record the result: the journal entry becomes ``applied`` and the
   migration's ``holdings`` (allocations and consumer generations) are what
   the next transition starts from, so no read is needed before a write.
   The holdings are recorded with the intent; within a conductor step the
   ``applied`` waits for the step's next write (``run``), so a write that
   lands costs no commit of its own (see :mod:`resize_sched.db.steps`);
5. a server's own consumer, written outside any migration (a build's claim,
   the give-back of a claim that lost to a delete, a delete's release, a
   reap), follows the same steps with the server journal in the migration
   journal's place: :mod:`resize_sched.placement.server_executor`.

A consumer's allocations are read as two parts
(:mod:`resize_sched.placement.foreign`): ours, the classes the resize's
flavors ask, which is all the strategies, the journal and the holdings see;
and what other services put on the same consumer (a port's bandwidth, an
accelerator), which every write carries through unchanged and only a
delete's release gives back.

A consumer-generation conflict (someone else wrote one of the consumers)
re-reads both consumers and retries, a bounded number of times. A capacity
refusal is never retried: it is the caller's to handle (next alternate, or
fail). When Placement is unreachable the entry stays ``intended`` and the
known holdings are forgotten: whether the write landed is settled by reading
Placement, at the next transition or by crash recovery.

What is known of the two consumers between transitions (ours, other
services', the generations) is :class:`~resize_sched.placement.known.Known`.
"""

from collections.abc import Callable
from typing import Any

from oslo_log import log as logging

from resize_sched import exception
from resize_sched.db.steps import StepRun
from resize_sched.placement import foreign
from resize_sched.placement.client import (
    INSTANCE,
    MIGRATION,
    ConsumerWrite,
    PlacementClient,
)

# NOTE: the conductor's audit imports ours_of from here, where it was first.
from resize_sched.placement.known import (
    Known,
    known_from,
    next_generation,
    ours_of,  # noqa: F401
)
from resize_sched.placement.server_executor import ServerTransitions
from resize_sched.strategies.base import Holdings

LOG = logging.getLogger(__name__)

TargetFn = Callable[[Holdings], Holdings]


class TransitionExecutor(ServerTransitions):
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
        """Read both consumers' actual allocations from Placement, ours
        (the classes the resize's flavors ask) apart from other services'."""
        server = self.client.get_allocations(migration.server_uuid)
        mig = self.client.get_allocations(migration.uuid)
        return known_from(migration, server, mig)

    def known(self, migration: Any) -> Known:
        """What the migration row says is held, or a fresh read if unknown."""
        if migration.holdings:
            return Known.from_dict(migration.holdings)
        return self.read(migration)

    def apply(
        self,
        migration: Any,
        phase: str,
        target: Holdings | TargetFn,
        *,
        fresh: bool = False,
        run: StepRun | None = None,
        keep_foreign: bool = True,
    ) -> Any:
        """Move both consumers of ``migration`` to ``target`` in one write.

        ``target`` is what the consumers hold for us (the classes the
        resize's flavors ask); what other services hold on them, as last
        read (a generation conflict's re-read is where it first shows), is
        written back with it unchanged.

        :param migration: the migration row (``uuid``, ``server_uuid``,
            ``project_id``, ``user_id``, ``holdings``).
        :param phase: a label for the journal and logs (``prepare``, ``claim``...).
        :param target: the target holdings, or a function of the current ones
            (re-evaluated after a generation conflict).

        Only the consumers whose holdings change are written; one that keeps
        what it holds is never written again, because Placement checks every
        amount written against the inventory as it is now (a ``max_unit`` or
        ``total`` lowered since the claim would refuse a holding that is
        already there). A write by someone else to a consumer that is
        written still shows: its generation moved, Placement answers 409, and
        both consumers are re-read and the target written over it (logged).
        :param fresh: read both consumers first instead of trusting the
            known holdings (a release after a delete).
        :param run: the conductor step running this transition
            (:class:`resize_sched.db.steps.StepRun`): each write (a retry
            too) is journaled only while the step still owns the migration
            (``run.token``), and its entry joins the step's entries still to
            be marked ``applied`` (``run.applied``), which the next intent
            marks, instead of being marked now. Whatever the step, a write
            that holds anything is refused once the server is being deleted,
            so nothing a delete emptied is ever re-created. None (recovery,
            heal, release): whoever owns the migration, and the entry is
            marked ``applied`` at once.
        :param keep_foreign: False: ``target`` is the consumers' whole
            allocations, other services' parts given back too (a delete).
        :returns: the updated migration row.
        :raises StepNotDue: the step lost the migration (a delete, another
            step) before a write; nothing more was written.
        :raises ClaimRefused: Placement lacks the capacity; nothing changed.
        :raises PlacementUnavailable: Placement could not be reached; the
            outcome is unknown and left to be read back.
        :raises PlacementConflict: still a generation conflict after
            ``conflict_retries`` re-reads; nothing changed, and the known
            holdings are forgotten so the next apply reads first.
        :raises PlacementError: any other refusal; nothing changed.
        """
        owner, ledger = (run.token, run.applied) if run is not None else (None, None)
        if fresh:
            current = self.read(migration)
        elif not migration.holdings:
            # NOTE: forgotten after a write whose answer never came: settle
            # that write's entry now that Placement says whether it landed.
            current, _ = self.settle(migration, self.read(migration))
        else:
            current = Known.from_dict(migration.holdings)
        last_written = current.holdings
        expected = False  # the row holds an intended target, not what is held
        for attempt in range(self.conflict_retries + 1):
            goal = target(current.holdings) if callable(target) else target
            carried = current.foreign if keep_foreign else Holdings()
            writes = self._writes(migration, current, goal, carried=carried)
            if not writes:
                LOG.debug("Migration %s %s: nothing to change", migration.uuid, phase)
                if expected:
                    # NOTE: an earlier attempt recorded its target as held.
                    return self.db.migration_update(
                        migration.uuid, owner=owner, holdings=current.to_dict()
                    )
                return self._remember(migration, current, run)
            done = _written(migration, current, goal, carried, writes)
            # NOTE: the intent and the holdings it leads to, in one commit;
            # a refused write puts back what is held (see journal_intend).
            entry = self.db.journal_intend(
                migration.uuid,
                phase=phase,
                before=current.to_dict(),
                target=goal.to_dict(),
                owner=owner,
                releasing=not goal.server and not goal.migration,
                holdings=done.to_dict(),
                applied=ledger,
                seen=migration,
                # NOTE: a step that takes its migration late takes it here,
                # with its first intent (see resize_sched.db.steps).
                take=run if run is not None and not run.taken else None,
                run=run,
            )
            expected = True
            try:
                self._send(writes)
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
                try:
                    current = self.read(migration)
                except exception.PlacementError:
                    # NOTE: the conflict proved the known holdings wrong (a
                    # write of ours that timed out may have landed); with no
                    # read to replace them, forget them, or the next
                    # transition would trust them and may write nothing.
                    self.db.migration_update(migration.uuid, holdings=None)
                    raise
                # NOTE: equal to the goal: our own write landed though its
                # answer was lost (a time-out, then the retry's conflict).
                if current.holdings not in (last_written, goal):
                    LOG.warning(
                        "Migration %s %s: Placement holds %s, not what we last wrote (%s): "
                        "changed by someone else; writing the target over it",
                        migration.uuid,
                        phase,
                        current.holdings.to_dict(),
                        last_written.to_dict(),
                    )
                continue
            except exception.PlacementUnavailable:
                # NOTE: the write may or may not have landed (a time-out after
                # sending). Leave the entry intended and forget the holdings, so
                # the next transition or recovery reads the truth first.
                self.db.migration_update(migration.uuid, holdings=None)
                raise
            except exception.PlacementError as exc:
                self.db.journal_mark(entry.id, "abandoned", detail=str(exc))
                self._put_back(migration, current, owner)
                raise
            if ledger is None:
                self.db.journal_mark(entry.id, "applied")
            else:
                ledger.append(entry.id)
            LOG.info(
                "Migration %s %s applied: server %s, migration %s",
                migration.uuid,
                phase,
                goal.server,
                goal.migration,
            )
            updated = getattr(entry, "migration", None)
            if updated is not None:
                return updated
            return self._remember(migration, done, run)
        raise exception.PlacementConflict(
            method="POST",
            url="/allocations",
            placement_code="placement.concurrent_update",
            detail=f"still conflicting after {self.conflict_retries} re-reads",
        )

    def settle(self, migration: Any, actual: Known) -> tuple[Known, dict[int, str]]:
        """Mark the migration's ``intended`` entries by what Placement holds now.

        Each equal to its target landed (``applied``); each equal to what was
        held before has not landed (``abandoned``); each older than an entry
        already ``applied`` is ``abandoned`` too, whatever is held (that later
        write, built on generations read after it, supersedes it); any other
        is left as it is (``unknown`` in the answer). Not landed is not never landing: a
        write whose answer was lost may still be waiting in Placement's queue.
        So before an entry is called abandoned, its consumers that hold
        something are fenced: written again unchanged, which moves their
        generations on, so that late write can only be refused (409). A
        conflict while fencing means a write landed meanwhile: read again and
        judge again.

        :param migration: the migration row.
        :param actual: what Placement holds now (a fresh read).
        :returns: what Placement holds after fencing, and entry id -> verdict.
        :raises PlacementError: Placement failed while fencing or re-reading.
        """
        verdicts: dict[int, str] = {}
        superseded: dict[int, int] = {}
        for _attempt in range(self.conflict_retries + 1):
            entries = self.db.journal_list(migration.uuid)
            pending = [e for e in entries if e.state == "intended"]
            last_applied = max((e.seq for e in entries if e.state == "applied"), default=0)
            verdicts, superseded = {}, {}
            for entry in pending:
                if entry.seq < last_applied:
                    # NOTE: a later write was accepted on generations read
                    # after this one was sent (a delete's release, a step
                    # that re-read): if this one had not landed by then, it
                    # can only be refused now. Placement's state no longer
                    # says anything about it.
                    verdicts[entry.id] = "abandoned"
                    superseded[entry.id] = last_applied
                elif actual.holdings == Holdings.from_dict(entry.target):
                    verdicts[entry.id] = "applied"
                elif actual.holdings == Holdings.from_dict(entry.before):
                    verdicts[entry.id] = "abandoned"
                else:
                    verdicts[entry.id] = "unknown"
            if any(v == "abandoned" and e not in superseded for e, v in verdicts.items()):
                try:
                    actual = self._fence(migration, actual)
                except exception.ConsumerGenerationConflict:
                    LOG.info(
                        "Migration %s: a write landed while its entry was being settled; "
                        "reading again",
                        migration.uuid,
                    )
                    actual = self.read(migration)
                    continue
            break
        for entry in pending:
            state = verdicts[entry.id]
            if state == "unknown":
                continue
            how = (
                f"superseded by entry {superseded[entry.id]}, applied after it"
                if entry.id in superseded
                else "settled by reading Placement"
            )
            try:
                self.db.journal_mark(entry.id, state, detail=how)
            except exception.Conflict:
                verdicts.pop(entry.id)  # settled meanwhile, by someone else
                continue
            LOG.info(
                "Migration %s %s (journal entry %s): %s %s",
                migration.uuid,
                entry.phase,
                entry.seq,
                state,
                how,
            )
        return actual, verdicts

    def _fence(self, migration: Any, actual: Known) -> Known:
        """Write every consumer that holds something again, unchanged, so any
        write still in flight with the generations read before is refused."""
        writes = self._writes(migration, actual, actual.holdings, True, actual.foreign)
        if not writes:
            return actual
        self._send(writes)
        return _written(migration, actual, actual.holdings, actual.foreign, writes)

    def _send(self, writes: dict[str, ConsumerWrite]) -> None:
        """One request: ``PUT /allocations/{consumer}`` for one consumer,
        ``POST /allocations`` (all or nothing) for both."""
        if len(writes) == 1:
            ((consumer, write),) = writes.items()
            self.client.put_allocations(consumer, write)
        else:
            self.client.post_allocations(writes)

    def _writes(
        self,
        migration: Any,
        current: Known,
        goal: Holdings,
        verify: bool = False,
        carried: Holdings | None = None,
    ) -> dict[str, ConsumerWrite]:
        """The writes that take each consumer from ``current`` to ``goal``
        (ours) plus ``carried`` (other services' parts; None: as held).

        :param verify: also write a consumer that holds something and keeps
            it, unchanged (only :meth:`_fence`, to move its generation on).
        """
        carried = current.foreign if carried is None else carried
        writes: dict[str, ConsumerWrite] = {}

        def write(allocations: dict, generation: int | None, consumer_type: str) -> ConsumerWrite:
            return ConsumerWrite(
                allocations=allocations,
                project_id=migration.project_id,
                user_id=migration.user_id,
                generation=generation,
                consumer_type=consumer_type,
            )

        consumers = (
            (migration.server_uuid, "server", current.server_generation, INSTANCE),
            (migration.uuid, "migration", current.migration_generation, MIGRATION),
        )
        for consumer, part, generation, consumer_type in consumers:
            ours = getattr(goal, part)
            whole = foreign.merge(ours, getattr(carried, part))
            if whole != current.whole(part) or (verify and ours):
                writes[consumer] = write(whole, generation, consumer_type)
        if writes and all(w.generation is None for w in writes.values()):
            # NOTE: a write that only creates consumers carries no generation
            # Placement could refuse it on if it arrives late (see settle). Anchor
            # it to the other consumer, unchanged, at its generation: the same
            # one request, now refused once that consumer has moved on.
            for consumer, part, generation, consumer_type in consumers:
                held = current.whole(part)
                if consumer not in writes and held and generation is not None:
                    writes[consumer] = write(held, generation, consumer_type)
        return writes

    def _put_back(self, migration: Any, current: Known, owner: str | None) -> None:
        """A write was refused: the row gets back what is held instead of its target."""
        try:
            self.db.migration_update(migration.uuid, owner=owner, holdings=current.to_dict())
        except exception.StepNotDue:
            # NOTE: whoever took the migration over reads or writes its own.
            LOG.debug("Migration %s: taken over; its holdings are the new owner's", migration.uuid)

    def _remember(self, migration: Any, known: Known, run: StepRun | None) -> Any:
        if migration.holdings == known.to_dict():
            return migration
        if run is not None and not run.taken:
            # NOTE: a step that was to take its migration with its first
            # intent writes something else first: it takes it now.
            self.db.step_take(run)
        # NOTE: only while the step still owns the migration; one that lost
        # it (StepNotDue) must not overwrite what the new owner knows.
        owner = run.token if run is not None else None
        return self.db.migration_update(migration.uuid, owner=owner, holdings=known.to_dict())

    def release(self, migration: Any) -> Any:
        """Empty both consumers of ``migration``, from what Placement holds now.

        For a deleted server: whatever a step wrote, early or late, is given
        back, and what other services hold on the two consumers with it (as
        Nova's delete gives back the instance's whole consumer). Journaled
        like any transition; safe to repeat.
        """
        migration = self.db.migration_get(migration.uuid)
        return self.apply(migration, "release", Holdings(), fresh=True, keep_foreign=False)


def _written(
    migration: Any,
    before: Known,
    holdings: Holdings,
    carried: Holdings,
    writes: dict[str, ConsumerWrite],
) -> Known:
    """What is known once ``writes`` landed: ``holdings`` (ours) beside
    ``carried`` (other services'), each written consumer's generation moved
    on as Placement moves it, the others' as ``before`` knew them."""

    def generation(consumer: str, part: str, previous: int | None) -> int | None:
        if consumer not in writes:
            return previous
        return next_generation(
            previous, foreign.merge(getattr(holdings, part), getattr(carried, part))
        )

    return Known(
        holdings,
        generation(migration.server_uuid, "server", before.server_generation),
        generation(migration.uuid, "migration", before.migration_generation),
        carried,
    )
