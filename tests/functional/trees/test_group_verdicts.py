"""Deferred or infeasible for requests with numbered groups, against the real Placement.

Each numbered group comes whole from one provider (under ``isolate``, each
from its own), so a host could ever hold a request when its providers,
empty, could take each group where it fits: not when the request's total
fits one provider (a flat root), nor when it does not (two GPUs, one group
each).
"""

import pytest

from tests.functional.fixtures.cloud import expect_no_valid_host
from tests.functional.trees.test_numa import _numa_host, _squat
from tests.functional.trees.topology import add_child

TWO_VGPUS = {"resources1:VGPU": "2", "resources2:VGPU": "2", "group_policy": "isolate"}


def _build_fails(cloud, flavor, kind):
    server = cloud.builds.create(name="vm", flavorid=flavor.flavorid, project_id="p", user_id="u")
    error = expect_no_valid_host(lambda: cloud.builds.schedule(server.uuid), kind)
    cloud.check()
    assert cloud.holds(server.uuid) == {}
    return error


def _two_gpu_host(cloud, per_gpu=2):
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    for gpu in (0, 1):
        add_child(cloud, "host1", f"pgpu{gpu}", {"VGPU": per_gpu}, ours=True)


def test_two_groups_on_two_busy_gpus_are_deferred(make_cloud):
    """4 vGPUs in all, more than one GPU has: each group fits a GPU of its
    own once room is freed."""
    cloud = make_cloud("max_flavor")
    _two_gpu_host(cloud)
    _squat(cloud, "host1/pgpu0", VGPU=1)
    _squat(cloud, "host1/pgpu1", VGPU=1)
    _build_fails(cloud, cloud.flavor("gpu2", 2, 2048, 10, extra_specs=TWO_VGPUS), "deferred")


def test_two_groups_each_larger_than_a_gpu_are_infeasible(make_cloud):
    cloud = make_cloud("max_flavor")
    _two_gpu_host(cloud, per_gpu=1)
    _build_fails(cloud, cloud.flavor("gpu2", 2, 2048, 10, extra_specs=TWO_VGPUS), "infeasible")


@pytest.mark.parametrize("policy", ["isolate", "none"])
def test_two_groups_need_two_gpus_only_under_isolate(make_cloud, policy):
    """One GPU of 4 vGPUs, full: ``none`` could put both groups on it once
    it is empty, ``isolate`` never."""
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    add_child(cloud, "host1", "pgpu0", {"VGPU": 4}, ours=True)
    _squat(cloud, "host1/pgpu0", VGPU=4)
    specs = {**TWO_VGPUS, "group_policy": policy}
    kind = "deferred" if policy == "none" else "infeasible"
    _build_fails(cloud, cloud.flavor("gpu2", 2, 2048, 10, extra_specs=specs), kind)


def test_two_guest_cells_on_flat_hosts_are_infeasible(make_cloud):
    """A flat host has one provider of VCPU and MEMORY_MB, its root: two
    guest cells (isolated) can never both be taken there."""
    cloud = make_cloud("max_flavor")
    for name in ("host1", "host2"):
        cloud.add_host(name, vcpus=16, memory_mb=16384, disk_gb=100)
    flavor = cloud.flavor("two", 4, 4096, 10, extra_specs={"hw:numa_nodes": "2"})
    _build_fails(cloud, flavor, "infeasible")


def test_two_guest_cells_on_a_busy_numa_host_are_deferred(make_cloud):
    cloud = make_cloud("max_flavor")
    cloud.add_host("flat", vcpus=16, memory_mb=16384, disk_gb=100)
    _numa_host(cloud, "host1")
    _squat(cloud, "host1/numa1", VCPU=4)
    flavor = cloud.flavor("two", 4, 4096, 10, extra_specs={"hw:numa_nodes": "2"})
    _build_fails(cloud, flavor, "deferred")
