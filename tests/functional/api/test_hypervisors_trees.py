"""``os-hypervisors`` on hosts that are trees of providers, against the real Placement.

The sizes count the children the host's compute service owns and reported
(``compute_nodes.children``) beside the root, for ``VCPU``, ``MEMORY_MB``
and ``DISK_GB`` only: a NUMA-split host shows its cells' CPUs and memory, a
vGPU host shows what a flat one would, and another service's child, a child
no longer ours and a sharing pool's disk are never counted.
"""

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from resize_sched.conductor import reports
from resize_sched.placement.client import ConsumerWrite, PlacementClient, child_trait
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT, PlacementInProcess
from tests.functional.api.harness import ApiHarness

MARK = child_trait(DEFAULT_OWNER_TRAIT)
SIZE_FIELDS = (
    "vcpus",
    "memory_mb",
    "local_gb",
    "vcpus_used",
    "memory_mb_used",
    "local_gb_used",
    "free_ram_mb",
    "free_disk_gb",
    "disk_available_least",
)


@pytest.fixture
def tree_host(
    cloud: ApiHarness, placement: PlacementInProcess, placement_client: PlacementClient
) -> Callable[..., dict[str, str]]:
    """``tree_host(host, root, children, foreign=...)``: a root of ours with
    ``children`` of ours (name -> inventory) and ``foreign`` ones of another
    service under it, reported as its compute service reports it; the uuids
    by name (``""`` the root)."""

    def factory(
        host: str,
        root: dict[str, Any],
        children: dict[str, dict[str, Any]],
        foreign: dict[str, dict[str, Any]] | None = None,
    ) -> dict[str, str]:
        client = placement_client
        rp = placement.add_host(
            host, root.pop("VCPU", 0), root.pop("MEMORY_MB", 0), root.pop("DISK_GB", 0), **root
        )
        uuids = {"": rp}
        reported = {}
        for name, inventory in {**children, **(foreign or {})}.items():
            child = client.create_resource_provider(f"{host}_{name}", parent_provider_uuid=rp)
            uuids[name] = child["uuid"]
            generation = client.set_inventory(child["uuid"], inventory)
            if name in children:
                client.put_traits(child["uuid"], [MARK], generation)
                records, _ = client.get_inventories(child["uuid"])
                reported[child["uuid"]] = {
                    "name": f"{host}_{name}",
                    "inventory": records,
                    "traits": [MARK],
                }
        inventory, generation = client.get_inventories(rp)
        assert reports.record(
            cloud.db,
            client,
            cloud.conf.placement.deployment_name,
            host=host,
            node=host,
            rp_uuid=rp,
            inventory=inventory,
            provider_generation=generation,
            version="1.3",
            children=reported,
        )
        return uuids

    return factory


def _claim(client: PlacementClient, allocations: dict[str, dict[str, int]]) -> None:
    client.put_allocations(
        str(uuid.uuid4()),
        ConsumerWrite(allocations=allocations, project_id="p", user_id="u", generation=None),
    )


def _get(api: ApiHarness, path: str, version: str = "2.80") -> Any:
    response = api.request("GET", f"/v2.1/os-hypervisors{path}", version=version)
    assert response.status_int == 200, response.json
    return response.json


def _sizes(body: dict[str, Any]) -> dict[str, int]:
    return {name: body[name] for name in SIZE_FIELDS}


def test_a_numa_split_host_shows_its_cells(
    cloud: ApiHarness,
    tree_host: Callable[..., dict[str, str]],
    placement_client: PlacementClient,
) -> None:
    # No VCPU or MEMORY_MB on the root: both sit on two NUMA cells.
    tree = tree_host(
        "numa",
        {"DISK_GB": 100},
        {
            "cell0": {"VCPU": 4, "MEMORY_MB": {"total": 4096, "reserved": 256}},
            "cell1": {"VCPU": 4, "MEMORY_MB": 4096},
        },
    )
    _claim(
        placement_client,
        {
            tree[""]: {"DISK_GB": 10},
            tree["cell0"]: {"VCPU": 2, "MEMORY_MB": 1024},
            tree["cell1"]: {"VCPU": 1, "MEMORY_MB": 512},
        },
    )
    expected = {
        "vcpus": 8,
        "memory_mb": 8192,
        "local_gb": 100,
        "vcpus_used": 3,
        "memory_mb_used": 1536 + 256,  # held + the cell's reserved, as Nova counts
        "local_gb_used": 10,
        "free_ram_mb": 8192 - 1792,
        "free_disk_gb": 90,
        "disk_available_least": 90,
    }
    assert _sizes(_get(cloud, f"/{tree['']}")["hypervisor"]) == expected
    client = cloud.app.state.placement()
    client.reset_request_count()
    [listed] = _get(cloud, "/detail")["hypervisors"]
    assert _sizes(listed) == expected
    # our roots, our children, the root's usages, each cell's usages
    assert client.request_count == 1 + 1 + 1 + 2
    statistics = _get(cloud, "/statistics")["hypervisor_statistics"]
    assert {name: statistics[name] for name in SIZE_FIELDS} == expected
    assert statistics["count"] == 1
    # The shape is Nova's at 2.80, whatever the tree.
    assert set(listed) == {
        *("id", "hypervisor_hostname", "state", "status", "hypervisor_type"),
        *("hypervisor_version", "host_ip", "service", "cpu_info"),
        *("current_workload", "running_vms", *SIZE_FIELDS),
    }


