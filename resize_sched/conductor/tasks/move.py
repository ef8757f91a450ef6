"""What every move of a server shares: the step, the schedule, the claim, the failure.

A move (a resize, a cold migration, and every later kind) holds the server's
source through its migration record: the migration's uuid is a Placement
consumer, and every allocation change goes through the claim strategy
recorded on the migration (never the one configured now) and the transition
executor, so each step is one journaled, atomic Placement write.

:class:`MoveTask` is the base each move's task extends. It owns:

- the one way a step runs (:meth:`MoveTask._step`): it takes the migration
  with a compare-and-swap on its status
  (:meth:`~resize_sched.db.step_api.StepApi.migration_acquire`) and opens its
  instance-action event in the same transaction, so a duplicate or late
  delivery of the same message finds another status or an owner and is a
  logged no-op; the step ends with one transaction that moves the migration
  and its server on together, and only while no delete has been asked for
  (:meth:`~resize_sched.db.step_api.StepApi.migration_advance`);
- the schedule and the reschedule: where the move goes is found and claimed
  by :class:`~resize_sched.conductor.tasks.claim.MoveClaims` (the policies,
  the first destination Placement accepts, the alternates); with no host
  left, one ending (:meth:`MoveTask._end_without_host`) for every move;
- the failure: the server gets exactly its old allocation back, and the
  verdict is recorded in words an operator can act on;
- giving back, through the executor, what a step wrote when it lost to a
  delete.

A subclass declares what distinguishes it: its steps' events
(:attr:`MoveTask.STEP_EVENTS`), its statuses, whether it always leaves its
source and which column names the host asked for (``LEAVES_SOURCE``,
``NAMED_HOST``), its name in the log (``WHAT``); and adds what only its move
does (a resize's finish, confirm and revert).
"""

import uuid as uuidlib
from collections.abc import Callable
from typing import Any, ClassVar

from oslo_log import log as logging

from resize_sched import exception, words
from resize_sched.conductor.tasks.claim import (
    MoveClaims,
    dest_from_dict,
    recorded_allocations,
)
from resize_sched.conductor.tasks.facts import facts_of, grouped
from resize_sched.db import states
from resize_sched.db.steps import StepEvent, StepRun
from resize_sched.scheduler.manager import (
    Destination,
    Selection,
)
from resize_sched.strategies import Holdings

__all__ = ["SCHEDULING_STEPS", "AwayMove", "MoveTask", "recorded_allocations"]

LOG = logging.getLogger(__name__)

#: The steps that may ask the scheduler: they read the server's request spec
#: in the transaction that takes the migration.
SCHEDULING_STEPS = frozenset({"schedule", "reschedule"})


