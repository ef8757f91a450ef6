"""A compute service's resource provider and inventory in the real Placement."""

import threading
from collections.abc import Callable

import pytest

from resize_sched import exception
from resize_sched.compute.service import ComputeService
from resize_sched.placement.client import DISABLED_TRAIT, PlacementClient
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT, PlacementInProcess
from tests.functional.compute.conftest import wait_until

CONFIGURED = {
    "vcpus": 4,
    "memory_mb": 8192,
    "disk_gb": 100,
    "reserved_host_cpus": 1,
    "reserved_host_memory_mb": 1024,
    "reserved_host_disk_mb": 2048,
    "cpu_allocation_ratio": 4.0,
    "ram_allocation_ratio": 1.5,
    "disk_allocation_ratio": 1.0,
}


def _record(total: int, reserved: int, ratio: float) -> dict:
    return {
        "total": total,
        "reserved": reserved,
        "min_unit": 1,
        "max_unit": total,
        "step_size": 1,
        "allocation_ratio": ratio,
    }


EXPECTED = {
    "VCPU": _record(4, 1, 4.0),
    "MEMORY_MB": _record(8192, 1024, 1.5),
    "DISK_GB": _record(100, 2, 1.0),
}


def test_start_registers_provider_with_configured_inventory(
    make_compute: Callable[..., ComputeService], placement_client: PlacementClient
) -> None:
    service = make_compute("c1", compute=CONFIGURED)
    providers = placement_client.list_resource_providers(name="c1")
    assert [p["uuid"] for p in providers] == [service.provider_uuid]
    inventory, _generation = placement_client.get_inventories(service.provider_uuid)
    assert inventory == EXPECTED


def test_restart_finds_the_same_provider(
    make_compute: Callable[..., ComputeService], placement_client: PlacementClient
) -> None:
    first = make_compute("c1", compute=CONFIGURED)
    first.stop()
    generation = placement_client.get_inventories(first.provider_uuid)[1]

    again = make_compute("c1", compute=CONFIGURED)
    assert again.provider_uuid == first.provider_uuid
    assert len(placement_client.list_resource_providers(name="c1")) == 1
    # Nothing changed, so nothing was written.
    assert placement_client.get_inventories(first.provider_uuid)[1] == generation
    again.stop()

    bigger = make_compute("c1", compute={**CONFIGURED, "vcpus": 16})
    assert bigger.provider_uuid == first.provider_uuid
    inventory, _ = placement_client.get_inventories(first.provider_uuid)
    assert inventory["VCPU"] == _record(16, 1, 4.0)
    assert len(placement_client.list_resource_providers(name="c1")) == 1


def test_two_hosts_get_two_providers(
    make_compute: Callable[..., ComputeService], placement_client: PlacementClient
) -> None:
    one, two = make_compute("c1"), make_compute("c2")
    assert one.provider_uuid != two.provider_uuid
    names = {p["name"] for p in placement_client.list_resource_providers()}
    assert {"c1", "c2"} <= names


def test_refresh_repairs_drift_and_a_deleted_provider(
    make_compute: Callable[..., ComputeService], placement_client: PlacementClient
) -> None:
    service = make_compute("c1", compute=CONFIGURED)
    assert service.refresh_inventory() is False  # already right: one read, no write

    placement_client.set_inventory(service.provider_uuid, {"VCPU": 1, "CUSTOM_X": 3})
    assert service.refresh_inventory() is True
    assert placement_client.get_inventories(service.provider_uuid)[0] == EXPECTED

    old_uuid = service.provider_uuid
    placement_client.delete_resource_provider(old_uuid)
    assert service.refresh_inventory() is True
    assert service.provider_uuid != old_uuid
    providers = placement_client.list_resource_providers(name="c1")
    assert [p["uuid"] for p in providers] == [service.provider_uuid]
    assert placement_client.get_inventories(service.provider_uuid)[0] == EXPECTED


