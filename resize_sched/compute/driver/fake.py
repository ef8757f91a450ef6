"""An in-memory hypervisor: servers are records in a dict, one driver per host.

For demos and tests. ``[fake_driver] delay_s`` makes every operation take
time, ``[fake_driver] live_migration_s`` makes a live migration's hand-over
last (so it can be aborted or forced to complete), and ``[fake_driver]
fail_on`` makes chosen operations on chosen hosts raise
:class:`resize_sched.exception.InjectedFailure`.

The fake forgets everything when its process stops. A host asked to act on a
server it does not know *adopts* it from the message (the conductor's
database is the source of truth), so a restarted fake host keeps working and a
re-sent message never fails for want of local state.
"""

import copy
import dataclasses
import threading
import time
from collections.abc import Iterable
from typing import Any

from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import exception
from resize_sched.compute.driver import base
from resize_sched.compute.tree import Child
from resize_sched.conf import fake_driver as fake_driver_conf

LOG = logging.getLogger(__name__)

RUNNING = "running"
SHUTOFF = "shutoff"


@dataclasses.dataclass
class FakeInstance:
    """A server as the fake hypervisor holds it.

    :ivar migration_uuid: the resize this copy takes part in, until it is
        confirmed or reverted.
    """

    uuid: str
    name: str
    flavor: dict[str, Any]
    power_state: str = RUNNING
    migration_uuid: str | None = None


