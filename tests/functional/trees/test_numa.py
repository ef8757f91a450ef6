"""``hw:numa_nodes`` against the real Placement: a guest cell's VCPU and
MEMORY_MB come from one provider (a host NUMA cell, or a flat host's root),
at build and through every strategy's resize, confirm and revert.

NUMA hosts are "split" hosts (tests/functional/trees/topology.py): the root
holds only the disk, each of two children (``numa0``, ``numa1``) half the
VCPU and MEMORY_MB. A *trap* is a cell layout, made by another consumer's
allocations, where the free VCPU of one cell and the free memory of the
other would fit the flavor but no single cell does: without the NUMA groups
Placement offers it.
"""

import uuid

import pytest

from resize_sched import resources as rs
from resize_sched.placement.client import ConsumerWrite
from tests.functional.fixtures.cloud import expect_no_valid_host
from tests.functional.trees.topology import add_tree_host

STRATEGIES = ("legacy", "drop_and_reclaim", "max_flavor")
#: The resize cells of the quick suite: each strategy and each decision once
#: per kind of host; the rest are marked slow.
QUICK = {
    ("same", "max_flavor", "confirm"),
    ("same", "drop_and_reclaim", "revert"),
    ("same", "legacy", "confirm"),
    ("other", "legacy", "revert"),
    ("other", "drop_and_reclaim", "confirm"),
    ("other", "max_flavor", "revert"),
}


def _cells_of(where):
    for strategy in STRATEGIES:
        for decision in ("confirm", "revert"):
            marks = () if (where, strategy, decision) in QUICK else (pytest.mark.slow,)
            yield pytest.param(strategy, decision, marks=marks, id=f"{decision}-{strategy}")


ONE = {"hw:numa_nodes": "1"}
TWO = {"hw:numa_nodes": "2"}


def _numa_host(cloud, name, *, vcpus=8, memory_mb=8192, disk_gb=100):
    return add_tree_host(cloud, "numa", name, vcpus=vcpus, memory_mb=memory_mb, disk_gb=disk_gb)


def _squat(cloud, provider_name, **amounts):
    """Someone else takes ``amounts`` on one provider (a cell)."""
    consumer = str(uuid.uuid4())
    cloud.observer.put_allocations(
        consumer,
        ConsumerWrite(rs.on(cloud.hosts[provider_name], amounts), "other", "other", None),
    )
    cloud.squatters[consumer] = provider_name
    return consumer


def _trap(cloud, host, *, vcpus, memory_mb):
    """Leave ``host``'s cell 0 with ``vcpus`` free but too little memory
    (1024 MB) and cell 1 with ``memory_mb`` free but one vCPU."""
    cell = cloud.observer.get_inventories(cloud.hosts[f"{host}/numa0"])[0]
    total_cpus, total_mem = cell["VCPU"]["total"], cell["MEMORY_MB"]["total"]
    _squat(cloud, f"{host}/numa0", VCPU=total_cpus - vcpus, MEMORY_MB=total_mem - 1024)
    _squat(cloud, f"{host}/numa1", VCPU=total_cpus - 1, MEMORY_MB=total_mem - memory_mb)


def _cells(cloud, held):
    """Guest-cell view of ``held``: host cell name -> its VCPU and MEMORY_MB."""
    names = {rp: name for name, rp in cloud.hosts.items()}
    out = {}
    for rp, res in held.items():
        picked = {rc: n for rc, n in res.items() if rc in ("VCPU", "MEMORY_MB")}
        if picked:
            out[names[rp]] = picked
    return out


def _on_one_cell(cloud, held, amounts):
    """Assert the VCPU and MEMORY_MB of ``held`` sit whole on one provider;
    return its name."""
    cells = _cells(cloud, held)
    want = {"VCPU": amounts["VCPU"], "MEMORY_MB": amounts["MEMORY_MB"]}
    assert list(cells.values()) == [want], f"not on one cell: {cells}"
    return next(iter(cells))


OLD = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}
NEW = {"VCPU": 3, "MEMORY_MB": 3072, "DISK_GB": 10}


