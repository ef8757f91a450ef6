"""What every family of the conductor's endpoints shares.

Its state (what the manager's constructor sets), the compute events, the
messages a step sends, a failure report of a migration's part, and the
schedule of a move with its ending.

Each family (:mod:`.builds`, :mod:`.resizes`, ...) is a mixin of
:class:`~resize_sched.conductor.manager.ConductorManager`, the one endpoint
object the RPC server dispatches to by name; this base declares what the
manager's constructor sets, so every family reads it from the same object
(tests replace ``compute`` after construction).
"""

import dataclasses
from collections.abc import Callable
from typing import Any

import oslo_messaging as messaging

from resize_sched import exception, words
from resize_sched.compute.rpcapi import ComputeAPI, migration_message
from resize_sched.conductor import compute_events
from resize_sched.conductor.endpoints.checks import LOG
from resize_sched.conductor.lease import Lease
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.conductor.tasks.build import BuildTask
from resize_sched.conductor.tasks.delete import DeleteTask
from resize_sched.conductor.tasks.evacuate import EvacuationTask
from resize_sched.conductor.tasks.live_migrate import LiveMigrationTask
from resize_sched.conductor.tasks.move import MoveTask
from resize_sched.conductor.tasks.power import PowerTask
from resize_sched.conductor.tasks.resize import ResizeTask
from resize_sched.conductor.tasks.shelve import ShelveTask, UnshelveTask
from resize_sched.db import states
from resize_sched.db.api import Database
from resize_sched.scheduler.manager import Destination


@dataclasses.dataclass(frozen=True)
class MoveFailure:
    """A compute host's report that its part of a migration failed."""

    operation: str
    reason: str
    server_uuid: str
    migration_uuid: str
    host: str | None


class Endpoint:
    """The state and helpers of the conductor's endpoints."""

    deps: TaskDeps
    notifier: messaging.Notifier | None
    db: Database
    compute: ComputeAPI
    builds: BuildTask
    resizes: ResizeTask
    lives: LiveMigrationTask
    evacuations: EvacuationTask
    shelves: ShelveTask
    unshelves: UnshelveTask
    powers: PowerTask
    deletes: DeleteTask
    lease: Lease

    def _compute_event(
        self, operation: str, server_uuid: str, host: str | None, **outcome: str
    ) -> None:
        """Record a compute step's event: started, or its ``result`` or
        failure ``reason`` (:func:`.compute_events.record`)."""
        compute_events.record(self.db, operation, server_uuid, host, **outcome)

    def _said(self, failure: MoveFailure, operation: str | None = None) -> str:
        """A compute host's failure of its part (``operation``, when it is
        not the one reported) in words, naming the migration's source."""
        try:
            source = self.db.migration_get(failure.migration_uuid).source_host
        except exception.NotFound:
            source = None
        return words.compute_failed(
            operation or failure.operation, failure.host, failure.reason, source=source
        )

    def _message(
        self, migration: Any, *, with_server: bool = False, power: bool = False
    ) -> dict[str, Any]:
        """The ``migration`` message of a compute step: with its server
        (``with_server``) and whether it runs after the step (``power``: a
        stopped server stays powered off). A server gone sends neither."""
        try:
            server = self.db.server_get(migration.server_uuid)
        except exception.ServerNotFound:
            return migration_message(migration)
        return migration_message(
            migration,
            server if with_server else None,
            power_on=server.power_state != states.POWER_SHUTDOWN if power else None,
        )

    def running_message(self, migration: Any) -> dict[str, Any]:
        """The ``migration`` message of a step after which the server runs
        again, saying whether it does (a stopped server stays powered off)."""
        return self._message(migration, power=True)

    def _schedule_move(
        self,
        task: MoveTask,
        migration_uuid: str,
        then: Callable[[Destination], None],
        ended: Callable[[Exception], None],
    ) -> None:
        """Schedule and claim a move, then hand the destination to ``then``.

        A move that ends here (no host; or Placement failed, and the task
        put back what the server held) is logged and ``ended`` is told why;
        one not due (a duplicate, a delete) does nothing.
        """
        try:
            dest = task.schedule(migration_uuid)
        except (exception.NoValidHost, exception.RestoreFailed) as exc:
            LOG.warning("%s %s ended without a host: %s", task.WHAT, migration_uuid, exc)
            ended(exc)
            return
        except exception.PlacementError as exc:
            LOG.warning("%s %s: Placement failed: %s", task.WHAT, migration_uuid, exc)
            try:
                task.placement_failed(migration_uuid, f"Placement: {exc}")
            except exception.ResizeSchedException as again:
                LOG.warning("%s %s left for recovery: %s", task.WHAT, migration_uuid, again)
            ended(exc)
            return
        if dest is not None:
            then(dest)
