"""Compute services' reports reach the database through the real conductor.

Compute services and a real :class:`ConductorService` share one ``fake://``
transport and the real Placement; the conductor's database is a fresh
SQLite file. Stale and malformed reports are handed to the conductor's
endpoint directly, so the tests know when they were handled.
"""

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import oslo_messaging as messaging
import pytest
from oslo_config import cfg

from resize_sched.compute import rpcapi as compute_rpcapi
from resize_sched.compute.service import ComputeService
from resize_sched.compute.tree import child_trait
from resize_sched.conductor import reports
from resize_sched.conductor.rpcapi import ConductorAPI
from resize_sched.conductor.service import ConductorService
from resize_sched.context import admin_context
from resize_sched.db.host_api import COMPUTE_BINARY
from resize_sched.placement.client import DISABLED_TRAIT, PlacementClient
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT
from resize_sched.resources import inventory_record
from tests.functional.compute.conftest import wait_until
from tests.functional.fixtures.database import fresh_sqlite_database, sqlite_url

SIZE = {"vcpus": 4, "memory_mb": 4096, "disk_gb": 40, "reserved_host_memory_mb": 0}


@pytest.fixture
def conductor_service(
    make_conf: Callable[..., cfg.ConfigOpts], transport: messaging.Transport, tmp_path: Path
) -> Iterator[ConductorService]:
    """The real conductor on ``transport``, over a fresh database."""
    fresh_sqlite_database(tmp_path / "db").dispose()
    conf = make_conf("conductor")
    conf.set_override("connection", sqlite_url(tmp_path / "db"), group="database")
    service = ConductorService(conf, transport, recover=False)
    service.start()
    yield service
    service.stop()
    service.db.dispose()


@pytest.fixture
def start_compute(
    make_conf: Callable[..., cfg.ConfigOpts],
    transport: messaging.Transport,
    conductor_service: ConductorService,
) -> Iterator[Callable[..., ComputeService]]:
    """``start_compute(host, **groups)``: a started compute service; reports to the conductor."""
    started: list[ComputeService] = []

    def factory(host: str, report_interval: int = 10, **groups: dict[str, Any]) -> ComputeService:
        groups.setdefault("compute", dict(SIZE))
        conf = make_conf(host, **groups)
        conf.set_override("report_interval", report_interval)
        service = ComputeService(conf, transport=transport)
        started.append(service)
        service.start()
        return service

    yield factory
    for service in started:
        service.stop()


def _node(conductor: ConductorService, host: str) -> Any:
    nodes = conductor.db.compute_nodes_by_host(host)
    return nodes[0] if len(nodes) == 1 else None


def _node_uuid(conductor: ConductorService, host: str) -> str | None:
    node = _node(conductor, host)
    return None if node is None else node.uuid


def _report(conductor: ConductorService, service: ComputeService, **changes: Any) -> None:
    """Hand the conductor's endpoint one report of ``service`` (with ``changes``)."""
    kwargs: dict[str, Any] = {
        "host": service.host,
        "node": service.host,
        "rp_uuid": service.provider_uuid,
        "inventory": service.inventory,
        "provider_generation": service.provider_generation,
        "service_version": compute_rpcapi.VERSION,
    }
    kwargs.update(changes)
    conductor.manager.compute_report(admin_context(), **kwargs)


def test_start_reports_the_node_and_a_heartbeat(
    start_compute: Callable[..., ComputeService],
    conductor_service: ConductorService,
    placement_client: PlacementClient,
) -> None:
    service = start_compute("c1")
    wait_until(lambda: _node(conductor_service, "c1") is not None)
    node = _node(conductor_service, "c1")
    _, generation = placement_client.get_inventories(service.provider_uuid)
    assert (node.uuid, node.hypervisor_hostname, node.hypervisor_type) == (
        service.provider_uuid,
        "c1",
        "fake",
    )
    assert node.inventory == service.inventory
    assert node.inventory["VCPU"]["total"] == 4
    assert node.provider_generation == generation
    [row] = conductor_service.db.service_list(binary=COMPUTE_BINARY)
    assert (row.host, row.binary, row.disabled, row.version) == (
        "c1",
        COMPUTE_BINARY,
        False,
        compute_rpcapi.VERSION,
    )
    assert row.report_count >= 1 and row.last_seen_up is not None