class FakeDriver(base.ComputeDriver):
    """In-memory servers of one host.

    Thread-safe: the RPC server runs several messages at once.

    :param host: the host this driver acts for (``[DEFAULT] host``).
    :param delay_s: seconds each operation sleeps before it acts.
    :param fail_on: operations (from
        :data:`resize_sched.conf.fake_driver.OPERATIONS`) that fail on this host.
    """

    def __init__(
        self,
        host: str,
        delay_s: float = 0.0,
        fail_on: Iterable[str] = (),
        children: Iterable[Child] = (),
        live_migration_s: float = 0.0,
    ) -> None:
        self.host = host
        self.live_migration_s = live_migration_s
        #: migration uuid -> "abort" or "complete", asked before or during its hand-over
        self._live_requests: dict[str, str] = {}
        self._live_changed = threading.Condition()
        self.children = list(children)
        self.delay_s = delay_s
        self.fail_on = frozenset(fail_on)
        unknown = self.fail_on.difference(fake_driver_conf.OPERATIONS)
        if unknown:
            raise exception.ConfigurationError(
                reason=f"unknown fake driver operations {sorted(unknown)}; known: "
                f"{', '.join(fake_driver_conf.OPERATIONS)}"
            )
        self._instances: dict[str, FakeInstance] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts) -> "FakeDriver":
        """The driver for ``[DEFAULT] host`` with the ``[fake_driver]`` options.

        :raises ValueError: ``[fake_driver] fail_on`` has a malformed item.
        """
        return cls(
            conf.host,
            delay_s=conf.fake_driver.delay_s,
            live_migration_s=conf.fake_driver.live_migration_s,
            fail_on=fake_driver_conf.failing_operations(conf, conf.host),
            children=[
                Child(name, inventory, frozenset(traits))
                for name, inventory, traits in map(
                    fake_driver_conf.parse_child, conf.fake_driver.provider_tree or ()
                )
            ],
        )

    # -- inspection -------------------------------------------------------------

    def provider_tree(self) -> list[Child]:
        """The children ``[fake_driver] provider_tree`` describes."""
        return list(self.children)

    def get_instance(self, server_uuid: str) -> FakeInstance | None:
        """A copy of the server's record on this host, or None."""
        with self._lock:
            instance = self._instances.get(server_uuid)
            return copy.deepcopy(instance) if instance else None

    def list_instances(self) -> list[str]:
        with self._lock:
            return sorted(self._instances)

    # -- operations ---------------------------------------------------------------

    def spawn(self, server: base.Server) -> None:
        self._begin("spawn")
        with self._lock:
            if server["uuid"] in self._instances:
                LOG.info(
                    "Server %s already exists on %s; nothing to spawn", server["uuid"], self.host
                )
                return
            self._instances[server["uuid"]] = FakeInstance(
                uuid=server["uuid"], name=server.get("name", ""), flavor=dict(server["flavor"])
            )

    def prep_resize(self, migration: base.Migration) -> None:
        # NOTE: Placement has already claimed the room; a fake host has nothing
        # else to check, so only an injected failure refuses.
        self._begin("prep_resize")

    def migrate_disk_and_power_off(self, migration: base.Migration) -> None:
        self._begin("resize")
        with self._lock:
            instance = self._adopt(migration, migration["old_flavor"])
            instance.power_state = SHUTOFF
            instance.migration_uuid = migration["uuid"]

    def finish_migration(self, migration: base.Migration) -> None:
        self._begin("finish_resize")
        with self._lock:
            # Same host: the one record changes flavor. Other host: this is the
            # destination's new copy (the source keeps its own until confirm).
            instance = self._adopt(migration, migration["new_flavor"])
            instance.flavor = dict(migration["new_flavor"])
            instance.power_state = RUNNING if migration.get("power_on", True) else SHUTOFF
            instance.migration_uuid = migration["uuid"]

    def confirm_migration(self, migration: base.Migration) -> None:
        self._begin("confirm")
        with self._lock:
            if _same_host(migration):
                instance = self._instances.get(migration["server_uuid"])
                if instance is not None:
                    instance.migration_uuid = None
            else:
                self._instances.pop(migration["server_uuid"], None)

    def revert(self, migration: base.Migration) -> None:
        self._begin("revert")
        if _same_host(migration):
            # NOTE: the one copy is also the source's; finish_revert restores it.
            return
        with self._lock:
            self._instances.pop(migration["server_uuid"], None)

    def finish_revert(self, migration: base.Migration) -> None:
        self._begin("revert")
        with self._lock:
            instance = self._adopt(migration, migration["old_flavor"])
            instance.flavor = dict(migration["old_flavor"])
            instance.power_state = RUNNING if migration.get("power_on", True) else SHUTOFF
            instance.migration_uuid = None

    def pre_live_migration(self, migration: base.Migration) -> None:
        self._begin("pre_live_migration")
        with self._lock:
            # NOTE: the destination's copy, paused until the hand-over ends.
            instance = self._adopt(migration, migration["old_flavor"])
            instance.migration_uuid = migration["uuid"]

    def live_migration(self, migration: base.Migration) -> None:
        self._begin("live_migration")
        with self._lock:
            self._adopt(migration, migration["old_flavor"]).migration_uuid = migration["uuid"]
        deadline = time.monotonic() + self.live_migration_s
        with self._live_changed:
            while True:
                asked = self._live_requests.get(migration["uuid"])
                left = deadline - time.monotonic()
                if asked == "abort":
                    raise exception.LiveMigrationAborted(
                        migration_id=migration["uuid"], host=self.host
                    )
                if asked == "complete" or left <= 0:
                    return
                self._live_changed.wait(left)

    def live_migration_abort(self, migration_uuid: str) -> None:
        with self._live_changed:
            self._live_requests[migration_uuid] = "abort"
            self._live_changed.notify_all()

    def live_migration_force_complete(self, migration_uuid: str) -> None:
        with self._live_changed:
            self._live_requests.setdefault(migration_uuid, "complete")
            self._live_changed.notify_all()

    def post_live_migration(self, migration: base.Migration) -> None:
        self._begin("post_live_migration")
        with self._lock:
            self._instances.pop(migration["server_uuid"], None)

    def post_live_migration_at_destination(self, migration: base.Migration) -> None:
        with self._lock:
            instance = self._adopt(migration, migration["old_flavor"])
            instance.migration_uuid = None
            instance.power_state = RUNNING

    def rollback_live_migration_at_destination(self, migration: base.Migration) -> None:
        with self._lock:
            instance = self._instances.get(migration["server_uuid"])
            if instance is not None and instance.migration_uuid == migration["uuid"]:
                del self._instances[migration["server_uuid"]]

    def rollback_live_migration_at_source(self, migration: base.Migration) -> None:
        """The hand-over stopped: the source's copy runs on, as before."""
        with self._lock:
            instance = self._instances.get(migration["server_uuid"])
            if instance is not None and instance.migration_uuid == migration["uuid"]:
                instance.migration_uuid = None

    def rebuild(self, migration: base.Migration) -> None:
        self._begin("rebuild")
        with self._lock:
            instance = self._adopt(migration, migration["old_flavor"])
            instance.migration_uuid = None
            instance.power_state = RUNNING if migration.get("power_on", True) else SHUTOFF

    def power_off(self, server: base.Server) -> None:
        self._set_power(server, "stop", SHUTOFF)

    def power_on(self, server: base.Server) -> None:
        self._set_power(server, "start", RUNNING)

    def _set_power(self, server: base.Server, operation: str, power_state: str) -> None:
        self._begin(operation)
        with self._lock:
            instance = self._instances.get(server["uuid"])
            if instance is None:
                # NOTE: a host restarted since the spawn (the fake keeps its
                # servers in memory): the server is adopted, as a resize does.
                LOG.info("Server %s unknown on %s: adopting it", server["uuid"], self.host)
                instance = self._instances[server["uuid"]] = FakeInstance(
                    uuid=server["uuid"],
                    name=server.get("name", ""),
                    flavor=dict(server["flavor"]),
                )
            instance.power_state = power_state

    def shelve(self, server: base.Server) -> None:
        # NOTE: the fake has no images: a shelve makes no snapshot.
        self._set_power(server, "shelve", SHUTOFF)

    def shelve_offload(self, server: base.Server) -> None:
        self._begin("shelve_offload")
        with self._lock:
            if self._instances.pop(server["uuid"], None) is None:
                LOG.info("Server %s is not on %s; nothing to offload", server["uuid"], self.host)

    def unshelve(self, server: base.Server) -> None:
        self._begin("unshelve")
        with self._lock:
            instance = self._instances.get(server["uuid"])
            if instance is None:
                # NOTE: offloaded: spawned here from the message.
                instance = self._instances[server["uuid"]] = FakeInstance(
                    uuid=server["uuid"],
                    name=server.get("name", ""),
                    flavor=dict(server["flavor"]),
                )
            instance.power_state = RUNNING

    def destroy(self, server_uuid: str) -> None:
        with self._lock:
            if self._instances.pop(server_uuid, None) is None:
                LOG.info("Server %s is not on %s; nothing to destroy", server_uuid, self.host)

    # -- helpers --------------------------------------------------------------------

    def _begin(self, operation: str) -> None:
        """Take the configured time, then fail if this operation is to fail."""
        if self.delay_s:
            time.sleep(self.delay_s)
        if operation in self.fail_on:
            raise exception.InjectedFailure(operation=operation, host=self.host)

    def _adopt(self, migration: base.Migration, flavor: dict[str, Any]) -> FakeInstance:
        """The server's record here, created from ``migration`` if missing.

        Call with the lock held.
        """
        uuid = migration["server_uuid"]
        instance = self._instances.get(uuid)
        if instance is None:
            LOG.info(
                "Server %s unknown on %s: adopting it for migration %s",
                uuid,
                self.host,
                migration["uuid"],
            )
            instance = self._instances[uuid] = FakeInstance(
                uuid=uuid, name="", flavor=dict(flavor)
            )
        return instance


def _same_host(migration: base.Migration) -> bool:
    return migration["source_host"] == migration["dest_host"]
