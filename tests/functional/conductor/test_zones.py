"""Availability zones and tenant isolation asked of the real Placement.

A zone is an aggregate with ``availability_zone`` metadata, mirrored onto
its hosts' root providers (:mod:`resize_sched.placement.aggregates`); the
conductor's flows ask for it as ``member_of`` in the one candidates query
(:func:`resize_sched.conductor.tasks.policy.zone_fields`). Every step is
followed by ``Cloud.check()``; each test states the exact holdings.

The headline case: a server in a one-host zone on a full host. ``legacy``
fails as Nova does (NoValidHost, the old flavor restored) although another
host outside the zone has room; ``max_flavor`` and ``drop_and_reclaim``
resize in place, ``max_flavor`` with Placement requests per resize unchanged.
"""

from typing import Any

import pytest

from resize_sched import actions
from resize_sched.conductor.tasks import policy as policy_fields
from resize_sched.placement import aggregates as mirror
from tests.functional.fixtures.cloud import PROJECT, USER, Cloud, expect_no_valid_host

STRATEGIES = ["legacy", "drop_and_reclaim", "max_flavor"]

OLD = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}

#: Placement requests of a max_flavor resize that fits on its source, with
#: and without zones: with ``prefer_same_host`` the source's usage read and
#: the claim (the source-only question needs no zone: it is in it); without,
#: the source's usage read, the one candidates query over every host (the
#: zone's ``member_of`` in it) and the claim.
MAX_FLAVOR_SCHEDULE_REQUESTS = {True: 2, False: 3}


def _zone(cloud: Cloud, name: str, *hosts: str) -> Any:
    """An aggregate making zone ``name`` of ``hosts``, mirrored as the API does."""
    agg = cloud.db.aggregate_create(f"agg-{name}", name)
    for host in hosts:
        cloud.db.aggregate_add_host(agg.id, host)
        assert mirror.add_host(cloud.db, cloud.observer, host, agg.uuid)
    return cloud.db.aggregate_get(agg.id)


def _boot(cloud: Cloud, flavor: Any, zone: str | None, host: str | None = None) -> Any:
    server = actions.create_server(
        cloud.db,
        name="vm",
        flavorid=flavor.flavorid,
        project_id=PROJECT,
        user_id=USER,
        force_hosts=(host,) if host else (),
        availability_zone=zone,
    )
    cloud.builds.schedule(server.uuid)
    cloud.check()
    return cloud.builds.spawned(server.uuid)


def _full_zone_cloud(
    make_cloud: Any, strategy: str, *, zoned: bool = True, prefer: bool = False
) -> tuple[Cloud, Any, Any]:
    """host1 (2 VCPU) alone in zone az1; host2, large, in the default zone."""
    cloud = make_cloud(strategy, resize={"prefer_same_host": prefer})
    cloud.add_host("host1", vcpus=2, memory_mb=8192, disk_gb=100)
    cloud.add_host("host2", vcpus=16, memory_mb=32768, disk_gb=1000)
    if zoned:
        _zone(cloud, "az1", "host1")
    f_old = cloud.flavor("old", **_sizes(OLD))
    f_new = cloud.flavor("new", **_sizes(NEW))
    return cloud, f_old, f_new


def _sizes(amounts: dict[str, int]) -> dict[str, int]:
    return {
        "vcpus": amounts["VCPU"],
        "memory_mb": amounts["MEMORY_MB"],
        "disk_gb": amounts["DISK_GB"],
    }


def test_build_lands_only_in_its_zone(make_cloud: Any) -> None:
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=16, memory_mb=32768, disk_gb=1000)
    cloud.add_host("host2", vcpus=2, memory_mb=4096, disk_gb=100)
    _zone(cloud, "az2", "host2")
    f_old = cloud.flavor("old", **_sizes(OLD))
    # host1, the emptiest, would be chosen without the zone
    assert _boot(cloud, f_old, None).host == "host1"
    into_zone = _boot(cloud, f_old, "az2")
    assert into_zone.host == "host2"
    assert cloud.holds(into_zone.uuid) == cloud.on("host2", OLD)
    assert cloud.db.server_get(into_zone.uuid).availability_zone == "az2"
    assert cloud.db.request_spec_get(into_zone.uuid).availability_zone == "az2"
    # the default zone: hosts in no zone aggregate, asked with !in: (1.32)
    into_default = _boot(cloud, f_old, "nova")
    assert into_default.host == "host1"
    assert cloud.holds(into_default.uuid) == cloud.on("host1", OLD)
    assert cloud.usage("host2") == OLD


def test_build_into_a_zone_with_no_room_fails_though_others_have_it(make_cloud: Any) -> None:
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=16, memory_mb=32768, disk_gb=1000)
    cloud.add_host("host2", vcpus=1, memory_mb=4096, disk_gb=100)
    _zone(cloud, "az2", "host2")
    f_new = cloud.flavor("new", **_sizes(NEW))
    server = actions.create_server(
        cloud.db,
        name="vm",
        flavorid=f_new.flavorid,
        project_id=PROJECT,
        user_id=USER,
        availability_zone="az2",
    )
    expect_no_valid_host(lambda: cloud.builds.schedule(server.uuid), "deferred")
    cloud.check()
    assert cloud.holds(server.uuid) == {}
    assert cloud.usage("host1") == {} and cloud.usage("host2") == {}
    assert cloud.db.server_get(server.uuid).status == "ERROR"


