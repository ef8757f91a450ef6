"""A compute host's provider tree, kept as Nova's ``update_provider_tree`` keeps it.

The hypervisor driver says which children the host has beside its own VCPU,
MEMORY_MB and DISK_GB (vGPUs, PCI devices, NUMA cells: see
:meth:`resize_sched.compute.driver.base.ComputeDriver.provider_tree`). The
compute service makes Placement match, under its root provider:

* each child of the driver's is a provider named ``<host>_<name>`` whose
  parent is the root, with exactly the inventory and traits the driver says
  (created when missing, updated when they drifted);
* each child the service created earlier and the driver no longer lists is
  deleted (a child still allocated to is left, and tried again at the next
  refresh: Placement refuses the delete);
* a child some other service created under the root (Neutron's bandwidth
  providers, Cyborg's devices) is never written to nor deleted, even one that
  happens to have a name we would give: ours carry the child trait of this
  deployment (:func:`child_trait`), theirs do not.

What the update leaves of the host's own children (uuid -> name, inventory
records and traits) is what the service reports to the conductor, which
records it as the compute node's ``children`` (``os-hypervisors`` and
``resize-sched-manage host show`` read it).

The owner trait stays on the root alone: the scheduler's ``root_required``
and every listing of our hosts read it there. With ``[compute]
sharing_aggregates`` the root also joins the aggregates of a shared disk
pool (its other aggregates are kept).
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from oslo_log import log as logging

from resize_sched import exception
from resize_sched import resources as rs
from resize_sched.placement import client as placement_client
from resize_sched.placement.client import PlacementClient

LOG = logging.getLogger(__name__)


def child_trait(deployment_name: str) -> str:
    """The trait our compute services put on the children they create.

    :param deployment_name: ``[placement] deployment_name``.
    """
    return placement_client.child_trait(placement_client.owner_trait(deployment_name))


@dataclass(frozen=True)
class Child:
    """One child provider as the driver describes it.

    :ivar name: the child's name under its host (the provider is named
        ``<host>_<name>``).
    :ivar inventory: class -> total.
    :ivar traits: the child's traits (the child trait is added to them).
    """

    name: str
    inventory: Mapping[str, int]
    traits: frozenset[str] = field(default_factory=frozenset)


def _same_inventory(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    if current.keys() != wanted.keys():
        return False
    return all(
        current[rc].get(key) == value
        for rc, record in wanted.items()
        for key, value in record.items()
        if key != "allocation_ratio"
    ) and all(
        abs(float(current[rc].get("allocation_ratio", 1.0)) - float(record["allocation_ratio"]))
        < 1e-6
        for rc, record in wanted.items()
    )


def _described(
    name: str, inventory: Mapping[str, Mapping[str, Any]], traits: Iterable[str]
) -> dict[str, Any]:
    """One child as the compute service reports it (JSON-ready)."""
    return {
        "name": name,
        "inventory": {rc: dict(record) for rc, record in inventory.items()},
        "traits": sorted(traits),
    }


def update_provider_tree(
    client: PlacementClient,
    host: str,
    root: str,
    children: Iterable[Child],
    *,
    mark: str,
    aggregates: Iterable[str] = (),
    owned: dict[str, dict[str, Any]] | None = None,
) -> int:
    """Make the children of ``root`` that are ours match ``children``.

    :param host: the host's name (children are named ``<host>_<name>``).
    :param root: the host's root provider.
    :param children: what the driver has.
    :param mark: this deployment's child trait.
    :param aggregates: aggregates the root must be in (kept beside its others).
    :param owned: when given, filled with the children of ours left under
        the root afterwards: uuid -> ``{"name", "inventory", "traits"}``
        (the provider's name, its inventory records, its traits sorted). A
        child the driver dropped whose delete Placement refused (still
        allocated) is among them: it still holds what it holds.
    :returns: how many providers were created, changed or deleted.
    :raises PlacementError: Placement failed (the next refresh tries again).
    """
    changes = 0
    if owned is None:
        owned = {}
    wanted = {f"{host}_{child.name}": child for child in children}
    present = {
        rp["name"]: rp for rp in client.list_resource_providers(in_tree=root) if rp["uuid"] != root
    }
    for name, child in wanted.items():
        rp = present.get(name)
        traits = frozenset(child.traits) | {mark}
        if rp is None:
            rp = client.create_resource_provider(name, parent_provider_uuid=root)
            LOG.info("Created child provider %s (%s) of %s", name, rp["uuid"], host)
            generation = client.set_inventory(
                rp["uuid"], rs.inventory_records(child.inventory), rp["generation"]
            )
            client.put_traits(rp["uuid"], traits, generation)
            owned[rp["uuid"]] = _described(name, rs.inventory_records(child.inventory), traits)
            changes += 1
            continue
        current_traits, generation = client.get_traits(rp["uuid"])
        if mark not in current_traits:
            LOG.warning(
                "Child provider %s of %s was not created by this deployment's compute "
                "service; it is left alone",
                name,
                host,
            )
            continue
        inventory, generation = client.get_inventories(rp["uuid"])
        if not _same_inventory(inventory, rs.inventory_records(child.inventory)):
            generation = client.set_inventory(
                rp["uuid"], rs.inventory_records(child.inventory), generation
            )
            changes += 1
        if current_traits != traits:
            client.put_traits(rp["uuid"], traits, generation)
            changes += 1
        owned[rp["uuid"]] = _described(name, rs.inventory_records(child.inventory), traits)
    for name, rp in present.items():
        if name in wanted:
            continue
        traits, _ = client.get_traits(rp["uuid"])
        if mark not in traits:
            continue  # another service's child: never ours to remove
        try:
            client.delete_resource_provider(rp["uuid"])
        except exception.PlacementConflict as exc:
            LOG.warning("Child provider %s of %s still in use; kept for now: %s", name, host, exc)
            try:
                inventory, _ = client.get_inventories(rp["uuid"])
            except exception.PlacementNotFound:
                continue
            owned[rp["uuid"]] = _described(name, inventory, traits)
            continue
        except exception.PlacementNotFound:
            continue
        LOG.info("Deleted child provider %s of %s: the host no longer has it", name, host)
        changes += 1
    wanted_aggregates = frozenset(aggregates)
    if wanted_aggregates:
        current, generation = client.get_aggregates(root)
        if not wanted_aggregates <= current:
            client.set_aggregates(root, current | wanted_aggregates, generation)
            LOG.info("Provider of %s joined aggregates %s", host, sorted(wanted_aggregates))
            changes += 1
    return changes
