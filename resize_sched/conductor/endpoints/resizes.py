"""The conductor's endpoints of a resize and a cold migration.

Schedule, the hosts' prepared and finished reports, confirm and revert.
"""

from resize_sched import exception, notifications
from resize_sched.compute.rpcapi import migration_message
from resize_sched.conductor.endpoints.base import Endpoint
from resize_sched.conductor.endpoints.checks import LOG, handler
from resize_sched.context import RequestContext
from resize_sched.db import action_api


class ResizeEndpoints(Endpoint):
    """``resize_server``, ``resize_prepared``, ``resize_finished``,
    ``confirm_resize`` and ``revert_resize``."""

    @handler
    def resize_server(self, ctxt: RequestContext, migration_uuid: str) -> None:
        self._schedule_move(
            self.resizes,
            migration_uuid,
            then=lambda dest: self._prep(ctxt, migration_uuid, dest.host),
            ended=lambda exc: self._notify_resize_error(ctxt, migration_uuid, exc),
        )

    def _notify_resize_error(
        self, ctxt: RequestContext, migration_uuid: str, exc: Exception
    ) -> None:
        """``instance.resize.error`` for a resize that ended here (never raises)."""
        if not notifications.enabled(self.notifier):
            return
        try:
            migration = self.db.migration_get(migration_uuid)
            server = self.db.server_get(migration.server_uuid)
        except exception.ResizeSchedException as again:
            LOG.warning("No resize.error notification for %s: %s", migration_uuid, again)
            return
        kind, reason = notifications.kind_and_reason(exc)
        notifications.notify_resize_error(
            self.notifier, ctxt, migration, kind, reason, server=server, exc=exc
        )

    def _prep(self, ctxt: RequestContext, migration_uuid: str, host: str) -> None:
        migration = self.db.migration_get(migration_uuid)
        self._compute_event("prep_resize", migration.server_uuid, host)
        self.compute.prep_resize(ctxt, host, migration_message(migration))

    @handler
    def resize_prepared(
        self, ctxt: RequestContext, migration_uuid: str, host: str | None = None
    ) -> None:
        migration = self.resizes.prepared(migration_uuid, host)
        if migration is None:
            return
        server_uuid = migration.server_uuid
        self._compute_event(
            "prep_resize", server_uuid, migration.dest_host, result=action_api.SUCCESS
        )
        self._compute_event("resize", server_uuid, migration.source_host)
        self.compute.resize_instance(ctxt, migration.source_host, self.running_message(migration))

    @handler
    def resize_finished(self, ctxt: RequestContext, migration_uuid: str) -> None:
        migration = self.resizes.finish(migration_uuid)
        if migration is None:
            return
        server_uuid = migration.server_uuid
        self._compute_event(
            "resize", server_uuid, migration.source_host, result=action_api.SUCCESS
        )
        self._compute_event(
            "finish_resize", server_uuid, migration.dest_host, result=action_api.SUCCESS
        )
        self.db.action_finish(server_uuid, action_api.RESIZE_OR_MIGRATE)

    @handler
    def confirm_resize(self, ctxt: RequestContext, migration_uuid: str) -> None:
        migration = self.resizes.complete_confirm(migration_uuid)
        if migration is not None:
            self.db.action_finish(migration.server_uuid, (action_api.CONFIRM_RESIZE,))
            self.compute.confirm_resize(ctxt, migration.source_host, migration_message(migration))

    @handler
    def revert_resize(self, ctxt: RequestContext, migration_uuid: str) -> None:
        try:
            migration = self.resizes.complete_revert(migration_uuid)
        except exception.PlacementConflict as exc:
            LOG.warning("Revert of %s refused, may be retried: %s", migration_uuid, exc)
            return
        if migration is not None:
            self.db.action_finish(migration.server_uuid, (action_api.REVERT_RESIZE,))
            self.compute.revert_resize(ctxt, migration.dest_host, self.running_message(migration))
