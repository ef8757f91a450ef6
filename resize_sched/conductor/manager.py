"""Server side of the conductor RPC API: thin endpoints over the task flows.

Each method is a cast handler: it runs one step of a flow and hands the next
step to a compute host. Business failures (no valid host, a refused revert)
are already recorded on the server and migration by the task; here they are
logged and stop the flow. See :mod:`resize_sched.conductor.rpcapi` for the
version history.
"""

import functools
import inspect
import re
from collections.abc import Callable
from typing import Any

import oslo_messaging as messaging
from oslo_log import log as logging

from resize_sched import actions, exception, notifications
from resize_sched.compute.rpcapi import ComputeAPI, migration_message, server_message
from resize_sched.conductor.rpcapi import NAMESPACE, VERSION
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.conductor.tasks.build import BuildTask
from resize_sched.conductor.tasks.resize import ResizeTask
from resize_sched.context import RequestContext

LOG = logging.getLogger(__name__)

#: Failures that end a flow on purpose; logged without a traceback.
_EXPECTED = (
    exception.NoValidHost,
    exception.RestoreFailed,
    exception.ClaimRefused,
    exception.Conflict,
    exception.NotFound,
)


_UUID = re.compile(r"^[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}$")


def _malformed(arguments: dict[str, Any]) -> list[str]:
    """What is wrong with a message's arguments (uuids where uuids belong,
    text where text belongs), before anything is read or written."""
    problems = []
    for name, value in arguments.items():
        if value is None and name in ("migration_uuid", "host"):
            continue
        if name.endswith("_uuid"):
            if not isinstance(value, str) or not _UUID.match(value):
                problems.append(f"{name} is not a uuid: {value!r:.80}")
        elif not isinstance(value, str) or len(value) > 65535:
            problems.append(f"{name} is not text: {value!r:.80}")
    return problems


def handler(method: Callable[..., None]) -> Callable[..., None]:
    """Make ``method`` an RPC handler of the conductor.

    Exposed to oslo.messaging (only handlers are dispatchable), its expected
    failures logged without a traceback, and its arguments checked first: a
    malformed message is dropped with one warning and changes nothing.
    """
    signature = inspect.signature(method)

    @functools.wraps(method)
    def checked(self: Any, ctxt: RequestContext, *args: Any, **kwargs: Any) -> None:
        try:
            bound = signature.bind(self, ctxt, *args, **kwargs)
        except TypeError as exc:
            LOG.warning("Malformed %s message dropped: %s", method.__name__, exc)
            return None
        arguments = dict(bound.arguments)
        del arguments["self"], arguments["ctxt"]
        problems = _malformed(arguments)
        if problems:
            LOG.warning("Malformed %s message dropped: %s", method.__name__, "; ".join(problems))
            return None
        return method(self, ctxt, *args, **kwargs)

    return messaging.expose(messaging.expected_exceptions(*_EXPECTED)(checked))


