"""The build flow's claim against the real Placement: capacity refusals move
to the next host; provider generation conflicts (a concurrent claim on the
same host) claim again on the same host."""

import pytest

from resize_sched import exception
from tests.functional.fixtures.cloud import PROJECT, USER

SMALL = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}


def _conflicts_first(cloud, times: int):
    """The next ``times`` allocation PUTs answer as Placement does when a
    concurrent claim bumped the provider's generation (nothing written)."""
    real = cloud.client.put_allocations
    left = {"n": times}

    def put(consumer, write):
        if left["n"]:
            left["n"] -= 1
            raise exception.ConsumerGenerationConflict(
                detail="resource provider generation conflict", placement_code="x"
            )
        return real(consumer, write)

    cloud.client.put_allocations = put


def _server(cloud):
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    flavor = cloud.flavor("small", 1, 1024, 10)
    return cloud.builds.create(
        name="vm", flavorid=flavor.flavorid, project_id=PROJECT, user_id=USER
    )


def test_a_generation_conflict_claims_again_on_the_same_host(make_cloud):
    cloud = make_cloud("max_flavor")
    server = _server(cloud)
    _conflicts_first(cloud, 2)
    placed = cloud.builds.schedule(server.uuid)
    assert (placed.task_state, placed.host) == ("spawning", "host1")
    assert cloud.holds(server.uuid) == cloud.on("host1", SMALL)


def test_conflicts_beyond_the_retries_leave_the_build_for_the_sweep(make_cloud):
    cloud = make_cloud("max_flavor", placement={"generation_conflict_retries": 1})
    server = _server(cloud)
    _conflicts_first(cloud, 2)
    with pytest.raises(exception.ConsumerGenerationConflict):
        cloud.builds.schedule(server.uuid)
    row = cloud.db.server_get(server.uuid)
    assert (row.status, row.task_state, row.host) == ("BUILD", "scheduling", None)
    assert cloud.holds(server.uuid) == {}
