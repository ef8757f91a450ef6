"""The compute service: one host's resource provider, RPC server and driver.

On start the service finds (by name, ``[DEFAULT] host``) or creates its
resource provider in Placement, marks it as this deployment's with the owner
trait (``CUSTOM_RESIZE_SCHED_<[placement] deployment_name>``) and sets the
provider's inventory from ``[compute]``; then it serves the compute RPC API
on topic ``compute`` with ``server=<host>``; every ``[compute]
update_interval`` seconds a background thread puts the mark and the inventory
right again if they drifted (or re-creates the provider if it was deleted).
The root's inventory is ``[compute]``'s less the classes the driver's
children hold (NUMA cells hold VCPU and MEMORY_MB); when that layout changes
under allocations, the service reshapes the host in one ``POST /reshaper``
(:mod:`resize_sched.compute.reshape`) and reports at once.

The service also reports to the conductor (conductor RPC API 1.3,
``compute_report``) at start and every ``[DEFAULT] report_interval``
seconds: its host and node name, its provider's uuid, the inventory it set
there and the provider generation it last read or wrote it at, the child
providers it keeps under the root (see :mod:`resize_sched.compute.tree`;
``{}`` on a flat host), and the compute RPC version it speaks. That report
is its heartbeat (``os-services`` tells up from down by it) and keeps its
compute node row current; a conductor capped at 1.2 is sent the report
without the children, one capped below 1.2 none.

A provider of that name already marked as someone else's (another
deployment's owner trait, or Nova's ``COMPUTE_NODE``) is never taken over:
the service refuses to start. An unmarked one, as an older resize_sched left
it, is marked and adopted. Marking keeps the provider's other traits, among
them ``COMPUTE_STATUS_DISABLED`` (see :mod:`resize_sched.scheduler.hosts`).

Nothing here is global: the all-in-one deployment runs several services, each
with its own ``ConfigOpts`` and host, in one process on one shared transport.
"""

import threading
import time
from typing import Any

import oslo_messaging as messaging
from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import exception, rpc
from resize_sched.compute import reshape as provider_reshape
from resize_sched.compute import rpcapi as compute_rpcapi
from resize_sched.compute import tree as provider_tree
from resize_sched.compute.driver import base as driver_base
from resize_sched.compute.driver.fake import FakeDriver
from resize_sched.compute.inventory import (
    describe_inventory,
    inventory_from_conf,
    inventory_matches,
)
from resize_sched.compute.manager import ComputeManager
from resize_sched.conductor import rpcapi as conductor_rpcapi
from resize_sched.context import admin_context
from resize_sched.placement.client import (
    NOVA_COMPUTE_TRAIT,
    OWNER_TRAIT_PREFIX,
    PlacementClient,
    owner_trait,
)

LOG = logging.getLogger(__name__)

#: Times an inventory write is re-read and re-sent after a generation conflict
#: (someone else changed the provider in between: traits, aggregates...).
INVENTORY_CONFLICT_RETRIES = 5