def test_a_vgpu_host_shows_what_a_flat_one_would(
    cloud: ApiHarness,
    tree_host: Callable[..., dict[str, str]],
    placement_client: PlacementClient,
) -> None:
    tree = tree_host(
        "gpu",
        {"VCPU": 8, "MEMORY_MB": {"total": 8192, "reserved": 512}, "DISK_GB": 100},
        {"pgpu0": {"VGPU": 4}, "pci0": {"CUSTOM_PCI_10DE_1EB8": 2}},
    )
    _claim(
        placement_client,
        {tree[""]: {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}, tree["pgpu0"]: {"VGPU": 1}},
    )
    expected = {
        "vcpus": 8,
        "memory_mb": 8192,
        "local_gb": 100,
        "vcpus_used": 2,
        "memory_mb_used": 2048 + 512,
        "local_gb_used": 20,
        "free_ram_mb": 8192 - 2560,
        "free_disk_gb": 80,
        "disk_available_least": 80,
    }
    assert _sizes(_get(cloud, f"/{tree['']}")["hypervisor"]) == expected
    client = cloud.app.state.placement()
    client.reset_request_count()
    assert _sizes(_get(cloud, f"/{tree['']}")["hypervisor"]) == expected
    # A device child holds no size: read as a flat host is (roots, root's usages).
    assert client.request_count == 1 + 1
    statistics = _get(cloud, "/statistics")["hypervisor_statistics"]
    assert {name: statistics[name] for name in SIZE_FIELDS} == expected


def test_another_service_s_child_a_lost_child_and_a_pool_are_not_counted(
    cloud: ApiHarness,
    tree_host: Callable[..., dict[str, str]],
    placement: PlacementInProcess,
    placement_client: PlacementClient,
) -> None:
    tree = tree_host(
        "h1",
        {"DISK_GB": 0},
        {"cell0": {"VCPU": 4, "MEMORY_MB": 4096}, "cell1": {"VCPU": 4, "MEMORY_MB": 4096}},
        foreign={"vendor": {"VCPU": 16, "MEMORY_MB": 65536, "DISK_GB": 500}},
    )
    # The host's disk is a pool shared through an aggregate (its own provider).
    client = placement_client
    pool = client.create_resource_provider("pool")["uuid"]
    generation = client.set_inventory(pool, {"DISK_GB": 1000})
    client.put_traits(pool, ["MISC_SHARES_VIA_AGGREGATE"], generation)
    aggregate = str(uuid.uuid4())
    for rp in (pool, tree[""]):
        client.set_aggregates(rp, [aggregate], client.get_aggregates(rp)[1])
    _claim(client, {tree["vendor"]: {"VCPU": 8, "MEMORY_MB": 1024, "DISK_GB": 50}})
    _claim(client, {tree["cell0"]: {"VCPU": 1, "MEMORY_MB": 512}, pool: {"DISK_GB": 30}})
    _claim(client, {tree["cell1"]: {"VCPU": 2, "MEMORY_MB": 256}})
    shown = _sizes(_get(cloud, f"/{tree['']}")["hypervisor"])
    assert (shown["vcpus"], shown["memory_mb"], shown["local_gb"]) == (8, 8192, 0)
    assert (shown["vcpus_used"], shown["memory_mb_used"], shown["local_gb_used"]) == (3, 768, 0)

    # cell1 loses our child trait (taken over): neither its size nor its use counts.
    client.update_traits(tree["cell1"], remove=[MARK])
    shown = _sizes(_get(cloud, "/detail")["hypervisors"][0])
    assert (shown["vcpus"], shown["memory_mb"], shown["vcpus_used"]) == (4, 4096, 1)
