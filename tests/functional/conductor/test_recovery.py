"""Crash recovery: the journal is reconciled with Placement and every resize
found in flight is finished or rolled back.

A crash is simulated by raising a ``BaseException`` (which no code path
catches) at a precise point: just before a Placement write, or just after it
but before the journal records it.
"""

import datetime
import uuid

import pytest
import sqlalchemy as sa

from resize_sched import actions, exception, rpc
from resize_sched import resources as rs
from resize_sched.compute.rpcapi import ComputeAPI
from resize_sched.conductor import recovery
from resize_sched.conductor.manager import ConductorManager
from resize_sched.context import admin_context
from resize_sched.db import models
from resize_sched.placement.embedded import ROUTER, WSGITransport
from tests.functional.fixtures.cloud import PROJECT, USER

OLD = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}


class Crash(BaseException):
    """The process dies here."""


def _crash_before_write(cloud):
    """The next Placement allocation write never happens: the process dies."""
    client = cloud.client
    real_put, real_post = client.put_allocations, client.post_allocations

    def boom(*args, **kwargs):
        client.put_allocations, client.post_allocations = real_put, real_post
        raise Crash()

    client.put_allocations = boom
    client.post_allocations = boom


def _crash_after_write(cloud, nth=1):
    """The ``nth`` Placement allocation write from now lands, but the process
    dies before anything more is recorded."""
    client = cloud.client
    real_put, real_post = client.put_allocations, client.post_allocations
    calls = {"n": 0}

    def landing(real):
        def write(*args, **kwargs):
            result = real(*args, **kwargs)
            calls["n"] += 1
            if calls["n"] == nth:
                client.put_allocations, client.post_allocations = real_put, real_post
                raise Crash()
            return result

        return write

    client.put_allocations = landing(real_put)
    client.post_allocations = landing(real_post)


def _manager(cloud):
    # A private exchange: nobody listens for these casts to compute hosts.
    transport = rpc.get_transport(cloud.conf, "fake://", exchange=f"recovery_{uuid.uuid4().hex}")
    return ConductorManager(cloud.deps, ComputeAPI(cloud.conf, transport))


def _two_hosts(make_cloud, strategy):
    cloud = make_cloud(strategy, resize={"allow_same_host": False})
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    cloud.add_host("host2", vcpus=8, memory_mb=8192, disk_gb=100)
    f_old = cloud.flavor("old", **dict(zip(("vcpus", "memory_mb", "disk_gb"), OLD.values())))
    f_new = cloud.flavor("new", **dict(zip(("vcpus", "memory_mb", "disk_gb"), NEW.values())))
    server = cloud.boot("vm", f_old, host="host1")
    return cloud, server, f_new


def _no_intended(cloud, migration_uuid):
    return [e.state for e in cloud.db.journal_list(migration_uuid) if e.state == "intended"]


@pytest.mark.parametrize("strategy", ["legacy", "drop_and_reclaim", "max_flavor"])
def test_crash_after_claim_write_is_settled_and_resumed(make_cloud, strategy):
    cloud, server, f_new = _two_hosts(make_cloud, strategy)
    migration = cloud.resizes.begin(server.uuid, f_new.flavorid)
    # legacy and drop_and_reclaim write once before the claim (prepare).
    writes_before_claim = 0 if strategy == "max_flavor" else 1
    _crash_after_write(cloud, nth=1 + writes_before_claim)
    with pytest.raises(Crash):
        cloud.resizes.schedule(migration.uuid)
    assert _no_intended(cloud, migration.uuid) == ["intended"]
    assert cloud.holds(server.uuid) == cloud.on("host2", NEW)

    report = recovery.recover(_manager(cloud))
    assert report.found == 1
    assert list(report.reconciled.values()) == ["applied"]
    assert report.resumed[migration.uuid] == "scheduled again"
    cloud.check()
    assert _no_intended(cloud, migration.uuid) == []
    migration = cloud.db.migration_get(migration.uuid)
    assert (migration.status, migration.dest_host) == ("migrating", "host2")
    assert cloud.holds(server.uuid) == cloud.on("host2", NEW)
    assert cloud.holds(migration.uuid) == cloud.on("host1", OLD)


