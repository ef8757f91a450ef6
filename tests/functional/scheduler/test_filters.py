"""The filters and weighers over the real Placement and database: hosts are
filtered and weighed as configured, from host states read in a fixed number
of queries, and never at the cost of a Placement request."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from resize_sched.db import models
from resize_sched.scheduler.host_state import AGGREGATES, SERVERS, build_host_states
from resize_sched.scheduler.request import Destination, GroupPolicy, SchedulingRequest
from tests.functional.fixtures.database import fresh_sqlite_database
from tests.functional.fixtures.placement import PlacementInProcess
from tests.functional.scheduler.test_scheduler import (
    OLD,
    World,
    expect_no_valid_host,
    resize_request,
)

SMALL = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1}


@pytest.fixture
def world(placement: PlacementInProcess, tmp_path: Path) -> Iterator[World]:
    db = fresh_sqlite_database(tmp_path / "db")
    yield World(placement, db)
    db.dispose()


def _server(world: World, host: str, server_uuid: str | None = None) -> str:
    """A server of ours on ``host`` (its row; what it holds is not the point)."""
    flavor = {"vcpus": 1, "memory_mb": 512, "root_gb": 1, "ephemeral_gb": 0, "swap": 0}
    return world.db.server_create(
        name="s",
        project_id="p",
        user_id="u",
        flavor=flavor,
        uuid=server_uuid or str(uuid.uuid4()),
        status="ACTIVE",
        vm_state="active",
        task_state=None,
        host=host,
        node=host,
        rp_uuid=world.hosts[host],
    ).uuid


def _build(**kw: Any) -> SchedulingRequest:
    return SchedulingRequest(destination_request=SMALL, **kw)


def _set_failed_builds(world: World, host: str, count: int) -> None:
    with world.db._writer() as session:
        node = session.query(models.ComputeNode).filter_by(host=host).one()
        node.failed_builds = count


def test_default_filters_and_weighers_cost_one_candidates_query(world: World) -> None:
    for name in ("h1", "h2", "h3"):
        world.add_host(name)
    scheduler, client, spy = world.scheduler()
    scheduler.select_destinations(_build())  # warms the name cache
    client.reset_request_count()
    spy.calls.clear()
    group = GroupPolicy("g", "anti-affinity", {}, frozenset({"me", _server(world, "h1")}))
    selection = scheduler.select_destinations(_build(server_uuid="me", group=group))
    assert [p for _, p, _ in spy.calls] == ["/allocation_candidates"]
    assert client.request_count == 1
    assert "h1" not in world.names(selection)


def test_host_states_cost_a_fixed_number_of_queries(world: World) -> None:
    """Three hosts or ten: the same statements (no query per host)."""
    counts = []
    statements: list[str] = []

    def listener(*args: Any) -> None:
        statements.append(args[2])

    engine = world.db.engine
    for n in (3, 10):
        for i in range(len(world.hosts), n):
            world.add_host(f"h{i}")
        dests = [Destination(rp, name, {}) for name, rp in world.hosts.items()]
        statements.clear()
        event.listen(engine, "before_cursor_execute", listener)
        try:
            states = build_host_states(world.db, dests, frozenset({AGGREGATES, SERVERS}))
        finally:
            event.remove(engine, "before_cursor_execute", listener)
        assert [s.host for s in states] == list(world.hosts)
        assert all(s.service_known and s.total["MEMORY_MB"] == 8192 for s in states)
        counts.append(len([s for s in statements if s.lstrip().upper().startswith("SELECT")]))
    assert counts[0] == counts[1] == 3


def test_hints_filter_hosts(world: World) -> None:
    for name in ("h1", "h2", "h3"):
        world.add_host(name)
    friend, foe = _server(world, "h2"), _server(world, "h3")
    scheduler, _, _ = world.scheduler(
        enabled_filters=["SameHostFilter", "DifferentHostFilter"], max_attempts=3
    )
    selection = scheduler.select_destinations(_build(hints={"same_host": [friend]}))
    assert world.names(selection) == ["h2"]
    selection = scheduler.select_destinations(_build(hints={"different_host": foe}))
    assert sorted(world.names(selection)) == ["h1", "h2"]
    # Not enabled: the hint changes nothing.
    scheduler, _, _ = world.scheduler(enabled_filters=[], max_attempts=3)
    selection = scheduler.select_destinations(_build(hints={"same_host": [friend]}))
    assert sorted(world.names(selection)) == ["h1", "h2", "h3"]


def test_a_disabled_or_down_service_is_filtered_out(world: World) -> None:
    """The compute service's row, not Placement's trait (which the hosts here
    do not have), takes them out: ComputeFilter."""
    for name in ("h1", "h2", "h3"):
        world.add_host(name)
    service = world.db.service_get_by_host("h1")
    world.db.service_set_disabled(service.uuid, True, "maintenance")
    world.db.service_set_forced_down(world.db.service_get_by_host("h2").uuid, True)
    scheduler, _, _ = world.scheduler(max_attempts=3)
    assert world.names(scheduler.select_destinations(_build())) == ["h3"]
    scheduler, _, _ = world.scheduler(max_attempts=3, enabled_filters=[])
    assert sorted(world.names(scheduler.select_destinations(_build()))) == ["h1", "h2", "h3"]


def test_no_valid_host_says_which_filter_removed_how_many(world: World) -> None:
    for name in ("h1", "h2", "h3"):
        world.add_host(name)
    world.db.service_set_disabled(world.db.service_get_by_host("h1").uuid, True, "x")
    scheduler, _, _ = world.scheduler(enabled_filters=["ComputeFilter", "SameHostFilter"])
    request = _build(hints={"same_host": str(uuid.uuid4())})
    err = expect_no_valid_host(lambda: scheduler.select_destinations(request), "deferred")
    assert (
        "3 candidate(s) before filtering; ComputeFilter removed 1, SameHostFilter removed 2"
        in (err.reason)
    )


def test_weighers_rank_as_configured(world: World) -> None:
    """h1 has the most RAM, h2 the most vCPUs, h3 the most disk."""
    world.add_host("h1", vcpus=2, memory_mb=32768, disk_gb=10)
    world.add_host("h2", vcpus=64, memory_mb=4096, disk_gb=10)
    world.add_host("h3", vcpus=2, memory_mb=4096, disk_gb=1000)
    for weighers, first in (
        (["RAMWeigher"], "h1"),
        (["CPUWeigher"], "h2"),
        (["DiskWeigher"], "h3"),
    ):
        scheduler, _, _ = world.scheduler(weight_classes=weighers)
        assert world.names(scheduler.select_destinations(_build()))[0] == first, weighers
    scheduler, _, _ = world.scheduler(
        weight_classes=["RAMWeigher", "CPUWeigher"], cpu_weight_multiplier=3.0
    )
    assert world.names(scheduler.select_destinations(_build()))[0] == "h2"
    # Packing: the fullest first.
    scheduler, _, _ = world.scheduler(weight_classes=["RAMWeigher"], ram_weight_multiplier=-1.0)
    assert world.names(scheduler.select_destinations(_build()))[0] in ("h2", "h3")


def test_failed_builds_push_a_host_last(world: World) -> None:
    world.add_host("h1", memory_mb=32768)
    world.add_host("h2")
    _set_failed_builds(world, "h1", 2)
    scheduler, _, _ = world.scheduler(max_attempts=2)
    assert world.names(scheduler.select_destinations(_build())) == ["h2", "h1"]
    scheduler, _, _ = world.scheduler(max_attempts=2, build_failure_weight_multiplier=0.0)
    assert world.names(scheduler.select_destinations(_build())) == ["h1", "h2"]


def test_soft_anti_affinity_only_weighs(world: World) -> None:
    for name in ("h1", "h2"):
        world.add_host(name)
    member = _server(world, "h1")
    group = GroupPolicy("g", "soft-anti-affinity", {}, frozenset({"me", member}))
    scheduler, _, _ = world.scheduler(max_attempts=2)
    request = _build(server_uuid="me", group=group)
    assert world.names(scheduler.select_destinations(request)) == ["h2", "h1"]
    group = GroupPolicy("g", "soft-affinity", {}, frozenset({"me", member}))
    request = _build(server_uuid="me", group=group)
    assert world.names(scheduler.select_destinations(request)) == ["h1", "h2"]


def test_the_source_of_a_resize_is_filtered_too(world: World) -> None:
    """A strict affinity member's source passes (its group is there), and
    only it; an anti-affinity member's source passes for the moved server."""
    world.add_host("host1", memory_mb=16384)
    world.add_host("host2", memory_mb=16384)
    world.hold("host1", OLD)
    me = _server(world, "host1")
    other = _server(world, "host1")
    scheduler, _, _ = world.scheduler(max_attempts=3)
    affinity = GroupPolicy("g", "affinity", {}, frozenset({me, other}), frozenset({"host1"}))
    request = resize_request(world, server_uuid=me, is_move=True, group=affinity)
    assert world.names(scheduler.select_destinations(request)) == ["host1"]
    anti = GroupPolicy("g", "anti-affinity", {}, frozenset({me, other}), frozenset({"host1"}))
    # Another member is on host1 beside the moved one: the moved server's own
    # host passes all the same (as in Nova), and host2 holds no member.
    request = resize_request(world, server_uuid=me, is_move=True, group=anti)
    assert world.names(scheduler.select_destinations(request)) == ["host2", "host1"]
    # For a build host1 would be refused.
    request = _build(server_uuid=str(uuid.uuid4()), group=anti)
    assert world.names(scheduler.select_destinations(request)) == ["host2"]
    # An ignored source is not a candidate even for an affinity member.
    request = resize_request(
        world,
        server_uuid=me,
        is_move=True,
        group=affinity,
        ignore_providers=frozenset({world.hosts["host1"]}),
    )
    err = expect_no_valid_host(lambda: scheduler.select_destinations(request), "deferred")
    assert "ServerGroupAffinityFilter removed 1" in err.reason


@pytest.mark.parametrize("prefer", [True, False])
def test_prefer_same_host_is_filtered(world: World, prefer: bool) -> None:
    world.add_host("host1", memory_mb=16384)
    world.add_host("host2", memory_mb=16384)
    world.hold("host1", OLD)
    me, other = _server(world, "host1"), _server(world, "host2")
    scheduler, _, _ = world.scheduler(enabled_filters=["ServerGroupAffinityFilter"])
    group = GroupPolicy("g", "affinity", {}, frozenset({me, other}), frozenset({"host2"}))
    request = resize_request(
        world, server_uuid=me, is_move=True, group=group, prefer_same_host=prefer
    )
    selection = scheduler.select_destinations(request)
    assert world.names(selection) == ["host2"] and selection.complete
