"""Hosts that are trees of providers, built through Placement's API as the
services that own each part would build them.

Each builder adds the root through :meth:`Cloud.add_host` (our compute
service's provider, with the owner trait) and the rest as another service
would: a device child under the root (a vGPU or PCI device, Nova's own
``update_provider_tree`` or a device service), NUMA children, a sharing disk
pool in an aggregate with the host, or a child some other service (Neutron)
owns. Every provider is registered in ``cloud.hosts`` (children as
``<host>/<child>``), so the invariant checker compares each one's usage with
what our consumers hold.
"""

from __future__ import annotations

import uuid
from typing import Any

from resize_sched import resources as rs
from resize_sched.placement.client import ConsumerWrite, child_trait
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT

VGPU = "VGPU"
ACCELERATOR = "FPGA"
PCI_CLASS = "CUSTOM_PCI_10DE_1EB8"
BANDWIDTH = "NET_BW_EGR_KILOBIT_PER_SEC"
SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"

#: A topology's name -> the extra specs a flavor needs to use its child.
DEVICE_SPECS = {
    "vgpu": {"resources:VGPU": "1"},
    "pci": {f"resources:{PCI_CLASS}": "1"},
}


def add_child(
    cloud: Any,
    host: str,
    name: str,
    inventory: dict[str, Any],
    traits: tuple[str, ...] = (),
    *,
    ours: bool = False,
) -> str:
    """A child provider under ``host``'s root, made through Placement's API:
    by our compute service (``ours``: it carries our child trait) or by
    another service."""
    if ours:
        traits = (*traits, child_trait(DEFAULT_OWNER_TRAIT))
    client = cloud.observer
    child = client.create_resource_provider(
        f"{host}_{name}", parent_provider_uuid=cloud.hosts[host]
    )["uuid"]
    generation = client.set_inventory(child, inventory)
    if traits:
        client.put_traits(child, traits, generation)
    cloud.hosts[f"{host}/{name}"] = child
    return child


def add_sharing_pool(cloud: Any, name: str, disk_gb: int, *hosts: str) -> str:
    """A DISK_GB pool shared with ``hosts`` through one aggregate."""
    client = cloud.observer
    pool = client.create_resource_provider(name)["uuid"]
    generation = client.set_inventory(pool, {"DISK_GB": disk_gb})
    client.put_traits(pool, [SHARING_TRAIT], generation)
    aggregate = str(uuid.uuid4())
    for rp in (pool, *(cloud.hosts[h] for h in hosts)):
        _, gen = client.get_aggregates(rp)
        client.set_aggregates(rp, [aggregate], gen)
    cloud.hosts[name] = pool
    return pool


def add_tree_host(
    cloud: Any,
    topology: str,
    name: str,
    *,
    vcpus: int,
    memory_mb: int,
    disk_gb: int,
    devices: int = 1,
    ours: bool = True,
) -> str:
    """Add host ``name`` shaped as ``topology``; return its root provider.

    ``vgpu`` / ``pci``: a flat root and one device child with ``devices``
    units; ``numa``: a root with the disk and two NUMA children that split
    the VCPU and MEMORY_MB; ``sharing``: a root with no disk, its disk from a
    pool (``pool``, created once, shared with every such host); ``foreign``:
    a flat root with a bandwidth child another service owns.
    """
    if topology == "numa":
        root = cloud.add_host(name, vcpus=0, memory_mb=0, disk_gb=disk_gb)
        for cell in (0, 1):
            add_child(
                cloud,
                name,
                f"numa{cell}",
                {"VCPU": vcpus // 2, "MEMORY_MB": memory_mb // 2},
                ("HW_NUMA_ROOT",),
                ours=ours,
            )
        return root
    if topology == "sharing":
        root = cloud.add_host(name, vcpus=vcpus, memory_mb=memory_mb, disk_gb=0)
        if "pool" not in cloud.hosts:
            add_sharing_pool(cloud, "pool", disk_gb, name)
        else:
            client = cloud.observer
            aggregates, _ = client.get_aggregates(cloud.hosts["pool"])
            _, gen = client.get_aggregates(root)
            client.set_aggregates(root, aggregates, gen)
        return root
    root = cloud.add_host(name, vcpus=vcpus, memory_mb=memory_mb, disk_gb=disk_gb)
    if topology == "vgpu":
        add_child(cloud, name, "pgpu0", {VGPU: devices}, ("CUSTOM_VGPU_A100",), ours=ours)
    elif topology == "pci":
        add_child(cloud, name, "pci0", {PCI_CLASS: devices}, ours=ours)
    elif topology == "foreign":
        add_child(cloud, name, "br-ex", {BANDWIDTH: 10000}, ("CUSTOM_PHYSNET_PUBLIC",))
    elif topology != "flat":
        raise ValueError(f"unknown topology {topology}")
    return root


def add_to_consumer(cloud: Any, consumer: str, provider: str, amounts: dict[str, int]) -> None:
    """Another service adds ``amounts`` on ``provider`` to one of our
    consumers, as Neutron does for a port's bandwidth and Cyborg for an
    accelerator: it reads the consumer, then writes it whole with what it
    read plus its own, at the consumer generation read. The checker then
    expects the consumer to keep it (``cloud.foreign``)."""
    held = cloud.observer.get_allocations(consumer)
    project_id, user_id = held.project_id, held.user_id
    if held.generation is None:
        # NOTE: before our claim: the server's project, as the port's.
        server = cloud.db.server_get(consumer)
        project_id, user_id = server.project_id, server.user_id
    cloud.observer.put_allocations(
        consumer,
        ConsumerWrite(
            rs.add_allocations(held.allocations, {provider: amounts}),
            project_id,
            user_id,
            held.generation,
            held.consumer_type or "INSTANCE",
        ),
    )
    theirs = cloud.foreign.setdefault(consumer, {})
    theirs[provider] = rs.add(theirs.get(provider, {}), amounts)


def neutron_port(cloud: Any, host: str, server: str, kbps: int = 1000) -> str:
    """Neutron's QoS port of ``server`` on ``host``: the OVS agent's bridge,
    a child of our root Neutron creates (once) with its own bandwidth
    inventory, then the port's bandwidth put on the server's consumer."""
    name = f"{host}/br-int"
    if name not in cloud.hosts:
        add_child(cloud, host, "br-int", {BANDWIDTH: 100000}, ("CUSTOM_PHYSNET_DATA",))
    add_to_consumer(cloud, server, cloud.hosts[name], {BANDWIDTH: kbps})
    return cloud.hosts[name]


def cyborg_accelerator(cloud: Any, host: str, server: str) -> str:
    """Cyborg's accelerator for ``server`` on ``host``: its own device
    provider (a child of our root, with a class no flavor of ours asks for),
    then one unit of it put on the server's consumer."""
    name = f"{host}/fpga0"
    if name not in cloud.hosts:
        add_child(cloud, host, "fpga0", {ACCELERATOR: 4}, ("CUSTOM_FPGA_INTEL",))
    add_to_consumer(cloud, server, cloud.hosts[name], {ACCELERATOR: 1})
    return cloud.hosts[name]
