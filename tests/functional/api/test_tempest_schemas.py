"""Our answers validated by Tempest's own clients against Nova's response
schemas, at the microversions whose shapes differ, on every route Tempest's
compute tests call: exactly Nova's fields, of Nova's types."""

from collections.abc import Callable
from typing import Any

import pytest

from tests.functional.api import tempest_bridge
from tests.functional.api.harness import ADMIN, ALICE, ApiHarness

pytestmark = pytest.mark.skipif(
    tempest_bridge.base_compute_client is None, reason="tempest is not installed"
)

#: Every microversion where a shape Tempest checks changes, up to our maximum.
VERSIONS = [
    None,
    "2.3",
    "2.9",
    "2.16",
    "2.19",
    "2.23",
    "2.26",
    "2.47",
    "2.59",
    "2.73",
    "2.75",
    "2.80",
]


def _world(api: ApiHarness) -> dict[str, Any]:
    """A resized server (its migration confirmed), another whose resize failed."""
    small, large = api.flavor("small"), api.flavor("large", vcpus=2)
    resized = api.server(small, name="resized")
    migration = api.verify_resize(resized, large)
    api.db.migration_update(migration.uuid, status="confirmed")
    api.db.server_update(
        resized.uuid,
        status="ACTIVE",
        vm_state="active",
        access_ip_v4="192.0.2.1",
        metadata_items={"a": "b"},
    )
    failed_server = api.server(small, name="failed")
    strategy = api.conf.resize.claim_strategy
    from resize_sched import actions, strategies

    failed = actions.begin_resize(
        api.db, strategies.load(strategy), failed_server.uuid, large.flavorid
    )
    api.db.migration_update(
        failed.uuid, status="error", error_kind="deferred", error_reason="no room"
    )
    api.db.action_start(resized.uuid, "req-1", "resize", user_id="alice", project_id="project-a")
    return {"server": resized.uuid, "small": small.flavorid}


@pytest.mark.parametrize("version", VERSIONS)
def test_migrations_list_is_novas_shape(api: ApiHarness, version: str | None) -> None:
    _world(api)
    clients = tempest_bridge.Clients(api.app, ADMIN)
    with tempest_bridge.microversion(version):
        migrations = clients.migrations.list_migrations()["migrations"]
    assert len(migrations) == 2
    assert all(isinstance(m["old_instance_type_id"], int) for m in migrations)


@pytest.mark.parametrize("version", VERSIONS)
def test_server_routes_are_novas_shape(api: ApiHarness, version: str | None) -> None:
    world = _world(api)
    server = world["server"]
    for token in (ADMIN, ALICE):
        clients = tempest_bridge.Clients(api.app, token)
        with tempest_bridge.microversion(version):
            clients.servers.show_server(server)
            clients.servers.list_servers()
            clients.servers.list_servers(detail=True)
            clients.servers.update_server(server, name="renamed", accessIPv6="2001:db8::1")
            actions = clients.servers.list_instance_actions(server)["instanceActions"]
            clients.servers.show_instance_action(server, actions[0]["request_id"])
            created = clients.servers.create_server(
                name="new", flavorRef=world["small"], adminPass="pw"
            )["server"]
            assert created["adminPass"] == "pw"
            api.next_cast()


@pytest.mark.parametrize("version", VERSIONS)
def test_flavor_and_usage_routes_are_novas_shape(api: ApiHarness, version: str | None) -> None:
    world = _world(api)
    clients = tempest_bridge.Clients(api.app, ADMIN)
    calls: list[Callable[[], Any]] = [
        clients.flavors.list_flavors,
        lambda: clients.flavors.list_flavors(detail=True),
        lambda: clients.flavors.show_flavor(world["small"]),
        clients.usages.list_tenant_usages,
        lambda: clients.usages.list_tenant_usages(detailed=1),
        lambda: clients.usages.show_tenant_usage("project-a"),
        clients.services.list_services,
    ]
    with tempest_bridge.microversion(version):
        for call in calls:
            call()


@pytest.mark.parametrize("version", [None, "2.28", "2.33", "2.53", "2.80"])
def test_hypervisor_and_service_routes_are_novas_shape(
    cloud: ApiHarness, register: Callable[..., str], version: str | None
) -> None:
    register("h1")
    clients = tempest_bridge.Clients(cloud.app, ADMIN)
    with tempest_bridge.microversion(version):
        hypervisors = clients.hypervisors.list_hypervisors()["hypervisors"]
        clients.hypervisors.list_hypervisors(detail=True)
        clients.hypervisors.show_hypervisor(hypervisors[0]["id"])
        clients.hypervisors.show_hypervisor_statistics()
        services = clients.services.list_services()["services"]
    assert len(hypervisors) == 1 and services
