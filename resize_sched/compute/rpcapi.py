"""Client side of the compute RPC API (topic ``compute``, one server per host).

API version history:

* 1.0 - spawn, prep_resize, resize_instance, finish_resize, confirm_resize,
  revert_resize, destroy.
* 1.1 - power_off and power_on (os-stop, os-start); the host reports
  ``power_changed`` (conductor 1.4). ``migration`` may carry ``"power_on"``
  (False: the server was stopped and stays powered off when a resize
  finishes or reverts); a 1.0 host ignores it and powers the server on, so
  the conductor does not stop or start servers on a host capped at 1.0
  (:attr:`ComputeAPI.can_power`).
* 1.2 - a live migration's parts: pre_live_migration and
  rollback_live_migration_at_destination (destination), live_migration,
  live_migration_abort and live_migration_force_complete (source),
  post_live_migration_at_destination (sent by the source to the
  destination). Each takes a ``migration``. rebuild_instance: an
  evacuation's rebuild on its destination.
* 1.3 - shelve_instance, shelve_offload_instance and unshelve_instance
  (each takes a ``server``); the host reports server_shelved,
  server_offloaded and server_unshelved (conductor 1.6). The conductor does
  not shelve servers on a host capped below 1.3 (:attr:`ComputeAPI.can_shelve`).

Every method is a cast addressed to one host. Compute hosts do not read the
database: each message carries what the host needs (the ``server`` and
``migration`` dicts described below), and the host reports the outcome back
with :class:`resize_sched.conductor.rpcapi.ConductorAPI`.

``server``: ``{"uuid", "name", "flavor"}`` (flavor snapshot dict).
``migration``: ``{"uuid", "server_uuid", "source_host", "dest_host",
"old_flavor", "new_flavor"}``.

Added without a version bump, for notifications (a receiver must not rely on
them: a message from an older sender lacks them): ``server`` has
``"project_id", "user_id", "host", "vm_state", "task_state"``;
``migration`` has ``"claim_strategy", "project_id", "user_id"`` and, when the
sender passes the server, ``"server"`` (a ``server`` dict); ``destroy`` may
carry ``server``.
"""

from typing import Any

import oslo_messaging as messaging
from oslo_config import cfg

from resize_sched import rpc
from resize_sched.context import RequestContext

TOPIC = "compute"
NAMESPACE = "compute"
VERSION = "1.3"


def migration_message(
    migration: Any, server: Any = None, power_on: bool | None = None
) -> dict[str, Any]:
    """The ``migration`` dict compute hosts receive, from a migration row.

    :param server: the server row, to send its :func:`server_message` along
        (its name and state then appear in notifications).
    :param power_on: whether the server runs when the resize finishes or
        reverts (None: not said; a host then powers it on).
    """
    message = {
        "uuid": migration.uuid,
        "server_uuid": migration.server_uuid,
        "source_host": migration.source_host,
        "dest_host": migration.dest_host,
        "old_flavor": dict(migration.old_flavor),
        "new_flavor": dict(migration.new_flavor),
        "claim_strategy": getattr(migration, "claim_strategy", None),
        "project_id": getattr(migration, "project_id", None),
        "user_id": getattr(migration, "user_id", None),
    }
    if server is not None:
        message["server"] = server_message(server)
    if power_on is not None:
        message["power_on"] = power_on
    return message


def server_message(server: Any) -> dict[str, Any]:
    """The ``server`` dict compute hosts receive, from a server row."""
    return {
        "uuid": server.uuid,
        "name": server.name,
        "flavor": dict(server.flavor),
        "project_id": getattr(server, "project_id", None),
        "user_id": getattr(server, "user_id", None),
        "host": getattr(server, "host", None),
        "vm_state": getattr(server, "vm_state", None),
        "task_state": getattr(server, "task_state", None),
    }


