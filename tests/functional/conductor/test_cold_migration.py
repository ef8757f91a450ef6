"""Cold migration end to end against the real Placement and database.

A cold migration is a resize to the server's own flavor on another host:
each test states the exact holdings of both consumers (the server and its
migration) on every provider after each step, and ``Cloud.check()`` checks
the invariants on Placement's actual state.
"""

import pytest

from resize_sched import actions, exception
from resize_sched.conductor import recovery
from resize_sched.context import admin_context
from tests.functional.conductor.test_recovery import Crash
from tests.functional.conductor.test_recovery import _crash_after_write as crash_after_write
from tests.functional.conductor.test_recovery import _crash_before_write as crash_before_write
from tests.functional.conductor.test_recovery import _manager as recovery_manager
from tests.functional.fixtures.cloud import expect_no_valid_host

STRATEGIES = ["legacy", "drop_and_reclaim", "max_flavor"]
SLOW = pytest.mark.slow


def _quick_first(values, quick):
    """``values`` as parameters, those not in ``quick`` in the slow suite only."""
    return [v if v in quick else pytest.param(v, marks=SLOW) for v in values]


FLAVOR = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}


def _cloud(make_cloud, strategy="max_flavor", hosts=("host1", "host2"), **kw):
    cloud = make_cloud(strategy, **kw)
    for name in hosts:
        cloud.add_host(name, vcpus=4, memory_mb=4096, disk_gb=100)
    flavor = cloud.flavor("small", FLAVOR["VCPU"], FLAVOR["MEMORY_MB"], FLAVOR["DISK_GB"])
    server = cloud.boot("vm", flavor, host="host1")
    cloud.check()
    return cloud, server


def _state(cloud, uuid):
    server = cloud.db.server_get(uuid)
    return server.status, server.task_state, server.host


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("decision", _quick_first(["confirm", "revert"], {"confirm"}))
def test_every_strategy_holds_what_legacy_holds(make_cloud, strategy, decision):
    """The flavor is unchanged, so every strategy's targets are legacy's: the
    migration holds the flavor on the source, the server on the destination."""
    cloud, server = _cloud(make_cloud, strategy)
    migration, dest = cloud.migrate(server)
    assert (migration.migration_type, migration.claim_strategy) == ("migration", strategy)
    assert dest.host == "host2" and not dest.same_host
    assert migration.status == "migrating"
    assert cloud.holds(server.uuid) == cloud.on("host2", FLAVOR)
    assert cloud.holds(migration.uuid) == cloud.on("host1", FLAVOR)
    cloud.migrations.finish(migration.uuid)
    cloud.check()
    assert _state(cloud, server.uuid) == ("VERIFY_RESIZE", None, "host2")
    if decision == "confirm":
        cloud.confirm(server)
        assert cloud.holds(server.uuid) == cloud.on("host2", FLAVOR)
        assert _state(cloud, server.uuid) == ("ACTIVE", None, "host2")
        assert cloud.usage("host1") == {}
    else:
        cloud.revert(server)
        assert cloud.holds(server.uuid) == cloud.on("host1", FLAVOR)
        assert _state(cloud, server.uuid) == ("ACTIVE", None, "host1")
        assert cloud.usage("host2") == {}
    assert cloud.holds(migration.uuid) == {}
    status = cloud.db.migration_get(migration.uuid).status
    assert status == ("confirmed" if decision == "confirm" else "reverted")


def test_a_named_host_is_the_only_choice(make_cloud):
    cloud, server = _cloud(make_cloud, hosts=("host1", "host2", "host3"))
    cloud.squat("host3", VCPU=2, MEMORY_MB=2048)  # host2 weighs better
    migration, dest = cloud.migrate(server, host="host3")
    assert dest.host == "host3"
    assert migration.requested_host == "host3" and migration.alternates == []
    assert cloud.holds(server.uuid) == cloud.on("host3", FLAVOR)
    assert cloud.holds(migration.uuid) == cloud.on("host1", FLAVOR)