def test_crash_before_claim_write_is_abandoned_and_resumed(make_cloud):
    cloud, server, f_new = _two_hosts(make_cloud, "max_flavor")
    migration = cloud.resizes.begin(server.uuid, f_new.flavorid)
    _crash_before_write(cloud)
    with pytest.raises(Crash):
        cloud.resizes.schedule(migration.uuid)
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)

    report = recovery.recover(_manager(cloud))
    assert list(report.reconciled.values()) == ["abandoned"]
    cloud.check()
    assert _no_intended(cloud, migration.uuid) == []
    assert cloud.db.migration_get(migration.uuid).status == "migrating"
    assert cloud.holds(server.uuid) == cloud.on("host2", NEW)


@pytest.mark.parametrize("decision", ["confirm", "revert"])
def test_crash_during_decision_is_completed(make_cloud, decision):
    cloud, server, f_new = _two_hosts(make_cloud, "max_flavor")
    migration, _ = cloud.resize_to_verify(server, f_new)
    _crash_after_write(cloud)
    with pytest.raises(Crash):
        getattr(cloud.resizes, decision)(server.uuid)
    status = cloud.db.migration_get(migration.uuid).status
    assert status == ("confirming" if decision == "confirm" else "reverting")

    report = recovery.recover(_manager(cloud))
    assert list(report.reconciled.values()) == ["applied"]
    cloud.check()
    migration = cloud.db.migration_get(migration.uuid)
    server = cloud.db.server_get(server.uuid)
    assert server.status == "ACTIVE"
    if decision == "confirm":
        assert migration.status == "confirmed"
        assert cloud.holds(server.uuid) == cloud.on("host2", NEW)
    else:
        assert migration.status == "reverted"
        assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    assert cloud.usage("host1") == (OLD if decision == "revert" else {})


def test_nothing_in_flight_does_nothing(make_cloud):
    cloud, server, f_new = _two_hosts(make_cloud, "legacy")
    migration, _ = cloud.resize_to_verify(server, f_new)
    cloud.confirm(server)
    report = recovery.recover(_manager(cloud))
    assert (report.found, report.reconciled, report.resumed) == (0, {}, {})
    assert cloud.db.migration_get(migration.uuid).status == "confirmed"


def test_verify_resize_is_left_waiting(make_cloud):
    cloud, server, f_new = _two_hosts(make_cloud, "drop_and_reclaim")
    migration, _ = cloud.resize_to_verify(server, f_new)
    before = rs.add_allocations(cloud.holds(server.uuid), cloud.holds(migration.uuid))
    report = recovery.recover(_manager(cloud))
    assert report.resumed == {migration.uuid: "nothing to do"}
    assert rs.add_allocations(cloud.holds(server.uuid), cloud.holds(migration.uuid)) == before
    assert cloud.db.server_get(server.uuid).status == "VERIFY_RESIZE"


class _Outage:
    """Placement becomes unreachable: its in-process route is withdrawn, so
    requests go to a host name that does not resolve (a real connection
    failure, surfaced by keystoneauth after its retries)."""

    def __init__(self, placement) -> None:
        self.placement = placement
        self.prefix = placement._prefix + "/"

    def __enter__(self):
        ROUTER.unregister(self.prefix)
        return self

    def __exit__(self, *exc):
        ROUTER.register(self.prefix, WSGITransport(self.placement.app, script_name="/placement"))


