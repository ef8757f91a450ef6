"""Another service's allocation on our server's consumer, against the real Placement.

Neutron puts a QoS port's bandwidth on the server's own consumer (a GET and
a PUT with the consumer generation, on the OVS agent's bridge: a child of
our root Neutron created), Cyborg an accelerator on its own device provider.
Our next write meets a consumer generation it did not expect, re-reads, and
must carry what they hold through unchanged: under every strategy, on the
same host and to another, through a confirm, a revert, a resize that finds
no host (the restore), and a delete, which gives back the whole consumer.
``cloud.check()`` asserts after every step that the other services'
allocations are still exactly there and counts only the rest as ours.
"""

import uuid

import pytest

from resize_sched import actions, exception, rpc
from resize_sched import resources as rs
from resize_sched.compute.rpcapi import ComputeAPI
from resize_sched.conductor import audit, heal
from resize_sched.conductor.manager import ConductorManager
from resize_sched.context import admin_context
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT
from tests.functional.fixtures.cloud import expect_no_valid_host
from tests.functional.fixtures.flows import Recorder
from tests.functional.trees.topology import add_to_consumer, cyborg_accelerator, neutron_port

STRATEGIES = ("legacy", "drop_and_reclaim", "max_flavor")
OLD = (2, 2048, 20)
NEW = (4, 4096, 40)


def _cells():
    for strategy in STRATEGIES:
        for where in ("same", "other"):
            for decision in ("confirm", "revert", "no host", "delete"):
                yield pytest.param(strategy, where, decision, id=f"{strategy}-{where}-{decision}")


def _delete(cloud, server_uuid):
    transport = rpc.get_transport(cloud.conf, "fake://", exchange=f"fa_{uuid.uuid4().hex}")
    manager = ConductorManager(cloud.deps, ComputeAPI(cloud.conf, transport))
    manager.compute = Recorder()
    actions.begin_delete(cloud.db, server_uuid)
    manager.delete_server(admin_context(), server_uuid)


