"""Granular request groups against the real Placement: ``resourcesN``,
``traitN`` (required and forbidden), ``group_policy``; a resize keeps the
device its group was given."""

import pytest

from resize_sched import resources as rs
from tests.functional.trees.topology import add_child

A100 = "CUSTOM_VGPU_A100"
T4 = "CUSTOM_VGPU_T4"


def _two_gpu_host(make_cloud, strategy="max_flavor"):
    cloud = make_cloud(strategy)
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    add_child(cloud, "host1", "pgpu0", {"VGPU": 2}, (A100,), ours=True)
    add_child(cloud, "host1", "pgpu1", {"VGPU": 4}, (T4,), ours=True)
    return cloud


def _gpu(cloud, held):
    """The GPU children ``held`` has a vGPU on, by name."""
    names = {rp: name for name, rp in cloud.hosts.items()}
    return sorted(names[rp] for rp, res in held.items() if "VGPU" in res)


@pytest.mark.parametrize(("wish", "expected"), [("required", "pgpu0"), ("forbidden", "pgpu1")])
def test_a_group_trait_picks_the_gpu(make_cloud, wish, expected):
    cloud = _two_gpu_host(make_cloud)
    specs = {"resources1:VGPU": "1", f"trait1:{A100}": wish}
    server = cloud.boot("vm", cloud.flavor("gpu", 2, 2048, 10, extra_specs=specs))
    cloud.check()
    assert _gpu(cloud, cloud.holds(server.uuid)) == [f"host1/{expected}"]


def test_isolate_puts_each_group_on_its_own_gpu(make_cloud):
    cloud = _two_gpu_host(make_cloud)
    specs = {"resources1:VGPU": "1", "resources2:VGPU": "1", "group_policy": "isolate"}
    server = cloud.boot("vm", cloud.flavor("gpu2", 2, 2048, 10, extra_specs=specs))
    cloud.check()
    held = cloud.holds(server.uuid)
    assert _gpu(cloud, held) == ["host1/pgpu0", "host1/pgpu1"]
    assert rs.total(held)["VGPU"] == 2


@pytest.mark.parametrize(
    "strategy", [pytest.param("drop_and_reclaim", marks=pytest.mark.slow), "max_flavor"]
)
def test_a_same_host_resize_keeps_the_group_on_its_gpu(make_cloud, strategy):
    cloud = _two_gpu_host(make_cloud, strategy)
    specs = {"resources1:VGPU": "1", f"trait1:{A100}": "required"}
    old = cloud.flavor("gpu", 2, 2048, 10, extra_specs=specs)
    new = cloud.flavor("gpu-big", 4, 4096, 10, extra_specs=specs)
    server = cloud.boot("vm", old)
    migration, dest = cloud.resize_to_verify(server, new)
    assert dest.same_host
    assert _gpu(cloud, cloud.holds(server.uuid)) == ["host1/pgpu0"]
    cloud.confirm(server)
    held = cloud.holds(server.uuid)
    assert held == {
        cloud.hosts["host1"]: {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 10},
        cloud.hosts["host1/pgpu0"]: {"VGPU": 1},
    }


def test_mappings_say_which_provider_took_which_group(make_cloud):
    cloud = _two_gpu_host(make_cloud)
    group = rs.RequestGroup("1", {"VGPU": 1}, frozenset({T4}))
    found = cloud.client.get_allocation_candidates(
        {"VCPU": 1}, groups=[group], root_required=["!COMPUTE_STATUS_DISABLED"]
    )
    assert found.mappings == [{"": [cloud.hosts["host1"]], "1": [cloud.hosts["host1/pgpu1"]]}]


@pytest.mark.parametrize("policy", ["isolate", pytest.param("none", marks=pytest.mark.slow)])
def test_max_flavor_adds_a_second_vgpu_group_where_the_policy_allows(make_cloud, policy):
    """A vGPU resize from one group to two on a host whose first GPU has room
    for both: ``isolate`` puts the new group on the other GPU, ``none`` may
    share; the old group keeps its device either way."""
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=4, memory_mb=4096, disk_gb=40)
    add_child(cloud, "host1", "pgpu0", {"VGPU": 2}, (A100,), ours=True)
    add_child(cloud, "host1", "pgpu1", {"VGPU": 1}, (A100,), ours=True)
    one = {"resources1:VGPU": "1", f"trait1:{A100}": "required", "group_policy": policy}
    two = {**one, "resources2:VGPU": "1", f"trait2:{A100}": "required"}
    old = cloud.flavor("one", 2, 2048, 10, extra_specs=one)
    new = cloud.flavor("two", 2, 2048, 10, extra_specs=two)
    server = cloud.boot("vm", old)
    first = _gpu(cloud, cloud.holds(server.uuid))
    migration, dest = cloud.resize_to_verify(server, new)
    assert dest.same_host
    held = cloud.holds(server.uuid)
    assert rs.total(held)["VGPU"] == 2
    assert set(first) <= set(_gpu(cloud, held))
    if policy == "isolate":
        assert _gpu(cloud, held) == ["host1/pgpu0", "host1/pgpu1"]
    cloud.confirm(server)
    assert cloud.holds(server.uuid) == held
