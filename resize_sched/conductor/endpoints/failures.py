"""The conductor's endpoint of a compute host's failure report.

Which flow each failed operation belongs to, and what that flow does about it.

Each failure's event is recorded only when the report was due (the task
acted on it): a duplicate or stale report records nothing. What is recorded
says it in words (:mod:`resize_sched.words`).
"""

from resize_sched import exception, words
from resize_sched.conductor.endpoints.base import MoveFailure
from resize_sched.conductor.endpoints.checks import LOG, handler
from resize_sched.conductor.endpoints.evacuations import EvacuationEndpoints
from resize_sched.conductor.endpoints.live import LIVE_ROLLBACKS, LiveMigrationEndpoints
from resize_sched.conductor.endpoints.power import PowerEndpoints
from resize_sched.conductor.endpoints.resizes import ResizeEndpoints
from resize_sched.conductor.endpoints.shelving import SHELVE_TASKS, ShelvingEndpoints
from resize_sched.conductor.tasks.power import POWER_TASKS
from resize_sched.context import RequestContext

#: The parts a host runs after the conductor decided a resize (its failure
#: is reported only): the status the migration was left in before the part was
#: cast, and the migration's columns naming the hosts the part runs on.
DECISION_PARTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "confirm": ("confirmed", ("source_host",)),
    "revert": ("reverted", ("dest_host", "source_host")),
}


#: The failed compute operations that belong to a migration, and the method
#: that handles each (called with the report as a :class:`.MoveFailure`).
MIGRATION_FAILURES: dict[str, str] = {
    "prep_resize": "_prep_failed",
    "resize": "_resize_failed",
    "finish_resize": "_resize_failed",
    "rebuild": "_evacuation_failed",
    **dict.fromkeys((*LIVE_ROLLBACKS, "post_live_migration"), "_live_failed"),
    **dict.fromkeys(DECISION_PARTS, "_decision_part_failed"),
}


class FailureEndpoints(
    ResizeEndpoints, LiveMigrationEndpoints, EvacuationEndpoints, PowerEndpoints, ShelvingEndpoints
):
    """``operation_failed``: a compute operation failed on a host."""

    @handler
    def operation_failed(
        self,
        ctxt: RequestContext,
        operation: str,
        reason: str,
        server_uuid: str,
        migration_uuid: str | None = None,
        host: str | None = None,
    ) -> None:
        LOG.warning(
            "Compute %s of server %s failed on %s: %s",
            operation,
            server_uuid,
            host or "its host",
            reason,
        )
        if operation in POWER_TASKS:
            self._power_failed(server_uuid, operation, host, reason)
        elif operation in SHELVE_TASKS:
            self._shelve_failed(server_uuid, operation, host, reason)
        elif operation == "spawn":
            said = words.compute_failed(operation, host, reason, source=None)
            if self.builds.fail(server_uuid, said) is not None:
                self._compute_event("spawn", server_uuid, host, reason=said)
        elif migration_uuid and operation in MIGRATION_FAILURES:
            failed = getattr(self, MIGRATION_FAILURES[operation])
            failed(ctxt, MoveFailure(operation, reason, server_uuid, migration_uuid, host))
        else:
            LOG.info(
                "Failure of %s of server %s names no migration it belongs to; nothing to do",
                operation,
                server_uuid,
            )

    def _prep_failed(self, ctxt: RequestContext, failure: MoveFailure) -> None:
        """The destination failed to prepare: the next alternate, or the end."""
        said = self._said(failure)
        try:
            dest = self.resizes.reschedule(failure.migration_uuid, failure.reason, failure.host)
        except (exception.NoValidHost, exception.RestoreFailed) as exc:
            LOG.warning("Resize %s: no alternate left: %s", failure.migration_uuid, exc)
            self._compute_event("prep_resize", failure.server_uuid, failure.host, reason=said)
            self._notify_resize_error(ctxt, failure.migration_uuid, exc)
            return
        if dest is not None:
            self._compute_event("prep_resize", failure.server_uuid, failure.host, reason=said)
            self._prep(ctxt, failure.migration_uuid, dest.host)

    def _decision_part_failed(self, ctxt: RequestContext, failure: MoveFailure) -> None:
        """A confirm's or a revert's part failed on a host: the server's fault."""
        status, host_columns = DECISION_PARTS[failure.operation]
        part = self._revert_part(failure.operation, failure.migration_uuid, failure.host)
        said = self._said(failure, part)
        if not self.db.server_record_step_fault(
            failure.server_uuid,
            failure.migration_uuid,
            expected_status=status,
            host=failure.host,
            host_columns=host_columns,
            fault_message=said,
        ):
            # NOTE: a late or replayed report: the server has moved on
            # (resized again, deleted) since this part ran.
            LOG.info(
                "Fault of server %s not recorded: the %s of migration %s is not its "
                "latest step (stale report); nothing to do",
                failure.server_uuid,
                failure.operation,
                failure.migration_uuid,
            )
            return
        self._compute_event(part, failure.server_uuid, failure.host, reason=said)

    def _resize_failed(self, ctxt: RequestContext, failure: MoveFailure) -> None:
        """The source's resize or the destination's finish failed: as Nova's
        fix for bug 1825537, the server goes to ERROR on its source with
        exactly its old allocation; nothing leaks."""
        said = self._said(failure)
        failed = self.resizes.fail(
            failure.migration_uuid, kind="failed", reason=said, server_error=True
        )
        if failed is not None:
            self._compute_event(failure.operation, failure.server_uuid, failure.host, reason=said)

    def _revert_part(self, operation: str, migration_uuid: str | None, host: str | None) -> str:
        """``revert`` on a source host is the revert's second part, ``finish_revert``."""
        if operation != "revert" or not migration_uuid:
            return operation
        try:
            migration = self.db.migration_get(migration_uuid)
        except exception.NotFound:
            return operation
        if host == migration.source_host:
            return "finish_revert"
        return operation
