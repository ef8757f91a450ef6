"""Heal and audit on trees: a server's device on our child and its disk on a
sharing pool are its own; a child another service put under our root is
never written to, never deleted and never reported orphaned."""

import uuid

from resize_sched.conductor import audit, heal
from resize_sched.placement.client import ConsumerWrite
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT
from tests.functional.trees.topology import (
    BANDWIDTH,
    DEVICE_SPECS,
    add_child,
    add_sharing_pool,
    add_tree_host,
)


def _provider(cloud, rp):
    """A provider as its owner set it: name, parent, inventory and traits."""
    found = cloud.observer.get_resource_provider(rp)
    return (
        found["name"],
        found["parent_provider_uuid"],
        cloud.observer.get_inventories(rp)[0],
        cloud.observer.get_traits(rp)[0],
    )


def _cloud(make_cloud):
    cloud = make_cloud("max_flavor")
    add_tree_host(cloud, "vgpu", "host1", vcpus=4, memory_mb=4096, disk_gb=0, devices=2)
    add_sharing_pool(cloud, "pool", 100, "host1")
    add_child(cloud, "host1", "br-ex", {BANDWIDTH: 10000})  # Neutron's
    flavor = cloud.flavor("gpu", 2, 2048, 20, extra_specs=DEVICE_SPECS["vgpu"])
    server = cloud.boot("vm", flavor)
    # Neutron's port holds bandwidth on its child under our root.
    port = str(uuid.uuid4())
    foreign = cloud.hosts["host1/br-ex"]
    cloud.observer.put_allocations(
        port, ConsumerWrite({foreign: {BANDWIDTH: 1000}}, "other", "other", None)
    )
    cloud.squatters[port] = "host1/br-ex"
    cloud.check()
    return cloud, server, port, foreign


def test_audit_sees_our_child_and_never_a_foreign_one(make_cloud):
    cloud, server, port, foreign = _cloud(make_cloud)
    held = {
        cloud.hosts["host1"]: {"VCPU": 2, "MEMORY_MB": 2048},
        cloud.hosts["host1/pgpu0"]: {"VGPU": 1},
        cloud.hosts["pool"]: {"DISK_GB": 20},
    }
    assert cloud.holds(server.uuid) == held
    # A leftover of a consumer we do not know, on our child and on Neutron's.
    stray = str(uuid.uuid4())
    cloud.observer.put_allocations(
        stray,
        ConsumerWrite(
            {cloud.hosts["host1/pgpu0"]: {"VGPU": 1}, foreign: {BANDWIDTH: 10}},
            "other",
            "other",
            None,
        ),
    )
    foreign_before = _provider(cloud, foreign)
    report = audit.audit(cloud.db, cloud.observer, owner_trait=DEFAULT_OWNER_TRAIT, delete=True)
    assert [(o.consumer, o.rp_uuid, o.outcome) for o in report.orphans] == [
        (stray, cloud.hosts["host1/pgpu0"], audit.DELETED)
    ]
    # The stray keeps what it holds on the foreign child; the port is untouched.
    assert cloud.holds(stray) == {foreign: {BANDWIDTH: 10}}
    assert cloud.holds(port) == {foreign: {BANDWIDTH: 1000}}
    assert _provider(cloud, foreign) == foreign_before
    assert cloud.holds(server.uuid) == held


def test_heal_finds_a_tree_server_whole_and_restores_it_per_provider(make_cloud):
    cloud, server, port, foreign = _cloud(make_cloud)
    held = cloud.holds(server.uuid)
    report = heal.heal(cloud.db, cloud.observer, owner_trait=DEFAULT_OWNER_TRAIT)
    assert (report.ok, report.results) == (1, [])
    # Someone deletes its allocations: heal puts each provider back.
    cloud.observer.delete_allocations(server.uuid)
    report = heal.heal(cloud.db, cloud.observer, owner_trait=DEFAULT_OWNER_TRAIT)
    assert [r.outcome for r in report.results] == [heal.HEALED]
    assert cloud.holds(server.uuid) == held
    assert cloud.holds(port) == {foreign: {BANDWIDTH: 1000}}
    cloud.check()
