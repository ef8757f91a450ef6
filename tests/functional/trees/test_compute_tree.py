"""A compute service reports its provider tree as Nova's update_provider_tree
does: its own children created, updated and removed; another service's child
under its root left alone; the owner trait on the root only; the root in the
aggregates of a shared disk pool, with no disk of its own."""

import uuid
from collections.abc import Callable

from resize_sched.compute.service import ComputeService
from resize_sched.compute.tree import child_trait
from resize_sched.placement.client import PlacementClient
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT

MARK = child_trait("default")
GPU = "pgpu0:VGPU=4:CUSTOM_VGPU_A100"
PCI = "pci0:CUSTOM_PCI_10DE_1EB8=2"


def _children(client: PlacementClient, root: str) -> dict[str, dict]:
    out = {}
    for rp in client.list_resource_providers(in_tree=root):
        if rp["uuid"] == root:
            continue
        inventory, _ = client.get_inventories(rp["uuid"])
        traits, _ = client.get_traits(rp["uuid"])
        out[rp["name"]] = {
            "uuid": rp["uuid"],
            "parent": rp["parent_provider_uuid"],
            "inventory": {rc: r["total"] for rc, r in inventory.items()},
            "traits": traits,
        }
    return out


def test_children_are_created_updated_and_removed_and_foreign_ones_kept(
    make_compute: Callable[..., ComputeService], placement_client: PlacementClient
) -> None:
    service = make_compute("c1", fake_driver={"provider_tree": [GPU, PCI]})
    root = service.provider_uuid
    # Another service (Neutron) puts a child of its own under our root.
    client = placement_client
    foreign = client.create_resource_provider("c1:br-ex", parent_provider_uuid=root)
    generation = client.set_inventory(foreign["uuid"], {"NET_BW_EGR_KILOBIT_PER_SEC": 1000})
    client.put_traits(foreign["uuid"], ["CUSTOM_PHYSNET_PUBLIC"], generation)
    foreign_before = _children(client, root)["c1:br-ex"]

    children = _children(client, root)
    assert children["c1_pgpu0"]["inventory"] == {"VGPU": 4}
    assert children["c1_pgpu0"]["traits"] == {"CUSTOM_VGPU_A100", MARK}
    assert children["c1_pci0"]["inventory"] == {"CUSTOM_PCI_10DE_1EB8": 2}
    assert {c["parent"] for c in children.values()} == {root}
    # The owner trait marks hosts: the root, never a child.
    assert DEFAULT_OWNER_TRAIT in client.get_traits(root)[0]
    assert all(DEFAULT_OWNER_TRAIT not in c["traits"] for c in children.values())

    # Someone edits our child; the refresh puts it right, and nothing else changes.
    gpu = children["c1_pgpu0"]["uuid"]
    client.set_inventory(gpu, {"VGPU": 1})
    assert service.refresh_tree() == 1
    assert _children(client, root)["c1_pgpu0"]["inventory"] == {"VGPU": 4}
    assert service.refresh_tree() == 0

    # The driver loses the PCI device: its child goes; the foreign one stays as it was.
    service.driver.children = service.driver.children[:1]
    assert service.refresh_tree() == 1
    after = _children(client, root)
    assert set(after) == {"c1_pgpu0", "c1:br-ex"}
    assert after["c1:br-ex"] == foreign_before


def test_a_foreign_child_with_our_name_is_never_taken_over(
    make_compute: Callable[..., ComputeService], placement_client: PlacementClient
) -> None:
    service = make_compute("c2")
    root = service.provider_uuid
    squat = placement_client.create_resource_provider("c2_pgpu0", parent_provider_uuid=root)
    placement_client.set_inventory(squat["uuid"], {"VGPU": 1})
    service.driver.children = list(
        make_compute("c3", fake_driver={"provider_tree": [GPU]}).driver.children
    )
    assert service.refresh_tree() == 0
    assert _children(placement_client, root)["c2_pgpu0"]["inventory"] == {"VGPU": 1}
    assert MARK not in placement_client.get_traits(squat["uuid"])[0]


def test_a_host_on_a_shared_pool_reports_no_disk_and_joins_its_aggregate(
    make_compute: Callable[..., ComputeService], placement_client: PlacementClient
) -> None:
    aggregate = str(uuid.uuid4())
    service = make_compute("c4", compute={"sharing_aggregates": [aggregate]})
    inventory, _ = placement_client.get_inventories(service.provider_uuid)
    assert set(inventory) == {"VCPU", "MEMORY_MB"}
    assert aggregate in placement_client.get_aggregates(service.provider_uuid)[0]
    assert service.refresh_tree() == 0
