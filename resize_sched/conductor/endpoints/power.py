"""The conductor's endpoints of a stop and a start, and the host's power report."""

from resize_sched.compute.rpcapi import server_message
from resize_sched.conductor.endpoints.base import Endpoint
from resize_sched.conductor.endpoints.checks import handler
from resize_sched.conductor.tasks.power import POWER_ACTIONS
from resize_sched.context import RequestContext
from resize_sched.db import action_api


class PowerEndpoints(Endpoint):
    """``stop_server``, ``start_server`` and ``power_changed``."""

    @handler
    def stop_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        self._power(ctxt, server_uuid, "stop")

    @handler
    def start_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        self._power(ctxt, server_uuid, "start")

    def _power(self, ctxt: RequestContext, server_uuid: str, operation: str) -> None:
        server = self.powers.due(server_uuid, operation)
        if server is None:
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
        operation = self.powers.changed(server_uuid, power_state, host)
        if operation is None:
            return
        self._compute_event(operation, server_uuid, host, result=action_api.SUCCESS)
        self.db.action_finish(server_uuid, (POWER_ACTIONS[operation],))

    def _power_failed(
        self, server_uuid: str, operation: str, host: str | None, reason: str
    ) -> None:
        """A stop or start did not happen: no task again, the event failed."""
        if not self.powers.failed(server_uuid, operation):
            return
        self._compute_event(operation, server_uuid, host, reason=reason)
        self.db.action_finish(server_uuid, (POWER_ACTIONS[operation],))
