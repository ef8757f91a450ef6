"""Edges of the recorded group map against the real Placement.

* A same-host resize that both grows a numbered group the server holds and
  adds a new one (``resources1:VGPU`` 1 -> 2 beside a new
  ``resources2:VGPU=1``, ``group_policy=isolate``): the held group must grow
  on its own GPU, the new group go where Placement puts it, off that GPU.
* A flavor without ``hw:numa_nodes`` resized to one with it, and back, on a
  NUMA split host and on a flat host, every strategy: the exact holdings at
  every step and the confirm's shrink.

Each GPU host has three GPUs (one vGPU child each, three vGPUs a GPU); which
GPU a group lands on is read from the recorded map and checked against the
holdings, so a resize that puts the held group's increase on "the first
provider Placement finds" is caught.
"""

import pytest

from resize_sched import resources as rs
from tests.functional.fixtures.cloud import expect_no_valid_host
from tests.functional.trees.test_numa import _numa_host, _squat
from tests.functional.trees.topology import add_child

BASE = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}
STRATEGIES = ("legacy", "drop_and_reclaim", "max_flavor")
#: max_flavor (where the fix is) in the quick suite; the others slow.
QUICK_STRATEGIES = [
    pytest.param(s, marks=() if s == "max_flavor" else (pytest.mark.slow,)) for s in STRATEGIES
]


def _gpu_host(cloud, name, gpus=3, per_gpu=3):
    cloud.add_host(name, vcpus=8, memory_mb=8192, disk_gb=100)
    return [add_child(cloud, name, f"pgpu{i}", {"VGPU": per_gpu}, ours=True) for i in range(gpus)]


def _map(cloud, server):
    return cloud.db.server_get(server.uuid).group_providers


# -- a held group grows while a new group is added --------------------------------------


def _vgpu_flavors(cloud):
    old = cloud.flavor("old", 2, 2048, 10, extra_specs={"resources1:VGPU": "1"})
    new = cloud.flavor(
        "new",
        2,
        2048,
        10,
        extra_specs={"resources1:VGPU": "2", "resources2:VGPU": "1", "group_policy": "isolate"},
    )
    return old, new


@pytest.mark.parametrize("decision", ["confirm", "revert"])
@pytest.mark.parametrize("gpus", [2, 3])
def test_max_flavor_grows_the_held_group_on_its_gpu_beside_a_new_group(make_cloud, gpus, decision):
    cloud = make_cloud("max_flavor", resize={"allow_same_host": True})
    children = _gpu_host(cloud, "host1", gpus=gpus)
    root = cloud.hosts["host1"]
    old, new = _vgpu_flavors(cloud)
    server = cloud.boot("vm", old, host="host1")
    built = _map(cloud, server)
    g1 = built["1"][0]
    assert cloud.holds(server.uuid) == {root: BASE, g1: {"VGPU": 1}}

    migration, dest = cloud.resize_to_verify(server, new)
    assert dest.same_host
    recorded = _map(cloud, server)

    assert recorded["1"] == [g1]
    g2 = recorded["2"][0]
    assert g2 != g1 and g2 in children
    assert cloud.holds(server.uuid) == {root: BASE, g1: {"VGPU": 2}, g2: {"VGPU": 1}}
    assert cloud.holds(migration.uuid) == {}
    assert migration.old_group_providers == built
    getattr(cloud, decision)(server)
    assert cloud.holds(migration.uuid) == {}
    if decision == "confirm":
        assert cloud.holds(server.uuid) == {root: BASE, g1: {"VGPU": 2}, g2: {"VGPU": 1}}
        assert _map(cloud, server) == recorded
    else:
        assert cloud.holds(server.uuid) == {root: BASE, g1: {"VGPU": 1}}
        assert _map(cloud, server) == built


def test_max_flavor_refuses_the_source_when_the_held_gpu_is_full(make_cloud):
    """Group 1's GPU has no vGPU left, the others have room: the held group
    cannot grow where it is, so the source is refused (no other host) and
    the server keeps exactly what it held."""
    cloud = make_cloud("max_flavor", resize={"allow_same_host": True})
    _gpu_host(cloud, "host1", gpus=3)
    root = cloud.hosts["host1"]
    old, new = _vgpu_flavors(cloud)
    server = cloud.boot("vm", old, host="host1")
    g1 = _map(cloud, server)["1"][0]
    names = {rp: name for name, rp in cloud.hosts.items()}
    _squat(cloud, names[g1], VGPU=2)
    migration = cloud.resizes.begin(server.uuid, new.flavorid)
    expect_no_valid_host(lambda: cloud.resizes.schedule(migration.uuid), "deferred")
    cloud.check()
    assert cloud.holds(server.uuid) == {root: BASE, g1: {"VGPU": 1}}
    assert cloud.holds(migration.uuid) == {}


