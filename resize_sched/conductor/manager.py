"""Server side of the conductor RPC API: thin endpoints over the task flows.

Each method is a cast handler: it runs one step of a flow and hands the next
step to a compute host. Business failures (no valid host, a refused revert)
are already recorded on the server and migration by the task; here they are
logged and stop the flow. See :mod:`resize_sched.conductor.rpcapi` for the
version history.
"""

import datetime
import functools
import inspect
import re
import uuid as uuidlib
from collections.abc import Callable
from typing import Any

import oslo_messaging as messaging
from oslo_log import log as logging

from resize_sched import actions, exception, notifications, words
from resize_sched.compute.rpcapi import ComputeAPI, migration_message, server_message
from resize_sched.conductor import reports
from resize_sched.conductor.lease import Lease
from resize_sched.conductor.rpcapi import NAMESPACE, VERSION
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.conductor.tasks.build import BuildTask
from resize_sched.conductor.tasks.evacuate import EvacuationTask
from resize_sched.conductor.tasks.live_migrate import LiveMigrationTask
from resize_sched.conductor.tasks.resize import ResizeTask
from resize_sched.conductor.tasks.shelve import ShelveTask, UnshelveTask
from resize_sched.context import RequestContext, admin_context
from resize_sched.db import action_api, models

LOG = logging.getLogger(__name__)

#: The instance-action event of each compute operation (Nova's names) and the
#: action it belongs to. The conductor records them, as the only database
#: writer: started when it casts the step, finished when the host reports.
#: Steps a host reports only when they fail (confirm, revert) are recorded
#: only then. A revert is ``compute_revert_resize`` on the destination and
#: ``compute_finish_revert_resize`` on the source.
COMPUTE_EVENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "spawn": ("compute_build_and_run_instance", (action_api.CREATE,)),
    "prep_resize": ("compute_prep_resize", action_api.RESIZE_OR_MIGRATE),
    "resize": ("compute_resize_instance", action_api.RESIZE_OR_MIGRATE),
    "finish_resize": ("compute_finish_resize", action_api.RESIZE_OR_MIGRATE),
    "confirm": ("compute_confirm_resize", (action_api.CONFIRM_RESIZE,)),
    "revert": ("compute_revert_resize", (action_api.REVERT_RESIZE,)),
    "finish_revert": ("compute_finish_revert_resize", (action_api.REVERT_RESIZE,)),
    "stop": ("compute_stop_instance", (action_api.STOP,)),
    "start": ("compute_start_instance", (action_api.START,)),
    "pre_live_migration": ("compute_pre_live_migration", (action_api.LIVE_MIGRATION,)),
    "live_migration": ("compute_live_migration", (action_api.LIVE_MIGRATION,)),
    "live_migration_abort": ("compute_live_migration", (action_api.LIVE_MIGRATION,)),
    "post_live_migration": ("compute_post_live_migration", (action_api.LIVE_MIGRATION,)),
    "rebuild": ("compute_rebuild_instance", (action_api.EVACUATE,)),
    "shelve": ("compute_shelve_instance", (action_api.SHELVE,)),
    # NOTE: with shelved_offload_time 0 the offload is part of the shelve's
    # action (Nova's compute does both in one call); else its own.
    "shelve_offload": (
        "compute_shelve_offload_instance",
        (action_api.SHELVE_OFFLOAD, action_api.SHELVE),
    ),
    "unshelve": ("compute_unshelve_instance", (action_api.UNSHELVE,)),
}

#: The shelving operations a compute host runs: the task state the server is
#: in meanwhile, and the action(s) they belong to.
_SHELVE_TASKS: dict[str, str] = {
    "shelve": models.TASK_SHELVING,
    "shelve_offload": models.TASK_SHELVING_OFFLOADING,
    "unshelve": models.TASK_UNSHELVING,
}

#: The compute operations of a live migration that, failing, roll it back
#: to its source (the hand-over had not ended).
_LIVE_ROLLBACKS = ("pre_live_migration", "live_migration", "live_migration_abort")

#: The instance action of a stop and of a start.
_POWER_ACTIONS = {"stop": action_api.STOP, "start": action_api.START}

#: A stop's and a start's task state, and what the server is once done.
_POWER_TASKS: dict[str, tuple[str, int]] = {
    "stop": (models.TASK_POWERING_OFF, models.POWER_SHUTDOWN),
    "start": (models.TASK_POWERING_ON, models.POWER_RUNNING),
}
#: The conductor's own event of a delete.
DELETE_EVENT = "conductor_delete_server"