@pytest.mark.parametrize("asked", [True, False], ids=["zone-asked", "zone-placed"])
def test_legacy_in_a_full_one_host_zone_fails_as_nova(make_cloud: Any, asked: bool) -> None:
    cloud, f_old, f_new = _full_zone_cloud(make_cloud, "legacy")
    server = _boot(cloud, f_old, "az1" if asked else None, host=None if asked else "host1")
    assert server.host == "host1"
    migration = cloud.resizes.begin(server.uuid, f_new.flavorid)
    cloud.check()
    # host2 has room for NEW, but it is not in az1: the query never offers it
    expect_no_valid_host(lambda: cloud.resizes.schedule(migration.uuid), "deferred")
    cloud.check()
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.usage("host1") == OLD and cloud.usage("host2") == {}
    server = cloud.db.server_get(server.uuid)
    assert (server.status, server.task_state, server.host) == ("ACTIVE", None, "host1")
    assert cloud.db.migration_get(migration.uuid).status == "error"


@pytest.mark.parametrize("strategy", ["max_flavor", "drop_and_reclaim"])
def test_full_one_host_zone_resizes_in_place(make_cloud: Any, strategy: str) -> None:
    cloud, f_old, f_new = _full_zone_cloud(make_cloud, strategy)
    server = _boot(cloud, f_old, "az1")
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    migration = cloud.resizes.begin(server.uuid, f_new.flavorid)
    cloud.check()
    cloud.client.reset_request_count()
    dest = cloud.resizes.schedule(migration.uuid)
    requests = cloud.client.request_count
    cloud.check()
    assert (dest.host, dest.same_host) == ("host1", True)
    if strategy == "max_flavor":
        assert requests == MAX_FLAVOR_SCHEDULE_REQUESTS[False]
    assert cloud.holds(server.uuid) == cloud.on("host1", NEW)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.usage("host2") == {}
    cloud.resizes.finish(migration.uuid)
    cloud.check()
    assert cloud.holds(server.uuid) == cloud.on("host1", NEW)
    cloud.confirm(server)
    assert cloud.holds(server.uuid) == cloud.on("host1", NEW)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.usage("host1") == NEW and cloud.usage("host2") == {}
    assert cloud.db.server_get(server.uuid).availability_zone == "az1"


@pytest.mark.parametrize("prefer", [True, False], ids=["prefer-same-host", "every-host"])
@pytest.mark.parametrize("zoned", [True, False], ids=["in-a-zone", "no-zones"])
def test_max_flavor_requests_per_resize_unchanged_by_a_zone(
    make_cloud: Any, zoned: bool, prefer: bool
) -> None:
    cloud, f_old, f_new = _full_zone_cloud(make_cloud, "max_flavor", zoned=zoned, prefer=prefer)
    server = _boot(cloud, f_old, "az1" if zoned else None, host=None if zoned else "host1")
    migration = cloud.resizes.begin(server.uuid, f_new.flavorid)
    cloud.client.reset_request_count()
    dest = cloud.resizes.schedule(migration.uuid)
    assert cloud.client.request_count == MAX_FLAVOR_SCHEDULE_REQUESTS[prefer]
    # without a zone or a preference the emptier host2 wins the weighing
    expected = "host1" if zoned or prefer else "host2"
    assert dest.host == expected
    cloud.check()
    assert cloud.holds(server.uuid) == cloud.on(expected, NEW)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_migration_to_another_host_stays_in_the_zone(make_cloud: Any, strategy: str) -> None:
    cloud = make_cloud(strategy, resize={"allow_same_host": False})
    for name in ("host1", "host2", "host3"):
        cloud.add_host(name, vcpus=8, memory_mb=16384, disk_gb=500)
    cloud.add_host("big", vcpus=64, memory_mb=262144, disk_gb=5000)
    _zone(cloud, "az1", "host1", "host3")
    f_old = cloud.flavor("old", **_sizes(OLD))
    f_new = cloud.flavor("new", **_sizes(NEW))
    server = _boot(cloud, f_old, None, host="host1")
    migration, dest = cloud.resize_to_verify(server, f_new)
    # "big" and host2 have more room, but only host3 is in host1's zone
    assert dest.host == "host3"
    assert cloud.holds(server.uuid) == cloud.on("host3", NEW)
    assert cloud.holds(migration.uuid) == cloud.on("host1", OLD)
    cloud.confirm(server)
    assert cloud.holds(server.uuid) == cloud.on("host3", NEW)
    assert cloud.usage("host1") == {} and cloud.usage("big") == {}


