"""Moving a host's classes, and what its consumers hold of them, between its providers.

A host's driver says which of its classes its children hold (NUMA cells hold
VCPU and MEMORY_MB, a device child its devices); the root holds the rest of
``[compute]``'s. When that changes under servers that hold the classes (a
flat host re-described with NUMA cells, cells removed again, a class handed
from one child to another), Placement refuses to take the inventory from a
provider that is allocated to: the inventories and the allocations must
change together, in ONE ``POST /reshaper`` (microversion 1.30).

:func:`plan_and_reshape` does that from a fresh read of the tree:

* the providers it may change are the root and the children of ours (with
  the deployment's child trait): a child another service created is never
  written, and a class such a child holds is not put back on the root when
  the root lacks it (the tree was re-described by someone else; doubling the
  host's capacity would be wrong);
* every consumer holding a class on one of our providers that will no longer
  hold it has that part moved to the providers of ours that will (all of its
  classes to one provider when one has room: a guest cell stays whole; else
  class by class, most room first); what it holds elsewhere is carried over
  unchanged, with its project, user, type and consumer generation;
* children the driver adds are created (with their traits) before the call;
  children it dropped are emptied by it (the tree refresh then deletes them).

It is safe to run twice and late: the next run reads the tree as Placement
holds it, and finds nothing to move once the reshape landed. A provider or
consumer written meanwhile (a generation conflict) makes it read everything
again and retry.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from oslo_log import log as logging

from resize_sched import exception
from resize_sched import resources as rs
from resize_sched.compute.tree import Child, _same_inventory
from resize_sched.placement.client import INSTANCE, ConsumerWrite, PlacementClient

LOG = logging.getLogger(__name__)

#: Fresh reads and re-sends after a generation conflict.
RESHAPE_CONFLICT_RETRIES = 5

Records = dict[str, dict[str, Any]]


@dataclass
class _Provider:
    uuid: str
    name: str
    generation: int
    inventory: Records
    ours: bool


def _capacity(record: Mapping[str, Any]) -> int:
    return int((record["total"] - record.get("reserved", 0)) * record.get("allocation_ratio", 1.0))


def plan_and_reshape(
    client: PlacementClient,
    host: str,
    root: str,
    root_inventory: Records,
    children: Iterable[Child],
    *,
    mark: str,
) -> tuple[Records, bool]:
    """Reshape the tree of ``root`` if a class its consumers hold moves.

    :param root_inventory: what the root should hold (``[compute]`` less the
        classes the driver's children hold).
    :param children: the driver's children.
    :param mark: this deployment's child trait.
    :returns: (what the root holds once done: ``root_inventory`` less the
        classes a child not ours holds and the root lacks; whether a reshape
        was written). Nothing written: the plain inventory and tree updates
        can do the rest (no consumer holds a class that moves).
    :raises ClaimRefused: the providers that will hold a class have no room
        for what is held of it; nothing was written.
    :raises PlacementError: Placement refused or failed.
    """
    children = list(children)
    for attempt in range(RESHAPE_CONFLICT_RETRIES + 1):
        try:
            return _attempt(client, host, root, root_inventory, children, mark)
        except exception.ConsumerGenerationConflict:
            if attempt == RESHAPE_CONFLICT_RETRIES:
                raise
            LOG.info("Reshape of %s: written meanwhile; reading the tree again", host)
    raise AssertionError("unreachable")  # pragma: no cover


def _read_tree(client: PlacementClient, root: str, mark: str) -> dict[str, _Provider]:
    tree: dict[str, _Provider] = {}
    for rp in client.list_resource_providers(in_tree=root):
        ours = rp["uuid"] == root or mark in client.get_traits(rp["uuid"])[0]
        inventory, generation = client.get_inventories(rp["uuid"])
        tree[rp["uuid"]] = _Provider(rp["uuid"], rp["name"], generation, inventory, ours)
    return tree


def _attempt(
    client: PlacementClient,
    host: str,
    root: str,
    root_inventory: Records,
    children: list[Child],
    mark: str,
) -> tuple[Records, bool]:
    tree = _read_tree(client, root, mark)
    foreign = {rc for p in tree.values() if not p.ours for rc in p.inventory}
    held_by_root = set(tree[root].inventory) if root in tree else set()
    effective = {
        rc: r for rc, r in root_inventory.items() if rc in held_by_root or rc not in foreign
    }
    wanted_children = {f"{host}_{child.name}": child for child in children}
    by_name = {p.name: p for p in tree.values() if p.ours and p.uuid != root}
    wanted: dict[str, Records] = {root: effective}
    for name, provider in by_name.items():
        child = wanted_children.get(name)
        wanted[provider.uuid] = rs.inventory_records(child.inventory) if child else {}
    losing = {
        p.uuid: set(p.inventory) - set(wanted[p.uuid]) for p in tree.values() if p.uuid in wanted
    }
    held = {
        uuid: client.get_provider_allocations(uuid) for uuid, classes in losing.items() if classes
    }
    movers: dict[str, rs.Resources] = {}
    for uuid, consumers in held.items():
        for consumer, resources in consumers.items():
            for rc, amount in resources.items():
                if rc in losing[uuid] and amount:
                    moving = movers.setdefault(consumer, {})
                    moving[rc] = moving.get(rc, 0) + amount
    if not movers:
        return effective, False
    # NOTE: the children to add exist before the one call that fills them.
    taken = {p.name for p in tree.values() if not p.ours}
    for name, child in wanted_children.items():
        if name in by_name or name in taken:
            continue  # NOTE: another service's child of that name is never ours
        created = client.create_resource_provider(name, parent_provider_uuid=root)
        generation = client.put_traits(
            created["uuid"], frozenset(child.traits) | {mark}, created["generation"]
        )
        LOG.info("Created child provider %s (%s) of %s", name, created["uuid"], host)
        tree[created["uuid"]] = _Provider(created["uuid"], name, generation, {}, True)
        wanted[created["uuid"]] = rs.inventory_records(child.inventory)
    free = _free_after(client, tree, wanted, held, losing)
    order = [root] + sorted((u for u in wanted if u != root), key=lambda u: tree[u].name)
    writes: dict[str, ConsumerWrite] = {}
    for consumer in sorted(movers):
        current = client.get_allocations(consumer)
        if not current.allocations:
            continue  # NOTE: given back meanwhile: nothing to move
        target = {
            rp: {rc: n for rc, n in res.items() if rc not in losing.get(rp, ())}
            for rp, res in current.allocations.items()
        }
        # NOTE: what moves is read with the consumer's generation, not from
        # the providers' listing read before it.
        moving = rs.total(
            {
                rp: {rc: n for rc, n in res.items() if rc in losing.get(rp, ())}
                for rp, res in current.allocations.items()
            }
        )
        placed = _place(moving, free, order, host) if moving else {}
        target = rs.normalize_allocations(rs.add_allocations(target, placed))
        writes[consumer] = ConsumerWrite(
            target,
            current.project_id or "",
            current.user_id or "",
            current.generation,
            current.consumer_type or INSTANCE,
        )
    inventories = {
        uuid: (records, tree[uuid].generation)
        for uuid, records in wanted.items()
        if not _same_inventory(tree[uuid].inventory, records)
    }
    client.reshape(inventories, writes)
    LOG.info(
        "Reshaped the providers of %s: %d consumer(s) moved to the providers that now "
        "hold their classes",
        host,
        len(writes),
    )
    return effective, True


def _free_after(
    client: PlacementClient,
    tree: Mapping[str, _Provider],
    wanted: Mapping[str, Records],
    held: Mapping[str, Mapping[str, rs.Resources]],
    losing: Mapping[str, set[str]],
) -> dict[str, dict[str, int]]:
    """Room per provider and class once the reshape's inventories are set,
    before any mover lands (what stays where it is counted)."""
    free: dict[str, dict[str, int]] = {}
    for uuid, records in wanted.items():
        if not records:
            continue
        consumers = held.get(uuid)
        if consumers is None and tree[uuid].inventory:
            consumers = client.get_provider_allocations(uuid)
        used = rs.total(consumers or {})
        free[uuid] = {
            rc: _capacity(record) - (0 if rc in losing.get(uuid, ()) else used.get(rc, 0))
            for rc, record in records.items()
        }
    return free


def _place(
    moving: Mapping[str, int], free: dict[str, dict[str, int]], order: list[str], host: str
) -> rs.Allocations:
    """Where ``moving`` goes: one provider holding all of it with room (the
    one left with the most room, as a share of what it had, in its tightest
    class), else class by class, most room first; ``free`` is reduced by
    what is placed.

    :raises ClaimRefused: no room for some of it.
    """
    classes = sorted(moving)
    whole = [
        rp for rp in order if all(free.get(rp, {}).get(rc, -1) >= moving[rc] for rc in classes)
    ]
    if whole:
        best = max(
            whole,
            key=lambda rp: min(
                (free[rp][rc] - moving[rc]) / max(free[rp][rc], 1) for rc in classes
            ),
        )
        for rc in classes:
            free[best][rc] -= moving[rc]
        return {best: dict(moving)}
    placed: rs.Allocations = {}
    for rc in classes:
        left = moving[rc]
        for rp in sorted(order, key=lambda rp: -free.get(rp, {}).get(rc, 0)):
            room = free.get(rp, {}).get(rc, 0)
            take = min(room, left)
            if take > 0:
                placed.setdefault(rp, {})[rc] = take
                free[rp][rc] -= take
                left -= take
            if not left:
                break
        if left:
            raise exception.ClaimRefused(
                detail=f"reshape of {host}: no room for {left} {rc} on the providers that "
                "will hold it"
            )
    return placed