#: The parts a host runs after the conductor decided a resize (its failure
#: is reported only): the status the migration was left in before the part was
#: cast, and the migration's columns naming the hosts the part runs on.
_DECISION_PARTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "confirm": ("confirmed", ("source_host",)),
    "revert": ("reverted", ("dest_host", "source_host")),
}

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
        if value is None and name in ("migration_uuid", "host", "children"):
            continue
        if name == "inventory":
            problem = reports.malformed_inventory(value)
            problems += [problem] if problem else []
        elif name == "children":
            problem = reports.malformed_children(value)
            problems += [problem] if problem else []
        elif name == "power_state":
            if value not in (models.POWER_RUNNING, models.POWER_SHUTDOWN):
                problems.append(f"{name} is not a power state we set: {value!r:.80}")
        elif name == "provider_generation":
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                problems.append(f"{name} is not an integer: {value!r:.80}")
        elif name.endswith("_uuid"):
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
        self.lives = LiveMigrationTask(deps)
        self.evacuations = EvacuationTask(deps)
        self.shelves = ShelveTask(deps)
        self.unshelves = UnshelveTask(deps)
        #: the sweep's lease: only its holder sweeps and reaps
        #: (:mod:`resize_sched.conductor.lease`)
        self.lease = Lease(deps.db, deps.conf.host, deps.conf.conductor.lease_duration)

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
        if server is None:
            return
        self._compute_event("spawn", server_uuid, server.host)
        self.compute.spawn(ctxt, server.host, server_message(server))

    @handler
    def build_done(self, ctxt: RequestContext, server_uuid: str) -> None:
        try:
            server = self.builds.spawned(server_uuid)
        except (exception.ServerNotFound, exception.ServerStateConflict) as exc:
            LOG.info(
                "Build of server %s: spawned report not due (%s); nothing to do", server_uuid, exc
            )
            return
        self._compute_event("spawn", server_uuid, server.host, result=action_api.SUCCESS)
        self.db.action_finish(server_uuid, (action_api.CREATE,))

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

    def running_message(self, migration: Any) -> dict[str, Any]:
        """The ``migration`` message of a step after which the server runs
        again, saying whether it does (a stopped server stays powered off)."""
        try:
            server = self.db.server_get(migration.server_uuid)
        except exception.ServerNotFound:
            return migration_message(migration)
        return migration_message(migration, power_on=server.power_state != models.POWER_SHUTDOWN)

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

    # -- live migrations -------------------------------------------------------------

    @handler
    def live_migrate_server(self, ctxt: RequestContext, migration_uuid: str) -> None:
        """Schedule and claim a live migration, then ask its destination to prepare."""
        try:
            dest = self.lives.schedule(migration_uuid)
        except (exception.NoValidHost, exception.RestoreFailed) as exc:
            LOG.warning("Live migration %s ended without a host: %s", migration_uuid, exc)
            self._live_ended(migration_uuid)
            return
        except exception.PlacementError as exc:
            LOG.warning("Live migration %s: Placement failed: %s", migration_uuid, exc)
            try:
                self.lives.rollback(migration_uuid, f"Placement: {exc}")
            except exception.ResizeSchedException as again:
                LOG.warning("Live migration %s left for recovery: %s", migration_uuid, again)
            self._live_ended(migration_uuid)
            return
        if dest is not None:
            self._pre_live(ctxt, migration_uuid)

    def _pre_live(self, ctxt: RequestContext, migration_uuid: str) -> None:
        migration = self.db.migration_get(migration_uuid)
        self._compute_event("pre_live_migration", migration.server_uuid, migration.dest_host)
        self.compute.pre_live_migration(ctxt, migration.dest_host, self._live_message(migration))

    def _live_message(self, migration: Any) -> dict[str, Any]:
        """The ``migration`` message of a live migration's part, with its server."""
        try:
            server = self.db.server_get(migration.server_uuid)
        except exception.ServerNotFound:
            return migration_message(migration)
        return migration_message(migration, server)

    def _live_ended(self, migration_uuid: str) -> None:
        """Close the live-migration action of a migration that has ended."""
        try:
            migration = self.db.migration_get(migration_uuid)
        except exception.NotFound:
            return
        if migration.status in models.FINAL_STATUSES:
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
        migration = self.db.migration_get(migration_uuid)
        if migration.status != models.MIGRATION_RUNNING:
            LOG.info(
                "Abort of live migration %s not due (it is %s); nothing to do",
                migration_uuid,
                migration.status,
            )
            return
        self.compute.live_migration_abort(
            ctxt, migration.source_host, self._live_message(migration)
        )

    @handler
    def live_migration_force_complete(self, ctxt: RequestContext, migration_uuid: str) -> None:
        """Ask the source to end the hand-over now."""
        migration = self.db.migration_get(migration_uuid)
        if migration.status != models.MIGRATION_RUNNING:
            LOG.info(
                "Force-complete of live migration %s not due (it is %s); nothing to do",
                migration_uuid,
                migration.status,
            )
            return
        self.compute.live_migration_force_complete(
            ctxt, migration.source_host, self._live_message(migration)
        )

    def _live_failed(
        self,
        ctxt: RequestContext,
        operation: str,
        reason: str,
        server_uuid: str,
        migration_uuid: str,
        host: str | None,
    ) -> None:
        """A live migration's part failed on ``host``: roll back, or (after the
        hand-over) keep the server where it now runs."""
        said = self._said(operation, host, reason, migration_uuid)
        try:
            expected_host = self.db.migration_get(migration_uuid)
        except exception.NotFound:
            return
        on = (
            expected_host.dest_host
            if operation == "pre_live_migration"
            else expected_host.source_host
        )
        if host is not None and host != on:
            LOG.info(
                "Failure of %s of live migration %s reported by %s, not its host %s; "
                "nothing to do",
                operation,
                migration_uuid,
                host,
                on,
            )
            return
        if operation == "post_live_migration":
            ended = self.lives.post_failed(migration_uuid, said)
        else:
            try:
                ended = self.lives.rollback(
                    migration_uuid, said, aborted=operation == "live_migration_abort"
                )
            except exception.RestoreFailed as exc:
                LOG.warning("Live migration %s: rollback refused: %s", migration_uuid, exc)
                ended = self.db.migration_get(migration_uuid)
        if ended is None:
            return
        if operation == "live_migration_abort":
            self._compute_event(operation, server_uuid, host, result=action_api.SUCCESS)
        else:
            self._compute_event(operation, server_uuid, host, reason=said)
        if operation != "post_live_migration":
            message = self._live_message(ended)
            self.compute.rollback_live_migration_at_destination(ctxt, ended.dest_host, message)
            if operation != "pre_live_migration":
                self.compute.rollback_live_migration_at_source(ctxt, ended.source_host, message)
        self.db.action_finish(server_uuid, (action_api.LIVE_MIGRATION,))

    # -- evacuations -------------------------------------------------------------------

    @handler
    def evacuate_server(self, ctxt: RequestContext, migration_uuid: str) -> None:
        """Schedule and claim an evacuation, then ask the destination to rebuild."""
        try:
            dest = self.evacuations.schedule(migration_uuid)
        except (exception.NoValidHost, exception.RestoreFailed) as exc:
            LOG.warning("Evacuation %s ended without a host: %s", migration_uuid, exc)
            self._evacuation_ended(migration_uuid)
            return
        except exception.PlacementError as exc:
            LOG.warning("Evacuation %s: Placement failed: %s", migration_uuid, exc)
            try:
                self.evacuations.fail(migration_uuid, kind="failed", reason=f"Placement: {exc}")
            except exception.ResizeSchedException as again:
                LOG.warning("Evacuation %s left for recovery: %s", migration_uuid, again)
            self._evacuation_ended(migration_uuid)
            return
        if dest is not None:
            self._rebuild(ctxt, migration_uuid)

    def _rebuild(self, ctxt: RequestContext, migration_uuid: str) -> None:
        migration = self.db.migration_get(migration_uuid)
        self._compute_event("rebuild", migration.server_uuid, migration.dest_host)
        self.compute.rebuild_instance(ctxt, migration.dest_host, self._moved_message(migration))

    def _moved_message(self, migration: Any) -> dict[str, Any]:
        """The ``migration`` message of a rebuild: with its server, and
        whether it runs after (a stopped server stays powered off)."""
        try:
            server = self.db.server_get(migration.server_uuid)
        except exception.ServerNotFound:
            return migration_message(migration)
        return migration_message(
            migration, server, power_on=server.power_state != models.POWER_SHUTDOWN
        )

    def _evacuation_ended(self, migration_uuid: str) -> None:
        try:
            migration = self.db.migration_get(migration_uuid)
        except exception.NotFound:
            return
        if migration.status in (*models.FINAL_STATUSES, models.MIGRATION_DONE):
            self.db.action_finish(migration.server_uuid, (action_api.EVACUATE,))

    @handler
    def evacuation_rebuilt(self, ctxt: RequestContext, migration_uuid: str, host: str) -> None:
        migration = self.evacuations.rebuilt(migration_uuid, host)
        if migration is None:
            return
        self._compute_event("rebuild", migration.server_uuid, host, result=action_api.SUCCESS)
        self.db.action_finish(migration.server_uuid, (action_api.EVACUATE,))

    def _evacuation_failed(
        self, ctxt: RequestContext, reason: str, server_uuid: str, migration_uuid: str, host: Any
    ) -> None:
        said = self._said("rebuild", host, reason, migration_uuid)
        migration = self.db.migration_get(migration_uuid)
        if host is not None and host != migration.dest_host:
            LOG.info("Rebuild failure of %s from %s, not its destination", migration_uuid, host)
            return
        try:
            ended = self.evacuations.fail_rebuild(migration_uuid, said)
        except exception.RestoreFailed as exc:
            LOG.warning("Evacuation %s: restore refused: %s", migration_uuid, exc)
            ended = self.db.migration_get(migration_uuid)
        if ended is None:
            return
        self._compute_event("rebuild", server_uuid, host, reason=said)
        self.compute.destroy(ctxt, ended.dest_host, server_uuid)
        self.db.action_finish(server_uuid, (action_api.EVACUATE,))

    def _sources_back(self, ctxt: RequestContext, host: str) -> None:
        """``host`` reported: it is back. Each server evacuated from it has
        its copy there removed and the room it held there given back."""
        for migration in self.db.migration_list(statuses=(models.MIGRATION_DONE,)):
            if (
                migration.migration_type != models.MIGRATION_TYPE_EVACUATION
                or migration.source_host != host
            ):
                continue
            try:
                done = self.evacuations.source_back(migration.uuid)
            except exception.PlacementError as exc:
                LOG.warning("Evacuation %s: source not given back yet: %s", migration.uuid, exc)
                continue
            if done is None:
                continue
            server = self.db.server_get(migration.server_uuid, read_deleted=True)
            if server.host != host:
                LOG.info(
                    "Host %s is back: removing its copy of evacuated server %s",
                    host,
                    server.uuid,
                )
                self.compute.destroy(ctxt, host, server.uuid)

    # -- stop and start ------------------------------------------------------------------

    @handler
    def stop_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        self._power(ctxt, server_uuid, "stop")

    @handler
    def start_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        self._power(ctxt, server_uuid, "start")

    def _power(self, ctxt: RequestContext, server_uuid: str, operation: str) -> None:
        task, _ = _POWER_TASKS[operation]
        server = self.db.server_get(server_uuid)
        if server.task_state != task or not server.host:
            # NOTE: a duplicate, or the server moved on (deleted, reset).
            LOG.info(
                "%s of server %s not due (task %s); nothing to do",
                operation,
                server_uuid,
                server.task_state,
            )
            return
        if not self.compute.can_power:
            # NOTE: a host capped at compute RPC 1.0 has no power_off/power_on.
            self._power_failed(
                server_uuid,
                operation,
                server.host,
                f"compute RPC to {server.host} is capped below 1.1 ([upgrade_levels] "
                "compute), which has no power_off or power_on: finish the upgrade, "
                "then try again",
            )
            return
        self._compute_event(operation, server_uuid, server.host)
        cast = self.compute.power_off if operation == "stop" else self.compute.power_on
        cast(ctxt, server.host, server_message(server))

    @handler
    def power_changed(
        self, ctxt: RequestContext, server_uuid: str, power_state: int, host: str
    ) -> None:
        operation = "stop" if power_state == models.POWER_SHUTDOWN else "start"
        task, _ = _POWER_TASKS[operation]
        status, vm_state = models.settled_state(power_state)
        try:
            self.db.server_update(
                server_uuid,
                expected={"task_state": task, "host": host},
                operation=f"{operation} report",
                status=status,
                vm_state=vm_state,
                task_state=None,
                power_state=power_state,
            )
        except (exception.ServerNotFound, exception.ServerStateConflict) as exc:
            LOG.info(
                "%s report of server %s not due (%s); nothing to do", operation, server_uuid, exc
            )
            return
        self._compute_event(operation, server_uuid, host, result=action_api.SUCCESS)
        self.db.action_finish(server_uuid, (_POWER_ACTIONS[operation],))

    def _power_failed(
        self, server_uuid: str, operation: str, host: str | None, reason: str
    ) -> None:
        """A stop or start did not happen: no task again, the event failed."""
        task, _ = _POWER_TASKS[operation]
        try:
            self.db.server_update(
                server_uuid, expected={"task_state": task}, operation=operation, task_state=None
            )
        except (exception.ServerNotFound, exception.ServerStateConflict) as exc:
            LOG.info("Failed %s of server %s not due (%s)", operation, server_uuid, exc)
            return
        self._compute_event(operation, server_uuid, host, reason=reason)
        self.db.action_finish(server_uuid, (_POWER_ACTIONS[operation],))

    # -- shelve, offload, unshelve ------------------------------------------------------

    @handler
    def shelve_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        """Ask the server's host to power it off for a shelve."""
        self._shelve_cast(ctxt, server_uuid, "shelve")

    @handler
    def shelve_offload_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        """Ask a SHELVED server's host to remove it (its room is given back once it has)."""
        self._shelve_cast(ctxt, server_uuid, "shelve_offload")

    @handler
    def unshelve_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        """Start a SHELVED server on its host, or place an offloaded one and spawn it."""
        try:
            server = self.db.server_get(server_uuid)
        except exception.ServerNotFound:
            LOG.info("Unshelve of server %s: it is gone; nothing to do", server_uuid)
            return
        if (server.status, server.task_state) == (
            models.STATUS_SHELVED,
            models.TASK_UNSHELVING,
        ):
            self._shelve_cast(ctxt, server_uuid, "unshelve")
            return
        if (server.status, server.task_state) != (
            models.STATUS_SHELVED_OFFLOADED,
            models.TASK_UNSHELVING,
        ):
            LOG.info(
                "Unshelve of server %s not due (%s/%s); nothing to do",
                server_uuid,
                server.status,
                server.task_state,
            )
            return
        if not self.compute.can_shelve:
            self._cannot_shelve(server_uuid, "unshelve", None)
            return
        try:
            placed = self.unshelves.schedule(server_uuid)
        except exception.NoValidHost as exc:
            LOG.warning("Unshelve of server %s: %s", server_uuid, exc)
            self.db.action_finish(server_uuid, (action_api.UNSHELVE,))
            return
        except exception.ConsumerGenerationConflict as exc:
            # NOTE: its consumer holds a claim already: another run of this
            # unshelve (a duplicate message) claimed first and goes on.
            LOG.info("Unshelve of server %s: another run claimed first: %s", server_uuid, exc)
            return
        except exception.PlacementError as exc:
            # NOTE: whether a claim landed is unknown: the server goes back
            # to SHELVED_OFFLOADED with no task only once what it holds is
            # given back (journaled); when even that fails it stays
            # ``unshelving`` and the sweep takes it on (adopting a claim that
            # landed, or scheduling again).
            LOG.warning("Unshelve of server %s: Placement failed: %s", server_uuid, exc)
            self._unshelve_placement_failed(server_uuid, exc)
            return
        if placed is None:
            return
        self._compute_event("unshelve", server_uuid, placed.host)
        self.compute.unshelve_instance(ctxt, placed.host, server_message(placed))

    def _unshelve_placement_failed(self, server_uuid: str, exc: Exception) -> None:
        """Placement failed while an unshelve was claiming: give back what it
        may hold and leave it SHELVED_OFFLOADED with no task, the fault in words."""
        said = (
            f"Unshelving the server failed: Placement did not answer ({exc}). It is "
            "SHELVED_OFFLOADED and holds nothing; unshelve it again."
        )
        try:
            server = self.db.server_get(server_uuid)
            self.deps.executor.release_server(
                server, "unshelve failed", expected=UnshelveTask.SCHEDULING, whole=False
            )
            self.db.server_update(
                server_uuid,
                expected=UnshelveTask.SCHEDULING,
                operation="fail the unshelve",
                task_state=None,
                fault_message=said,
                fault_code=500,
            )
        except exception.ResizeSchedException as again:
            LOG.warning("Unshelve of server %s left as it is: %s", server_uuid, again)
            return
        self.db.action_event_failed(
            server_uuid,
            UnshelveTask.SCHEDULE_EVENT,
            (action_api.UNSHELVE,),
            said,
            host=self.deps.conf.host,
        )
        self.db.action_finish(server_uuid, (action_api.UNSHELVE,))

    def _shelve_cast(self, ctxt: RequestContext, server_uuid: str, operation: str) -> None:
        """Cast a shelving operation to the server's host, if it is due."""
        try:
            server = self.db.server_get(server_uuid)
        except exception.ServerNotFound:
            LOG.info("%s of server %s: it is gone; nothing to do", operation, server_uuid)
            return
        if server.task_state != _SHELVE_TASKS[operation] or not server.host:
            # NOTE: a duplicate, or the server moved on (deleted, reset).
            LOG.info(
                "%s of server %s not due (task %s); nothing to do",
                operation,
                server_uuid,
                server.task_state,
            )
            return
        if not self.compute.can_shelve:
            self._cannot_shelve(server_uuid, operation, server.host)
            return
        self._compute_event(operation, server_uuid, server.host)
        cast = {
            "shelve": self.compute.shelve_instance,
            "shelve_offload": self.compute.shelve_offload_instance,
            "unshelve": self.compute.unshelve_instance,
        }[operation]
        cast(ctxt, server.host, server_message(server))

    def _cannot_shelve(self, server_uuid: str, operation: str, host: str | None) -> None:
        self._shelve_failed(
            server_uuid,
            operation,
            host,
            "compute RPC is capped below 1.3 ([upgrade_levels] compute), which has no "
            "shelve_instance, shelve_offload_instance or unshelve_instance: finish the "
            "upgrade, then try again",
        )

    def _shelve_failed(
        self, server_uuid: str, operation: str, host: str | None, reason: str
    ) -> None:
        """A shelving operation failed on ``host`` (or could not be sent)."""
        if operation == "unshelve":
            server = self.db.server_get(server_uuid, read_deleted=True)
            if server.status == models.STATUS_SHELVED_OFFLOADED:
                if host is not None and server.host not in (None, host):
                    LOG.info("Unshelve failure of %s from %s, not its host", server_uuid, host)
                    return
                said = words.shelve_step_failed(operation, host, reason, offloaded=True)
                if server.task_state == models.TASK_UNSHELVING:
                    # NOTE: nothing claimed yet (the cast could not be sent).
                    done = self.shelves.step_failed_offloaded(server_uuid, said)
                else:
                    done = self.unshelves.fail(server_uuid, said)
                if done is not None:
                    self._compute_event("unshelve", server_uuid, host, reason=said)
                    self.db.action_finish(server_uuid, (action_api.UNSHELVE,))
                return
            said = words.shelve_step_failed(operation, host, reason, offloaded=False)
        else:
            said = words.shelve_step_failed(operation, host, reason)
        if self.shelves.step_failed(server_uuid, _SHELVE_TASKS[operation], host) is None:
            return
        self._compute_event(operation, server_uuid, host, reason=said)
        actions_of = COMPUTE_EVENTS[operation][1]
        self.db.action_finish(server_uuid, actions_of)

    def offload_shelved(self, now: datetime.datetime | None = None) -> list[str]:
        """The sweep's part of ``[DEFAULT] shelved_offload_time`` (N > 0):
        offload every server SHELVED with no task that has not changed for N
        seconds, as Nova's compute periodic task does, each recorded as a
        ``shelveOffload`` action. Run by the sweep's lease holder only.

        :returns: the servers whose offload was sent.
        """
        after = self.deps.conf.shelved_offload_time
        if after <= 0:
            return []
        now = now or datetime.datetime.now(datetime.UTC)
        sent = []
        for server in self.db.server_list(status=models.STATUS_SHELVED):
            changed = server.updated_at or server.created_at
            if changed.tzinfo is None:
                changed = changed.replace(tzinfo=datetime.UTC)
            if server.task_state is not None or (now - changed).total_seconds() < after:
                continue
            try:
                self.shelves.begin_offload(server.uuid, seen=server.updated_at)
            except (exception.ServerNotFound, exception.ServerStateConflict) as exc:
                LOG.info("Server %s not offloaded by the sweep: %s", server.uuid, exc)
                continue
            self.db.action_start(
                server.uuid,
                f"req-{uuidlib.uuid4()}",
                action_api.SHELVE_OFFLOAD,
                user_id=None,
                project_id=server.project_id,
            )
            LOG.info(
                "Server %s shelved for %ss or more ([DEFAULT] shelved_offload_time): offloading",
                server.uuid,
                after,
            )
            self._shelve_cast(admin_context(), server.uuid, "shelve_offload")
            sent.append(server.uuid)
        return sent

    @handler
    def server_shelved(self, ctxt: RequestContext, server_uuid: str, host: str) -> None:
        server = self.shelves.shelved(server_uuid, host)
        if server is None:
            return
        self._compute_event("shelve", server_uuid, host, result=action_api.SUCCESS)
        if server.task_state == models.TASK_SHELVING_OFFLOADING:
            # NOTE: shelved_offload_time 0: the offload follows at once,
            # within the shelve's action (finished once offloaded).
            self._shelve_cast(ctxt, server_uuid, "shelve_offload")
            return
        self.db.action_finish(server_uuid, (action_api.SHELVE,))

    @handler
    def server_offloaded(self, ctxt: RequestContext, server_uuid: str, host: str) -> None:
        try:
            server = self.shelves.offloaded(server_uuid, host)
        except exception.PlacementError as exc:
            # NOTE: the server stays shelving_offloading on its host, the
            # release journaled: the report is safe to replay.
            LOG.warning("Offload of server %s: Placement failed: %s", server_uuid, exc)
            return
        if server is None:
            return
        self._compute_event("shelve_offload", server_uuid, host, result=action_api.SUCCESS)
        self.db.action_finish(server_uuid, (action_api.SHELVE_OFFLOAD, action_api.SHELVE))

    @handler
    def server_unshelved(self, ctxt: RequestContext, server_uuid: str, host: str) -> None:
        try:
            server = self.db.server_get(server_uuid)
        except exception.ServerNotFound:
            LOG.info("Unshelve report of server %s: it is gone; nothing to do", server_uuid)
            return
        if server.status == models.STATUS_SHELVED_OFFLOADED:
            if server.host != host:
                LOG.info("Unshelve report of %s from %s, not its host", server_uuid, host)
                return
            try:
                done = self.unshelves.spawned(server_uuid)
            except (exception.ServerNotFound, exception.ServerStateConflict) as exc:
                LOG.info("Unshelve report of %s not due (%s); nothing to do", server_uuid, exc)
                return
        else:
            done = self.shelves.unshelved(server_uuid, host)
            if done is None:
                return
        self._compute_event("unshelve", server_uuid, host, result=action_api.SUCCESS)
        self.db.action_finish(server_uuid, (action_api.UNSHELVE,))

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
        # NOTE: each failure's event is recorded only when the report was due
        # (the task acted on it): a duplicate or stale report records nothing.
        # What is recorded says it in words (resize_sched.words).
        if operation in _POWER_TASKS:
            self._power_failed(server_uuid, operation, host, reason)
        elif operation in _SHELVE_TASKS:
            self._shelve_failed(server_uuid, operation, host, reason)
        elif operation == "spawn":
            said = words.compute_failed(operation, host, reason, source=None)
            if self.builds.fail(server_uuid, said) is not None:
                self._compute_event("spawn", server_uuid, host, reason=said)
        elif operation == "prep_resize" and migration_uuid:
            said = self._said(operation, host, reason, migration_uuid)
            try:
                dest = self.resizes.reschedule(migration_uuid, reason, host)
            except (exception.NoValidHost, exception.RestoreFailed) as exc:
                LOG.warning("Resize %s: no alternate left: %s", migration_uuid, exc)
                self._compute_event("prep_resize", server_uuid, host, reason=said)
                self._notify_resize_error(ctxt, migration_uuid, exc)
                return
            if dest is not None:
                self._compute_event("prep_resize", server_uuid, host, reason=said)
                self._prep(ctxt, migration_uuid, dest.host)
        elif operation in ("resize", "finish_resize") and migration_uuid:
            # NOTE: as Nova's fix for bug 1825537: the server goes to ERROR on
            # its source with exactly its old allocation; nothing leaks.
            said = self._said(operation, host, reason, migration_uuid)
            failed = self.resizes.fail(
                migration_uuid, kind="failed", reason=said, server_error=True
            )
            if failed is not None:
                self._compute_event(operation, server_uuid, host, reason=said)
        elif operation == "rebuild" and migration_uuid:
            self._evacuation_failed(ctxt, reason, server_uuid, migration_uuid, host)
        elif (operation in _LIVE_ROLLBACKS or operation == "post_live_migration") and (
            migration_uuid
        ):
            self._live_failed(ctxt, operation, reason, server_uuid, migration_uuid, host)
        elif operation in _DECISION_PARTS and migration_uuid:
            status, host_columns = _DECISION_PARTS[operation]
            part = self._revert_part(operation, migration_uuid, host)
            said = self._said(part, host, reason, migration_uuid)
            if not self.db.server_record_step_fault(
                server_uuid,
                migration_uuid,
                expected_status=status,
                host=host,
                host_columns=host_columns,
                fault_message=said,
            ):
                # NOTE: a late or replayed report: the server has moved on
                # (resized again, deleted) since this part ran.
                LOG.info(
                    "Fault of server %s not recorded: the %s of migration %s is not its "
                    "latest step (stale report); nothing to do",
                    server_uuid,
                    operation,
                    migration_uuid,
                )
                return
            self._compute_event(part, server_uuid, host, reason=said)
        else:
            LOG.info(
                "Failure of %s of server %s names no migration it belongs to; nothing to do",
                operation,
                server_uuid,
            )

    def _said(self, operation: str, host: str | None, reason: str, migration_uuid: str) -> str:
        """A compute host's failure of ``operation`` in words, naming the resize's source."""
        try:
            source = self.db.migration_get(migration_uuid).source_host
        except exception.NotFound:
            source = None
        return words.compute_failed(operation, host, reason, source=source)

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

    def _compute_event(
        self,
        operation: str,
        server_uuid: str,
        host: str | None,
        *,
        result: str | None = None,
        reason: str | None = None,
    ) -> None:
        """Record a compute step's event: started (no result, no reason),
        finished with ``result``, or failed for ``reason``. Operations without
        an event (a destroy) record nothing."""
        if operation not in COMPUTE_EVENTS:
            return
        event, belongs_to = COMPUTE_EVENTS[operation]
        if reason is not None:
            self.db.action_event_failed(server_uuid, event, belongs_to, reason, host=host)
        elif result is not None:
            self.db.action_event_finish(server_uuid, event, belongs_to, result=result, host=host)
        else:
            self.db.action_event_start(server_uuid, event, belongs_to, host=host)

    # -- compute services' reports ------------------------------------------------------

    @handler
    def compute_report(
        self,
        ctxt: RequestContext,
        host: str,
        node: str,
        rp_uuid: str,
        inventory: dict[str, Any],
        provider_generation: int | None,
        service_version: str,
        children: dict[str, Any] | None = None,
    ) -> None:
        """A compute service's heartbeat and compute node (:mod:`.reports`).

        ``children`` from 1.3; a 1.2 report has none (see the rpcapi's history).
        """
        try:
            reports.record(
                self.db,
                self.deps.client,
                self.deps.conf.placement.deployment_name,
                host=host,
                node=node,
                rp_uuid=rp_uuid,
                inventory=inventory,
                provider_generation=provider_generation,
                version=service_version,
                children=children,
            )
        except exception.PlacementError as exc:
            LOG.warning("Report of %s not recorded (the next one will be): %s", host, exc)
            return
        except ValueError as exc:  # blank or over-long names
            LOG.warning("Malformed compute_report message dropped: %s", exc)
            return
        self._sources_back(ctxt, host)

    # -- delete -----------------------------------------------------------------------

    @handler
    def delete_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        """Release everything the server and its resize hold, then delete it.

        The delete is recorded first (:func:`resize_sched.actions.begin_delete`,
        which the API has normally done already): the server is ``deleting``
        and its resize in flight is closed, so no later step can write for
        it (Nova bug 1848343). Each consumer is then emptied from a fresh
        read, again on a generation conflict, journaled; a step whose write
        lands after this gives it back itself when its own compare-and-swap
        fails, and a write that lands later still (held up in a slow
        Placement) is given back by the sweep's reaper
        (:mod:`resize_sched.conductor.reaper`).

        Placement not answering leaves the delete to the sweep: logged as
        such, and raised as an expected failure.
        """
        try:
            server = actions.begin_delete(self.db, server_uuid)
        except exception.ServerNotFound:
            LOG.info("Server %s is already deleted; nothing to do", server_uuid)
            return
        try:
            with self.db.action_event(
                server_uuid, DELETE_EVENT, (action_api.DELETE,), host=self.deps.conf.host
            ):
                self._delete(ctxt, server)
        except exception.PlacementUnavailable as exc:
            # NOTE: the delete is recorded, so the sweep finishes it
            # (resize_sched.conductor.recovery): an expected condition, not a
            # bug, raised as an expected failure so that oslo.messaging logs
            # no traceback (and the sweep, calling directly, sees it failed).
            LOG.warning(
                "Server %s: Placement did not answer its delete (%s); the sweep will finish it",
                server_uuid,
                exc,
            )
            raise messaging.ExpectedException() from None
        self.db.action_finish(server_uuid, (action_api.DELETE,))

    def _delete(self, ctxt: RequestContext, server: Any) -> None:
        server_uuid = server.uuid
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
            self.deps.executor.release_server(server)
        try:
            self.db.server_delete(server_uuid, expected={"task_state": "deleting"})
        except exception.ServerNotFound:
            LOG.info("Server %s was deleted meanwhile by another worker", server_uuid)
            return
        LOG.info("Server %s deleted", server_uuid)
        notifications.notify_delete(self.notifier, ctxt, server, notifications.END)
        for host in sorted(hosts):
            self.compute.destroy(ctxt, host, server_uuid, server=server_message(server))