def _flavors(cloud, specs=ONE):
    old = cloud.flavor("old", OLD["VCPU"], OLD["MEMORY_MB"], OLD["DISK_GB"], extra_specs=specs)
    new = cloud.flavor("new", NEW["VCPU"], NEW["MEMORY_MB"], NEW["DISK_GB"], extra_specs=specs)
    return old, new


# -- builds ------------------------------------------------------------------------------


def test_a_build_is_refused_where_no_single_cell_fits(make_cloud):
    cloud = make_cloud("max_flavor")
    _numa_host(cloud, "host1")
    _trap(cloud, "host1", vcpus=4, memory_mb=4096)
    old, _ = _flavors(cloud)
    server = cloud.builds.create(name="vm", flavorid=old.flavorid, project_id="p", user_id="u")
    expect_no_valid_host(lambda: cloud.builds.schedule(server.uuid), "deferred")
    cloud.check()
    assert cloud.holds(server.uuid) == {}


def test_a_build_lands_on_the_host_whose_cell_fits(make_cloud):
    """host1 has more room in all (the RAM weigher would pick it) but only
    split over its cells; host2 has one cell that fits."""
    cloud = make_cloud("max_flavor")
    _numa_host(cloud, "host1", vcpus=16, memory_mb=16384)
    _trap(cloud, "host1", vcpus=8, memory_mb=8192)
    _numa_host(cloud, "host2", vcpus=4, memory_mb=4096)
    old, _ = _flavors(cloud)
    server = cloud.boot("vm", old)
    cloud.check()
    assert server.host == "host2"
    assert _on_one_cell(cloud, cloud.holds(server.uuid), OLD).startswith("host2/numa")


def test_two_guest_cells_take_two_host_cells(make_cloud):
    cloud = make_cloud("max_flavor")
    _numa_host(cloud, "host1")
    flavor = cloud.flavor("two", 4, 4096, 10, extra_specs=TWO)
    server = cloud.boot("vm", flavor)
    cloud.check()
    assert _cells(cloud, cloud.holds(server.uuid)) == {
        "host1/numa0": {"VCPU": 2, "MEMORY_MB": 2048},
        "host1/numa1": {"VCPU": 2, "MEMORY_MB": 2048},
    }
    # Placement names the groups by their suffix in each candidate's mappings.
    request = rs.flavor_request(flavor.to_snapshot())
    found = cloud.observer.get_allocation_candidates(
        request.unnumbered, groups=request.groups, group_policy=request.group_policy
    )
    cells = {cloud.hosts["host1/numa0"], cloud.hosts["host1/numa1"]}
    assert len(found.mappings) == 2  # cell 0 for _NUMA0 and cell 1 for _NUMA1, or the reverse
    for mapping in found.mappings:
        assert mapping[""] == [cloud.hosts["host1"]]
        assert {*mapping["_NUMA0"], *mapping["_NUMA1"]} == cells


def test_two_guest_cells_do_not_fit_on_one_host_cell(make_cloud):
    """Both guest cells would fit in cell 0 alone (isolate forbids it);
    cell 1 is taken."""
    cloud = make_cloud("max_flavor")
    _numa_host(cloud, "host1")
    _squat(cloud, "host1/numa1", VCPU=4)
    flavor = cloud.flavor("two", 2, 2048, 10, extra_specs=TWO)
    server = cloud.builds.create(name="vm", flavorid=flavor.flavorid, project_id="p", user_id="u")
    expect_no_valid_host(lambda: cloud.builds.schedule(server.uuid), "deferred")
    cloud.check()


def test_a_flat_host_takes_one_guest_cell_on_its_root(make_cloud):
    cloud = make_cloud("max_flavor")
    root = cloud.add_host("host1", vcpus=4, memory_mb=4096, disk_gb=40)
    old, new = _flavors(cloud)
    server = cloud.boot("vm", old)
    assert cloud.holds(server.uuid) == {root: OLD}
    migration, dest = cloud.resize_to_verify(server, new)
    assert dest.same_host
    assert cloud.holds(server.uuid) == {root: NEW}
    cloud.confirm(server)
    assert cloud.holds(server.uuid) == {root: NEW}
    assert cloud.db.server_get(server.uuid).allocations is None