class ComputeService:
    """One compute host: its provider in Placement, its RPC server, its driver.

    :param conf: a parsed ConfigOpts with resize_sched's options registered;
        ``[DEFAULT] host`` names the host.
    :param transport: the RPC transport to serve on; built from
        ``[DEFAULT] transport_url`` (and cleaned up by :meth:`stop`) when None.
        In-process deployments must share one transport: ``fake://``
        transports do not see each other.
    :param placement: the Placement client; built from ``[placement]`` when None.
    :param driver: the hypervisor driver; a :class:`FakeDriver` from
        ``[fake_driver]`` when None.
    :raises ConfigurationError: ``[compute]`` is inconsistent.
    :raises ValueError: ``[fake_driver] fail_on`` has a malformed item.
    """

    def __init__(
        self,
        conf: cfg.ConfigOpts,
        *,
        transport: messaging.Transport | None = None,
        placement: PlacementClient | None = None,
        driver: driver_base.ComputeDriver | None = None,
    ) -> None:
        self.conf = conf
        self.host: str = conf.host
        self.owner_trait = owner_trait(conf.placement.deployment_name)
        self._configured = inventory_from_conf(conf)
        self.driver = driver if driver is not None else FakeDriver.from_conf(conf)
        #: Classes the root lacks and a child of another service holds: not
        #: put back on the root (see :mod:`resize_sched.compute.reshape`).
        self._foreign_classes: frozenset[str] = frozenset()
        #: The root's inventory: ``[compute]``'s, less the classes the
        #: driver's children hold (NUMA cells hold VCPU and MEMORY_MB).
        self.inventory = self._root_inventory()
        #: A reshape emptied children: the next tree refresh looks for them.
        self._prune_children = False
        #: A reshape moved allocations since the last report that was sent.
        self._reshaped_unreported = False
        self.placement = placement
        self.provider_uuid: str | None = None
        #: The provider generation the inventory was last read or written at.
        self.provider_generation: int | None = None
        #: The children of ours under the provider after the last tree
        #: refresh: uuid -> {"name", "inventory", "traits"}; empty when flat.
        self.children: dict[str, dict[str, Any]] = {}
        self._conductor: conductor_rpcapi.ConductorAPI | None = None
        self._transport = transport
        self._owns_transport = transport is None
        self._rpc_server: messaging.MessageHandlingServer | None = None
        self._stopping = threading.Event()
        self._refresher: threading.Thread | None = None

    def __enter__(self) -> "ComputeService":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        """Serve RPC, register with Placement, then start the refresher.

        NOTE: the RPC server (and so its queue) exists before the provider
        does: the scheduler can only pick a host Placement knows, so no message
        for this host can arrive before anyone listens for it.

        :raises PlacementError: Placement refused or could not be reached.
        :raises ConfigurationError: the provider named ``[DEFAULT] host`` is
            someone else's.
        """
        if self.placement is None:
            self.placement = PlacementClient.from_conf(self.conf)
        if self._transport is None:
            self._transport = rpc.get_transport(self.conf)
        self._conductor = conductor_rpcapi.ConductorAPI(self.conf, self._transport)
        manager = ComputeManager(
            self.host,
            self.driver,
            self._conductor,
            compute_rpcapi.ComputeAPI(self.conf, self._transport),
        )
        target = messaging.Target(topic=compute_rpcapi.TOPIC, server=self.host)
        server = rpc.get_server(self._transport, target, [manager])
        server.start()
        self._rpc_server = server
        try:
            self.refresh_inventory()
            self.refresh_tree(at_start=True)
        except Exception:
            self.stop()
            raise
        self.report()
        self._stopping.clear()
        self._refresher = threading.Thread(
            target=self._refresh_loop,
            args=(self.conf.compute.update_interval, self.conf.report_interval),
            name=f"compute-inventory-{self.host}",
            daemon=True,
        )
        self._refresher.start()
        LOG.info("Compute host %s serving as resource provider %s", self.host, self.provider_uuid)

    def stop(self) -> None:
        """Stop serving (waiting for messages in progress) and the refresher.

        Safe to call more than once, and after a failed :meth:`start`.
        """
        self._stopping.set()
        if self._rpc_server is not None:
            self._rpc_server.stop()
            self._rpc_server.wait()
            self._rpc_server = None
        if self._refresher is not None:
            self._refresher.join()
            self._refresher = None
        if self._owns_transport and self._transport is not None:
            self._transport.cleanup()
            self._transport = None
        LOG.info("Compute host %s stopped", self.host)

    # -- Placement --------------------------------------------------------------------

    def refresh_inventory(self) -> bool:
        """Make this host's provider exist, marked ours, with exactly the configured inventory.

        :returns: whether the inventory was written.
        :raises PlacementError: Placement refused or could not be reached.
        :raises ConfigurationError: the provider named ``[DEFAULT] host`` is
            someone else's.
        """
        assert self.placement is not None, "start() builds the client"
        self.inventory = self._root_inventory()
        known: tuple[dict[str, dict[str, Any]], int] | None = None
        reshaped = False
        try:
            if self.provider_uuid is None:
                provider, created = self._find_or_create_provider()
                self.provider_uuid = provider["uuid"]
                if created:  # a new provider has no traits and no inventory
                    generation = self.placement.put_traits(
                        self.provider_uuid, [self.owner_trait], provider["generation"]
                    )
                    known = ({}, generation)
                else:
                    self._mark_owned(refuse_foreign=True)
            else:
                self._mark_owned(refuse_foreign=False)
        except exception.PlacementNotFound:
            return self._register_again()
        for attempt in range(INVENTORY_CONFLICT_RETRIES + 1):
            try:
                current, generation = known or self.placement.get_inventories(self.provider_uuid)
            except exception.PlacementNotFound:
                return self._register_again()
            known = None
            if inventory_matches(current, self.inventory):
                self.provider_generation = generation
                return reshaped
            # NOTE: a root with no inventory (just registered) has nothing
            # allocated to move: it costs no tree read.
            if current and current.keys() != self.inventory.keys() and not reshaped:
                reshaped = self._reshape()
                if reshaped:
                    continue  # NOTE: read the root back at its new generation
                if inventory_matches(current, self.inventory):
                    self.provider_generation = generation
                    return False
            try:
                self.provider_generation = self.placement.set_inventory(
                    self.provider_uuid, self.inventory, generation
                )
            except exception.ConsumerGenerationConflict:
                if attempt == INVENTORY_CONFLICT_RETRIES:
                    raise
                LOG.debug("Provider %s changed meanwhile; re-reading it", self.provider_uuid)
                continue
            LOG.info(
                "Set the inventory of %s (%s): %s",
                self.host,
                self.provider_uuid,
                describe_inventory(self.inventory),
            )
            return True
        raise AssertionError("unreachable")  # pragma: no cover

    def _root_inventory(self) -> dict[str, dict[str, Any]]:
        children = {rc for child in self.driver.provider_tree() for rc in child.inventory}
        return {
            rc: record
            for rc, record in self._configured.items()
            if rc not in children and rc not in self._foreign_classes
        }

    def _reshape(self) -> bool:
        """The classes the root holds change: move what is held of them (see
        :mod:`resize_sched.compute.reshape`), and learn which of them a child
        of another service holds.

        :returns: whether a reshape was written.
        """
        assert self.placement is not None and self.provider_uuid is not None
        self._foreign_classes = frozenset()
        wanted = self._root_inventory()
        effective, reshaped = provider_reshape.plan_and_reshape(
            self.placement,
            self.host,
            self.provider_uuid,
            wanted,
            self.driver.provider_tree(),
            mark=provider_tree.child_trait(self.conf.placement.deployment_name),
        )
        self._foreign_classes = frozenset(wanted) - frozenset(effective)
        if self._foreign_classes:
            LOG.warning(
                "Compute host %s: %s held by a child provider another service created; "
                "not put back on the root",
                self.host,
                ", ".join(sorted(self._foreign_classes)),
            )
        self.inventory = effective
        # NOTE: the tree changed: the next refresh looks for children to drop
        # even on a host that is flat now.
        self._prune_children = True
        self._reshaped_unreported = self._reshaped_unreported or reshaped
        return reshaped

    def refresh_tree(self, *, at_start: bool = False) -> int:
        """Make the host's child providers and aggregates match its driver and
        ``[compute] sharing_aggregates`` (see :mod:`resize_sched.compute.tree`).

        A flat host (no children, no aggregates) costs nothing, except once
        at start, when children it created earlier are looked for and removed.

        :returns: how many providers were created, changed or deleted.
        :raises PlacementError: Placement refused or could not be reached.
        """
        assert self.placement is not None and self.provider_uuid is not None
        children = self.driver.provider_tree()
        aggregates = self.conf.compute.sharing_aggregates
        at_start, self._prune_children = at_start or self._prune_children, False
        if not (children or aggregates or at_start):
            return 0
        owned: dict[str, dict[str, Any]] = {}
        update = {
            "mark": provider_tree.child_trait(self.conf.placement.deployment_name),
            "aggregates": aggregates,
            "owned": owned,
        }
        try:
            changes = provider_tree.update_provider_tree(
                self.placement, self.host, self.provider_uuid, children, **update
            )
        except exception.PlacementConflict as exc:
            # NOTE: a child's class moves while allocated to (the root's
            # classes did not change, so the inventory check did not see it).
            if isinstance(exc, exception.ConsumerGenerationConflict) or not self._reshape():
                raise
            owned.clear()
            changes = 1 + provider_tree.update_provider_tree(
                self.placement, self.host, self.provider_uuid, children, **update
            )
        wanted = {f"{self.host}_{child.name}" for child in children}
        held = set(self.inventory) | {rc for child in children for rc in child.inventory}
        stranded = [
            child
            for child in owned.values()
            if child["name"] not in wanted and held & set(child["inventory"])
        ]
        # NOTE: a dropped device no provider takes over (its class is gone
        # with it) stays until its allocations are given back, as before.
        if stranded and self._reshape():
            # NOTE: a child the driver dropped is still allocated to: what
            # it holds moved to the providers that hold its classes now.
            owned.clear()
            changes += 1 + provider_tree.update_provider_tree(
                self.placement, self.host, self.provider_uuid, children, **update
            )
        self.children = owned
        return changes

    def _register_again(self) -> bool:
        LOG.warning(
            "Resource provider %s of %s is gone; registering again", self.provider_uuid, self.host
        )
        self.provider_uuid = None
        return self.refresh_inventory()

    def _mark_owned(self, *, refuse_foreign: bool) -> None:
        """Put the owner trait on the provider if it lacks it, keeping its other traits.

        :param refuse_foreign: raise when the provider is marked as someone
            else's (registration); otherwise only warn (a later refresh).
        :raises ConfigurationError: it is someone else's and ``refuse_foreign``.
        """
        assert self.placement is not None and self.provider_uuid is not None
        traits, _ = self.placement.get_traits(self.provider_uuid)
        foreign = sorted(t for t in traits if _foreign_mark(t, self.owner_trait))
        if foreign:
            message = (
                f"resource provider {self.provider_uuid} named {self.host} is marked "
                f"{', '.join(foreign)}: another deployment's or service's host. Give "
                "this host a [DEFAULT] host no one else registers, or check "
                "[placement] deployment_name"
            )
            if refuse_foreign:
                self.provider_uuid = None
                raise exception.ConfigurationError(reason=message)
            LOG.warning("Compute host %s: %s", self.host, message)
        if self.owner_trait in traits:
            return
        if self.placement.update_traits(self.provider_uuid, add=[self.owner_trait]):
            LOG.info(
                "Marked resource provider %s of %s with %s",
                self.provider_uuid,
                self.host,
                self.owner_trait,
            )

    def _find_or_create_provider(self) -> tuple[dict[str, Any], bool]:
        assert self.placement is not None
        found = self.placement.list_resource_providers(name=self.host)
        if found:
            LOG.debug("Found resource provider %s for %s", found[0]["uuid"], self.host)
            return found[0], False
        try:
            provider = self.placement.create_resource_provider(self.host)
        except exception.PlacementConflict:
            # NOTE: another process registered the same name in between.
            found = self.placement.list_resource_providers(name=self.host)
            if not found:
                raise
            return found[0], False
        LOG.info("Created resource provider %s for %s", provider["uuid"], self.host)
        return provider, True

    # -- reports ----------------------------------------------------------------------

    def report(self) -> bool:
        """Send the conductor this host's report (see the module doc).

        :returns: whether one was sent (False: no provider yet, a conductor
            capped below 1.2, or the transport refused; logged).
        """
        if self._conductor is None or self.provider_uuid is None:
            return False
        try:
            return self._conductor.compute_report(
                admin_context(),
                host=self.host,
                node=self.host,
                rp_uuid=self.provider_uuid,
                inventory=self.inventory,
                provider_generation=self.provider_generation,
                service_version=compute_rpcapi.VERSION,
                children=self.children,
            )
        except messaging.MessagingException as exc:
            LOG.warning("Could not report %s to the conductor: %s", self.host, exc)
            return False

    def _refresh_loop(self, update_interval: float, report_interval: float) -> None:
        """Refresh the inventory every ``update_interval`` seconds (never when 0)
        and report every ``report_interval`` seconds, both from one thread."""
        tick = min(report_interval, update_interval) if update_interval > 0 else report_interval
        last_refresh = last_report = time.monotonic()
        while not self._stopping.wait(tick):
            now = time.monotonic()
            if update_interval > 0 and now - last_refresh >= update_interval:
                last_refresh = now
                try:
                    self.refresh_inventory()
                    self.refresh_tree()
                    if self._reshaped_unreported:
                        # NOTE: the conductor's records of the servers moved
                        # must follow now, not at the next report.
                        last_report = 0.0
                except exception.PlacementError as exc:
                    LOG.warning("Could not refresh the inventory of %s: %s", self.host, exc)
                except Exception:
                    LOG.exception("Inventory refresh of %s failed", self.host)
            if now - last_report >= report_interval:
                last_report = now
                try:
                    if self.report():
                        self._reshaped_unreported = False
                except Exception:
                    LOG.exception("Report of %s failed", self.host)


def _foreign_mark(trait: str, own: str) -> bool:
    """Whether ``trait`` marks a provider as someone else's than ``own``'s."""
    return trait != own and (trait.startswith(OWNER_TRAIT_PREFIX) or trait == NOVA_COMPUTE_TRAIT)
