"""Nova bug 1790204 with the room on a child provider: a full vGPU host.

The vGPU is on a child of the host's root, created through Placement's API as
a device service creates it. A same-host resize that only grows RAM must keep
the vGPU on its child: ``max_flavor`` asks the source only for the RAM it
adds, ``drop_and_reclaim`` frees and re-claims each provider, ``legacy``
fails as Nova does and gives back exactly what the server held.
"""

import pytest

from resize_sched.placement.client import ConsumerWrite
from tests.functional.fixtures.cloud import PROJECT, USER, expect_no_valid_host
from tests.functional.trees.topology import DEVICE_SPECS, add_tree_host

OLD = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}
NEW = {"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 20}


def _full_gpu_host(make_cloud, strategy):
    cloud = make_cloud(strategy)
    add_tree_host(cloud, "vgpu", "host1", vcpus=4, memory_mb=4096, disk_gb=40)
    f_old = cloud.flavor("old", 2, 2048, 20, extra_specs=DEVICE_SPECS["vgpu"])
    f_new = cloud.flavor("new", 2, 4096, 20, extra_specs=DEVICE_SPECS["vgpu"])
    server = cloud.boot("vm", f_old)
    cloud.check()
    return cloud, server, f_new


def _on_tree(cloud, root_amounts):
    return {cloud.hosts["host1"]: root_amounts, cloud.hosts["host1/pgpu0"]: {"VGPU": 1}}


def test_the_build_puts_the_vgpu_on_its_child(make_cloud):
    cloud, server, _ = _full_gpu_host(make_cloud, "max_flavor")
    assert cloud.holds(server.uuid) == _on_tree(cloud, OLD)
    assert cloud.db.server_get(server.uuid).allocations == _on_tree(cloud, OLD)


def test_legacy_fails_as_nova_does_and_restores_exactly(make_cloud):
    cloud, server, f_new = _full_gpu_host(make_cloud, "legacy")
    migration = cloud.resizes.begin(server.uuid, f_new.flavorid)
    expect_no_valid_host(lambda: cloud.resizes.schedule(migration.uuid), "deferred")
    cloud.check()
    assert cloud.holds(server.uuid) == _on_tree(cloud, OLD)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.db.server_get(server.uuid).status == "ACTIVE"


@pytest.mark.parametrize("strategy", ["drop_and_reclaim", "max_flavor"])
@pytest.mark.parametrize("decision", ["confirm", "revert"])
def test_same_host_resize_keeps_the_vgpu_on_its_child(make_cloud, strategy, decision):
    cloud, server, f_new = _full_gpu_host(make_cloud, strategy)
    cloud.client.reset_request_count()
    migration, dest = cloud.resize_to_verify(server, f_new)
    assert dest.same_host
    # As on a flat host: the vGPU does not grow, so nothing more is asked.
    assert cloud.client.request_count <= 3, cloud.client.request_count
    assert cloud.holds(server.uuid) == _on_tree(cloud, NEW)
    assert cloud.holds(migration.uuid) == {}
    if decision == "confirm":
        cloud.confirm(server)
        assert cloud.holds(server.uuid) == _on_tree(cloud, NEW)
        assert cloud.db.migration_get(migration.uuid).status == "confirmed"
    else:
        cloud.revert(server)
        assert cloud.holds(server.uuid) == _on_tree(cloud, OLD)
        assert cloud.db.migration_get(migration.uuid).status == "reverted"
    assert cloud.holds(migration.uuid) == {}
    server = cloud.db.server_get(server.uuid)
    assert server.status == "ACTIVE"
    expected = NEW if decision == "confirm" else OLD
    assert server.allocations == _on_tree(cloud, expected)


def test_recovery_adopts_a_build_claim_on_a_tree_by_its_root(make_cloud):
    """A build whose claim landed (root and vGPU child) but whose host was
    never recorded is taken on at the root, with its holdings recorded."""
    cloud = make_cloud("max_flavor")
    add_tree_host(cloud, "vgpu", "host1", vcpus=4, memory_mb=4096, disk_gb=40)
    flavor = cloud.flavor("old", 2, 2048, 20, extra_specs=DEVICE_SPECS["vgpu"])
    server = cloud.builds.create(
        name="vm", flavorid=flavor.flavorid, project_id=PROJECT, user_id=USER
    )
    claim = _on_tree(cloud, OLD)
    cloud.observer.put_allocations(server.uuid, ConsumerWrite(claim, PROJECT, USER, None))
    adopted = cloud.builds.adopt(server.uuid)
    assert (adopted.host, adopted.rp_uuid) == ("host1", cloud.hosts["host1"])
    assert adopted.allocations == claim
