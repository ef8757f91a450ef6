"""Server side of the conductor RPC API: thin endpoints over the task flows.

Each method is a cast handler: it runs one step of a flow and hands the next
step to a compute host. Business failures (no valid host, a refused revert)
are already recorded on the server and migration by the task; here they are
logged and stop the flow. See :mod:`resize_sched.conductor.rpcapi` for the
version history.
"""

from typing import Any

import oslo_messaging as messaging
from oslo_log import log as logging

from resize_sched import exception
from resize_sched.compute.rpcapi import ComputeAPI, migration_message, server_message
from resize_sched.conductor.rpcapi import NAMESPACE, VERSION
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.conductor.tasks.build import BuildTask
from resize_sched.conductor.tasks.resize import ResizeTask
from resize_sched.context import RequestContext
from resize_sched.placement.client import INSTANCE, MIGRATION, ConsumerWrite

LOG = logging.getLogger(__name__)

#: Failures that end a flow on purpose; logged without a traceback.
_EXPECTED = (
    exception.NoValidHost,
    exception.RestoreFailed,
    exception.ClaimRefused,
    exception.Conflict,
    exception.NotFound,
)


class ConductorManager:
    """The conductor's RPC endpoint.

    :param deps: configuration, database, Placement client, scheduler, executor.
    :param compute: the compute RPC client.
    """

    target = messaging.Target(namespace=NAMESPACE, version=VERSION)

    def __init__(self, deps: TaskDeps, compute: ComputeAPI) -> None:
        self.deps = deps
        self.db = deps.db
        self.compute = compute
        self.builds = BuildTask(deps)
        self.resizes = ResizeTask(deps)

    # -- builds -----------------------------------------------------------------------

    @messaging.expected_exceptions(*_EXPECTED)
    def build_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        server = self.db.server_get(server_uuid)
        if (server.status, server.task_state) != ("BUILD", "scheduling"):
            # NOTE: a duplicate (recovery re-sent it while the first was queued).
            LOG.info("Build of server %s already past scheduling; nothing to do", server_uuid)
            return
        try:
            server = self.builds.schedule(server_uuid)
        except exception.NoValidHost as exc:
            LOG.warning("Build of server %s: %s", server_uuid, exc)
            return
        except exception.PlacementError as exc:
            # NOTE: the server stays BUILD/scheduling; whether a claim landed
            # is unknown, so the sweep (or the next start) adopts it or
            # schedules again.
            LOG.error("Build of server %s left for the sweep: Placement: %s", server_uuid, exc)
            return
        self.compute.spawn(ctxt, server.host, server_message(server))

    @messaging.expected_exceptions(*_EXPECTED)
    def build_done(self, ctxt: RequestContext, server_uuid: str) -> None:
        self.builds.spawned(server_uuid)

    # -- resizes ----------------------------------------------------------------------

    @messaging.expected_exceptions(*_EXPECTED)
    def resize_server(self, ctxt: RequestContext, migration_uuid: str) -> None:
        try:
            dest = self.resizes.schedule(migration_uuid)
        except (exception.NoValidHost, exception.RestoreFailed) as exc:
            LOG.warning("Resize %s ended without a host: %s", migration_uuid, exc)
            return
        except exception.PlacementError as exc:
            # NOTE: Placement failed part-way (down, or refused for another
            # reason): put back what the server held. If even that fails, the
            # journal and the migration's status let recovery finish it.
            LOG.error("Resize %s: Placement failed: %s", migration_uuid, exc)
            try:
                self.resizes.fail(migration_uuid, kind="failed", reason=f"Placement: {exc}")
            except exception.ResizeSchedException as again:
                LOG.error("Resize %s left for recovery: %s", migration_uuid, again)
            return
        self._prep(ctxt, migration_uuid, dest.host)

    def _prep(self, ctxt: RequestContext, migration_uuid: str, host: str) -> None:
        migration = self.db.migration_get(migration_uuid)
        self.compute.prep_resize(ctxt, host, migration_message(migration))

    def resize_prepared(self, ctxt: RequestContext, migration_uuid: str) -> None:
        migration = self.db.migration_get(migration_uuid)
        self.compute.resize_instance(ctxt, migration.source_host, migration_message(migration))

    def resize_finished(self, ctxt: RequestContext, migration_uuid: str) -> None:
        self.resizes.finish(migration_uuid)

    @messaging.expected_exceptions(*_EXPECTED)
    def confirm_resize(self, ctxt: RequestContext, migration_uuid: str) -> None:
        migration = self.resizes.complete_confirm(migration_uuid)
        self.compute.confirm_resize(ctxt, migration.source_host, migration_message(migration))

    @messaging.expected_exceptions(*_EXPECTED)
    def revert_resize(self, ctxt: RequestContext, migration_uuid: str) -> None:
        try:
            migration = self.resizes.complete_revert(migration_uuid)
        except exception.PlacementConflict as exc:
            LOG.warning("Revert of %s refused, may be retried: %s", migration_uuid, exc)
            return
        self.compute.revert_resize(ctxt, migration.dest_host, migration_message(migration))

    # -- failures reported by compute hosts ----------------------------------------------

    @messaging.expected_exceptions(*_EXPECTED)
    def operation_failed(
        self,
        ctxt: RequestContext,
        operation: str,
        reason: str,
        server_uuid: str,
        migration_uuid: str | None = None,
    ) -> None:
        LOG.warning("Compute %s of server %s failed: %s", operation, server_uuid, reason)
        if operation == "spawn":
            self.builds.fail(server_uuid, reason)
        elif operation == "prep_resize" and migration_uuid:
            try:
                dest = self.resizes.reschedule(migration_uuid, reason)
            except (exception.NoValidHost, exception.RestoreFailed) as exc:
                LOG.warning("Resize %s: no alternate left: %s", migration_uuid, exc)
                return
            self._prep(ctxt, migration_uuid, dest.host)
        elif operation in ("resize", "finish_resize") and migration_uuid:
            # NOTE: as Nova's fix for bug 1825537: the server goes to ERROR on
            # its source with exactly its old allocation; nothing leaks.
            self.resizes.fail(
                migration_uuid, kind="failed", reason=f"{operation}: {reason}", server_error=True
            )
        else:
            self.db.server_update(server_uuid, fault_message=f"{operation}: {reason}")

    # -- delete -----------------------------------------------------------------------

    def delete_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        """Release everything the server and an in-flight migration hold.

        NOTE: the migration is closed first, so a revert racing with the
        delete cannot re-create the server's allocation (Nova bug 1848343).
        """
        server = self.db.server_get(server_uuid, read_deleted=True)
        migration = self.db.migration_get_in_progress_for_server(server_uuid)
        hosts = {server.host} if server.host else set()
        if migration is not None:
            self.db.migration_update(
                migration.uuid, status="error", error_kind="failed", error_reason="server deleted"
            )
            hosts |= {h for h in (migration.source_host, migration.dest_host) if h}
            self._empty(migration.uuid, server, MIGRATION)
        self._empty(server_uuid, server, INSTANCE)
        self.db.server_delete(server_uuid)
        for host in sorted(hosts):
            self.compute.destroy(ctxt, host, server_uuid)

    def _empty(self, consumer: str, server: Any, consumer_type: str) -> None:
        current = self.deps.client.get_allocations(consumer)
        if current.generation is None:
            return
        self.deps.client.put_allocations(
            consumer,
            ConsumerWrite(
                {}, server.project_id, server.user_id, current.generation, consumer_type
            ),
        )