def test_no_other_host_keeps_the_server_where_it_was(make_cloud):
    """One host only: the source is never a destination of a cold migration,
    even with ``allow_same_host``: no host could ever take it (infeasible)."""
    cloud, server = _cloud(make_cloud, hosts=("host1",), resize={"allow_same_host": True})
    strategy = cloud.deps.configured_strategy()
    migration = actions.begin_migrate(cloud.db, strategy, server.uuid, context=admin_context())
    expect_no_valid_host(lambda: cloud.migrations.schedule(migration.uuid), "infeasible")
    (action,) = [a for a in cloud.db.action_list(server.uuid) if a.action == "migrate"]
    (event,) = cloud.db.action_events(action.id)
    assert (event.event, event.result) == ("conductor_migrate_server", "Error")
    assert "No other host could take the server (infeasible)" in event.details
    assert "stays on host host1, as it was" in event.details
    cloud.check()
    assert cloud.holds(server.uuid) == cloud.on("host1", FLAVOR)
    assert cloud.holds(migration.uuid) == {}
    assert _state(cloud, server.uuid) == ("ACTIVE", None, "host1")
    migration = cloud.db.migration_get(migration.uuid)
    assert (migration.status, migration.error_kind) == ("error", "infeasible")


def test_a_named_host_without_room_fails_and_restores(make_cloud):
    cloud, server = _cloud(make_cloud, hosts=("host1", "host2", "host3"))
    cloud.squat("host3", VCPU=4)
    migration = cloud.migrations.begin(server.uuid, "host3")
    expect_no_valid_host(lambda: cloud.migrations.schedule(migration.uuid), "deferred")
    cloud.check()
    assert cloud.holds(server.uuid) == cloud.on("host1", FLAVOR)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.usage("host2") == {}


@pytest.mark.parametrize("strategy", _quick_first(STRATEGIES, {"max_flavor"}))
def test_reschedule_to_the_alternate_then_fail(make_cloud, strategy):
    cloud, server = _cloud(make_cloud, strategy, hosts=("host1", "host2", "host3"))
    migration, first = cloud.migrate(server)
    second = cloud.migrations.reschedule(migration.uuid, "prep failed", host=first.host)
    cloud.check()
    assert {first.host, second.host} == {"host2", "host3"}
    assert cloud.holds(server.uuid) == cloud.on(second.host, FLAVOR)
    assert cloud.holds(migration.uuid) == cloud.on("host1", FLAVOR)
    assert cloud.usage(first.host) == {}
    with pytest.raises(exception.NoValidHost):
        cloud.migrations.reschedule(migration.uuid, "prep failed again", host=second.host)
    cloud.check()
    assert cloud.holds(server.uuid) == cloud.on("host1", FLAVOR)
    assert cloud.holds(migration.uuid) == {}
    assert _state(cloud, server.uuid) == ("ACTIVE", None, "host1")
    assert cloud.db.migration_get(migration.uuid).status == "error"


def test_a_compute_failure_after_the_claim_restores_the_source(make_cloud):
    cloud, server = _cloud(make_cloud)
    migration, _ = cloud.migrate(server)
    cloud.migrations.fail(migration.uuid, kind="failed", reason="resize failed", server_error=True)
    cloud.check()
    assert cloud.holds(server.uuid) == cloud.on("host1", FLAVOR)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.usage("host2") == {}
    row = cloud.db.server_get(server.uuid)
    assert (row.status, row.host, row.fault_message) == ("ERROR", "host1", "resize failed")


@pytest.mark.parametrize("status", ["VERIFY_RESIZE", "RESIZE"])
def test_a_server_in_the_wrong_state_is_refused_unchanged(make_cloud, status):
    cloud, server = _cloud(make_cloud, hosts=("host1", "host2", "host3"))
    migration, _ = cloud.migrate(server)
    if status == "VERIFY_RESIZE":
        cloud.migrations.finish(migration.uuid)
    before = (cloud.db.server_get(server.uuid).status, cloud.holds(server.uuid))
    with pytest.raises(exception.ServerStateConflict):
        cloud.migrations.begin(server.uuid)
    assert (cloud.db.server_get(server.uuid).status, cloud.holds(server.uuid)) == before
    assert len(cloud.db.migration_list(server_uuid=server.uuid)) == 1


