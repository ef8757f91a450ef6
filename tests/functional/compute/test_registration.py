"""A compute service's resource provider and inventory in the real Placement."""

import threading
from collections.abc import Callable

from resize_sched.compute.service import ComputeService
from resize_sched.placement.client import PlacementClient
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