class MoveTask(MoveClaims):
    """Runs the steps every move of a server shares.

    :param deps: configuration, database, Placement client, scheduler, executor.
    """

    #: The instance-action event each step records (os-instance-actions), and
    #: the actions it belongs to; a step not named records none.
    STEP_EVENTS: ClassVar[dict[str, tuple[str, tuple[str, ...]]]] = {}
    #: Every status from which the move may still fail (a live migration has
    #: Nova's own: ``accepted``, ``preparing``, ``running``).
    FAILABLE_STATUSES: ClassVar[tuple[str, ...]] = ("pre-migrating", "migrating", "post-migrating")
    #: The move's name in the conductor's log lines.
    WHAT: ClassVar[str] = "Resize"

    # -- the one way a step runs -----------------------------------------------------

    def _step(
        self,
        migration_uuid: str,
        expect: str | tuple[str, ...],
        name: str,
        body: Callable[[Any, StepRun], Any],
        *,
        take_late: bool = False,
    ) -> Any:
        """Run ``body(migration, run)`` if the step is due; else do nothing.

        The step takes the migration and opens its event in one transaction;
        its last write ends it (``migration_advance(..., ends=run)``), or one
        more transaction does when it fails or was not due after all.

        :param take_late: the step starts with a read and takes the
            migration with its first journal entry (a schedule: its first
            write is one; see :mod:`resize_sched.db.steps`).

        :returns: what ``body`` returns, or None when the step was not due or
            lost the migration part-way (a delete, another step).
        """
        event = None
        if name in self.STEP_EVENTS:
            event_name, belongs_to = self.STEP_EVENTS[name]
            event = StepEvent(event_name, belongs_to, self.deps.conf.host)
        run = StepRun(
            migration_uuid,
            str(uuidlib.uuid4()),
            name,
            event,
            load_request_spec=name in SCHEDULING_STEPS,
            take_late=take_late,
        )
        try:
            migration = self.db.step_begin(run, expect)
        except exception.StepNotDue as exc:
            LOG.info("%s Nothing to do.", exc)
            return None
        error: BaseException | None = None
        not_due = False
        try:
            return body(migration, run)
        except exception.StepNotDue as exc:
            LOG.info("%s Stopping the step.", exc)
            not_due = True
            self._give_back_if_deleted(migration_uuid)
            return None
        except BaseException as exc:
            error = exc
            if run.failure is None and isinstance(exc, exception.PlacementError):
                run.failure = words.step_failed(
                    name,
                    exc,
                    migration.source_host,
                    {
                        migration.source_rp_uuid: migration.source_host,
                        migration.dest_rp_uuid: migration.dest_host,
                    },
                    {migration.server_uuid: "server", migration.uuid: "migration"},
                    move=migration.migration_type,
                )
            raise
        finally:
            self.db.step_end(run, error=error, not_due=not_due)

    def _advance_on_report(self, migration_uuid: str, **advance: Any) -> Any:
        """A compute host's report moves the migration on, in one
        compare-and-swap (no step owns the migration meanwhile).

        :returns: the migration, or None when the report is not due (a
            duplicate, a host the move has left, a delete).
        """
        try:
            return self.db.migration_advance(migration_uuid, token=None, **advance)
        except exception.StepNotDue as exc:
            LOG.info("%s Nothing to do.", exc)
            return None

    def _give_back_if_deleted(self, migration_uuid: str) -> None:
        """A step lost to a delete: release anything it wrote after the delete's release."""
        migration = self.db.migration_get(migration_uuid)
        server = self.db.server_get(migration.server_uuid, read_deleted=True)
        if server.deleted_at is None and server.task_state != "deleting":
            return
        try:
            self.deps.executor.release(migration)
        except exception.PlacementError as exc:
            # NOTE: the journal keeps the entry intended; recovery releases it.
            LOG.warning(
                "Migration %s: release after the delete left to recovery: %s", migration_uuid, exc
            )

    # -- schedule and claim -------------------------------------------------------

    def schedule(self, migration_uuid: str) -> Destination | None:
        """Prepare, schedule and claim; return the claimed destination.

        :returns: the destination, or None when the migration is no longer
            ``pre-migrating`` (a duplicate, or deleted meanwhile).
        :raises NoValidHost: no host could take it; the server got its old
            allocation back and the migration is in ``error``.
        :raises RestoreFailed: as above, but even the old allocation could not
            be put back; the server is flagged for healing.
        """
        return self._step(
            migration_uuid, self.SCHEDULING_STATUS, "schedule", self._schedule, take_late=True
        )

    def _schedule(self, migration: Any, run: StepRun) -> Destination:
        strategy = self.deps.strategy(migration.claim_strategy)
        facts = facts_of(migration)
        try:
            migration, selection = self._prepare_and_select(migration, run, strategy, facts)
            return self._claim_first(migration, run, strategy, facts, selection, frozenset())
        except exception.NoValidHost as exc:
            self._end_without_host(migration, run, exc)
            raise

    def _end_without_host(
        self,
        migration: Any,
        run: StepRun,
        exc: exception.NoValidHost,
        after: tuple[str, str] | None = None,
    ) -> None:
        """No host could take the move: its verdict in words (what the
        scheduler said and what to do next, by the move's kind), and the
        server gets exactly its old allocation back (:meth:`_fail`).

        :param after: the host whose failure to prepare led here, and why.
        """
        why = reason = exc.reason
        if after is not None:
            host, failure = after
            why = f"preparing it on host {host} failed ({words.reason_of(failure)}), and {why}"
            reason = f"{failure}; {reason}"
        run.failure = words.no_host_for_move(
            migration.migration_type, exc.kind, why, migration.new_flavor, migration.source_host
        )
        self._fail(migration.uuid, run, kind=exc.kind, reason=reason)

    def reschedule(
        self, migration_uuid: str, reason: str, host: str | None = None
    ) -> Destination | None:
        """The claimed destination failed to prepare: move to the next alternate.

        One transition goes from the current holdings to the next host's
        target; with no alternate left the resize fails and restores. When
        the first answer came from the source alone (``prefer_same_host``),
        the other hosts are asked now.

        :param host: the host that failed; a report from a host the resize
            has already left changes nothing.
        :returns: the new destination, or None when the migration is no
            longer ``migrating`` (a duplicate report, or deleted meanwhile).
        :raises NoValidHost: no alternate could be claimed (restored).
        """
        return self._step(
            migration_uuid,
            "migrating",
            "reschedule",
            lambda migration, run: self._reschedule(migration, run, reason, host),
        )

    def _reschedule(
        self, migration: Any, run: StepRun, reason: str, host: str | None
    ) -> Destination:
        if host is not None and host != migration.dest_host:
            # NOTE: the step owns the migration, so its destination cannot
            # change under this check.
            raise exception.StepNotDue(
                migration_id=migration.uuid,
                step=f"reschedule after a failure on {host}",
                reason=f"the resize has moved on to {migration.dest_host}",
            )
        strategy = self.deps.strategy(migration.claim_strategy)
        facts = facts_of(migration)
        LOG.warning(
            "Migration %s: destination %s failed (%s); trying alternates",
            migration.uuid,
            migration.dest_host,
            reason,
        )
        tried = frozenset(migration.tried or ()) | {migration.dest_rp_uuid}
        alternates = [dest_from_dict(d) for d in migration.alternates or ()]
        complete = migration.alternates_complete is not False
        migration = self.db.migration_update(
            migration.uuid,
            expected_status="migrating",
            owner=run.token,
            tried=sorted(tried),
            status="pre-migrating",
        )
        try:
            return self._claim_first(
                migration, run, strategy, facts, Selection(alternates, complete), tried
            )
        except exception.NoValidHost as exc:
            self._end_without_host(
                migration, run, exc, after=(host or migration.dest_host, reason)
            )
            raise

    def _settled(self, server_uuid: str) -> tuple[str, str]:
        """(status, vm_state) the server ends a resize in: SHUTOFF when it
        was stopped (its power state is kept through the resize), as Nova."""
        try:
            server = self.db.server_get(server_uuid)
        except exception.ServerNotFound:
            return states.settled_state(None)
        return states.settled_state(server.power_state)

    # -- failure -------------------------------------------------------------------

    def fail(
        self, migration_uuid: str, *, kind: str, reason: str, server_error: bool = False
    ) -> Any:
        """End the resize without a host: the server gets exactly its old allocation.

        :param kind: ``deferred``, ``infeasible`` (no host) or ``failed`` (a
            compute host failed after the claim).
        :param server_error: put the server in ERROR (a compute host failed
            part-way, as Nova does) instead of back to ACTIVE.
        :returns: the migration, or None when it had already ended (or the
            server is being deleted).
        :raises RestoreFailed: Placement refused even that; the server is
            flagged ``needs_heal`` and the migration records what is missing.
        """
        return self._step(
            migration_uuid,
            self.FAILABLE_STATUSES,
            "fail",
            lambda migration, run: self._fail(
                migration.uuid, run, kind=kind, reason=reason, server_error=server_error
            ),
        )

    def placement_failed(self, migration_uuid: str, reason: str) -> Any:
        """Placement failed part-way through the schedule (down, or refused
        for another reason): put back what the server held (:meth:`fail`).
        If even that fails, the journal and the migration's status let
        recovery finish it."""
        return self.fail(migration_uuid, kind="failed", reason=reason)

    def _fail(
        self,
        migration_uuid: str,
        run: StepRun,
        *,
        kind: str,
        reason: str,
        server_error: bool = False,
        ended: str = "error",
    ) -> Any:
        """Give the server exactly its old allocation back on the source and
        end the migration in ``ended`` (``error``; ``cancelled`` for an
        aborted live migration)."""
        if not run.taken:
            # NOTE: a schedule that wrote nothing yet (see MoveTask._step)
            # takes the migration before failing it: a duplicate that read
            # it before its twin claimed and handed it on stops here.
            self.db.step_take(run)
        migration = self.db.migration_get(migration_uuid)
        strategy = self.deps.strategy(migration.claim_strategy)
        facts = facts_of(migration)
        LOG.warning("Migration %s failed (%s): %s", migration.uuid, kind, reason)
        status_after, vm_state_after = self._settled(migration.server_uuid)
        server_values: dict[str, Any] = {
            "status": "ERROR" if server_error else status_after,
            "vm_state": "error" if server_error else vm_state_after,
            "task_state": None,
            "host": migration.source_host,
            "node": migration.source_node,
            "rp_uuid": migration.source_rp_uuid,
            "flavor": migration.old_flavor,
        }
        if server_error:
            server_values.update(fault_message=reason, fault_code=500)
        ending = {
            "expected_status": self.FAILABLE_STATUSES,
            "step": "fail",
            "status": ended,
            "error_kind": kind,
        }
        try:
            migration = self.deps.executor.apply(
                migration, "restore", strategy.restore(facts), run=run
            )
        except exception.ClaimRefused as exc:
            why = "a compute host failed its part" if kind == "failed" else reason
            run.failure = words.restore_refused(migration.source_host, why)
            server_values.update(needs_heal=True, fault_message=run.failure, fault_code=409)
            self.db.migration_advance(
                migration.uuid,
                token=run.token,
                error_reason=f"{reason}; restore refused: {exc}",
                missing=Holdings(server=facts.original).to_dict(),
                server_values=server_values,
                **ending,
            )
            raise exception.RestoreFailed(
                server_id=migration.server_uuid, source=migration.source_host, reason=str(exc)
            ) from exc
        generations = (migration.holdings or {}).get("generations", {})
        server_values["placement_generation"] = generations.get("server")
        server_values["allocations"] = recorded_allocations(
            facts.original, migration.source_rp_uuid
        )
        if grouped(facts):
            server_values["group_providers"] = facts.group_providers
        return self.db.migration_advance(
            migration.uuid,
            token=run.token,
            error_reason=reason,
            server_values=server_values,
            **ending,
        )


class AwayMove(MoveTask):
    """A move that always leaves its source (a live migration, an evacuation).

    The API accepts it before any host is chosen (``accepted``), recording
    the host its caller named, if any, as the migration's ``dest_host``: the
    scheduler chooses that host alone, or any other, never the source.
    """

    SCHEDULING_STATUS: ClassVar[str] = states.MIGRATION_ACCEPTED
    LEAVES_SOURCE: ClassVar[bool] = True
    NAMED_HOST: ClassVar[str] = "dest_host"