def test_background_refresh(
    make_compute: Callable[..., ComputeService], placement_client: PlacementClient
) -> None:
    service = make_compute("c1", compute={**CONFIGURED, "update_interval": 1})
    placement_client.set_inventory(service.provider_uuid, {"VCPU": 1})
    wait_until(
        lambda: placement_client.get_inventories(service.provider_uuid)[0] == EXPECTED,
        timeout=5,
    )
    service.stop()  # the refresher thread ends with the service
    assert "compute-inventory-c1" not in {t.name for t in threading.enumerate()}


# -- ownership: the owner trait ---------------------------------------------------------


def test_provider_is_marked_with_the_owner_trait(
    make_compute: Callable[..., ComputeService], placement_client: PlacementClient
) -> None:
    default = make_compute("c1")
    blue = make_compute("c2", placement={"deployment_name": "Blue"})
    assert default.owner_trait == DEFAULT_OWNER_TRAIT
    assert placement_client.get_traits(default.provider_uuid)[0] == {DEFAULT_OWNER_TRAIT}
    assert placement_client.get_traits(blue.provider_uuid)[0] == {"CUSTOM_RESIZE_SCHED_BLUE"}
    # Each deployment lists only its own.
    ours = placement_client.list_resource_providers(required=[DEFAULT_OWNER_TRAIT])
    assert [p["name"] for p in ours] == ["c1"]


def test_restart_and_refresh_keep_the_other_traits_and_restore_the_mark(
    make_compute: Callable[..., ComputeService], placement_client: PlacementClient
) -> None:
    first = make_compute("c1", compute=CONFIGURED)
    rp = first.provider_uuid
    placement_client.update_traits(rp, add=[DISABLED_TRAIT, "CUSTOM_GOLD"])
    first.stop()

    again = make_compute("c1", compute=CONFIGURED)
    assert again.provider_uuid == rp
    assert placement_client.get_traits(rp)[0] == {
        DEFAULT_OWNER_TRAIT,
        DISABLED_TRAIT,
        "CUSTOM_GOLD",
    }
    # Someone replaced the traits and dropped the mark: the refresh puts it back.
    placement_client.set_traits(rp, [DISABLED_TRAIT])
    assert again.refresh_inventory() is False  # the inventory was right
    assert placement_client.get_traits(rp)[0] == {DEFAULT_OWNER_TRAIT, DISABLED_TRAIT}


def test_an_unmarked_provider_of_the_same_name_is_adopted(
    make_compute: Callable[..., ComputeService],
    placement: PlacementInProcess,
    placement_client: PlacementClient,
) -> None:
    """As an older resize_sched, without owner traits, registered it."""
    rp = placement.add_host("c1", 4, 4096, 40, owner=None)
    service = make_compute("c1", compute=CONFIGURED)
    assert service.provider_uuid == rp
    assert placement_client.get_traits(rp)[0] == {DEFAULT_OWNER_TRAIT}
    assert placement_client.get_inventories(rp)[0] == EXPECTED


@pytest.mark.parametrize("mark", ["CUSTOM_RESIZE_SCHED_OTHER", "COMPUTE_NODE"])
def test_someone_elses_provider_of_the_same_name_is_refused(
    make_compute: Callable[..., ComputeService],
    placement: PlacementInProcess,
    placement_client: PlacementClient,
    mark: str,
) -> None:
    """Another deployment's host, or a Nova compute node, is never taken over."""
    rp = placement.add_host("c1", 4, 4096, 40, owner=mark)
    before = placement_client.get_inventories(rp)
    with pytest.raises(exception.ConfigurationError) as err:
        make_compute("c1", compute=CONFIGURED)
    assert mark in str(err.value) and "[DEFAULT] host" in str(err.value)
    assert placement_client.get_traits(rp)[0] == {mark}
    assert placement_client.get_inventories(rp) == before
