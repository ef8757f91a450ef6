"""Every strategy on every provider topology, against the real Placement.

strategy x topology (vGPU child, PCI child, NUMA children, shared disk pool,
another service's child under our root) x same or other host x confirm,
revert or reschedule. After every step ``Cloud.check()`` asserts the
invariants, and each step states the exact holdings of both consumers,
provider by provider. A representative slice runs in the quick suite; the
whole matrix is marked slow.

Sizes: the source is full enough that ``legacy`` cannot hold ``old`` and
``new`` side by side on one host (Nova bug 1790204, here with the room on a
child or on the pool), while ``max(old, new)`` fits; NUMA cells are large
enough that ``legacy`` fits on the other cell of the same host.
"""

import pytest

from resize_sched import resources as rs
from tests.functional.fixtures.cloud import expect_no_valid_host
from tests.functional.trees.topology import DEVICE_SPECS, PCI_CLASS, add_tree_host

STRATEGIES = ("legacy", "drop_and_reclaim", "max_flavor")
TOPOLOGIES = ("vgpu", "pci", "numa", "sharing", "foreign")
OLD = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}
NEW = {"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 30}
DEVICE = {"vgpu": "VGPU", "pci": PCI_CLASS}
CHILD = {"vgpu": "pgpu0", "pci": "pci0"}

#: The cells of the quick suite: one per topology, each strategy, both kinds
#: of host and every decision at least once.
QUICK = {
    ("max_flavor", "vgpu", "same", "confirm"),
    ("drop_and_reclaim", "sharing", "same", "revert"),
    ("legacy", "numa", "same", "confirm"),
    ("max_flavor", "foreign", "other", "revert"),
    ("drop_and_reclaim", "pci", "other", "reschedule"),
    ("max_flavor", "sharing", "same", "confirm"),
}


def _cells():
    for strategy in STRATEGIES:
        for topology in TOPOLOGIES:
            for where in ("same", "other"):
                decisions = ("confirm", "revert") + (("reschedule",) if where == "other" else ())
                for decision in decisions:
                    cell = (strategy, topology, where, decision)
                    marks = () if cell in QUICK else (pytest.mark.slow,)
                    yield pytest.param(*cell, marks=marks, id="-".join(cell))


CELLS = list(_cells())


def _flavor(cloud, name, amounts, topology):
    specs = dict(DEVICE_SPECS.get(topology, {}))
    return cloud.flavor(
        name, amounts["VCPU"], amounts["MEMORY_MB"], amounts["DISK_GB"], extra_specs=specs
    )


def _build(make_cloud, strategy, topology, where):
    other = where == "other"
    cloud = make_cloud(strategy, resize={"allow_same_host": not other})
    names = ("host1", "host2", "host3") if other else ("host1",)
    for name in names:
        if topology == "numa":
            add_tree_host(cloud, "numa", name, vcpus=8, memory_mb=8192, disk_gb=100)
        elif topology == "sharing":
            # One pool for every host: 40 GB when alone (old + new do not fit
            # side by side), room for the source's and a destination's disk
            # when there are others.
            add_tree_host(cloud, "sharing", name, vcpus=4, memory_mb=4096, disk_gb=40 + 60 * other)
        else:
            add_tree_host(cloud, topology, name, vcpus=4, memory_mb=4096, disk_gb=40)
    old = _flavor(cloud, "old", OLD, topology)
    new = _flavor(cloud, "new", NEW, topology)
    server = cloud.boot("vm", old, host="host1")
    cloud.check()
    return cloud, server, new


def _layout(cloud, topology, host, amounts, held=None):
    """Where ``amounts`` (a flavor of this topology) sit on ``host``: exact,
    except the NUMA cell of each class, which is the one ``held`` uses."""
    root = cloud.hosts[host]
    if topology in DEVICE:
        return {root: amounts, cloud.hosts[f"{host}/{CHILD[topology]}"]: {DEVICE[topology]: 1}}
    if topology == "sharing":
        base = {k: v for k, v in amounts.items() if k != "DISK_GB"}
        return {root: base, cloud.hosts["pool"]: {"DISK_GB": amounts["DISK_GB"]}}
    if topology == "numa":
        # NOTE: the unnumbered group may take VCPU from one cell and
        # MEMORY_MB from the other: each class is where ``held`` has it.
        cells = [cloud.hosts[f"{host}/numa{i}"] for i in (0, 1)]
        out = {root: {"DISK_GB": amounts["DISK_GB"]}}
        for rc in ("VCPU", "MEMORY_MB"):
            cell = next((rp for rp in cells if rc in (held or {}).get(rp, {})), None)
            assert cell is not None, f"no NUMA cell of {host} holds {rc} in {held}"
            out.setdefault(cell, {})[rc] = amounts[rc]
        return out
    return {root: amounts}


def _legacy_fits_beside(topology):
    # Only the NUMA host has a second place (its other cell) for ``new``.
    return topology == "numa"


@pytest.mark.parametrize(("strategy", "topology", "where", "decision"), CELLS)
def test_matrix(make_cloud, strategy, topology, where, decision):
    cloud, server, new = _build(make_cloud, strategy, topology, where)
    original = cloud.holds(server.uuid)
    assert original == _layout(cloud, topology, "host1", OLD, original)
    assert cloud.db.server_get(server.uuid).allocations in (None, original)
    foreign = cloud.hosts.get("host1/br-ex")
    foreign_before = cloud.observer.get_inventories(foreign)[0] if foreign else None

    if where == "same" and strategy == "legacy" and not _legacy_fits_beside(topology):
        migration = cloud.resizes.begin(server.uuid, new.flavorid)
        expect_no_valid_host(lambda: cloud.resizes.schedule(migration.uuid), "deferred")
        cloud.check()
        assert cloud.holds(server.uuid) == original
        assert cloud.holds(migration.uuid) == {}
        return

    migration, dest = cloud.resize(server, new)
    if where == "same":
        assert dest.same_host
        held = cloud.holds(server.uuid)
        if strategy == "legacy":
            # new on the other NUMA cell, old kept for the migration.
            assert cloud.holds(migration.uuid) == original
            assert held == _layout(cloud, topology, "host1", NEW, held)
        elif strategy == "max_flavor":
            # max(old, new) provider by provider: the device and cell kept.
            assert held == _layout(cloud, topology, "host1", NEW, original)
            assert cloud.holds(migration.uuid) == {}
        else:
            assert held == _layout(cloud, topology, "host1", NEW, held)
            assert cloud.holds(migration.uuid) == {}
        dest_host = "host1"
    else:
        assert not dest.same_host
        dest_host = dest.host
        if decision == "reschedule":
            dest = cloud.resizes.reschedule(migration.uuid, f"prep_resize failed on {dest_host}")
            cloud.check()
            assert dest.host not in ("host1", dest_host)
            failed, dest_host = dest_host, dest.host
            assert cloud.usage(failed) == {}
            for name, rp in cloud.hosts.items():
                if name.startswith(f"{failed}/"):
                    assert cloud.observer.get_usages(rp) == {}
        held = cloud.holds(server.uuid)
        assert held == _layout(cloud, topology, dest_host, NEW, held)
        assert cloud.holds(migration.uuid) == original
    migration = cloud.resizes.finish(migration.uuid)
    cloud.check()
    verify = cloud.holds(server.uuid)

    if decision == "revert":
        cloud.revert(server)
        assert cloud.holds(server.uuid) == original
        status = "reverted"
    else:
        cloud.confirm(server)
        final = cloud.holds(server.uuid)
        assert final == _layout(cloud, topology, dest_host, NEW, verify)
        assert rs.total(final) == rs.flavor_request(new.to_snapshot()).resources
        status = "confirmed"
    assert cloud.holds(migration.uuid) == {}
    assert cloud.db.migration_get(migration.uuid).status == status
    server = cloud.db.server_get(server.uuid)
    assert server.status == "ACTIVE"
    assert server.allocations in (None, cloud.holds(server.uuid))
    if foreign:
        # Neutron's child: never written to, never deleted.
        assert cloud.observer.get_inventories(foreign)[0] == foreign_before
        assert cloud.observer.get_usages(foreign) == {}
