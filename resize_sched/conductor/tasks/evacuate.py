"""The evacuation flow: schedule and claim, rebuild, give the source back once its host returns.

A server whose host is down (its compute service forced down, or silent for
``[DEFAULT] service_down_time``) is rebuilt elsewhere. It is a move of the
shared base (:class:`MoveTask`) with the flavor unchanged and the
``legacy`` strategy's targets: the migration record holds the source, the
destination is claimed for the server.

Statuses are Nova's for an evacuation: ``accepted`` from the API until a
destination is claimed, ``pre-migrating`` while the destination rebuilds,
``done`` once the server runs there. The migration still holds the source
then: the dead host may still have the server's copy, and Placement keeps
its room until the host's compute service reports again, which removes the
copy and gives the room back (``completed``; :meth:`EvacuationTask.source_back`).
So the server never runs twice and nothing is held twice. A rebuild that
fails puts the server in ERROR on its source with exactly its old
allocation (``failed``).
"""

from collections.abc import Iterator
from typing import Any, ClassVar

from oslo_log import log as logging

from resize_sched import exception
from resize_sched.conductor.tasks.move import AwayMove
from resize_sched.db import action_api, states
from resize_sched.db.steps import StepRun
from resize_sched.strategies import Holdings

LOG = logging.getLogger(__name__)

_EVACUATE = (action_api.EVACUATE,)


class EvacuationTask(AwayMove):
    """Runs one server's evacuation through its steps.

    :param deps: configuration, database, Placement client, scheduler, executor.
    """

    STEP_EVENTS: ClassVar[dict[str, tuple[str, tuple[str, ...]]]] = {
        "schedule": ("conductor_rebuild_server", _EVACUATE),
    }
    CLAIMED_STATUS: ClassVar[str] = states.MIGRATION_PRE_MIGRATING
    FAILABLE_STATUSES: ClassVar[tuple[str, ...]] = (
        states.MIGRATION_ACCEPTED,
        states.MIGRATION_PRE_MIGRATING,
    )
    WHAT: ClassVar[str] = "Evacuation"

    def rebuilt(self, migration_uuid: str, host: str) -> Any:
        """The destination rebuilt the server: it runs there (``done``).

        :returns: the migration, or None when the report is not due.
        """
        migration = self.db.migration_get(migration_uuid)
        status, vm_state = self._settled(migration.server_uuid)
        held = migration.holdings or {}
        return self._advance_on_report(
            migration_uuid,
            expected_status=states.MIGRATION_PRE_MIGRATING,
            migration_expected={"dest_host": host},
            step=f"rebuild report from {host}",
            status=states.MIGRATION_DONE,
            server_expected={"task_state": states.TASK_REBUILDING},
            server_values={
                "status": status,
                "vm_state": vm_state,
                "task_state": None,
                "host": migration.dest_host,
                "node": migration.dest_node,
                "rp_uuid": migration.dest_rp_uuid,
                "placement_generation": held.get("generations", {}).get("server"),
            },
        )

    def source_back(self, migration_uuid: str) -> Any:
        """The source's compute service reported again: give back what the
        migration holds there (``done`` -> ``completed``). The server's own
        consumer is written as Placement holds it (a move since is kept).

        :returns: the migration, or None when it is not ``done``.
        """

        def body(migration: Any, run: StepRun) -> Any:
            migration = self.deps.executor.apply(
                migration,
                "source back",
                lambda held: Holdings(server=held.server),
                fresh=True,
                run=run,
            )
            return self.db.migration_advance(
                migration.uuid,
                ends=run,
                expected_status=states.MIGRATION_DONE,
                step="source back",
                status=states.MIGRATION_COMPLETED,
            )

        return self._step(migration_uuid, states.MIGRATION_DONE, "source back", body)

    def host_back(self, host: str) -> Iterator[str]:
        """``host``'s compute service reported again: give back the source
        of every server evacuated from it (:meth:`source_back`).

        :returns: one by one, as each source is given back, the servers
            whose copy on ``host`` is to be removed (they run elsewhere).
        """
        for migration in self.db.migration_list(statuses=(states.MIGRATION_DONE,)):
            if (
                migration.migration_type != states.MIGRATION_TYPE_EVACUATION
                or migration.source_host != host
            ):
                continue
            try:
                done = self.source_back(migration.uuid)
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
                yield server.uuid

    def fail_rebuild(self, migration_uuid: str, reason: str) -> Any:
        """The destination failed to rebuild: the server is in ERROR on its
        source with exactly its old allocation (``failed``), as Nova leaves it.

        :returns: the migration, or None when it had already moved on.
        """
        return self._step(
            migration_uuid,
            self.FAILABLE_STATUSES,
            "fail",
            lambda migration, run: self._fail(
                migration.uuid,
                run,
                kind="failed",
                reason=reason,
                server_error=True,
                ended=states.MIGRATION_FAILED,
            ),
        )
