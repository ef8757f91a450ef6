"""Client side of the conductor RPC API.

API version history:

* 1.0 - build_server, resize_server, confirm_resize, revert_resize,
  delete_server; the compute hosts' reports build_done, resize_prepared,
  resize_finished, operation_failed.
* 1.1 - resize_prepared and operation_failed name the reporting ``host``, so
  a late report from a host the resize has since left changes nothing.
* 1.2 - compute_report: a compute service's periodic report (heartbeat,
  compute node, the inventory it set in Placement). Not sent to a 1.1
  conductor: such a conductor keeps no services or compute nodes.
* 1.3 - compute_report carries ``children``: the child providers the
  service keeps under its root, uuid -> ``{"name", "inventory", "traits"}``
  (``{}`` on a flat host). A 1.2 conductor is sent the report without them;
  a 1.3 conductor keeps what it last recorded when a report has none (an
  older compute service, or one capped at 1.2).
* 1.4 - stop_server and start_server (from the API), power_changed (a
  compute host powered a server off or on, reported with its ``host``).
  The API refuses os-stop and os-start (409) while the conductor is capped
  below 1.4.
* 1.5 - live_migrate_server, live_migration_abort and
  live_migration_force_complete (from the API); live_migration_prepared and
  live_migration_finished (the destination's reports); operation_failed
  also names ``pre_live_migration``, ``live_migration``,
  ``live_migration_abort`` and ``post_live_migration``. The API refuses
  os-migrateLive (409) while the conductor is capped below 1.5.
  evacuate_server (from the API) and evacuation_rebuilt (the destination's
  report); operation_failed also names ``rebuild``.
* 1.6 - shelve_server, shelve_offload_server and unshelve_server (from the
  API); server_shelved, server_offloaded and server_unshelved (a compute
  host's reports, with its ``host``); operation_failed also names
  ``shelve``, ``shelve_offload`` and ``unshelve``. The API refuses shelve,
  shelveOffload and unshelve (409) while the conductor is capped below 1.6.

Every method is a cast: the caller has already validated the request and
recorded its intent in the database; the outcome shows in the server's and
migration's status.
"""

from collections.abc import Mapping
from typing import Any

import oslo_messaging as messaging
from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import rpc
from resize_sched.context import RequestContext

LOG = logging.getLogger(__name__)

TOPIC = "conductor"
NAMESPACE = "conductor"
VERSION = "1.6"