class ConductorManager:
    """The conductor's RPC endpoint.

    :param deps: configuration, database, Placement client, scheduler, executor.
    :param compute: the compute RPC client.
    """

    target = messaging.Target(namespace=NAMESPACE, version=VERSION)

    def __init__(
        self, deps: TaskDeps, compute: ComputeAPI, notifier: messaging.Notifier | None = None
    ) -> None:
        self.deps = deps
        #: versioned notifications (:mod:`resize_sched.notifications`); None: none
        self.notifier = notifier
        self.db = deps.db
        self.compute = compute
        self.builds = BuildTask(deps)
        self.resizes = ResizeTask(deps)

    # -- builds -----------------------------------------------------------------------

    @handler
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
            notifications.notify_create_error(
                self.notifier, ctxt, self.db.server_get(server_uuid), exc.kind, exc.reason, exc=exc
            )
            return
        except exception.PlacementError as exc:
            # NOTE: the server stays BUILD/scheduling; whether a claim landed
            # is unknown, so the sweep (or the next start) adopts it or
            # schedules again.
            LOG.warning("Build of server %s left for the sweep: Placement: %s", server_uuid, exc)
            return
        self.compute.spawn(ctxt, server.host, server_message(server))

    @handler
    def build_done(self, ctxt: RequestContext, server_uuid: str) -> None:
        try:
            self.builds.spawned(server_uuid)
        except (exception.ServerNotFound, exception.ServerStateConflict) as exc:
            LOG.info(
                "Build of server %s: spawned report not due (%s); nothing to do", server_uuid, exc
            )

    # -- resizes ----------------------------------------------------------------------

    @handler
    def resize_server(self, ctxt: RequestContext, migration_uuid: str) -> None:
        try:
            dest = self.resizes.schedule(migration_uuid)
        except (exception.NoValidHost, exception.RestoreFailed) as exc:
            LOG.warning("Resize %s ended without a host: %s", migration_uuid, exc)
            self._notify_resize_error(ctxt, migration_uuid, exc)
            return
        except exception.PlacementError as exc:
            # NOTE: Placement failed part-way (down, or refused for another
            # reason): put back what the server held. If even that fails, the
            # journal and the migration's status let recovery finish it.
            LOG.warning("Resize %s: Placement failed: %s", migration_uuid, exc)
            try:
                self.resizes.fail(migration_uuid, kind="failed", reason=f"Placement: {exc}")
            except exception.ResizeSchedException as again:
                LOG.warning("Resize %s left for recovery: %s", migration_uuid, again)
            self._notify_resize_error(ctxt, migration_uuid, exc)
            return
        if dest is not None:
            self._prep(ctxt, migration_uuid, dest.host)

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
        self.compute.prep_resize(ctxt, host, migration_message(migration))

    @handler
    def resize_prepared(
        self, ctxt: RequestContext, migration_uuid: str, host: str | None = None
    ) -> None:
        migration = self.resizes.prepared(migration_uuid, host)
        if migration is None:
            return
        self.compute.resize_instance(ctxt, migration.source_host, migration_message(migration))

    @handler
    def resize_finished(self, ctxt: RequestContext, migration_uuid: str) -> None:
        self.resizes.finish(migration_uuid)

    @handler
    def confirm_resize(self, ctxt: RequestContext, migration_uuid: str) -> None:
        migration = self.resizes.complete_confirm(migration_uuid)
        if migration is not None:
            self.compute.confirm_resize(ctxt, migration.source_host, migration_message(migration))

    @handler
    def revert_resize(self, ctxt: RequestContext, migration_uuid: str) -> None:
        try:
            migration = self.resizes.complete_revert(migration_uuid)
        except exception.PlacementConflict as exc:
            LOG.warning("Revert of %s refused, may be retried: %s", migration_uuid, exc)
            return
        if migration is not None:
            self.compute.revert_resize(ctxt, migration.dest_host, migration_message(migration))

    # -- failures reported by compute hosts ----------------------------------------------

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
        if operation == "spawn":
            self.builds.fail(server_uuid, reason)
        elif operation == "prep_resize" and migration_uuid:
            try:
                dest = self.resizes.reschedule(migration_uuid, reason, host)
            except (exception.NoValidHost, exception.RestoreFailed) as exc:
                LOG.warning("Resize %s: no alternate left: %s", migration_uuid, exc)
                self._notify_resize_error(ctxt, migration_uuid, exc)
                return
            if dest is not None:
                self._prep(ctxt, migration_uuid, dest.host)
        elif operation in ("resize", "finish_resize") and migration_uuid:
            # NOTE: as Nova's fix for bug 1825537: the server goes to ERROR on
            # its source with exactly its old allocation; nothing leaks.
            self.resizes.fail(
                migration_uuid, kind="failed", reason=f"{operation}: {reason}", server_error=True
            )
        else:
            try:
                self.db.server_update(
                    server_uuid,
                    expected={"task_state": [None, "resize_confirming", "resize_reverting"]},
                    fault_message=f"{operation}: {reason}",
                )
            except (exception.ServerNotFound, exception.ServerStateConflict) as exc:
                LOG.info("Fault of server %s not recorded: %s", server_uuid, exc)

    # -- delete -----------------------------------------------------------------------

    @handler
    def delete_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        """Release everything the server and its resize hold, then delete it.

        The delete is recorded first (:func:`resize_sched.actions.begin_delete`,
        which the API has normally done already): the server is ``deleting``
        and its resize in flight is closed, so no later step can write for
        it (Nova bug 1848343). Each consumer is then emptied from a fresh
        read, again on a generation conflict; a step whose write lands after
        this gives it back itself when its own compare-and-swap fails.
        """
        try:
            server = actions.begin_delete(self.db, server_uuid)
        except exception.ServerNotFound:
            LOG.info("Server %s is already deleted; nothing to do", server_uuid)
            return
        notifications.notify_delete(self.notifier, ctxt, server, notifications.START)
        hosts = {server.host} if server.host else set()
        closed = [
            m
            for m in self.db.migration_list(server_uuid=server_uuid)
            if m.status == "error" and m.error_reason == "server deleted"
        ]
        for migration in closed:
            hosts |= {h for h in (migration.source_host, migration.dest_host) if h}
            self.deps.executor.release(migration)
        if not closed:
            self.deps.executor.release_consumer(server_uuid, server.project_id, server.user_id)
        try:
            self.db.server_delete(server_uuid, expected={"task_state": "deleting"})
        except exception.ServerNotFound:
            LOG.info("Server %s was deleted meanwhile by another worker", server_uuid)
            return
        LOG.info("Server %s deleted", server_uuid)
        notifications.notify_delete(self.notifier, ctxt, server, notifications.END)
        for host in sorted(hosts):
            self.compute.destroy(ctxt, host, server_uuid, server=server_message(server))