# -- hw:numa_nodes added or removed by a resize ------------------------------------------

FLAT = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}


def _numa_flavors(cloud, *, numa_first, vcpus=2, memory_mb=2048):
    """(old, new): the same sizes (or ``vcpus``/``memory_mb`` for the new
    one), ``hw:numa_nodes=1`` on the first or on the second."""
    one = {"hw:numa_nodes": "1"}
    old = cloud.flavor("old", 2, 2048, 10, extra_specs=one if numa_first else {})
    new = cloud.flavor("new", vcpus, memory_mb, 10, extra_specs={} if numa_first else one)
    return old, new


def _split_boot(cloud, flavor):
    """Boot a flavor without NUMA cells whose VCPU lands on cell 0 and
    MEMORY_MB on cell 1 (the others' room is taken while it builds)."""
    a = _squat(cloud, "host1/numa0", MEMORY_MB=8192 - 1024)
    b = _squat(cloud, "host1/numa1", VCPU=7)
    server = cloud.boot("vm", flavor, host="host1")
    cloud.leave(a)
    cloud.leave(b)
    return server


@pytest.mark.parametrize("decision", ["confirm", "revert"])
@pytest.mark.parametrize("strategy", QUICK_STRATEGIES)
@pytest.mark.parametrize("size", ["same", "bigger"])
def test_numa_added_on_a_split_host(make_cloud, strategy, decision, size):
    cloud = make_cloud(strategy, resize={"allow_same_host": True})
    _numa_host(cloud, "host1", vcpus=16, memory_mb=16384)
    root = cloud.hosts["host1"]
    cell0, cell1 = cloud.hosts["host1/numa0"], cloud.hosts["host1/numa1"]
    vcpus, memory = (2, 2048) if size == "same" else (3, 3072)
    old, new = _numa_flavors(cloud, numa_first=False, vcpus=vcpus, memory_mb=memory)
    server = _split_boot(cloud, old)
    original = {root: {"DISK_GB": 10}, cell0: {"VCPU": 2}, cell1: {"MEMORY_MB": 2048}}
    assert cloud.holds(server.uuid) == original
    assert _map(cloud, server) is None

    migration, dest = cloud.resize_to_verify(server, new)
    assert dest.same_host
    recorded = _map(cloud, server)
    cell = recorded["_NUMA0"][0]
    assert cell in (cell0, cell1)
    grouped = {"VCPU": vcpus, "MEMORY_MB": memory}
    held = cloud.holds(server.uuid)
    if strategy == "max_flavor":
        # NOTE: the whole new cell beside the old split holdings: the
        # conservative price of this one transition (as legacy's).
        # The server holds what it keeps at confirm, the migration the rest.
        want = {rp: dict(res) for rp, res in original.items()}
        for rc, n in grouped.items():
            want[cell][rc] = want[cell].get(rc, 0) + n
        assert held == {root: {"DISK_GB": 10}, cell: grouped}
        assert rs.add_allocations(held, cloud.holds(migration.uuid)) == rs.normalize_allocations(
            want
        )
    elif strategy == "legacy":
        assert held == {root: {"DISK_GB": 10}, cell: grouped}
        assert cloud.holds(migration.uuid) == original
    else:
        assert held == {root: {"DISK_GB": 10}, cell: grouped}
        assert cloud.holds(migration.uuid) == {}
    getattr(cloud, decision)(server)
    assert cloud.holds(migration.uuid) == {}
    if decision == "confirm":
        assert cloud.holds(server.uuid) == {root: {"DISK_GB": 10}, cell: grouped}
        assert _map(cloud, server) == recorded
    else:
        assert cloud.holds(server.uuid) == original
        assert _map(cloud, server) is None


