"""The delete of a server: record it, give back everything it holds, remove its row.

The delete is recorded first (:func:`resize_sched.actions.begin_delete`,
which the API has normally done already): the server is ``deleting`` and its
resize in flight is closed, so no later step can write for it (Nova bug
1848343). Each consumer is then emptied from a fresh read, again on a
generation conflict, journaled; a step whose write lands after this gives it
back itself when its own compare-and-swap fails, and a write that lands later
still (held up in a slow Placement) is given back by the sweep's reaper
(:mod:`resize_sched.conductor.reaper`).
"""

from typing import Any

from oslo_log import log as logging

from resize_sched import actions, exception
from resize_sched.conductor.tasks.base import TaskDeps

LOG = logging.getLogger(__name__)

#: The conductor's own event of a delete.
DELETE_EVENT = "conductor_delete_server"


class DeleteTask:
    """The steps of a server's delete.

    :param deps: configuration, database, Placement client, executor.
    """

    def __init__(self, deps: TaskDeps) -> None:
        self.deps = deps
        self.db = deps.db

    def begin(self, server_uuid: str) -> Any:
        """Record the delete (``deleting``, its resize closed).

        :returns: the server, or None when it is already deleted.
        """
        try:
            return actions.begin_delete(self.db, server_uuid)
        except exception.ServerNotFound:
            LOG.info("Server %s is already deleted; nothing to do", server_uuid)
            return None

    def release_and_delete(self, server: Any) -> set[str] | None:
        """Give back what the server and its closed resizes hold, then delete its row.

        :returns: the hosts that may still have a copy of it, or None when
            another worker deleted it meanwhile.
        :raises PlacementUnavailable: Placement did not answer; the delete
            stays recorded and the sweep finishes it.
        """
        server_uuid = server.uuid
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
            return None
        LOG.info("Server %s deleted", server_uuid)
        return hosts