# -- resizes -----------------------------------------------------------------------------


@pytest.mark.parametrize(("strategy", "decision"), list(_cells_of("same")))
def test_a_same_host_resize_stays_on_one_cell(make_cloud, strategy, decision):
    """One host: the server's cell and the other are both free enough for
    ``new`` but a trap on the rest; every strategy keeps each flavor whole
    on one cell, and confirm and revert leave exactly one flavor."""
    cloud = make_cloud(strategy, resize={"allow_same_host": True})
    _numa_host(cloud, "host1", vcpus=16, memory_mb=16384)
    old, new = _flavors(cloud)
    server = cloud.boot("vm", old)
    original = cloud.holds(server.uuid)
    first = _on_one_cell(cloud, original, OLD)
    # The other cell: room for the new flavor's VCPU, not its memory. The
    # server's own cell: room for the new memory, not for new VCPU on top of
    # legacy's old; max(old, new) and a drop-then-claim fit.
    other = "host1/numa1" if first.endswith("numa0") else "host1/numa0"
    _squat(cloud, other, MEMORY_MB=8192 - 1024)
    _squat(cloud, first, VCPU=8 - 4)
    if strategy == "legacy":
        # old + new side by side would need a second cell: the only free
        # memory is on the server's own cell, the only extra vCPUs on the other.
        migration = cloud.resizes.begin(server.uuid, new.flavorid)
        expect_no_valid_host(lambda: cloud.resizes.schedule(migration.uuid), "deferred")
        cloud.check()
        assert cloud.holds(server.uuid) == original
        return
    migration, dest = cloud.resize_to_verify(server, new)
    assert dest.same_host
    held = cloud.holds(server.uuid)
    assert _on_one_cell(cloud, held, NEW) == first
    if decision == "confirm":
        cloud.confirm(server)
        assert _on_one_cell(cloud, cloud.holds(server.uuid), NEW) == first
        assert rs.total(cloud.holds(server.uuid)) == NEW
    else:
        cloud.revert(server)
        assert cloud.holds(server.uuid) == original
    assert cloud.holds(migration.uuid) == {}


def test_legacy_same_host_puts_new_whole_on_the_other_cell(make_cloud):
    """legacy holds old and new side by side: new goes whole to the cell
    with room for it, never split between the two."""
    cloud = make_cloud("legacy", resize={"allow_same_host": True})
    _numa_host(cloud, "host1", vcpus=10, memory_mb=10240)
    old, new = _flavors(cloud)
    server = cloud.boot("vm", old)
    original = cloud.holds(server.uuid)
    first = _on_one_cell(cloud, original, OLD)
    other = "host1/numa1" if first.endswith("numa0") else "host1/numa0"
    # The server's cell keeps 3 vCPU but 2048 MB free: new (3 vCPU,
    # 3072 MB) fits whole on the other cell only, and split (the vCPUs
    # here, the memory there) as well.
    _squat(cloud, first, MEMORY_MB=1024)
    migration, dest = cloud.resize(server, new)
    assert dest.same_host
    assert cloud.holds(migration.uuid) == original
    assert _on_one_cell(cloud, cloud.holds(server.uuid), NEW) == other
    cloud.resizes.finish(migration.uuid)
    cloud.revert(server)
    assert cloud.holds(server.uuid) == original


def test_max_flavor_refuses_the_source_when_its_cell_is_full(make_cloud):
    """The increase goes to the cell that holds the server; when that cell
    has no room the source is refused, though the other cell is free: the
    guest would have to move cells (max(old, new) is held per provider)."""
    cloud = make_cloud("max_flavor", resize={"allow_same_host": True})
    _numa_host(cloud, "host1")
    old, new = _flavors(cloud)
    server = cloud.boot("vm", old)
    original = cloud.holds(server.uuid)
    first = _on_one_cell(cloud, original, OLD)
    _squat(cloud, first, MEMORY_MB=2048)
    migration = cloud.resizes.begin(server.uuid, new.flavorid)
    expect_no_valid_host(lambda: cloud.resizes.schedule(migration.uuid), "deferred")
    cloud.check()
    assert cloud.holds(server.uuid) == original