def test_reports_repeat_every_report_interval(
    start_compute: Callable[..., ComputeService], conductor_service: ConductorService
) -> None:
    start_compute("c1", report_interval=1)
    wait_until(lambda: conductor_service.db.service_list(binary=COMPUTE_BINARY) != [])
    first = conductor_service.db.service_list(binary=COMPUTE_BINARY)[0]
    wait_until(
        lambda: conductor_service.db.service_list(binary=COMPUTE_BINARY)[0].report_count >= 3
    )
    later = conductor_service.db.service_list(binary=COMPUTE_BINARY)[0]
    assert later.last_seen_up > first.last_seen_up


def test_a_recreated_provider_replaces_the_node(
    start_compute: Callable[..., ComputeService],
    conductor_service: ConductorService,
    placement_client: PlacementClient,
) -> None:
    service = start_compute("c1")
    wait_until(lambda: _node(conductor_service, "c1") is not None)
    old = service.provider_uuid
    placement_client.delete_resource_provider(old)
    assert service.refresh_inventory() is True  # registered again
    assert service.provider_uuid != old
    assert service.report() is True
    wait_until(
        lambda: getattr(_node(conductor_service, "c1"), "uuid", None) == service.provider_uuid
    )
    assert [n.uuid for n in conductor_service.db.compute_node_list()] == [service.provider_uuid]

    # A report from before the re-creation, handled late, changes nothing.
    _report(conductor_service, service, rp_uuid=old, provider_generation=99)
    assert [n.uuid for n in conductor_service.db.compute_node_list()] == [service.provider_uuid]


def test_an_older_report_does_not_overwrite_a_newer_inventory(
    start_compute: Callable[..., ComputeService], conductor_service: ConductorService
) -> None:
    service = start_compute("c1")
    wait_until(lambda: _node(conductor_service, "c1") is not None)
    newer = _node(conductor_service, "c1")
    count = conductor_service.db.service_list(binary=COMPUTE_BINARY)[0].report_count
    stale = {rc: dict(record, total=1) for rc, record in service.inventory.items()}
    _report(
        conductor_service,
        service,
        inventory=stale,
        provider_generation=service.provider_generation - 1,
    )
    node = _node(conductor_service, "c1")
    assert node.inventory == newer.inventory == service.inventory
    assert node.provider_generation == newer.provider_generation
    # ... but it still counts as a heartbeat.
    assert conductor_service.db.service_list(binary=COMPUTE_BINARY)[0].report_count == count + 1

    # A newer one does.
    _report(
        conductor_service,
        service,
        inventory=stale,
        provider_generation=service.provider_generation + 1,
    )
    assert _node(conductor_service, "c1").inventory == stale


