"""The scheduler's compute node rows, cached for ``[scheduler]
compute_node_cache_seconds``, against the real Placement and database.

A second request reads no candidate's row while the first read is fresh; a
service forced down is seen once its row is older than that (never later),
and back up at the next request; at once with the cache off. A build's
outcome is seen by the conductor that recorded it at its next request.
"""

from typing import Any

import sqlalchemy as sa

from resize_sched import resources as rs
from resize_sched.db import models
from resize_sched.scheduler.manager import SchedulingRequest
from tests.functional.fixtures.cloud import Cloud

#: the host states' read (not the host names', which are kept for good)
_NODE_READ = "SELECT compute_nodes.uuid, compute_nodes.host, compute_nodes.hypervisor_hostname"
SMALL = {"vcpus": 1, "memory_mb": 512, "disk_gb": 5}


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _cloud(make_cloud: Any, seconds: float) -> tuple[Cloud, _Clock]:
    cloud = make_cloud("max_flavor", scheduler={"compute_node_cache_seconds": seconds})
    cloud.add_host("big", vcpus=8, memory_mb=16384, disk_gb=100)
    cloud.add_host("small", vcpus=8, memory_mb=4096, disk_gb=100)
    clock = _Clock()
    cloud.deps.scheduler.nodes.clock = clock
    return cloud, clock


def _request(cloud: Cloud) -> SchedulingRequest:
    flavor = cloud.flavor("f", **SMALL).to_snapshot()
    return SchedulingRequest(rs.flavor_request(flavor).resources, flavor=flavor)


def _choose(cloud: Cloud, request: SchedulingRequest) -> tuple[str, int]:
    """The host chosen, and how many compute node reads choosing it took."""
    reads: list[str] = []

    def executed(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if " ".join(statement.split()).startswith(_NODE_READ):
            reads.append(statement)

    sa.event.listen(cloud.db.engine, "before_cursor_execute", executed)
    try:
        selection = cloud.deps.scheduler.select_destinations(request)
    finally:
        sa.event.remove(cloud.db.engine, "before_cursor_execute", executed)
    return selection.destinations[0].host, len(reads)


def _force_down(cloud: Cloud, host: str) -> None:
    service = cloud.db.service_get_by_host(host)
    cloud.db.service_set_forced_down(service.uuid, True)


def test_fresh_rows_are_not_read_again_and_old_ones_are(make_cloud: Any) -> None:
    cloud, clock = _cloud(make_cloud, 5.0)
    request = _request(cloud)
    assert _choose(cloud, request) == ("big", 1)
    assert _choose(cloud, request) == ("big", 0)

    # Forced down: a fresh row still says up, for at most the option's seconds.
    _force_down(cloud, "big")
    clock.now += 4.9
    assert _choose(cloud, request) == ("big", 0)
    clock.now += 0.2
    assert _choose(cloud, request) == ("small", 1)
    # A row that keeps its host out is read at every request: back up, the
    # host is chosen at once.
    service = cloud.db.service_get_by_host("big")
    cloud.db.service_set_forced_down(service.uuid, False)
    assert _choose(cloud, request) == ("big", 1)
    assert _choose(cloud, request) == ("big", 0)


def test_zero_reads_every_request(make_cloud: Any) -> None:
    cloud, _ = _cloud(make_cloud, 0)
    request = _request(cloud)
    assert _choose(cloud, request) == ("big", 1)
    assert _choose(cloud, request) == ("big", 1)
    _force_down(cloud, "big")
    assert _choose(cloud, request) == ("small", 1)


def test_a_failed_build_is_weighed_at_the_next_request(make_cloud: Any) -> None:
    cloud, _ = _cloud(make_cloud, 30.0)
    request = _request(cloud)
    assert _choose(cloud, request)[0] == "big"
    server = cloud.builds.create(
        name="vm", flavorid=cloud.flavor("g", **SMALL).flavorid, project_id="p", user_id="u"
    )
    cloud.builds.schedule(server.uuid)
    assert cloud.db.server_get(server.uuid).host == "big"
    # The host fails to spawn it: its count rises, and this conductor's
    # scheduler reads that row again at its next request (and only that one).
    cloud.builds.fail(server.uuid, "spawn failed")
    with cloud.db._reader() as session:
        assert session.query(models.ComputeNode).filter_by(host="big").one().failed_builds == 1
    assert _choose(cloud, request) == ("small", 1)
    assert _choose(cloud, request) == ("small", 0)