@pytest.mark.parametrize("strategy", ["legacy", "max_flavor"])
def test_placement_down_mid_resize_then_recovered(make_cloud, placement, strategy):
    cloud, server, f_new = _two_hosts(make_cloud, strategy)
    migration = cloud.resizes.begin(server.uuid, f_new.flavorid)
    manager = _manager(cloud)
    with _Outage(placement):
        manager.resize_server(admin_context(), migration.uuid)
    migration = cloud.db.migration_get(migration.uuid)
    server_row = cloud.db.server_get(server.uuid)
    if strategy == "max_flavor":
        # Nothing had been written: the failure restores without Placement.
        assert (migration.status, migration.error_kind) == ("error", "failed")
        assert "unavailable" in migration.error_reason.lower()
        assert server_row.status == "ACTIVE"
        cloud.check()
        return
    # legacy's first write (old -> migration) met the outage: its outcome is
    # unknown, so the resize is left for recovery, journal entry intended.
    assert migration.status == "pre-migrating" and migration.holdings is None
    assert _no_intended(cloud, migration.uuid) == ["intended"]
    assert server_row.status == "RESIZE"
    report = recovery.recover(_manager(cloud))
    assert list(report.reconciled.values()) == ["abandoned"]
    assert report.resumed[migration.uuid] == "scheduled again"
    cloud.check()
    migration = cloud.db.migration_get(migration.uuid)
    assert (migration.status, migration.dest_host) == ("migrating", "host2")
    assert cloud.holds(server.uuid) == cloud.on("host2", NEW)
    assert cloud.holds(migration.uuid) == cloud.on("host1", OLD)


def _age(cloud, uuid_, seconds, model=models.Migration):
    """Pretend the migration (or server) last changed ``seconds`` ago."""
    then = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=seconds)
    with cloud.db.engine.begin() as conn:
        conn.execute(sa.update(model).where(model.uuid == uuid_).values(updated_at=then))


def test_sweep_takes_on_only_resizes_that_stopped_moving(make_cloud):
    cloud = make_cloud("max_flavor", resize={"allow_same_host": False})
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    cloud.add_host("host2", vcpus=8, memory_mb=8192, disk_gb=100)
    f_old = cloud.flavor("old", 1, 1024, 10)
    f_new = cloud.flavor("new", 2, 2048, 20)
    stuck_server = cloud.boot("stuck", f_old, host="host1")
    fresh_server = cloud.boot("fresh", f_old, host="host1")
    waiting_server = cloud.boot("waiting", f_old, host="host1")
    stuck, _ = cloud.resize(stuck_server, f_new)
    fresh, _ = cloud.resize(fresh_server, f_new)
    waiting, _ = cloud.resize_to_verify(waiting_server, f_new)
    _age(cloud, stuck.uuid, 3600)
    _age(cloud, waiting.uuid, 3600)

    report = recovery.recover(_manager(cloud), idle_for=300)
    assert report.found == 1
    assert report.resumed == {stuck.uuid: "prep_resize sent again to host2"}
    cloud.check()
    # Nothing about Placement changed: the claim stands, the step is re-sent.
    assert cloud.holds(stuck_server.uuid) == cloud.on("host2", NEW)
    assert cloud.db.migration_get(waiting.uuid).status == "finished"
    assert cloud.db.migration_get(fresh.uuid).status == "migrating"
    # The step was sent again: the next sweep gives it stuck_after seconds.
    assert recovery.recover(_manager(cloud), idle_for=300).found == 0


# -- builds ---------------------------------------------------------------------------


class _SpawnLog:
    """Records the spawns the manager sends (nobody listens on its exchange)."""

    def __init__(self, manager) -> None:
        self.sent: list[tuple[str, str]] = []
        real = manager.compute.spawn

        def spawn(ctxt, host, server):
            self.sent.append((host, server["uuid"]))
            return real(ctxt, host, server)

        manager.compute.spawn = spawn


def _one_host(make_cloud):
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    return cloud, cloud.flavor("old", 1, 1024, 10)


def _recorded(cloud, flavor, name="vm"):
    """A server the API recorded, whose build_server cast never arrived."""
    return cloud.builds.create(
        name=name, flavorid=flavor.flavorid, project_id=PROJECT, user_id=USER
    )


def test_lost_build_is_scheduled_again(make_cloud):
    cloud, flavor = _one_host(make_cloud)
    server = _recorded(cloud, flavor)
    manager = _manager(cloud)
    spawns = _SpawnLog(manager)

    report = recovery.recover(manager)
    assert report.resumed == {server.uuid: "scheduled again, spawn sent to host1"}
    assert spawns.sent == [("host1", server.uuid)]
    row = cloud.db.server_get(server.uuid)
    assert (row.status, row.task_state, row.host) == ("BUILD", "spawning", "host1")
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    cloud.check()