@pytest.mark.parametrize(
    "changes",
    [
        {"inventory": "VCPU=4"},
        {"inventory": {"VCPU": 4}},
        {"inventory": {"VCPU": {"total": "4"}}},
        {"provider_generation": "7"},
        {"rp_uuid": "not-a-uuid"},
        {"host": 42},
        {"host": "   "},
        {"children": []},
        {"children": {"not-a-uuid": {"name": "n", "inventory": {}, "traits": []}}},
        {"children": {"7d4a3f9e-2c1b-4e6a-9f0d-3b5c8a1e2d47": {"name": "n", "inventory": {}}}},
        {
            "children": {
                "7d4a3f9e-2c1b-4e6a-9f0d-3b5c8a1e2d47": {
                    "name": "n",
                    "inventory": {"VCPU": {"total": "4"}},
                    "traits": [],
                }
            }
        },
        {
            "children": {
                "7d4a3f9e-2c1b-4e6a-9f0d-3b5c8a1e2d47": {
                    "name": "n",
                    "inventory": {},
                    "traits": "HW_NUMA_ROOT",
                }
            }
        },
    ],
)
def test_a_malformed_report_is_dropped_with_a_warning(
    start_compute: Callable[..., ComputeService],
    conductor_service: ConductorService,
    caplog: pytest.LogCaptureFixture,
    changes: dict[str, Any],
) -> None:
    service = start_compute("c1")
    wait_until(lambda: _node(conductor_service, "c1") is not None)
    before = (
        conductor_service.db.service_list(binary=COMPUTE_BINARY)[0].report_count,
        _node(conductor_service, "c1"),
    )
    with caplog.at_level(logging.WARNING):
        _report(conductor_service, service, **changes)
    assert any(
        "Malformed compute_report message dropped" in r.getMessage() for r in caplog.records
    )
    after = (
        conductor_service.db.service_list(binary=COMPUTE_BINARY)[0].report_count,
        _node(conductor_service, "c1"),
    )
    assert after[0] == before[0]
    assert after[1].inventory == before[1].inventory


def test_a_conductor_capped_at_1_1_is_sent_no_report(
    make_conf: Callable[..., cfg.ConfigOpts],
    transport: messaging.Transport,
    conductor_service: ConductorService,
) -> None:
    conf = make_conf("c1", compute=dict(SIZE), upgrade_levels={"conductor": "1.1"})
    with ComputeService(conf, transport=transport) as service:
        assert service.provider_uuid is not None
        assert service.report() is False
        assert (
            ConductorAPI(conf, transport).compute_report(
                admin_context(), "c1", "c1", service.provider_uuid, {}, 1, "1.0"
            )
            is False
        )
    # Nothing reached the conductor; an uncapped report does.
    assert conductor_service.db.service_list(binary=COMPUTE_BINARY) == []
    uncapped = make_conf("c1", compute=dict(SIZE))
    with ComputeService(uncapped, transport=transport):
        wait_until(lambda: _node(conductor_service, "c1") is not None)


def test_a_new_node_gets_its_disabled_service_s_trait(
    start_compute: Callable[..., ComputeService],
    conductor_service: ConductorService,
    placement_client: PlacementClient,
) -> None:
    service = start_compute("c1")
    wait_until(lambda: _node(conductor_service, "c1") is not None)
    row = conductor_service.db.service_list(binary=COMPUTE_BINARY)[0]
    conductor_service.db.service_set_disabled(row.uuid, True, "maintenance")
    placement_client.delete_resource_provider(service.provider_uuid)
    service.refresh_inventory()
    service.report()
    wait_until(
        lambda: getattr(_node(conductor_service, "c1"), "uuid", None) == service.provider_uuid
    )
    wait_until(lambda: DISABLED_TRAIT in placement_client.get_traits(service.provider_uuid)[0])
    traits, _ = placement_client.get_traits(service.provider_uuid)
    assert traits == {DEFAULT_OWNER_TRAIT, DISABLED_TRAIT}
    assert (
        conductor_service.db.service_list(binary=COMPUTE_BINARY)[0].disabled_reason
        == "maintenance"
    )


def test_a_first_report_adopts_a_host_disabled_in_placement(
    make_conf: Callable[..., cfg.ConfigOpts],
    transport: messaging.Transport,
    conductor_service: ConductorService,
    placement_client: PlacementClient,
) -> None:
    # Disabled with 'host disable' before the service ever reported.
    conf = make_conf("c1", compute=dict(SIZE), upgrade_levels={"conductor": "1.1"})
    with ComputeService(conf, transport=transport) as service:
        placement_client.update_traits(service.provider_uuid, add=[DISABLED_TRAIT])
    with ComputeService(make_conf("c1", compute=dict(SIZE)), transport=transport):
        wait_until(lambda: conductor_service.db.service_list(binary=COMPUTE_BINARY) != [])
        wait_until(lambda: conductor_service.db.service_list(binary=COMPUTE_BINARY)[0].disabled)
    [row] = conductor_service.db.service_list(binary=COMPUTE_BINARY)
    assert row.disabled_reason == reports.ADOPTED_REASON
    assert DISABLED_TRAIT in placement_client.get_traits(service.provider_uuid)[0]


