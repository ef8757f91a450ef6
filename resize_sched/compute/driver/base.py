"""The hypervisor driver contract of the compute service.

A driver acts on one host only and never talks to Placement, the database or
the conductor: the compute manager calls it and reports the outcome. Every
method receives the dicts the compute RPC API carries (see
:mod:`resize_sched.compute.rpcapi`): ``server`` is ``{"uuid", "name",
"flavor"}``, ``migration`` is ``{"uuid", "server_uuid", "source_host",
"dest_host", "old_flavor", "new_flavor"}``.

Messages may be delivered again (a conductor restarted after a crash re-sends
the step it was waiting for), so every method must be idempotent: doing a
step that is already done changes nothing and does not fail.

Errors a driver may raise: a :class:`resize_sched.exception.ResizeSchedException`
subclass for a failure it understands (e.g. ``InjectedFailure``); anything
else is treated as unexpected and logged with its traceback. Either way the
manager reports the operation as failed.
"""

import abc
from typing import Any

Server = dict[str, Any]
Migration = dict[str, Any]

#: Nova's power states, as the manager reports them (``OS-EXT-STS:power_state``).
POWER_RUNNING = 1
POWER_SHUTDOWN = 4


class ComputeDriver(abc.ABC):
    """What the compute manager needs from a hypervisor on one host."""

    def provider_tree(self) -> list[Any]:
        """The host's devices to report as child providers of its root (a
        list of :class:`resize_sched.compute.tree.Child`); none by default."""
        return []

    @abc.abstractmethod
    def spawn(self, server: Server) -> None:
        """Create and start ``server`` with its flavor on this host."""

    @abc.abstractmethod
    def prep_resize(self, migration: Migration) -> None:
        """On the destination: check the resize can be accepted and prepare for it.

        :raises ResizeSchedException: the host refuses; the conductor reschedules.
        """

    @abc.abstractmethod
    def migrate_disk_and_power_off(self, migration: Migration) -> None:
        """On the source: stop the server and hand its disks to the destination.

        For a same-host resize the server is only stopped.
        """

    @abc.abstractmethod
    def finish_migration(self, migration: Migration) -> None:
        """On the destination: start the server with the new flavor (left
        powered off when ``migration["power_on"]`` is False: it was stopped)."""

    @abc.abstractmethod
    def confirm_migration(self, migration: Migration) -> None:
        """On the source: forget the old copy (same host: the old flavor)."""

    @abc.abstractmethod
    def revert(self, migration: Migration) -> None:
        """On the destination of a resize to another host: destroy the new copy."""

    @abc.abstractmethod
    def finish_revert(self, migration: Migration) -> None:
        """On the source: start the server again with the old flavor (left
        powered off when ``migration["power_on"]`` is False)."""

    def pre_live_migration(self, migration: Migration) -> None:
        """On the destination: make ready to receive the running server."""
        raise NotImplementedError(f"{type(self).__name__} cannot live-migrate")

    def live_migration(self, migration: Migration) -> None:
        """On the source: hand the running server over to the destination.

        :raises LiveMigrationAborted: the migration was aborted meanwhile.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot live-migrate")

    def live_migration_abort(self, migration_uuid: str) -> None:
        """On the source: stop the hand-over of ``migration_uuid`` (if running)."""
        raise NotImplementedError(f"{type(self).__name__} cannot live-migrate")

    def live_migration_force_complete(self, migration_uuid: str) -> None:
        """On the source: finish the hand-over of ``migration_uuid`` now."""
        raise NotImplementedError(f"{type(self).__name__} cannot live-migrate")

    def post_live_migration(self, migration: Migration) -> None:
        """On the source, after the hand-over: remove the source's copy."""
        raise NotImplementedError(f"{type(self).__name__} cannot live-migrate")

    def post_live_migration_at_destination(self, migration: Migration) -> None:
        """On the destination: the server is now this host's alone."""
        raise NotImplementedError(f"{type(self).__name__} cannot live-migrate")

    def rollback_live_migration_at_destination(self, migration: Migration) -> None:
        """On the destination: remove what ``pre_live_migration`` made."""
        raise NotImplementedError(f"{type(self).__name__} cannot live-migrate")

    def rollback_live_migration_at_source(self, migration: Migration) -> None:
        """On the source: the hand-over stopped; the server runs on here."""
        raise NotImplementedError(f"{type(self).__name__} cannot live-migrate")

    def rebuild(self, migration: Migration) -> None:
        """On an evacuation's destination: create the server from the message."""
        raise NotImplementedError(f"{type(self).__name__} cannot evacuate")

    def power_off(self, server: Server) -> None:
        """Stop ``server`` (already stopped: nothing to do)."""
        raise NotImplementedError(f"{type(self).__name__} cannot power servers off")

    def power_on(self, server: Server) -> None:
        """Start the stopped ``server`` (already running: nothing to do)."""
        raise NotImplementedError(f"{type(self).__name__} cannot power servers on")

    def shelve(self, server: Server) -> None:
        """Power ``server`` off for a shelve (no snapshot image is made)."""
        raise NotImplementedError(f"{type(self).__name__} cannot shelve servers")

    def shelve_offload(self, server: Server) -> None:
        """Remove the shelved ``server`` from this host."""
        raise NotImplementedError(f"{type(self).__name__} cannot offload shelved servers")

    def unshelve(self, server: Server) -> None:
        """Start the shelved ``server`` here: power it on, or spawn it when it
        was offloaded (not on this host)."""
        raise NotImplementedError(f"{type(self).__name__} cannot unshelve servers")

    @abc.abstractmethod
    def destroy(self, server_uuid: str) -> None:
        """Remove the server from this host (nothing to do if it is not here)."""

    @abc.abstractmethod
    def list_instances(self) -> list[str]:
        """The uuids of the servers on this host."""
