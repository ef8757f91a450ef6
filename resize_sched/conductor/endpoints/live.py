"""The conductor's endpoints of a live migration.

Schedule, the hosts' reports, abort and force-complete, and a failed part's
rollback.
"""

from collections.abc import Callable
from typing import Any

from resize_sched import exception
from resize_sched.conductor.endpoints.base import Endpoint, MoveFailure
from resize_sched.conductor.endpoints.checks import LOG, handler
from resize_sched.context import RequestContext
from resize_sched.db import action_api, states

#: The compute operations of a live migration that, failing, roll it back
#: to its source (the hand-over had not ended).
LIVE_ROLLBACKS = ("pre_live_migration", "live_migration", "live_migration_abort")


class LiveMigrationEndpoints(Endpoint):
    """``live_migrate_server``, ``live_migration_prepared``,
    ``live_migration_finished``, ``live_migration_abort`` and
    ``live_migration_force_complete``."""

    @handler
    def live_migrate_server(self, ctxt: RequestContext, migration_uuid: str) -> None:
        """Schedule and claim a live migration, then ask its destination to prepare."""
        self._schedule_move(
            self.lives,
            migration_uuid,
            then=lambda dest: self._pre_live(ctxt, migration_uuid),
            ended=lambda exc: self._live_ended(migration_uuid),
        )

    def _pre_live(self, ctxt: RequestContext, migration_uuid: str) -> None:
        migration = self.db.migration_get(migration_uuid)
        self._compute_event("pre_live_migration", migration.server_uuid, migration.dest_host)
        self.compute.pre_live_migration(ctxt, migration.dest_host, self._live_message(migration))

    def _live_message(self, migration: Any) -> dict[str, Any]:
        """The ``migration`` message of a live migration's part, with its server."""
        return self._message(migration, with_server=True)

    def _live_ended(self, migration_uuid: str) -> None:
        """Close the live-migration action of a migration that has ended."""
        try:
            migration = self.db.migration_get(migration_uuid)
        except exception.NotFound:
            return
        if migration.status in states.FINAL_STATUSES:
            self.db.action_finish(migration.server_uuid, (action_api.LIVE_MIGRATION,))

    @handler
    def live_migration_prepared(
        self, ctxt: RequestContext, migration_uuid: str, host: str
    ) -> None:
        migration = self.lives.prepared(migration_uuid, host)
        if migration is None:
            return
        self._compute_event(
            "pre_live_migration", migration.server_uuid, host, result=action_api.SUCCESS
        )
        self._live_migrate_on_source(ctxt, migration)

    def _live_migrate_on_source(self, ctxt: RequestContext, migration: Any) -> None:
        self._compute_event("live_migration", migration.server_uuid, migration.source_host)
        self.compute.live_migration(ctxt, migration.source_host, self._live_message(migration))

    @handler
    def live_migration_finished(self, ctxt: RequestContext, migration_uuid: str) -> None:
        migration = self.lives.complete(migration_uuid)
        if migration is None:
            return
        self._compute_event(
            "live_migration",
            migration.server_uuid,
            migration.source_host,
            result=action_api.SUCCESS,
        )
        self.db.action_finish(migration.server_uuid, (action_api.LIVE_MIGRATION,))

    @handler
    def live_migration_abort(self, ctxt: RequestContext, migration_uuid: str) -> None:
        """Ask the source to stop the hand-over; its report rolls the migration back."""
        self._to_running_source(ctxt, migration_uuid, "Abort", self.compute.live_migration_abort)

    @handler
    def live_migration_force_complete(self, ctxt: RequestContext, migration_uuid: str) -> None:
        """Ask the source to end the hand-over now."""
        self._to_running_source(
            ctxt, migration_uuid, "Force-complete", self.compute.live_migration_force_complete
        )

    def _to_running_source(
        self,
        ctxt: RequestContext,
        migration_uuid: str,
        what: str,
        cast: Callable[[RequestContext, str, dict[str, Any]], None],
    ) -> None:
        """Cast ``cast`` to the source of a running live migration, if it runs."""
        migration = self.db.migration_get(migration_uuid)
        if migration.status != states.MIGRATION_RUNNING:
            LOG.info(
                "%s of live migration %s not due (it is %s); nothing to do",
                what,
                migration_uuid,
                migration.status,
            )
            return
        cast(ctxt, migration.source_host, self._live_message(migration))

    def _live_failed(self, ctxt: RequestContext, failure: MoveFailure) -> None:
        """A live migration's part failed on ``host``: roll back, or (after the
        hand-over) keep the server where it now runs."""
        said = self._said(failure)
        try:
            expected_host = self.db.migration_get(failure.migration_uuid)
        except exception.NotFound:
            return
        on = (
            expected_host.dest_host
            if failure.operation == "pre_live_migration"
            else expected_host.source_host
        )
        if failure.host is not None and failure.host != on:
            LOG.info(
                "Failure of %s of live migration %s reported by %s, not its host %s; "
                "nothing to do",
                failure.operation,
                failure.migration_uuid,
                failure.host,
                on,
            )
            return
        if failure.operation == "post_live_migration":
            ended = self.lives.post_failed(failure.migration_uuid, said)
        else:
            try:
                ended = self.lives.rollback(
                    failure.migration_uuid,
                    said,
                    aborted=failure.operation == "live_migration_abort",
                )
            except exception.RestoreFailed as exc:
                LOG.warning("Live migration %s: rollback refused: %s", failure.migration_uuid, exc)
                ended = self.db.migration_get(failure.migration_uuid)
        if ended is None:
            return
        if failure.operation == "live_migration_abort":
            self._compute_event(
                failure.operation, failure.server_uuid, failure.host, result=action_api.SUCCESS
            )
        else:
            self._compute_event(failure.operation, failure.server_uuid, failure.host, reason=said)
        if failure.operation != "post_live_migration":
            message = self._live_message(ended)
            self.compute.rollback_live_migration_at_destination(ctxt, ended.dest_host, message)
            if failure.operation != "pre_live_migration":
                self.compute.rollback_live_migration_at_source(ctxt, ended.source_host, message)
        self.db.action_finish(failure.server_uuid, (action_api.LIVE_MIGRATION,))