NUMA = ["numa0:VCPU=4,MEMORY_MB=2048:HW_NUMA_ROOT", "numa1:VCPU=4,MEMORY_MB=2048:HW_NUMA_ROOT"]


def test_a_tree_host_reports_its_own_children_and_a_flat_one_none(
    start_compute: Callable[..., ComputeService],
    conductor_service: ConductorService,
    placement_client: PlacementClient,
) -> None:
    flat = start_compute("flat")
    service = start_compute("c1", fake_driver={"provider_tree": NUMA})
    wait_until(lambda: _node(conductor_service, "c1") is not None)
    wait_until(lambda: _node(conductor_service, "flat") is not None)
    assert _node(conductor_service, "flat").children is None
    assert flat.children == {}

    # Another service's child under our root is never reported as ours.
    foreign = placement_client.create_resource_provider(
        "c1:br-ex", parent_provider_uuid=service.provider_uuid
    )["uuid"]
    placement_client.set_inventory(foreign, {"VCPU": 2})
    assert service.refresh_tree() == 0
    assert service.report() is True
    by_name = {
        rp["name"]: rp["uuid"]
        for rp in placement_client.list_resource_providers(in_tree=service.provider_uuid)
    }
    mark = child_trait("default")
    wait_until(lambda: _node(conductor_service, "c1").children is not None)
    node = _node(conductor_service, "c1")
    assert node.children == {
        by_name[f"c1_numa{i}"]: {
            "name": f"c1_numa{i}",
            "inventory": {
                "MEMORY_MB": inventory_record(2048),
                "VCPU": inventory_record(4),
            },
            "traits": sorted(["HW_NUMA_ROOT", mark]),
        }
        for i in (0, 1)
    }
    assert foreign not in node.children
    # The root's inventory stays the root's alone (the scheduler's source
    # shortcut reads it as such).
    assert node.inventory == service.inventory


def test_an_old_format_report_is_accepted_and_keeps_the_children(
    start_compute: Callable[..., ComputeService], conductor_service: ConductorService
) -> None:
    service = start_compute("c1", fake_driver={"provider_tree": NUMA})
    wait_until(lambda: _node(conductor_service, "c1") is not None)
    wait_until(lambda: _node(conductor_service, "c1").children is not None)
    children = _node(conductor_service, "c1").children
    count = conductor_service.db.service_list(binary=COMPUTE_BINARY)[0].report_count
    bigger = {
        rc: dict(record, total=record["total"] + 1) for rc, record in service.inventory.items()
    }
    # A 1.2 report (no children argument): recorded, children left as they were.
    _report(
        conductor_service,
        service,
        inventory=bigger,
        provider_generation=service.provider_generation + 1,
    )
    node = _node(conductor_service, "c1")
    assert conductor_service.db.service_list(binary=COMPUTE_BINARY)[0].report_count == count + 1
    assert (node.inventory, node.children) == (bigger, children)
    # A 1.3 report of a host that has become flat clears them.
    _report(
        conductor_service,
        service,
        provider_generation=service.provider_generation + 2,
        children={},
    )
    assert _node(conductor_service, "c1").children is None


def test_a_conductor_capped_at_1_2_gets_the_report_without_children(
    make_conf: Callable[..., cfg.ConfigOpts],
    transport: messaging.Transport,
    conductor_service: ConductorService,
) -> None:
    conf = make_conf(
        "c1",
        compute=dict(SIZE),
        fake_driver={"provider_tree": NUMA},
        upgrade_levels={"conductor": "1.2"},
    )
    with ComputeService(conf, transport=transport) as service:
        assert len(service.children) == 2
        wait_until(lambda: _node(conductor_service, "c1") is not None)
        assert service.report() is True
        node = _node(conductor_service, "c1")
        assert (node.inventory, node.children) == (service.inventory, None)
