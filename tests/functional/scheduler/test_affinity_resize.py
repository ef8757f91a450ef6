"""The case the project exists for, under a strict affinity group.

Two members of an ``affinity`` group share host h1, which is full but for
the resize's increase; h2 is empty. The ServerGroupAffinityFilter keeps h2
out, so only h1 can take the resize: ``max_flavor`` and
``drop_and_reclaim`` resize in place, ``legacy`` (Nova's behaviour) answers
NoValidHost and leaves the allocations as they were. The group's state is
written as rows and handed to the scheduler as its ``GroupPolicy`` (what
``conductor/tasks/policy.py`` ``group_fields`` fills from those rows).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from resize_sched.db import models
from resize_sched.scheduler.request import GroupPolicy
from tests.functional.fixtures.cloud import Cloud, expect_no_valid_host

SMALL = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
BIG = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}


def _affinity_cloud(make_cloud: Callable[..., Cloud], strategy: str) -> tuple[Cloud, Any, Any]:
    cloud = make_cloud(strategy)
    cloud.add_host("h1", vcpus=4, memory_mb=4096, disk_gb=60)
    cloud.add_host("h2", vcpus=16, memory_mb=32768, disk_gb=500)
    small = cloud.flavor("small", 1, 1024, 10)
    big = cloud.flavor("big", 2, 2048, 20)
    first = cloud.boot("a", small, host="h1")
    moved = cloud.boot("b", small, host="h1")
    # Someone else's VCPU: 3 of 4 used, so h1 has room for the increase
    # (one VCPU) but not for the whole new flavor beside the old.
    cloud.squat("h1", VCPU=1)
    with cloud.db._writer() as session:
        group = models.ServerGroup(
            uuid="6a4d7a4c-1f29-4c1b-9a8e-0d52a3c4b111",
            name="web",
            project_id=first.project_id,
            user_id=first.user_id,
            policy="affinity",
            rules={},
        )
        session.add(group)
        session.flush()
        for server in (first, moved):
            session.add(models.ServerGroupMember(group_id=group.id, server_uuid=server.uuid))
    policy = GroupPolicy(
        group.uuid, "affinity", {}, frozenset({first.uuid, moved.uuid}), frozenset({"h1"})
    )
    scheduler = cloud.deps.scheduler
    real = scheduler.select_destinations

    def with_group(request: Any) -> Any:
        assert request.server_uuid == moved.uuid and request.is_move
        return real(dataclasses.replace(request, group=policy))

    scheduler.select_destinations = with_group  # type: ignore[method-assign]
    return cloud, moved, big


@pytest.mark.parametrize("strategy", ["max_flavor", "drop_and_reclaim"])
def test_a_full_affinity_host_resizes_in_place(
    make_cloud: Callable[..., Cloud], strategy: str
) -> None:
    cloud, server, big = _affinity_cloud(make_cloud, strategy)
    migration, dest = cloud.resize(server, big)
    assert dest.same_host and dest.host == "h1"
    migration = cloud.resizes.finish(migration.uuid)
    cloud.check()
    # The new flavor (max(old, new) under max_flavor) on h1, nothing elsewhere.
    assert cloud.holds(server.uuid) == cloud.on("h1", BIG)
    assert cloud.holds(migration.uuid) == {}
    assert not any(cloud.usage("h2").values())
    cloud.confirm(server)
    assert cloud.holds(server.uuid) == cloud.on("h1", BIG)
    assert cloud.usage("h1") == {"VCPU": 4, "MEMORY_MB": 3072, "DISK_GB": 30}


def test_legacy_fails_as_nova_and_restores_the_allocations(
    make_cloud: Callable[..., Cloud],
) -> None:
    cloud, server, big = _affinity_cloud(make_cloud, "legacy")
    before = cloud.holds(server.uuid)
    assert before == cloud.on("h1", SMALL)
    migration = cloud.resizes.begin(server.uuid, big.flavorid)
    err = expect_no_valid_host(lambda: cloud.resizes.schedule(migration.uuid), "deferred")
    assert "ServerGroupAffinityFilter removed 1" in err.reason
    cloud.check()
    assert cloud.holds(server.uuid) == before
    assert cloud.holds(migration.uuid) == {}
    assert not any(cloud.usage("h2").values())
