"""The live migration flow: schedule and claim, hand over, complete or roll back.

A live migration is a move of the shared base (:class:`MoveTask`) whose
flavor does not change and whose server keeps running: it holds the source
through its migration record as Nova does, with the ``legacy`` strategy's
targets (the server's allocation moves to the migration, the destination
is claimed for the server; completing gives the migration's holding back,
a rollback gives the server exactly what it held on the source).

Statuses are Nova's for a live migration: ``accepted`` from the API until a
destination is claimed, ``preparing`` while the destination runs
``pre_live_migration``, ``running`` while the source hands the server over
(and may be aborted or forced to complete), then ``completed``; a rollback
ends in ``error``, an abort in ``cancelled``. The server is MIGRATING (vm
state ``active``, task ``migrating``) throughout and ACTIVE after.

Compute hosts drive it over RPC::

    conductor --pre_live_migration--> dest      dest --live_migration_prepared--> conductor
    conductor --live_migration--> source        source: hand-over, post_live_migration
    source --post_live_migration_at_destination--> dest
    dest --live_migration_finished--> conductor

Each report arrives here as :meth:`LiveMigrationTask.prepared` or
:meth:`LiveMigrationTask.complete`; a failure as :meth:`rollback` (before
the hand-over ended) or :meth:`post_failed` (the server already runs on the
destination). Every one is a compare-and-swap on the migration's status, so
a duplicate or late report is a logged no-op.
"""

from typing import Any, ClassVar

from oslo_log import log as logging

from resize_sched.conductor.tasks.facts import facts_of
from resize_sched.conductor.tasks.move import AwayMove, recorded_allocations
from resize_sched.db import action_api, states
from resize_sched.db.steps import StepRun

LOG = logging.getLogger(__name__)

_LIVE = (action_api.LIVE_MIGRATION,)


class LiveMigrationTask(AwayMove):
    """Runs one server's live migration through its steps.

    :param deps: configuration, database, Placement client, scheduler, executor.
    """

    STEP_EVENTS: ClassVar[dict[str, tuple[str, tuple[str, ...]]]] = {
        "schedule": ("conductor_live_migrate_instance", _LIVE),
        "complete": ("conductor_post_live_migration", _LIVE),
        "rollback": ("conductor_rollback_live_migration", _LIVE),
        "post failed": ("conductor_post_live_migration", _LIVE),
    }
    CLAIMED_STATUS: ClassVar[str] = states.MIGRATION_PREPARING
    FAILABLE_STATUSES: ClassVar[tuple[str, ...]] = states.LIVE_IN_FLIGHT_STATUSES
    WHAT: ClassVar[str] = "Live migration"

    # -- the compute hosts' reports ------------------------------------------------------

    def prepared(self, migration_uuid: str, host: str) -> Any:
        """The destination is ready: ``preparing`` -> ``running``, once.

        :returns: the migration, or None when the report is not due (a
            duplicate, one from a host that is not the destination, a delete).
        """
        return self._advance_on_report(
            migration_uuid,
            expected_status=states.MIGRATION_PREPARING,
            migration_expected={"dest_host": host},
            step=f"pre_live_migration report from {host}",
            status=states.MIGRATION_RUNNING,
        )

    def complete(self, migration_uuid: str) -> Any:
        """The server runs on the destination alone: give back what the
        migration holds on the source; the server is ACTIVE there.

        :returns: the migration, or None when it is not ``running``.
        """
        return self._step(
            migration_uuid,
            states.MIGRATION_RUNNING,
            "complete",
            lambda migration, run: self._on_destination(migration, run, error=None),
        )

    def post_failed(self, migration_uuid: str, reason: str) -> Any:
        """The source's clean-up failed after the hand-over: the server runs
        on the destination, so it stays there (its source holding given
        back, nothing held twice), in ERROR with the reason, as Nova leaves it.

        :returns: the migration, or None when it is not ``running``.
        """
        return self._step(
            migration_uuid,
            states.MIGRATION_RUNNING,
            "post failed",
            lambda migration, run: self._on_destination(migration, run, error=reason),
        )

    def _on_destination(self, migration: Any, run: StepRun, error: str | None) -> Any:
        strategy = self.deps.strategy(migration.claim_strategy)
        facts = facts_of(migration)
        known = self.deps.executor.known(migration)
        target = strategy.confirm(facts, known.holdings, migration.dest_rp_uuid)
        # NOTE: only the migration consumer is written (emptied): the server
        # keeps what it holds on the destination, and a re-write of it could
        # be refused for what it already holds (a max_unit lowered since).
        migration = self.deps.executor.apply(migration, "complete", target, run=run)
        held = migration.holdings or {}
        server_values: dict[str, Any] = {
            "status": states.STATUS_ACTIVE,
            "vm_state": states.VM_ACTIVE,
            "task_state": None,
            "host": migration.dest_host,
            "node": migration.dest_node,
            "rp_uuid": migration.dest_rp_uuid,
            "placement_generation": held.get("generations", {}).get("server"),
            "allocations": recorded_allocations(held.get("server"), migration.dest_rp_uuid),
        }
        extra: dict[str, Any] = {}
        if error is not None:
            server_values.update(
                status=states.STATUS_ERROR,
                vm_state=states.VM_ERROR,
                fault_message=error,
                fault_code=500,
            )
            extra = {"error_kind": states.ERROR_FAILED, "error_reason": error}
        return self.db.migration_advance(
            migration.uuid,
            ends=run,
            expected_status=states.MIGRATION_RUNNING,
            step="complete" if error is None else "post failed",
            status=states.MIGRATION_COMPLETED if error is None else states.MIGRATION_ERROR,
            server_expected={"task_state": states.TASK_MIGRATING},
            server_values=server_values,
            **extra,
        )

    def placement_failed(self, migration_uuid: str, reason: str) -> Any:
        """Placement failed part-way through the schedule: roll back."""
        return self.rollback(migration_uuid, reason)

    def rollback(self, migration_uuid: str, reason: str, *, aborted: bool = False) -> Any:
        """The migration stopped before the hand-over ended: the server runs
        on on the source with exactly what it held there; the destination's
        claim is given back in the same write.

        :param aborted: an operator aborted it (``cancelled``), else ``error``.
        :returns: the migration, or None when it had already ended.
        :raises RestoreFailed: Placement refused even that (flagged for heal).
        """
        ended = states.MIGRATION_CANCELLED if aborted else states.MIGRATION_ERROR

        def body(migration: Any, run: StepRun) -> Any:
            return self._fail(migration.uuid, run, kind="failed", reason=reason, ended=ended)

        return self._step(migration_uuid, self.FAILABLE_STATUSES, "rollback", body)