@pytest.mark.parametrize("asked", [False, True], ids=["host's zone", "zone asked"])
def test_a_resize_reads_its_zone_with_its_migration(make_cloud: Any, asked: bool) -> None:
    # The step's one read brings the zones with the migration: no read of
    # its own before the query, and the zone binds all the same.
    cloud = make_cloud("max_flavor", resize={"allow_same_host": False})
    for name in ("host1", "host2", "host3"):
        cloud.add_host(name, vcpus=8, memory_mb=16384, disk_gb=500)
    _zone(cloud, "az1", "host1", "host3")
    server = _boot(cloud, cloud.flavor("old", **_sizes(OLD)), "az1" if asked else None, "host1")
    migration = cloud.resizes.begin(server.uuid, cloud.flavor("new", **_sizes(NEW)).flavorid)
    zone_reads = []
    real = cloud.db.zone_aggregates
    cloud.db.zone_aggregates = lambda *a, **k: zone_reads.append(k) or real(*a, **k)  # type: ignore[method-assign]
    with cloud.commits() as transactions:
        cloud._wrap_scheduler(before=lambda: zone_reads.append(transactions[0]))
        dest = cloud.resizes.schedule(migration.uuid)
    assert zone_reads == [1]  # one transaction (the step's read) before the query
    assert dest is not None and dest.host == "host3"
    assert cloud.holds(server.uuid) == cloud.on("host3", NEW)


def test_default_zone_server_never_moves_into_a_zone(make_cloud: Any) -> None:
    cloud = make_cloud("max_flavor", resize={"allow_same_host": False})
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=500)
    cloud.add_host("host2", vcpus=8, memory_mb=16384, disk_gb=500)
    cloud.add_host("big", vcpus=64, memory_mb=262144, disk_gb=5000)
    _zone(cloud, "az1", "big")
    f_old = cloud.flavor("old", **_sizes(OLD))
    f_new = cloud.flavor("new", **_sizes(NEW))
    server = _boot(cloud, f_old, None, host="host1")
    assert cloud.db.server_get(server.uuid).availability_zone == "nova"
    migration, dest = cloud.resize_to_verify(server, f_new)
    assert dest.host == "host2"
    assert cloud.holds(server.uuid) == cloud.on("host2", NEW)
    assert cloud.holds(migration.uuid) == cloud.on("host1", OLD)


def test_a_zone_that_vanished_finds_no_host(make_cloud: Any) -> None:
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=500)
    f_old = cloud.flavor("old", **_sizes(OLD))
    server = actions.create_server(
        cloud.db,
        name="vm",
        flavorid=f_old.flavorid,
        project_id=PROJECT,
        user_id=USER,
        availability_zone="gone",
    )
    expect_no_valid_host(lambda: cloud.builds.schedule(server.uuid), "deferred")
    cloud.check()
    assert cloud.usage("host1") == {}


@pytest.mark.parametrize("required", [False, True])
def test_tenant_isolation_by_aggregate(make_cloud: Any, required: bool) -> None:
    cloud = make_cloud(
        "max_flavor",
        scheduler={
            "limit_tenants_to_placement_aggregate": True,
            "placement_aggregate_required_for_tenants": required,
        },
    )
    cloud.add_host("host1", vcpus=16, memory_mb=32768, disk_gb=1000)
    cloud.add_host("host2", vcpus=2, memory_mb=4096, disk_gb=100)
    agg = cloud.db.aggregate_create("tenant-a")
    cloud.db.aggregate_add_host(agg.id, "host2")
    mirror.add_host(cloud.db, cloud.observer, "host2", agg.uuid)
    cloud.db.aggregate_set_metadata(agg.id, {"filter_tenant_id": PROJECT})
    f_old = cloud.flavor("old", **_sizes(OLD))
    # PROJECT is named: only host2, though host1 has more room
    assert cloud.boot("vm", f_old).host == "host2"
    cloud.db.aggregate_set_metadata(agg.id, {"filter_tenant_id": None, "filter_tenant_id2": "x"})
    if required:
        server = cloud.builds.create(
            name="vm2", flavorid=f_old.flavorid, project_id=PROJECT, user_id=USER
        )
        expect_no_valid_host(lambda: cloud.builds.schedule(server.uuid), "deferred")
        assert cloud.holds(server.uuid) == {}
    else:
        assert cloud.boot("vm2", f_old).host == "host1"
    cloud.check()


def test_zone_fields_read_one_query_and_no_placement(make_cloud: Any) -> None:
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=500)
    cloud.add_host("host2", vcpus=8, memory_mb=16384, disk_gb=500)
    az1 = _zone(cloud, "az1", "host1")
    f_old = cloud.flavor("old", **_sizes(OLD))
    server = _boot(cloud, f_old, None, host="host2")
    placed = policy_fields.Placed.of_server(cloud.db.server_get(server.uuid))
    spec = cloud.db.request_spec_get(server.uuid)
    cloud.client.reset_request_count()
    with cloud.statements() as seen:
        moving = policy_fields.zone_fields(cloud.db, placed, spec, moving=True, conf=cloud.conf)
        building = policy_fields.zone_fields(cloud.db, placed, spec, moving=False, conf=cloud.conf)
    assert moving == {"availability_zone": "nova", "policy_member_of": (f"!in:{az1.uuid}",)}
    assert building == {}
    assert len([s for s in seen if s.startswith("SELECT")]) == 1
    assert cloud.client.request_count == 0
