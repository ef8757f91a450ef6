"""The conductor's endpoints of shelving.

Shelve, offload (asked for, or by the sweep after ``[DEFAULT]
shelved_offload_time``), unshelve, the hosts' reports and their failures.
"""

import datetime

from resize_sched import exception, words
from resize_sched.compute.rpcapi import server_message
from resize_sched.conductor import compute_events
from resize_sched.conductor.endpoints.base import Endpoint
from resize_sched.conductor.endpoints.checks import LOG, handler
from resize_sched.context import RequestContext, admin_context
from resize_sched.db import action_api, states

#: The shelving operations a compute host runs, and the task state the
#: server is in meanwhile.
SHELVE_TASKS: dict[str, str] = {
    "shelve": states.TASK_SHELVING,
    "shelve_offload": states.TASK_SHELVING_OFFLOADING,
    "unshelve": states.TASK_UNSHELVING,
}


class ShelvingEndpoints(Endpoint):
    """``shelve_server``, ``shelve_offload_server``, ``unshelve_server`` and
    the hosts' ``server_shelved``, ``server_offloaded`` and ``server_unshelved``."""

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
        state = (server.status, server.task_state)
        if state == (states.STATUS_SHELVED, states.TASK_UNSHELVING):
            self._shelve_cast(ctxt, server_uuid, "unshelve")
            return
        if state != (states.STATUS_SHELVED_OFFLOADED, states.TASK_UNSHELVING):
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
            LOG.warning("Unshelve of server %s: Placement failed: %s", server_uuid, exc)
            self.unshelves.placement_failed(server_uuid, exc)
            return
        if placed is None:
            return
        self._compute_event("unshelve", server_uuid, placed.host)
        self.compute.unshelve_instance(ctxt, placed.host, server_message(placed))

    def _shelve_cast(self, ctxt: RequestContext, server_uuid: str, operation: str) -> None:
        """Cast a shelving operation to the server's host, if it is due."""
        try:
            server = self.db.server_get(server_uuid)
        except exception.ServerNotFound:
            LOG.info("%s of server %s: it is gone; nothing to do", operation, server_uuid)
            return
        if server.task_state != SHELVE_TASKS[operation] or not server.host:
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
            if server.status == states.STATUS_SHELVED_OFFLOADED:
                if host is not None and server.host not in (None, host):
                    LOG.info("Unshelve failure of %s from %s, not its host", server_uuid, host)
                    return
                said = words.shelve_step_failed(operation, host, reason, offloaded=True)
                if server.task_state == states.TASK_UNSHELVING:
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
        if self.shelves.step_failed(server_uuid, SHELVE_TASKS[operation], host) is None:
            return
        self._compute_event(operation, server_uuid, host, reason=said)
        self.db.action_finish(server_uuid, compute_events.actions_of(operation))

    def offload_shelved(self, now: datetime.datetime | None = None) -> list[str]:
        """The sweep's part of ``[DEFAULT] shelved_offload_time`` (N > 0):
        offload every server SHELVED with no task that has not changed for N
        seconds, as Nova's compute periodic task does, each recorded as a
        ``shelveOffload`` action. Run by the sweep's lease holder only.

        :returns: the servers whose offload was sent.
        """
        sent = []
        for server in self.shelves.idle_shelved(now or datetime.datetime.now(datetime.UTC)):
            if self.shelves.begin_sweep_offload(server):
                self._shelve_cast(admin_context(), server.uuid, "shelve_offload")
                sent.append(server.uuid)
        return sent

    @handler
    def server_shelved(self, ctxt: RequestContext, server_uuid: str, host: str) -> None:
        server = self.shelves.shelved(server_uuid, host)
        if server is None:
            return
        self._compute_event("shelve", server_uuid, host, result=action_api.SUCCESS)
        if server.task_state == states.TASK_SHELVING_OFFLOADING:
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
        if server.status == states.STATUS_SHELVED_OFFLOADED:
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