class ComputeAPI:
    """Calls to compute hosts.

    :param conf: a ConfigOpts with ``[upgrade_levels]`` registered.
    :param transport: the RPC transport.
    """

    def __init__(self, conf: cfg.ConfigOpts, transport: messaging.Transport) -> None:
        #: The service's configuration (the compute manager builds its notifier from it).
        self.conf = conf
        target = messaging.Target(topic=TOPIC, namespace=NAMESPACE, version=VERSION)
        self.client = rpc.get_client(transport, target, version_cap=conf.upgrade_levels.compute)

    def _cast(
        self, ctxt: RequestContext, host: str, method: str, version: str, **kwargs: Any
    ) -> None:
        if not self.client.can_send_version(version):
            raise messaging.RPCVersionCapError(
                version=version, version_cap=self.client.version_cap
            )
        self.client.prepare(server=host, version=version).cast(ctxt, method, **kwargs)

    def spawn(self, ctxt: RequestContext, host: str, server: dict[str, Any]) -> None:
        self._cast(ctxt, host, "spawn", "1.0", server=server)

    def prep_resize(self, ctxt: RequestContext, host: str, migration: dict[str, Any]) -> None:
        """On the destination: accept (or refuse) the resize."""
        self._cast(ctxt, host, "prep_resize", "1.0", migration=migration)

    def resize_instance(self, ctxt: RequestContext, host: str, migration: dict[str, Any]) -> None:
        """On the source: stop the server and hand its disks over."""
        self._cast(ctxt, host, "resize_instance", "1.0", migration=migration)

    def finish_resize(self, ctxt: RequestContext, host: str, migration: dict[str, Any]) -> None:
        """On the destination: start the server with the new flavor."""
        self._cast(ctxt, host, "finish_resize", "1.0", migration=migration)

    def confirm_resize(self, ctxt: RequestContext, host: str, migration: dict[str, Any]) -> None:
        """On the source: forget the old copy (nothing to do for a same-host resize)."""
        self._cast(ctxt, host, "confirm_resize", "1.0", migration=migration)

    def revert_resize(self, ctxt: RequestContext, host: str, migration: dict[str, Any]) -> None:
        """On the destination and then the source: go back to the old flavor."""
        self._cast(ctxt, host, "revert_resize", "1.0", migration=migration)

    @property
    def can_power(self) -> bool:
        """Whether hosts take power_off and power_on (1.1)."""
        return bool(self.client.can_send_version("1.1"))

    def power_off(self, ctxt: RequestContext, host: str, server: dict[str, Any]) -> None:
        """Stop the server (os-stop); the host reports ``power_changed``."""
        self._cast(ctxt, host, "power_off", "1.1", server=server)

    def power_on(self, ctxt: RequestContext, host: str, server: dict[str, Any]) -> None:
        """Start the stopped server (os-start); the host reports ``power_changed``."""
        self._cast(ctxt, host, "power_on", "1.1", server=server)

    def pre_live_migration(
        self, ctxt: RequestContext, host: str, migration: dict[str, Any]
    ) -> None:
        """On the destination: make ready; reports ``live_migration_prepared``."""
        self._cast(ctxt, host, "pre_live_migration", "1.2", migration=migration)

    def live_migration(self, ctxt: RequestContext, host: str, migration: dict[str, Any]) -> None:
        """On the source: hand the running server over, then clean up."""
        self._cast(ctxt, host, "live_migration", "1.2", migration=migration)

    def live_migration_abort(
        self, ctxt: RequestContext, host: str, migration: dict[str, Any]
    ) -> None:
        """On the source: stop the hand-over (reported as ``live_migration_abort``)."""
        self._cast(ctxt, host, "live_migration_abort", "1.2", migration=migration)

    def live_migration_force_complete(
        self, ctxt: RequestContext, host: str, migration: dict[str, Any]
    ) -> None:
        """On the source: end the hand-over now."""
        self._cast(ctxt, host, "live_migration_force_complete", "1.2", migration=migration)

    def post_live_migration_at_destination(
        self, ctxt: RequestContext, host: str, migration: dict[str, Any]
    ) -> None:
        """On the destination: the server is its alone; reports ``live_migration_finished``."""
        self._cast(ctxt, host, "post_live_migration_at_destination", "1.2", migration=migration)

    def rollback_live_migration_at_destination(
        self, ctxt: RequestContext, host: str, migration: dict[str, Any]
    ) -> None:
        """On the destination: remove what pre_live_migration made."""
        self._cast(
            ctxt, host, "rollback_live_migration_at_destination", "1.2", migration=migration
        )

    def rollback_live_migration_at_source(
        self, ctxt: RequestContext, host: str, migration: dict[str, Any]
    ) -> None:
        """On the source: the hand-over stopped; the server runs on there."""
        self._cast(ctxt, host, "rollback_live_migration_at_source", "1.2", migration=migration)

    def rebuild_instance(self, ctxt: RequestContext, host: str, migration: dict[str, Any]) -> None:
        """On an evacuation's destination: rebuild the server; reports ``evacuation_rebuilt``."""
        self._cast(ctxt, host, "rebuild_instance", "1.2", migration=migration)

    @property
    def can_shelve(self) -> bool:
        """Whether hosts take the shelving methods (1.3)."""
        return bool(self.client.can_send_version("1.3"))

    def shelve_instance(self, ctxt: RequestContext, host: str, server: dict[str, Any]) -> None:
        """Power the server off for a shelve; the host reports ``server_shelved``."""
        self._cast(ctxt, host, "shelve_instance", "1.3", server=server)

    def shelve_offload_instance(
        self, ctxt: RequestContext, host: str, server: dict[str, Any]
    ) -> None:
        """Remove the shelved server from the host; it reports ``server_offloaded``."""
        self._cast(ctxt, host, "shelve_offload_instance", "1.3", server=server)

    def unshelve_instance(self, ctxt: RequestContext, host: str, server: dict[str, Any]) -> None:
        """Start the shelved server (spawn it, when offloaded); reports ``server_unshelved``."""
        self._cast(ctxt, host, "unshelve_instance", "1.3", server=server)

    def destroy(
        self,
        ctxt: RequestContext,
        host: str,
        server_uuid: str,
        server: dict[str, Any] | None = None,
    ) -> None:
        """Remove the server from ``host``; ``server`` (a :func:`server_message`),
        when given, only fills the delete notifications."""
        kwargs: dict[str, Any] = {"server_uuid": server_uuid}
        if server is not None:
            kwargs["server"] = server
        self._cast(ctxt, host, "destroy", "1.0", **kwargs)
