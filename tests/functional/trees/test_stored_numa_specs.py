"""Stored flavor snapshots whose ``hw:numa_nodes`` today's checks refuse.

Before ``hw:numa_nodes`` was translated into request groups any extra spec
was accepted and ``hw:`` ones ignored, so a server may run with (and a
flavor still carry) ``hw:numa_nodes=3`` on 2 vCPUs, which
:func:`resize_sched.resources.flavor_request` now refuses. Such a snapshot
is written here behind the API's back. One such server must not break heal,
the scheduler's view of its host, nor a resize in flight; the server can
be resized away from it (how an operator corrects it); a new build with it,
or a resize to it, is refused with a clear error and nothing written.
"""

import pytest
import sqlalchemy as sa

from resize_sched import exception
from resize_sched.conductor.heal import heal
from resize_sched.db import models
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT
from tests.functional.fixtures.cloud import PROJECT, USER

BAD = {"hw:numa_nodes": "3"}
SMALL = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}


def _store(cloud, *, server=None, flavorid=None, migration=None):
    with cloud.db.engine.begin() as conn:
        if flavorid is not None:
            conn.execute(
                sa.update(models.Flavor)
                .where(models.Flavor.flavorid == flavorid)
                .values(extra_specs=BAD)
            )
        if server is not None:
            snapshot = cloud.db.server_get(server).flavor
            conn.execute(
                sa.update(models.Server)
                .where(models.Server.uuid == server)
                .values(flavor={**snapshot, "extra_specs": BAD})
            )
        if migration is not None:
            snapshot = cloud.db.migration_get(migration).new_flavor
            conn.execute(
                sa.update(models.Migration)
                .where(models.Migration.uuid == migration)
                .values(new_flavor={**snapshot, "extra_specs": BAD})
            )


def _cloud(make_cloud, strategy="max_flavor"):
    cloud = make_cloud(strategy, resize={"allow_same_host": True})
    cloud.add_host("host1", vcpus=16, memory_mb=16384, disk_gb=200)
    small = cloud.flavor("small", 2, 2048, 10)
    big = cloud.flavor("big", 4, 4096, 10)
    old = cloud.boot("old", small, host="host1")
    _store(cloud, server=old.uuid)
    return cloud, small, big, old


def test_heal_reads_the_refused_snapshot_as_claimed_and_goes_on(make_cloud):
    cloud, small, _, old = _cloud(make_cloud)
    other = cloud.boot("other", small, host="host1")
    root = cloud.hosts["host1"]
    for server in (old, other):
        cloud.observer.delete_allocations(server.uuid)
    report = heal(cloud.db, cloud.client, owner_trait=DEFAULT_OWNER_TRAIT)
    assert report.count("healed") == 2, report.summary()
    assert cloud.holds(old.uuid) == {root: SMALL}
    assert cloud.holds(other.uuid) == {root: SMALL}
    cloud.check()


def test_another_servers_resize_on_that_host_is_scheduled(make_cloud):
    """The scheduler weighs the source with the flavors of the servers
    settled there, the refused one among them."""
    cloud, small, big, _ = _cloud(make_cloud)
    other = cloud.boot("other", small, host="host1")
    migration, dest = cloud.resize_to_verify(other, big)
    assert dest.same_host
    cloud.confirm(other)
    assert cloud.holds(other.uuid) == {
        cloud.hosts["host1"]: {**SMALL, "VCPU": 4, "MEMORY_MB": 4096}
    }


@pytest.mark.parametrize("decision", ["confirm", "revert"])
def test_it_can_be_resized_away_from_its_refused_flavor(make_cloud, decision):
    """How an operator corrects such a server: a resize to a flavor this
    version accepts; a revert gives the stored snapshot back unchanged."""
    cloud, _, big, old = _cloud(make_cloud)
    root = cloud.hosts["host1"]
    stored = cloud.db.server_get(old.uuid).flavor
    migration, dest = cloud.resize_to_verify(old, big)
    assert dest.same_host
    assert cloud.holds(old.uuid) == {root: {**SMALL, "VCPU": 4, "MEMORY_MB": 4096}}
    if decision == "confirm":
        cloud.confirm(old)
        assert cloud.holds(old.uuid) == {root: {**SMALL, "VCPU": 4, "MEMORY_MB": 4096}}
        assert cloud.db.server_get(old.uuid).flavor["extra_specs"] == {}
    else:
        cloud.revert(old)
        assert cloud.holds(old.uuid) == {root: SMALL}
        assert cloud.db.server_get(old.uuid).flavor == stored
    assert cloud.holds(migration.uuid) == {}
    server = cloud.db.server_get(old.uuid)
    assert (server.status, server.task_state) == ("ACTIVE", None)
    cloud.check()


def test_a_resize_to_a_refused_flavor_is_refused(make_cloud):
    cloud, small, big, _ = _cloud(make_cloud)
    other = cloud.boot("other", small, host="host1")
    _store(cloud, flavorid=big.flavorid)
    with pytest.raises(exception.InvalidFlavor, match=f"flavor {big.flavorid}"):
        cloud.resizes.begin(other.uuid, big.flavorid)
    assert cloud.holds(other.uuid) == {cloud.hosts["host1"]: SMALL}


def test_a_build_of_a_refused_flavor_writes_nothing(make_cloud):
    cloud, _, big, _ = _cloud(make_cloud)
    _store(cloud, flavorid=big.flavorid)
    count = len(cloud.db.server_list())
    with pytest.raises(exception.InvalidFlavor, match="hw:numa_nodes=3"):
        cloud.builds.create(name="vm", flavorid=big.flavorid, project_id=PROJECT, user_id=USER)
    assert len(cloud.db.server_list()) == count


@pytest.mark.parametrize("decision", ["confirm", "revert"])
def test_a_resize_in_flight_to_a_refused_snapshot_finishes(make_cloud, decision):
    """A resize begun before the upgrade whose new flavor is now refused:
    read as it was claimed, it is confirmed or reverted exactly."""
    cloud, small, big, _ = _cloud(make_cloud)
    other = cloud.boot("other", small, host="host1")
    root = cloud.hosts["host1"]
    migration = cloud.resizes.begin(other.uuid, big.flavorid)
    _store(cloud, migration=migration.uuid)
    cloud.resizes.schedule(migration.uuid)
    cloud.resizes.finish(migration.uuid)
    cloud.check()
    getattr(cloud, decision)(other)
    want = {**SMALL, "VCPU": 4, "MEMORY_MB": 4096} if decision == "confirm" else SMALL
    assert cloud.holds(other.uuid) == {root: want}
    assert cloud.holds(migration.uuid) == {}
