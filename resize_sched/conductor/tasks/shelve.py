"""Shelving: ``shelve``, ``shelveOffload`` and ``unshelve``, as Nova's.

A shelve powers the server off on its host and keeps it there: SHELVED
holds its host's allocation unchanged. An offload removes it from the host
and gives the allocation back (only what its flavor accounts for: what
another service put on its consumer is not ours): SHELVED_OFFLOADED holds
nothing and has no host. An unshelve of a SHELVED server starts it where it
is, keeping its allocation; an unshelve of an offloaded one is placed as a
build is (:class:`UnshelveTask` extends :class:`~.build.BuildTask`): the
scheduler chooses a host in the server's zone and within its server group's
policy, the flavor is claimed there, and the host spawns it.

No snapshot image is made: the fake hypervisor has no images, and the
server keeps its ``image_ref``.

With ``[DEFAULT] shelved_offload_time`` positive, the sweep offloads a
server left SHELVED that long (:meth:`ShelveTask.idle_shelved`,
:meth:`ShelveTask.begin_sweep_offload`), as Nova's compute periodic task does.

Every step is a compare-and-swap on the state it expects (the task state
and, for a host's report, the host), so a duplicate or late report finds
another state and is a logged no-op, and a delete recorded first (task
``deleting``) wins over every step after it.
"""

import datetime
import uuid as uuidlib
from typing import Any, ClassVar

from oslo_log import log as logging

from resize_sched import exception, words
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.conductor.tasks.build import BuildTask
from resize_sched.db import action_api, states
from resize_sched.db.api import Database

LOG = logging.getLogger(__name__)

#: Nova's event of an unshelve's scheduling, in the conductor.
UNSHELVE_SCHEDULE_EVENT = "schedule_instances"

_NOT_DUE = (exception.ServerNotFound, exception.ServerStateConflict)


def update_if_due(db: Database, server_uuid: str, not_due: str, **update: Any) -> Any:
    """``db.server_update(server_uuid, **update)``, or None (``not_due``
    logged with the server and the reason) when the server is not in the
    expected state: a duplicate or late report, a delete recorded first."""
    try:
        return db.server_update(server_uuid, **update)
    except _NOT_DUE as exc:
        LOG.info(not_due, server_uuid, exc)
        return None


def fail_offloaded_unshelve(db: Database, server_uuid: str, said: str) -> Any:
    """An offloaded server's unshelve ends before it runs anywhere: it is
    SHELVED_OFFLOADED with no task again, the fault in words.

    :raises ServerStateConflict, ServerNotFound: it is not unshelving.
    """
    return db.server_update(
        server_uuid,
        expected=UnshelveTask.SCHEDULING,
        operation="fail the unshelve",
        task_state=None,
        fault_message=said,
        fault_code=500,
    )


class UnshelveTask(BuildTask):
    """Places an offloaded server again: schedule, claim, spawn (a build's steps)."""

    SCHEDULING: ClassVar[dict[str, Any]] = {
        "status": states.STATUS_SHELVED_OFFLOADED,
        "task_state": states.TASK_UNSHELVING,
    }
    SPAWNING: ClassVar[dict[str, Any]] = {
        "status": states.STATUS_SHELVED_OFFLOADED,
        "task_state": states.TASK_SPAWNING,
    }
    SCHEDULE_EVENT: ClassVar[str] = UNSHELVE_SCHEDULE_EVENT
    ACTION: ClassVar[str] = action_api.UNSHELVE
    WHAT: ClassVar[str] = "Unshelve"

    def _forced_hosts(self, spec: Any) -> frozenset[str]:
        # NOTE: as Nova, hosts forced at boot do not bind an unshelve.
        return frozenset()

    def _no_host(self, server: Any, exc: exception.NoValidHost, group: Any) -> str:
        said = words.no_host_for_unshelve(exc, server.flavor, group)
        fail_offloaded_unshelve(self.db, server.uuid, said)
        return said

    def placement_failed(self, server_uuid: str, exc: exception.PlacementError) -> None:
        """Placement failed while the unshelve was claiming: whether a claim
        landed is unknown, so give back what it may hold and leave it
        SHELVED_OFFLOADED with no task, the fault in words. When even that
        fails it stays ``unshelving`` and the sweep takes it on (adopting a
        claim that landed, or scheduling again)."""
        said = words.unshelve_placement_failed(exc)
        try:
            server = self.db.server_get(server_uuid)
            self.deps.executor.release_server(
                server, "unshelve failed", expected=self.SCHEDULING, whole=False
            )
            fail_offloaded_unshelve(self.db, server_uuid, said)
        except exception.ResizeSchedException as again:
            LOG.warning("Unshelve of server %s left as it is: %s", server_uuid, again)
            return
        self.db.action_event_failed(
            server_uuid, self.SCHEDULE_EVENT, (self.ACTION,), said, host=self.deps.conf.host
        )
        self.db.action_finish(server_uuid, (self.ACTION,))

    def _spawned_values(self) -> dict[str, Any]:
        return {"power_state": states.POWER_RUNNING}

    def _spawn_result(self, rp_uuid: str | None, *, failed: bool) -> Any:
        # NOTE: the BuildFailureWeigher counts builds only, as Nova's.
        return None

    def _failed_values(self, reason: str) -> dict[str, Any]:
        return {
            "status": states.STATUS_SHELVED_OFFLOADED,
            "vm_state": states.VM_SHELVED_OFFLOADED,
            "task_state": None,
            "allocations": None,
            "group_providers": None,
            "power_state": states.POWER_NOSTATE,
            "fault_message": reason,
            "fault_code": 500,
        }