@pytest.mark.parametrize(("strategy", "where", "decision"), list(_cells()))
def test_another_services_allocation_is_carried_and_a_delete_takes_all(
    make_cloud, strategy, where, decision
):
    cloud = make_cloud(strategy, resize={"allow_same_host": where == "same"})
    for name in ("host1", "host2") if where == "other" else ("host1",):
        cloud.add_host(name, vcpus=8, memory_mb=8192, disk_gb=100)
    old = cloud.flavor("old", *OLD)
    new = cloud.flavor("new", *NEW)
    server = cloud.boot("vm", old, host="host1")
    ours = cloud.on("host1", rs.flavor_request(old.to_snapshot()).resources)
    assert cloud.holds(server.uuid) == ours
    bridge = neutron_port(cloud, "host1", server.uuid)
    theirs = {bridge: {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}
    assert cloud.holds(server.uuid) == {**ours, **theirs}
    cloud.check()

    if decision == "no host":
        huge = cloud.flavor("huge", 64, 4096, 40)
        migration = cloud.resizes.begin(server.uuid, huge.flavorid)
        expect_no_valid_host(lambda: cloud.resizes.schedule(migration.uuid), "infeasible")
        cloud.check()
        assert cloud.holds(server.uuid) == {**ours, **theirs}
        assert cloud.holds(migration.uuid) == {}
        return

    migration, dest = cloud.resize_to_verify(server, new)
    assert dest.same_host == (where == "same")
    claimed = cloud.holds(server.uuid)
    assert {rp: claimed[rp] for rp in theirs} == theirs
    # Cyborg's accelerator arrives while the resize waits in VERIFY_RESIZE.
    device = cyborg_accelerator(cloud, "host1", server.uuid)
    theirs[device] = {"FPGA": 1}
    cloud.check()

    if decision == "delete":
        _delete(cloud, server.uuid)
        cloud.check()
        assert cloud.holds(server.uuid) == {}
        assert cloud.holds(migration.uuid) == {}
        for rp in theirs:
            assert cloud.observer.get_usages(rp) == {}
        return
    if decision == "confirm":
        cloud.confirm(server)
        expected = cloud.on(dest.host, rs.flavor_request(new.to_snapshot()).resources)
    else:
        cloud.revert(server)
        expected = ours
    # Ours as the decision says; theirs where they put it (nothing moved it).
    assert cloud.holds(server.uuid) == {**expected, **theirs}
    assert cloud.holds(migration.uuid) == {}
    row = cloud.db.server_get(server.uuid)
    assert row.allocations is None  # ours: its flavor on its host alone


def _build_cloud(make_cloud):
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    flavor = cloud.flavor("old", *OLD)
    ours = cloud.on("host1", rs.flavor_request(flavor.to_snapshot()).resources)
    return cloud, flavor, ours


def test_a_build_claims_beside_a_port_put_on_its_consumer_first(make_cloud):
    cloud, flavor, ours = _build_cloud(make_cloud)
    server = cloud.builds.create(
        name="vm", flavorid=flavor.flavorid, project_id="p", user_id="u", force_hosts=("host1",)
    )
    # Neutron binds the port between the scheduler's answer and our claim.
    theirs = {}
    cloud.after_scheduling(
        lambda selection: theirs.update(
            {neutron_port(cloud, "host1", server.uuid): {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}
        )
    )
    cloud.builds.schedule(server.uuid)
    cloud.builds.spawned(server.uuid)
    cloud.check()
    assert cloud.holds(server.uuid) == {**ours, **theirs}
    # The generation recorded is the one Placement holds: a resize writes
    # without a conflict first.
    held = cloud.observer.get_allocations(server.uuid)
    assert cloud.db.server_get(server.uuid).placement_generation == held.generation


@pytest.mark.parametrize("end", ["spawn failed", "delete"])
def test_a_build_that_ends_keeps_theirs_and_a_delete_takes_all(make_cloud, end):
    cloud, flavor, ours = _build_cloud(make_cloud)
    server = cloud.builds.create(
        name="vm", flavorid=flavor.flavorid, project_id="p", user_id="u", force_hosts=("host1",)
    )
    cloud.builds.schedule(server.uuid)
    bridge = neutron_port(cloud, "host1", server.uuid)
    theirs = {bridge: {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}
    if end == "spawn failed":
        cloud.builds.fail(server.uuid, "the hypervisor said no")
        cloud.check()
        assert cloud.holds(server.uuid) == theirs
        assert cloud.db.server_get(server.uuid).status == "ERROR"
        return
    cloud.builds.spawned(server.uuid)
    _delete(cloud, server.uuid)
    cloud.check()
    assert cloud.holds(server.uuid) == {}
    assert cloud.observer.get_usages(bridge) == {}


def test_heal_restores_a_failed_restore_beside_a_port(make_cloud):
    """drop_and_reclaim's restore is refused (someone took the room in the
    drop window) while Neutron's port holds bandwidth on the consumer: heal
    gives the server its flavor back and keeps the port's allocation."""
    cloud = make_cloud("drop_and_reclaim")
    cloud.add_host("host1", vcpus=2, memory_mb=4096, disk_gb=100)
    old = cloud.flavor("old", 2, 2048, 20)
    server = cloud.boot("vm", old)
    ours = cloud.on("host1", rs.flavor_request(old.to_snapshot()).resources)
    bridge = neutron_port(cloud, "host1", server.uuid)
    theirs = {bridge: {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}
    migration = cloud.resizes.begin(server.uuid, cloud.flavor("huge", 64, 2048, 20).flavorid)
    squatter = []
    cloud.before_scheduling(lambda: squatter or squatter.append(cloud.squat("host1", VCPU=2)))
    with pytest.raises(exception.RestoreFailed):
        cloud.resizes.schedule(migration.uuid)
    assert cloud.holds(server.uuid) == theirs
    cloud.check()
    cloud.leave(squatter[0])

    report = heal.heal(cloud.db, cloud.observer, owner_trait=DEFAULT_OWNER_TRAIT)
    assert [r.outcome for r in report.results] == [heal.HEALED], report.results
    assert cloud.holds(server.uuid) == {**ours, **theirs}
    assert not cloud.db.server_get(server.uuid).needs_heal
    cloud.check()


def test_audit_leaves_another_services_class_on_our_root(make_cloud):
    """A licence service counts seats on our root (a class no flavor asks)
    and holds one on the server's consumer. The server moves to host2; the
    seat stays where it is, and audit neither lists nor deletes it."""
    cloud = make_cloud("max_flavor")
    for name in ("host1", "host2"):
        cloud.add_host(name, vcpus=8, memory_mb=8192, disk_gb=100)
    root = cloud.hosts["host1"]
    inventory, generation = cloud.observer.get_inventories(root)
    seats = {"total": 10, "reserved": 0, "min_unit": 1, "max_unit": 10, "step_size": 1}
    cloud.observer.set_inventory(root, {**inventory, "CUSTOM_LICENSE_SEAT": seats}, generation)
    server = cloud.boot("vm", cloud.flavor("old", *OLD), host="host1")
    add_to_consumer(cloud, server.uuid, root, {"CUSTOM_LICENSE_SEAT": 1})
    migration, dest = cloud.resize_to_verify(server, cloud.flavor("new", *NEW))
    assert dest.host == "host2"
    cloud.confirm(server)
    held = cloud.holds(server.uuid)
    assert held[root] == {"CUSTOM_LICENSE_SEAT": 1}

    report = audit.audit(cloud.db, cloud.observer, owner_trait=DEFAULT_OWNER_TRAIT, delete=True)
    assert report.orphans == []
    assert cloud.holds(server.uuid) == held
    cloud.check()
