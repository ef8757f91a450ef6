"""The reaper on trees: a late write left on our child, a sharing pool and
another service's child (issue 25, item 3).

A server we deleted is given back whole, as Nova's instance delete does: its
consumer is emptied, whatever provider each part is on. A closed migration's
consumer is given back only on our providers (our roots and children, and
the sharing pools our claims take disk from): what it holds on another
service's provider stays. Audit lists none of what the reaper gave back, the
pool included.
"""

import uuid

from resize_sched import actions, rpc
from resize_sched.compute.rpcapi import ComputeAPI
from resize_sched.conductor import audit, reaper
from resize_sched.conductor.manager import ConductorManager
from resize_sched.context import admin_context
from resize_sched.placement.client import INSTANCE, MIGRATION, ConsumerWrite
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT
from tests.functional.fixtures.cloud import PROJECT, USER
from tests.functional.trees.topology import (
    BANDWIDTH,
    DEVICE_SPECS,
    add_child,
    add_sharing_pool,
    add_tree_host,
)


def _cloud(make_cloud):
    cloud = make_cloud("max_flavor", resize={"allow_same_host": False})
    for host in ("host1", "host2"):
        add_tree_host(cloud, "vgpu", host, vcpus=4, memory_mb=4096, disk_gb=0, devices=2)
    add_sharing_pool(cloud, "pool", 100, "host1", "host2")
    add_child(cloud, "host1", "br-ex", {BANDWIDTH: 10000})  # Neutron's
    return cloud


def _manager(cloud):
    transport = rpc.get_transport(cloud.conf, "fake://", exchange=f"reap_{uuid.uuid4().hex}")
    return ConductorManager(cloud.deps, ComputeAPI(cloud.conf, transport))


def _orphans(cloud):
    report = audit.audit(cloud.db, cloud.observer, owner_trait=DEFAULT_OWNER_TRAIT)
    return sorted((o.consumer, o.rp_uuid) for o in report.orphans)


def test_a_late_claim_of_a_deleted_server_is_given_back_whole(make_cloud):
    cloud = _cloud(make_cloud)
    flavor = cloud.flavor("gpu", 2, 2048, 20, extra_specs=DEVICE_SPECS["vgpu"])
    server = cloud.boot("vm", flavor, host="host1")
    claimed = cloud.holds(server.uuid)
    assert set(claimed) == {cloud.hosts["host1"], cloud.hosts["host1/pgpu0"], cloud.hosts["pool"]}
    manager = _manager(cloud)
    actions.begin_delete(cloud.db, server.uuid)
    manager.delete_server(admin_context(), server.uuid)
    assert cloud.holds(server.uuid) == {}
    # The claim lands late, with the port's share Neutron put on the
    # instance's consumer beside it.
    foreign = cloud.hosts["host1/br-ex"]
    late = {**claimed, foreign: {BANDWIDTH: 1000}}
    cloud.observer.put_allocations(server.uuid, ConsumerWrite(late, PROJECT, USER, None, INSTANCE))
    # Another deployment's server takes disk from the same pool: not ours.
    neighbour = str(uuid.uuid4())
    pool = cloud.hosts["pool"]
    cloud.observer.put_allocations(
        neighbour, ConsumerWrite({pool: {"DISK_GB": 5}}, "other", "other", None, INSTANCE)
    )
    cloud.squatters[neighbour] = "pool"
    # Audit sees the root's, our child's and the pool's part, not the neighbour.
    assert _orphans(cloud) == sorted((server.uuid, rp) for rp in claimed)

    report = reaper.reap(manager, grace=0)
    assert report.reaped == {server.uuid: "deleted server"}
    assert cloud.holds(server.uuid) == {}
    for rp in (*claimed, foreign):
        expected = {"DISK_GB": 5} if rp == pool else {}
        assert cloud.observer.get_usages(rp) == expected, rp
    assert cloud.holds(neighbour) == {pool: {"DISK_GB": 5}}
    assert _orphans(cloud) == []
    last = cloud.db.server_journal_list(server.uuid)[-1]
    assert (last.phase, last.state, last.before, last.target) == ("reap", "applied", late, {})
    cloud.check()


def test_a_late_write_to_a_closed_migration_is_given_back_on_our_providers_only(make_cloud):
    cloud = _cloud(make_cloud)
    old = cloud.flavor("gpu", 2, 2048, 20, extra_specs=DEVICE_SPECS["vgpu"])
    new = cloud.flavor("gpu2", 3, 2048, 30, extra_specs=DEVICE_SPECS["vgpu"])
    server = cloud.boot("vm", old, host="host1")
    claimed = cloud.holds(server.uuid)
    migration, _ = cloud.resize_to_verify(server, new)
    cloud.confirm(server)
    held = cloud.holds(server.uuid)
    foreign = cloud.hosts["host1/br-ex"]
    late = {**claimed, foreign: {BANDWIDTH: 500}}
    cloud.observer.put_allocations(
        migration.uuid, ConsumerWrite(late, PROJECT, USER, None, MIGRATION)
    )
    assert _orphans(cloud) == sorted((migration.uuid, rp) for rp in claimed)

    report = reaper.reap(_manager(cloud), grace=0)
    assert report.reaped == {migration.uuid: "migration confirmed"}
    assert cloud.holds(migration.uuid) == {foreign: {BANDWIDTH: 500}}
    assert cloud.holds(server.uuid) == held
    assert _orphans(cloud) == []
    last = cloud.db.journal_list(migration.uuid)[-1]
    assert (last.phase, last.state) == ("reap", "applied")