@pytest.mark.parametrize(("strategy", "decision"), list(_cells_of("other")))
def test_another_host_takes_the_flavor_on_one_cell(make_cloud, strategy, decision):
    """host2 has the most room but only split over its cells; host3's
    cell fits: the resize goes there, whole on one cell, and confirm or
    revert restores exactly."""
    cloud = make_cloud(strategy, resize={"allow_same_host": False})
    _numa_host(cloud, "host1")
    old, new = _flavors(cloud)
    server = cloud.boot("vm", old, host="host1")
    original = cloud.holds(server.uuid)
    _on_one_cell(cloud, original, OLD)
    _numa_host(cloud, "host2", vcpus=16, memory_mb=16384)
    _trap(cloud, "host2", vcpus=8, memory_mb=8192)
    _numa_host(cloud, "host3", vcpus=8, memory_mb=8192)
    migration, dest = cloud.resize(server, new)
    assert dest.host == "host3"
    held = cloud.holds(server.uuid)
    cell = _on_one_cell(cloud, held, NEW)
    assert cell.startswith("host3/")
    assert cloud.holds(migration.uuid) == original
    cloud.resizes.finish(migration.uuid)
    cloud.check()
    if decision == "confirm":
        cloud.confirm(server)
        assert cloud.holds(server.uuid) == held
    else:
        cloud.revert(server)
        assert cloud.holds(server.uuid) == original
    assert cloud.holds(migration.uuid) == {}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_two_guest_cells_resize_to_another_host(make_cloud, strategy):
    cloud = make_cloud(strategy, resize={"allow_same_host": False})
    _numa_host(cloud, "host1")
    _numa_host(cloud, "host2")
    old = cloud.flavor("two", 2, 2048, 10, extra_specs=TWO)
    new = cloud.flavor("two-big", 4, 4096, 10, extra_specs=TWO)
    server = cloud.boot("vm", old, host="host1")
    original = cloud.holds(server.uuid)
    migration, dest = cloud.resize_to_verify(server, new)
    assert dest.host == "host2"
    assert _cells(cloud, cloud.holds(server.uuid)) == {
        "host2/numa0": {"VCPU": 2, "MEMORY_MB": 2048},
        "host2/numa1": {"VCPU": 2, "MEMORY_MB": 2048},
    }
    cloud.revert(server)
    assert cloud.holds(server.uuid) == original


# NOTE: max_flavor grows each guest cell on the host cell its group holds
# (servers.group_providers); spread class by class, both grew on one cell.
@pytest.mark.parametrize("strategy", ["legacy", "drop_and_reclaim", "max_flavor"])
def test_two_guest_cells_resize_on_the_same_host(make_cloud, strategy):
    """Each guest cell grows on its own host cell (legacy: new beside old
    needs cells of 6; the others keep one guest cell per host cell)."""
    cloud = make_cloud(strategy, resize={"allow_same_host": True})
    _numa_host(cloud, "host1", vcpus=12, memory_mb=12288)
    old = cloud.flavor("two", 2, 2048, 10, extra_specs=TWO)
    new = cloud.flavor("two-big", 4, 4096, 10, extra_specs=TWO)
    server = cloud.boot("vm", old)
    original = cloud.holds(server.uuid)
    migration, dest = cloud.resize_to_verify(server, new)
    assert dest.same_host
    cloud.confirm(server)
    assert _cells(cloud, cloud.holds(server.uuid)) == {
        "host1/numa0": {"VCPU": 2, "MEMORY_MB": 2048},
        "host1/numa1": {"VCPU": 2, "MEMORY_MB": 2048},
    }
    assert original