def _before_placing(cloud, action):
    """Run ``action(server_uuid)`` once, just before a build records its host."""
    real = cloud.db.server_advance

    def advance(uuid_, /, **kwargs):
        if kwargs.get("operation") == "place":
            cloud.db.server_advance = real
            action(uuid_)
        return real(uuid_, **kwargs)

    cloud.db.server_advance = advance


def _raise(error):
    def action(_):
        raise error

    return action


def test_claim_landed_but_not_recorded_is_adopted_not_claimed_twice(make_cloud):
    cloud, flavor = _one_host(make_cloud)
    server = _recorded(cloud, flavor)
    _before_placing(cloud, _raise(Crash()))
    with pytest.raises(Crash):
        cloud.builds.schedule(server.uuid)
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    assert cloud.db.server_get(server.uuid).task_state == "scheduling"

    manager = _manager(cloud)
    spawns = _SpawnLog(manager)
    cloud.client.reset_request_count()
    report = recovery.recover(manager)
    assert report.resumed == {server.uuid: "spawn sent to host1"}
    assert spawns.sent == [("host1", server.uuid)]
    # Two reads (the consumer, then its provider's name) and no write.
    assert cloud.client.request_count == 2
    assert cloud.client.get_allocations(server.uuid).generation == 1
    row = cloud.db.server_get(server.uuid)
    assert (row.task_state, row.host, row.placement_generation) == ("spawning", "host1", 1)
    assert row.rp_uuid == cloud.hosts["host1"]
    cloud.check()


def test_lost_spawn_is_sent_again_once_per_stuck_after(make_cloud):
    cloud, flavor = _one_host(make_cloud)
    stuck = _recorded(cloud, flavor, "stuck")
    fresh = _recorded(cloud, flavor, "fresh")
    cloud.builds.schedule(stuck.uuid)
    cloud.builds.schedule(fresh.uuid)
    _age(cloud, stuck.uuid, 3600, model=models.Server)
    manager = _manager(cloud)
    spawns = _SpawnLog(manager)
    cloud.client.reset_request_count()

    report = recovery.recover(manager, idle_for=300)
    assert report.resumed == {stuck.uuid: "spawn sent to host1"}
    assert spawns.sent == [("host1", stuck.uuid)]
    assert cloud.client.request_count == 0
    # Re-sending stamped the server: the next sweep leaves it alone.
    assert recovery.recover(manager, idle_for=300).found == 0
    assert len(spawns.sent) == 1


def test_two_sweeps_racing_take_a_build_on_once(make_cloud):
    cloud, flavor = _one_host(make_cloud)
    server = _recorded(cloud, flavor)
    seen = cloud.db.server_get(server.uuid)
    first, second = _manager(cloud), _manager(cloud)
    spawns = _SpawnLog(first), _SpawnLog(second)

    assert recovery.resume_build(first, seen) == "scheduled again, spawn sent to host1"
    with pytest.raises(exception.ServerStateConflict):
        recovery.resume_build(second, seen)
    assert [len(log.sent) for log in spawns] == [1, 0]
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)


def test_duplicate_build_server_changes_nothing(make_cloud):
    cloud, flavor = _one_host(make_cloud)
    server = _recorded(cloud, flavor)
    manager = _manager(cloud)
    spawns = _SpawnLog(manager)
    manager.build_server(admin_context(), server.uuid)
    cloud.client.reset_request_count()
    manager.build_server(admin_context(), server.uuid)
    assert cloud.client.request_count == 0
    assert spawns.sent == [("host1", server.uuid)]
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)