class ShelveTask:
    """The steps of a shelve, an offload and an unshelve in place.

    :param deps: configuration, database, Placement client, executor.
    """

    def __init__(self, deps: TaskDeps) -> None:
        self.deps = deps
        self.db = deps.db

    # -- shelve -------------------------------------------------------------------------

    def shelved(self, server_uuid: str, host: str) -> Any:
        """``host`` powered the server off: it is SHELVED, holding its room.

        With ``[DEFAULT] shelved_offload_time`` 0 the offload begins in the
        same compare-and-swap (task ``shelving_offloading``), as Nova's,
        unless a restore of what a failed resize left missing is being
        written for the server (the data API refuses an offload then): it is
        SHELVED with no task, holding its room, until a ``shelveOffload``.

        :returns: the server, or None when the report is not due.
        """
        report = {
            "expected": {"task_state": states.TASK_SHELVING, "host": host},
            "operation": "shelve report",
            "status": states.STATUS_SHELVED,
            "vm_state": states.VM_SHELVED,
            "power_state": states.POWER_SHUTDOWN,
        }
        if self.deps.conf.shelved_offload_time == 0:
            try:
                return self.db.server_update(
                    server_uuid, task_state=states.TASK_SHELVING_OFFLOADING, **report
                )
            except exception.ServerStateConflict as exc:
                # NOTE: not due, or a restore in flight: the report without
                # the offload tells which.
                LOG.info("Server %s not offloaded with its shelve: %s", server_uuid, exc)
        return update_if_due(
            self.db,
            server_uuid,
            "Shelve report of server %s not due (%s); nothing to do",
            task_state=None,
            **report,
        )

    def begin_offload(self, server_uuid: str, seen: Any) -> Any:
        """SHELVED with no task, unchanged since ``seen`` (its ``updated_at``)
        -> ``shelving_offloading``: the sweep's offload. Of two sweeps, one
        wins; none while a restore of what a failed resize left missing is
        being written for it (the data API refuses it: the next sweep
        offloads it once the restore is written).

        :raises ServerStateConflict, ServerNotFound: not idle and SHELVED,
            changed since it was read, or a restore is in flight.
        """
        return self.db.server_update(
            server_uuid,
            expected={
                "status": states.STATUS_SHELVED,
                "vm_state": states.VM_SHELVED,
                "task_state": None,
                "updated_at": seen,
            },
            operation="shelve offload",
            task_state=states.TASK_SHELVING_OFFLOADING,
        )

    # -- the sweep's offload ------------------------------------------------------------

    def idle_shelved(self, now: datetime.datetime) -> list[Any]:
        """The servers SHELVED with no task, unchanged for ``[DEFAULT]
        shelved_offload_time`` seconds (none when it is not positive)."""
        after = self.deps.conf.shelved_offload_time
        if after <= 0:
            return []
        idle = []
        for server in self.db.server_list(status=states.STATUS_SHELVED):
            changed = server.updated_at or server.created_at
            if changed.tzinfo is None:
                changed = changed.replace(tzinfo=datetime.UTC)
            if server.task_state is None and (now - changed).total_seconds() >= after:
                idle.append(server)
        return idle

    def begin_sweep_offload(self, server: Any) -> bool:
        """Begin the sweep's offload of an idle SHELVED ``server``, recorded
        as a ``shelveOffload`` action, as Nova's compute periodic task does.

        :returns: whether it began (of two sweeps, one wins).
        """
        try:
            self.begin_offload(server.uuid, seen=server.updated_at)
        except _NOT_DUE as exc:
            LOG.info("Server %s not offloaded by the sweep: %s", server.uuid, exc)
            return False
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
            self.deps.conf.shelved_offload_time,
        )
        return True

    # -- offload ------------------------------------------------------------------------

    def offloaded(self, server_uuid: str, host: str) -> Any:
        """``host`` removed the shelved server: give its room back, clear its host.

        The release is journaled and checked under the server's lock against
        the state it is for (a delete recorded meanwhile releases everything
        itself); the state change after it is a compare-and-swap on the same
        state. A report replayed after a crash between the two finds nothing
        left to release and finishes the state change.

        :returns: the server, SHELVED_OFFLOADED; None when not due.
        """
        expected = {
            "status": states.STATUS_SHELVED,
            "task_state": states.TASK_SHELVING_OFFLOADING,
            "host": host,
        }
        try:
            server = self.db.server_get(server_uuid)
            if any(getattr(server, k) != v for k, v in expected.items()):
                raise exception.ServerStateConflict(
                    server_id=server_uuid,
                    actual=f"{server.status}/{server.task_state} on {server.host}",
                    expected=f"SHELVED/shelving_offloading on {host}",
                    operation="shelve offload report",
                )
            self.deps.executor.release_server(
                server, "shelve offload", expected=expected, whole=False
            )
            return self.db.server_update(
                server_uuid,
                expected=expected,
                operation="shelve offload report",
                status=states.STATUS_SHELVED_OFFLOADED,
                vm_state=states.VM_SHELVED_OFFLOADED,
                task_state=None,
                host=None,
                node=None,
                rp_uuid=None,
                placement_generation=None,
                allocations=None,
                group_providers=None,
                power_state=states.POWER_NOSTATE,
            )
        except _NOT_DUE as exc:
            LOG.info("Offload report of server %s not due (%s); nothing to do", server_uuid, exc)
            return None

    # -- unshelve in place ----------------------------------------------------------------

    def unshelved(self, server_uuid: str, host: str) -> Any:
        """``host`` started the SHELVED server again: ACTIVE, its room kept.

        :returns: the server, or None when the report is not due.
        """
        return update_if_due(
            self.db,
            server_uuid,
            "Unshelve report of server %s not due (%s); nothing to do",
            expected={
                "status": states.STATUS_SHELVED,
                "task_state": states.TASK_UNSHELVING,
                "host": host,
            },
            operation="unshelve report",
            status=states.STATUS_ACTIVE,
            vm_state=states.VM_ACTIVE,
            task_state=None,
            power_state=states.POWER_RUNNING,
        )

    # -- failures -----------------------------------------------------------------------

    def step_failed(self, server_uuid: str, task_state: str, host: str | None) -> Any:
        """A host failed a shelve, an offload or an unshelve in place: the
        server keeps the state it had, with no task (its room is unchanged).

        :returns: the server, or None when the report is not due.
        """
        expected: dict[str, Any] = {"task_state": task_state}
        if host is not None:
            expected["host"] = host
        if task_state == states.TASK_UNSHELVING:
            expected["status"] = states.STATUS_SHELVED
        return update_if_due(
            self.db,
            server_uuid,
            "Failure report of server %s not due (%s); nothing to do",
            expected=expected,
            operation=f"failed {task_state}",
            task_state=None,
        )

    def step_failed_offloaded(self, server_uuid: str, said: str) -> Any:
        """An unshelve of an offloaded server stopped before anything was
        claimed: it stays SHELVED_OFFLOADED with no task, the fault in words.

        :returns: the server, or None when not due.
        """
        try:
            return fail_offloaded_unshelve(self.db, server_uuid, said)
        except _NOT_DUE as exc:
            LOG.info("Unshelve failure of server %s not due (%s)", server_uuid, exc)
            return None
