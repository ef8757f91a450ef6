"""Stop and start: the server's state changes around a host's power-off or power-on.

The API marks the server ``powering-off`` or ``powering-on``; the conductor
checks the step is still due before casting it, and a host's report (or a
failure) ends the task with a compare-and-swap on that task state, so a
duplicate or late report finds another state and is a logged no-op.
"""

from typing import Any

from oslo_log import log as logging

from resize_sched import exception
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.db import action_api, states

LOG = logging.getLogger(__name__)

#: The instance action of a stop and of a start.
POWER_ACTIONS = {"stop": action_api.STOP, "start": action_api.START}

#: A stop's and a start's task state, and what the server is once done.
POWER_TASKS: dict[str, tuple[str, int]] = {
    "stop": (states.TASK_POWERING_OFF, states.POWER_SHUTDOWN),
    "start": (states.TASK_POWERING_ON, states.POWER_RUNNING),
}

_NOT_DUE = (exception.ServerNotFound, exception.ServerStateConflict)


class PowerTask:
    """The state changes of a stop and a start.

    :param deps: configuration, database, Placement client, executor.
    """

    def __init__(self, deps: TaskDeps) -> None:
        self.db = deps.db

    def due(self, server_uuid: str, operation: str) -> Any:
        """The server, when ``operation`` (``stop``, ``start``) is due on its host.

        :returns: None for a duplicate, or a server that moved on (deleted, reset).
        """
        task, _ = POWER_TASKS[operation]
        server = self.db.server_get(server_uuid)
        if server.task_state != task or not server.host:
            LOG.info(
                "%s of server %s not due (task %s); nothing to do",
                operation,
                server_uuid,
                server.task_state,
            )
            return None
        return server

    def changed(self, server_uuid: str, power_state: int, host: str) -> str | None:
        """``host`` reports the server's ``power_state``: its task ends, its
        status follows the power state.

        :returns: the operation that ended (``stop``, ``start``), or None
            when the report is not due.
        """
        operation = "stop" if power_state == states.POWER_SHUTDOWN else "start"
        task, _ = POWER_TASKS[operation]
        status, vm_state = states.settled_state(power_state)
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
        except _NOT_DUE as exc:
            LOG.info(
                "%s report of server %s not due (%s); nothing to do", operation, server_uuid, exc
            )
            return None
        return operation

    def failed(self, server_uuid: str, operation: str) -> bool:
        """A stop or start did not happen: the server has no task again.

        :returns: whether the failure was due.
        """
        task, _ = POWER_TASKS[operation]
        try:
            self.db.server_update(
                server_uuid, expected={"task_state": task}, operation=operation, task_state=None
            )
        except _NOT_DUE as exc:
            LOG.info("Failed %s of server %s not due (%s)", operation, server_uuid, exc)
            return False
        return True
