"""The reaper's pass: one read per consumer deleted or closed since the last
pass, nothing for the rest of the cloud, and the end of a pass is where the
next one goes on from (issue 29).

Placement is real (in process); the requests are those of the conductor's
own client, recorded by a spy.
"""

import datetime
import uuid
from typing import Any

import pytest

from resize_sched import actions, exception, rpc
from resize_sched.compute.rpcapi import ComputeAPI
from resize_sched.conductor import reaper
from resize_sched.conductor.lease import Lease
from resize_sched.conductor.manager import ConductorManager
from resize_sched.context import admin_context
from resize_sched.placement.client import INSTANCE, ConsumerWrite
from tests.functional.fixtures.cloud import PROJECT, USER, Cloud
from tests.functional.fixtures.spy import Spy

OLD = (1, 1024, 10)
RESOURCES = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}


@pytest.fixture
def cloud(make_cloud: Any) -> Cloud:
    cloud = make_cloud(resize={"allow_same_host": False}, conductor={"reap_after": 0})
    for name in ("host1", "host2", "host3", "host4"):
        cloud.add_host(name, vcpus=8, memory_mb=8192, disk_gb=100)
    return cloud


def _manager(cloud: Cloud) -> ConductorManager:
    transport = rpc.get_transport(cloud.conf, "fake://", exchange=f"reap_{uuid.uuid4().hex}")
    return ConductorManager(cloud.deps, ComputeAPI(cloud.conf, transport))


def _delete_with_late_claim(cloud: Cloud, manager: ConductorManager, server: Any) -> dict:
    """Delete ``server``; then its claim lands again (held up in Placement)."""
    held = cloud.holds(server.uuid)
    actions.begin_delete(cloud.db, server.uuid)
    manager.delete_server(admin_context(), server.uuid)
    cloud.observer.put_allocations(server.uuid, ConsumerWrite(held, PROJECT, USER, None, INSTANCE))
    return held


def test_a_pass_reads_what_was_deleted_since_the_last_one_only(cloud: Cloud) -> None:
    flavor = cloud.flavor("old", *OLD)
    servers = [cloud.boot(f"vm{i}", flavor) for i in range(4)]
    manager = _manager(cloud)
    start = datetime.datetime.now(datetime.UTC)
    migration, _ = cloud.resize_to_verify(servers[2], cloud.flavor("new", 2, 2048, 20))
    cloud.confirm(servers[2])
    leaked = _delete_with_late_claim(cloud, manager, servers[0])
    deleted_quietly = servers[1]
    actions.begin_delete(cloud.db, deleted_quietly.uuid)
    manager.delete_server(admin_context(), deleted_quietly.uuid)
    spy = Spy(cloud.client)

    first = reaper.reap(manager, since=start)
    assert first.reaped == {servers[0].uuid: "deleted server"}
    assert cloud.holds(servers[0].uuid) == {}
    # One read per deleted server and closed migration, one write for the
    # one holding something; the live servers and the hosts are never read.
    assert sorted((m, p) for m, p, _ in spy.calls) == sorted(
        [
            ("GET", f"/allocations/{servers[0].uuid}"),
            ("PUT", f"/allocations/{servers[0].uuid}"),
            ("GET", f"/allocations/{deleted_quietly.uuid}"),
            ("GET", f"/allocations/{migration.uuid}"),
        ]
    )
    assert first.consumers == 3 and first.until is not None and first.left == {}
    assert leaked == cloud.on(servers[0].host, RESOURCES)

    # The next pass goes on from the end of this one: nothing to read.
    spy.calls.clear()
    idle = reaper.reap(manager, since=first.until)
    assert (idle.consumers, idle.reaped, spy.calls) == (0, {}, [])
    cloud.check()


def test_a_consumer_left_by_a_pass_is_read_again_by_the_next(cloud: Cloud) -> None:
    flavor = cloud.flavor("old", *OLD)
    server = cloud.boot("vm", flavor)
    manager = _manager(cloud)
    start = datetime.datetime.now(datetime.UTC)
    _delete_with_late_claim(cloud, manager, server)
    real = cloud.client.put_allocations

    def refused(consumer: str, write: Any) -> Any:
        raise exception.ConsumerGenerationConflict(
            method="PUT",
            url=f"/allocations/{consumer}",
            placement_code="placement.concurrent_update",
            detail="injected",
        )

    cloud.client.put_allocations = refused  # type: ignore[method-assign]
    report = reaper.reap(manager, since=start)
    assert set(report.left) == {server.uuid} and report.reaped == {}
    deleted_at = cloud.db.server_get(server.uuid, read_deleted=True).deleted_at
    assert report.until < deleted_at

    cloud.client.put_allocations = real  # type: ignore[method-assign]
    again = reaper.reap(manager, since=report.until)
    assert again.reaped == {server.uuid: "deleted server"}
    assert cloud.holds(server.uuid) == {}
    cloud.check()


def test_within_the_grace_period_nothing_is_read(cloud: Cloud) -> None:
    flavor = cloud.flavor("old", *OLD)
    server = cloud.boot("vm", flavor)
    manager = _manager(cloud)
    start = datetime.datetime.now(datetime.UTC)
    _delete_with_late_claim(cloud, manager, server)
    spy = Spy(cloud.client)
    report = reaper.reap(manager, grace=3600, since=start - datetime.timedelta(hours=2))
    assert report.left == {server.uuid: "within the grace period"}
    assert spy.calls == [] and report.until < start
    # Its turn comes with the pass that ends after its grace period.
    assert reaper.reap(manager, since=report.until).reaped == {server.uuid: "deleted server"}


def test_the_sweep_reaps_under_the_lease_and_records_where_it_stopped(cloud: Cloud) -> None:
    flavor = cloud.flavor("old", *OLD)
    server = cloud.boot("vm", flavor)
    manager = _manager(cloud)
    _delete_with_late_claim(cloud, manager, server)
    assert manager.lease.hold()
    other = Lease(cloud.db, "other-conductor", 60)
    assert not other.hold()
    report = reaper.reap_if_due(manager)
    assert report is not None and report.reaped == {server.uuid: "deleted server"}
    recorded = cloud.db.lease_get(manager.lease.name).reaped_until
    assert recorded == report.until
    # Not due again before reap_interval has passed.
    assert reaper.reap_if_due(manager) is None
    # A conductor that does not hold the lease records nothing.
    assert not other.record(reaped_until=datetime.datetime.now(datetime.UTC))
    assert cloud.db.lease_get(manager.lease.name).reaped_until == recorded
    cloud.check()