def test_placement_down_during_build_then_swept(make_cloud, placement):
    cloud, flavor = _one_host(make_cloud)
    server = _recorded(cloud, flavor)
    manager = _manager(cloud)
    spawns = _SpawnLog(manager)
    with _Outage(placement):
        manager.build_server(admin_context(), server.uuid)
    row = cloud.db.server_get(server.uuid)
    assert (row.status, row.task_state, row.host) == ("BUILD", "scheduling", None)
    assert cloud.holds(server.uuid) == {}
    assert spawns.sent == []

    _age(cloud, server.uuid, 3600, model=models.Server)
    report = recovery.recover(manager, idle_for=300)
    assert report.resumed == {server.uuid: "scheduled again, spawn sent to host1"}
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    cloud.check()


def test_claim_adopted_by_recovery_mid_build_is_not_given_back(make_cloud):
    """A second conductor's start-up recovery adopts a claim between the first
    conductor's claim and its database update: the first must not release it."""
    cloud, flavor = _one_host(make_cloud)
    server = _recorded(cloud, flavor)
    other = _manager(cloud)
    _before_placing(cloud, lambda _: recovery.recover(other))
    with pytest.raises(exception.ServerStateConflict):
        cloud.builds.schedule(server.uuid)
    row = cloud.db.server_get(server.uuid)
    assert (row.task_state, row.host, row.placement_generation) == ("spawning", "host1", 1)
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    cloud.check()


def test_server_deleted_mid_build_gets_its_claim_given_back(make_cloud):
    cloud, flavor = _one_host(make_cloud)
    server = _recorded(cloud, flavor)
    _before_placing(cloud, cloud.db.server_delete)
    with pytest.raises(exception.ServerNotFound):
        cloud.builds.schedule(server.uuid)
    assert cloud.holds(server.uuid) == {}
    assert cloud.usage("host1") == {}


def test_two_sweeps_racing_take_a_resize_on_once(make_cloud, monkeypatch):
    cloud, server, f_new = _two_hosts(make_cloud, "max_flavor")
    migration, _ = cloud.resize(server, f_new)
    _age(cloud, migration.uuid, 3600)
    seen = cloud.db.migration_list_in_flight()  # what a second conductor read too

    first = recovery.recover(_manager(cloud), idle_for=300)
    assert first.resumed == {migration.uuid: "prep_resize sent again to host2"}
    monkeypatch.setattr(cloud.db, "migration_list_in_flight", lambda: seen)
    second = recovery.recover(_manager(cloud), idle_for=300)
    assert second.resumed == {}
    assert "take on the stalled migration" in second.failed[migration.uuid]
    assert cloud.holds(server.uuid) == cloud.on("host2", NEW)
    cloud.check()


def test_the_sweep_begins_a_refused_revert_again_once_its_source_changed(make_cloud):
    """A revert refused because the source no longer admits the old flavor
    (MEMORY_MB max_unit below it) waits in VERIFY_RESIZE; a sweep with the
    source unchanged leaves it, one after the inventory came back reverts."""
    cloud, server, f_new = _two_hosts(make_cloud, "max_flavor")
    migration, _ = cloud.resize_to_verify(server, f_new)
    rp = cloud.hosts["host1"]
    inventory, generation = cloud.observer.get_inventories(rp)
    lowered = {**inventory, "MEMORY_MB": {**inventory["MEMORY_MB"], "max_unit": 512}}
    generation = cloud.observer.set_inventory(rp, lowered, generation)
    manager = _manager(cloud)
    actions.begin_revert(cloud.db, server.uuid)
    manager.revert_resize(admin_context(), migration.uuid)  # refused: logged, recorded
    row = cloud.db.server_get(server.uuid)
    assert (row.status, row.task_state) == ("VERIFY_RESIZE", None)
    assert "host host1's inventory no longer admits the old flavor" in row.fault_message
    refused = cloud.db.migration_get(migration.uuid).refused_decision
    assert refused == {"decision": "revert", "provider": rp, "generation": generation}

    report = recovery.recover(manager, idle_for=300)
    assert report.retried == {}
    assert cloud.db.migration_get(migration.uuid).status == "finished"

    cloud.observer.set_inventory(rp, inventory)
    report = recovery.recover(manager, idle_for=300)
    assert report.retried == {migration.uuid: "revert retried: reverted"}
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.db.server_get(server.uuid).status == "ACTIVE"
    cloud.check()