class ConductorAPI:
    """Calls to the conductor.

    :param conf: a ConfigOpts with ``[upgrade_levels]`` registered.
    :param transport: the RPC transport (see :func:`resize_sched.rpc.get_transport`).
    """

    def __init__(self, conf: cfg.ConfigOpts, transport: messaging.Transport) -> None:
        target = messaging.Target(topic=TOPIC, namespace=NAMESPACE, version=VERSION)
        self.client = rpc.get_client(transport, target, version_cap=conf.upgrade_levels.conductor)

    def _cast(self, ctxt: RequestContext, method: str, version: str, **kwargs: Any) -> None:
        if not self.client.can_send_version(version):
            raise messaging.RPCVersionCapError(
                version=version, version_cap=self.client.version_cap
            )
        self.client.prepare(version=version).cast(ctxt, method, **kwargs)

    def _cast_report(
        self, ctxt: RequestContext, method: str, host: str | None, **kwargs: Any
    ) -> None:
        """A compute host's report: with its ``host`` from 1.1, without it to a 1.0 conductor."""
        if host is not None and self.client.can_send_version("1.1"):
            self._cast(ctxt, method, "1.1", host=host, **kwargs)
        else:
            self._cast(ctxt, method, "1.0", **kwargs)

    # -- from the API ------------------------------------------------------------

    def build_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        """Schedule a server recorded in BUILD and spawn it."""
        self._cast(ctxt, "build_server", "1.0", server_uuid=server_uuid)

    def resize_server(self, ctxt: RequestContext, migration_uuid: str) -> None:
        """Run a resize the API has begun (server RESIZE, migration pre-migrating)."""
        self._cast(ctxt, "resize_server", "1.0", migration_uuid=migration_uuid)

    def confirm_resize(self, ctxt: RequestContext, migration_uuid: str) -> None:
        """Finish a confirm the API has begun (migration confirming)."""
        self._cast(ctxt, "confirm_resize", "1.0", migration_uuid=migration_uuid)

    def revert_resize(self, ctxt: RequestContext, migration_uuid: str) -> None:
        """Finish a revert the API has begun (migration reverting)."""
        self._cast(ctxt, "revert_resize", "1.0", migration_uuid=migration_uuid)

    @property
    def can_power(self) -> bool:
        """Whether the conductor takes stop_server and start_server (1.4)."""
        return bool(self.client.can_send_version("1.4"))

    def stop_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        """Power off a server the API has marked ``powering-off``."""
        self._cast(ctxt, "stop_server", "1.4", server_uuid=server_uuid)

    def start_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        """Power on a server the API has marked ``powering-on``."""
        self._cast(ctxt, "start_server", "1.4", server_uuid=server_uuid)

    def power_changed(
        self, ctxt: RequestContext, server_uuid: str, power_state: int, host: str
    ) -> None:
        """``host`` powered the server off or on: its ``power_state`` now."""
        self._cast(
            ctxt,
            "power_changed",
            "1.4",
            server_uuid=server_uuid,
            power_state=power_state,
            host=host,
        )

    @property
    def can_live_migrate(self) -> bool:
        """Whether the conductor takes live migrations (1.5)."""
        return bool(self.client.can_send_version("1.5"))

    def live_migrate_server(self, ctxt: RequestContext, migration_uuid: str) -> None:
        """Run a live migration the API has begun (migration accepted)."""
        self._cast(ctxt, "live_migrate_server", "1.5", migration_uuid=migration_uuid)

    def live_migration_abort(self, ctxt: RequestContext, migration_uuid: str) -> None:
        """Stop a running live migration's hand-over; it rolls back as ``cancelled``."""
        self._cast(ctxt, "live_migration_abort", "1.5", migration_uuid=migration_uuid)

    def live_migration_force_complete(self, ctxt: RequestContext, migration_uuid: str) -> None:
        """End a running live migration's hand-over now."""
        self._cast(ctxt, "live_migration_force_complete", "1.5", migration_uuid=migration_uuid)

    def live_migration_prepared(
        self, ctxt: RequestContext, migration_uuid: str, host: str
    ) -> None:
        """The destination ``host`` is ready to receive the server."""
        self._cast(
            ctxt, "live_migration_prepared", "1.5", migration_uuid=migration_uuid, host=host
        )

    def live_migration_finished(self, ctxt: RequestContext, migration_uuid: str) -> None:
        """The server runs on the destination alone."""
        self._cast(ctxt, "live_migration_finished", "1.5", migration_uuid=migration_uuid)

    def evacuate_server(self, ctxt: RequestContext, migration_uuid: str) -> None:
        """Run an evacuation the API has begun (migration accepted)."""
        self._cast(ctxt, "evacuate_server", "1.5", migration_uuid=migration_uuid)

    def evacuation_rebuilt(self, ctxt: RequestContext, migration_uuid: str, host: str) -> None:
        """The destination ``host`` rebuilt the evacuated server."""
        self._cast(ctxt, "evacuation_rebuilt", "1.5", migration_uuid=migration_uuid, host=host)

    @property
    def can_shelve(self) -> bool:
        """Whether the conductor takes shelve, offload and unshelve (1.6)."""
        return bool(self.client.can_send_version("1.6"))

    def shelve_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        """Shelve a server the API has marked ``shelving``."""
        self._cast(ctxt, "shelve_server", "1.6", server_uuid=server_uuid)

    def shelve_offload_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        """Offload a SHELVED server the API has marked ``shelving_offloading``."""
        self._cast(ctxt, "shelve_offload_server", "1.6", server_uuid=server_uuid)

    def unshelve_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        """Unshelve a server the API has marked ``unshelving``."""
        self._cast(ctxt, "unshelve_server", "1.6", server_uuid=server_uuid)

    def server_shelved(self, ctxt: RequestContext, server_uuid: str, host: str) -> None:
        """``host`` powered the shelved server off."""
        self._cast(ctxt, "server_shelved", "1.6", server_uuid=server_uuid, host=host)

    def server_offloaded(self, ctxt: RequestContext, server_uuid: str, host: str) -> None:
        """``host`` removed the shelved server."""
        self._cast(ctxt, "server_offloaded", "1.6", server_uuid=server_uuid, host=host)

    def server_unshelved(self, ctxt: RequestContext, server_uuid: str, host: str) -> None:
        """``host`` runs the unshelved server."""
        self._cast(ctxt, "server_unshelved", "1.6", server_uuid=server_uuid, host=host)

    def delete_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        """Release a server's allocations and destroy it on its host."""
        self._cast(ctxt, "delete_server", "1.0", server_uuid=server_uuid)

    # -- reports from compute hosts -------------------------------------------------

    def build_done(self, ctxt: RequestContext, server_uuid: str) -> None:
        """The host spawned the server."""
        self._cast(ctxt, "build_done", "1.0", server_uuid=server_uuid)

    def resize_prepared(
        self, ctxt: RequestContext, migration_uuid: str, host: str | None = None
    ) -> None:
        """The destination ``host`` accepted the resize (prep_resize succeeded)."""
        self._cast_report(ctxt, "resize_prepared", host, migration_uuid=migration_uuid)

    def resize_finished(self, ctxt: RequestContext, migration_uuid: str) -> None:
        """The destination finished the resize: the server may enter VERIFY_RESIZE."""
        self._cast(ctxt, "resize_finished", "1.0", migration_uuid=migration_uuid)

    def operation_failed(
        self,
        ctxt: RequestContext,
        operation: str,
        reason: str,
        server_uuid: str,
        migration_uuid: str | None = None,
        host: str | None = None,
    ) -> None:
        """A compute operation failed on ``host`` (``spawn``, ``prep_resize``,
        ``resize``, ``finish_resize``, ``confirm``, ``revert``; from 1.4
        ``stop`` and ``start``; from 1.6 ``shelve``, ``shelve_offload``,
        ``unshelve``)."""
        self._cast_report(
            ctxt,
            "operation_failed",
            host,
            operation=operation,
            reason=reason,
            server_uuid=server_uuid,
            migration_uuid=migration_uuid,
        )

    def compute_report(
        self,
        ctxt: RequestContext,
        host: str,
        node: str,
        rp_uuid: str,
        inventory: Mapping[str, Mapping[str, Any]],
        provider_generation: int | None,
        service_version: str,
        children: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> bool:
        """The periodic report of the compute service on ``host``.

        :param node: the compute node's (hypervisor's) name.
        :param rp_uuid: the uuid of the resource provider it registered.
        :param inventory: the inventory records it set on that provider
            (the root's alone).
        :param provider_generation: the provider generation that inventory
            was read or written at.
        :param service_version: the compute RPC API version the service speaks.
        :param children: its own child providers, uuid -> ``{"name",
            "inventory", "traits"}`` (``{}``: a flat host); None sends none.
            Sent from 1.3 only.
        :returns: whether it was sent (False: the conductor is capped below 1.2).
        """
        if not self.client.can_send_version("1.2"):
            LOG.debug("Conductor capped below 1.2: compute report of %s not sent", host)
            return False
        kwargs: dict[str, Any] = {
            "host": host,
            "node": node,
            "rp_uuid": rp_uuid,
            "inventory": {rc: dict(record) for rc, record in inventory.items()},
            "provider_generation": provider_generation,
            "service_version": service_version,
        }
        version = "1.2"
        if children is not None and self.client.can_send_version("1.3"):
            version = "1.3"
            kwargs["children"] = {
                uuid: {
                    "name": child["name"],
                    "inventory": {rc: dict(r) for rc, r in child["inventory"].items()},
                    "traits": list(child["traits"]),
                }
                for uuid, child in children.items()
            }
        self._cast(ctxt, "compute_report", version, **kwargs)
        return True