@pytest.mark.parametrize("decision", ["confirm", "revert"])
@pytest.mark.parametrize("strategy", QUICK_STRATEGIES)
def test_numa_added_on_a_flat_host(make_cloud, strategy, decision):
    cloud = make_cloud(strategy, resize={"allow_same_host": True})
    root = cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    old, new = _numa_flavors(cloud, numa_first=False)
    server = cloud.boot("vm", old, host="host1")
    migration, dest = cloud.resize_to_verify(server, new)
    assert dest.same_host
    assert cloud.holds(server.uuid) == {root: FLAT}
    if strategy == "max_flavor":
        # max(old, new) on the host: the server the new flavor, the migration the rest.
        assert rs.add_allocations(cloud.holds(server.uuid), cloud.holds(migration.uuid)) == {
            root: {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 10}
        }
    else:
        assert cloud.holds(migration.uuid) == ({root: FLAT} if strategy == "legacy" else {})
    recorded = _map(cloud, server)
    assert recorded["_NUMA0"] == [root]
    getattr(cloud, decision)(server)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.holds(server.uuid) == {root: FLAT}
    assert _map(cloud, server) == (recorded if decision == "confirm" else None)


@pytest.mark.parametrize("decision", ["confirm", "revert"])
@pytest.mark.parametrize("strategy", QUICK_STRATEGIES)
def test_numa_removed_on_a_split_host(make_cloud, strategy, decision):
    cloud = make_cloud(strategy, resize={"allow_same_host": True})
    _numa_host(cloud, "host1")
    root = cloud.hosts["host1"]
    old, new = _numa_flavors(cloud, numa_first=True, vcpus=3, memory_mb=3072)
    server = cloud.boot("vm", old, host="host1")
    built = _map(cloud, server)
    cell = built["_NUMA0"][0]
    original = {root: {"DISK_GB": 10}, cell: {"VCPU": 2, "MEMORY_MB": 2048}}
    assert cloud.holds(server.uuid) == original
    migration, dest = cloud.resize_to_verify(server, new)
    assert dest.same_host
    held = cloud.holds(server.uuid)
    assert sum(r.get("VCPU", 0) for r in held.values()) == 3
    if strategy == "max_flavor":
        assert held == {root: {"DISK_GB": 10}, cell: {"VCPU": 3, "MEMORY_MB": 3072}}
    assert _map(cloud, server) is None
    getattr(cloud, decision)(server)
    assert cloud.holds(migration.uuid) == {}
    if decision == "confirm":
        after = cloud.holds(server.uuid)
        assert sum(r.get("VCPU", 0) for r in after.values()) == 3
        assert sum(r.get("MEMORY_MB", 0) for r in after.values()) == 3072
        if strategy == "max_flavor":
            assert after == {root: {"DISK_GB": 10}, cell: {"VCPU": 3, "MEMORY_MB": 3072}}
        assert _map(cloud, server) is None
    else:
        assert cloud.holds(server.uuid) == original
        assert _map(cloud, server) == built


def test_max_flavor_splits_one_guest_cell_in_two_at_the_same_size(make_cloud):
    """hw:numa_nodes 1 -> 2, same sizes: no class grows, yet the new cell
    ``_NUMA1`` is a group of its own, asked whole off the held cell."""
    cloud = make_cloud("max_flavor", resize={"allow_same_host": True})
    _numa_host(cloud, "host1")
    root = cloud.hosts["host1"]
    old = cloud.flavor("old", 2, 2048, 10, extra_specs={"hw:numa_nodes": "1"})
    new = cloud.flavor("new", 2, 2048, 10, extra_specs={"hw:numa_nodes": "2"})
    server = cloud.boot("vm", old, host="host1")
    cell = _map(cloud, server)["_NUMA0"][0]
    other = next(
        cloud.hosts[f"host1/numa{i}"] for i in (0, 1) if cloud.hosts[f"host1/numa{i}"] != cell
    )
    migration, dest = cloud.resize_to_verify(server, new)
    assert dest.same_host
    # What the host holds for the resize: the server the new flavor (one
    # guest cell on each host cell), the migration the old cell's excess.
    assert cloud.holds(server.uuid) == {
        root: {"DISK_GB": 10},
        cell: {"VCPU": 1, "MEMORY_MB": 1024},
        other: {"VCPU": 1, "MEMORY_MB": 1024},
    }
    assert cloud.holds(migration.uuid) == {cell: {"VCPU": 1, "MEMORY_MB": 1024}}
    assert _map(cloud, server)["_NUMA1"] == [other]
    cloud.confirm(server)
    assert cloud.holds(server.uuid) == {
        root: {"DISK_GB": 10},
        cell: {"VCPU": 1, "MEMORY_MB": 1024},
        other: {"VCPU": 1, "MEMORY_MB": 1024},
    }
    assert cloud.holds(migration.uuid) == {}