@pytest.mark.parametrize("when", ["before the schedule", "after the claim"])
def test_a_delete_wins_over_the_migration(make_cloud, when):
    """A delete recorded before a step makes it a no-op; one recorded after
    the claim closes the migration, and releasing both consumers leaves
    nothing held anywhere."""
    cloud, server = _cloud(make_cloud)
    migration = cloud.migrations.begin(server.uuid)
    if when == "after the claim":
        cloud.migrations.schedule(migration.uuid)
    actions.begin_delete(cloud.db, server.uuid)
    assert cloud.migrations.schedule(migration.uuid) is None
    assert cloud.db.migration_get(migration.uuid).status == "error"
    cloud.deps.executor.release(cloud.db.migration_get(migration.uuid))
    cloud.deps.executor.release_server(cloud.db.server_get(server.uuid))
    assert cloud.holds(server.uuid) == {} and cloud.holds(migration.uuid) == {}
    assert cloud.usage("host1") == {} and cloud.usage("host2") == {}


# -- a conductor that stops part-way: recovery finishes what it began ----------------


@pytest.mark.parametrize(
    ("strategy", "crash"),
    [
        ("legacy", "before"),
        ("max_flavor", "after"),
        pytest.param("legacy", "after", marks=SLOW),
        pytest.param("drop_and_reclaim", "before", marks=SLOW),
        pytest.param("drop_and_reclaim", "after", marks=SLOW),
        pytest.param("max_flavor", "before", marks=SLOW),
    ],
)
def test_crash_in_the_schedule_is_resumed_to_the_named_host(make_cloud, strategy, crash):
    """The conductor dies around its first Placement write; recovery settles the
    journal and schedules again, still to the named host (recorded, not held in
    memory)."""
    cloud, server = _cloud(make_cloud, strategy, hosts=("host1", "host2", "host3"))
    migration = cloud.migrations.begin(server.uuid, "host3")
    (crash_before_write if crash == "before" else crash_after_write)(cloud)
    with pytest.raises(Crash):
        cloud.migrations.schedule(migration.uuid)

    report = recovery.recover(recovery_manager(cloud))
    assert report.found == 1
    cloud.check()
    assert [e for e in cloud.db.journal_list(migration.uuid) if e.state == "intended"] == []
    migration = cloud.db.migration_get(migration.uuid)
    assert (migration.status, migration.dest_host) == ("migrating", "host3")
    assert cloud.holds(server.uuid) == cloud.on("host3", FLAVOR)
    assert cloud.holds(migration.uuid) == cloud.on("host1", FLAVOR)
    assert cloud.usage("host2") == {}


@pytest.mark.parametrize("decision", _quick_first(["confirm", "revert"], {"confirm"}))
def test_crash_in_the_decision_is_completed(make_cloud, decision):
    cloud, server = _cloud(make_cloud)
    migration, _ = cloud.migrate(server)
    cloud.migrations.finish(migration.uuid)
    crash_after_write(cloud)
    with pytest.raises(Crash):
        getattr(cloud.migrations, decision)(server.uuid)

    recovery.recover(recovery_manager(cloud))
    cloud.check()
    kept = "host2" if decision == "confirm" else "host1"
    assert cloud.holds(server.uuid) == cloud.on(kept, FLAVOR)
    assert cloud.holds(migration.uuid) == {}
    assert _state(cloud, server.uuid) == ("ACTIVE", None, kept)


def test_placement_requests_per_cold_migration(make_cloud):
    """What a cold migration costs in Placement requests, step by step (the
    figures the report gives) under ``max_flavor``: one candidates query and
    one claim (the source's allocation handed to the migration in the same
    write), then one write for the confirm."""
    cloud, server = _cloud(make_cloud, "max_flavor")
    migration = cloud.migrations.begin(server.uuid)
    cloud.client.reset_request_count()
    cloud.migrations.schedule(migration.uuid)
    scheduled = cloud.client.request_count
    cloud.migrations.finish(migration.uuid)
    cloud.client.reset_request_count()
    cloud.migrations.confirm(server.uuid)
    confirmed = cloud.client.request_count
    cloud.check()
    assert (scheduled, confirmed) == (2, 1)
