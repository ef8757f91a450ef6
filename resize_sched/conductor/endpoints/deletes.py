"""The conductor's endpoint of a delete.

The task gives everything back; the hosts are told to destroy their copies.
"""

from typing import Any

import oslo_messaging as messaging

from resize_sched import exception, notifications
from resize_sched.compute.rpcapi import server_message
from resize_sched.conductor.endpoints.base import Endpoint
from resize_sched.conductor.endpoints.checks import LOG, handler
from resize_sched.conductor.tasks.delete import DELETE_EVENT
from resize_sched.context import RequestContext
from resize_sched.db import action_api


class DeleteEndpoints(Endpoint):
    """``delete_server``."""

    @handler
    def delete_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        """Release everything the server and its resize hold, then delete it
        (:mod:`resize_sched.conductor.tasks.delete`).

        Placement not answering leaves the delete to the sweep: logged as
        such, and raised as an expected failure.
        """
        server = self.deletes.begin(server_uuid)
        if server is None:
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
        notifications.notify_delete(self.notifier, ctxt, server, notifications.START)
        hosts = self.deletes.release_and_delete(server)
        if hosts is None:
            return
        notifications.notify_delete(self.notifier, ctxt, server, notifications.END)
        for host in sorted(hosts):
            self.compute.destroy(ctxt, host, server.uuid, server=server_message(server))
