"""The conductor's endpoints of a build: schedule it, and the host's spawned report."""

from resize_sched import exception, notifications
from resize_sched.compute.rpcapi import server_message
from resize_sched.conductor.endpoints.base import Endpoint
from resize_sched.conductor.endpoints.checks import LOG, handler
from resize_sched.context import RequestContext
from resize_sched.db import action_api


class BuildEndpoints(Endpoint):
    """``build_server`` and ``build_done``."""

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
