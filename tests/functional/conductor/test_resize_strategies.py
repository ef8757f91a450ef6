"""The claim strategies end to end against the real Placement.

Every step is followed by ``Cloud.check()``, which asserts the invariants of
doc/design.rst on Placement's actual state; each test also states the exact
holdings it expects.
"""

import pytest

from resize_sched import exception
from resize_sched import resources as rs
from tests.functional.fixtures.cloud import expect_no_valid_host

STRATEGIES = ["legacy", "drop_and_reclaim", "max_flavor"]

OLD = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}


def _flavors(cloud, old=OLD, new=NEW):
    f_old = cloud.flavor("old", old["VCPU"], old["MEMORY_MB"], old["DISK_GB"])
    f_new = cloud.flavor("new", new["VCPU"], new["MEMORY_MB"], new["DISK_GB"])
    return f_old, f_new


# -- the seed's scenario: Nova bug 1790204 ------------------------------------------

BUG_OLD = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 1028}
BUG_NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 1028}


def _bug_cloud(make_cloud, strategy):
    cloud = make_cloud(strategy)
    cloud.add_host("host1", vcpus=2, memory_mb=8192, disk_gb=1028)
    f_old, f_new = _flavors(cloud, BUG_OLD, BUG_NEW)
    server = cloud.boot("vm", f_old)
    cloud.check()
    return cloud, server, f_new


def test_bug_1790204_legacy_fails_and_keeps_old(make_cloud):
    cloud, server, f_new = _bug_cloud(make_cloud, "legacy")
    migration = cloud.resizes.begin(server.uuid, f_new.flavorid)
    err = expect_no_valid_host(lambda: cloud.resizes.schedule(migration.uuid), "deferred")
    assert "DISK_GB:1028" in str(err)
    cloud.check()
    assert cloud.holds(server.uuid) == cloud.on("host1", BUG_OLD)
    assert cloud.holds(migration.uuid) == {}
    server = cloud.db.server_get(server.uuid)
    assert (server.status, server.task_state) == ("ACTIVE", None)
    migration = cloud.db.migration_get(migration.uuid)
    assert (migration.status, migration.error_kind) == ("error", "deferred")


@pytest.mark.parametrize("strategy", ["drop_and_reclaim", "max_flavor"])
@pytest.mark.parametrize("decision", ["confirm", "revert"])
def test_bug_1790204_fixed_in_place(make_cloud, strategy, decision):
    cloud, server, f_new = _bug_cloud(make_cloud, strategy)
    migration, dest = cloud.resize_to_verify(server, f_new)
    assert dest.provider == cloud.hosts["host1"] and dest.same_host
    assert cloud.holds(server.uuid) == cloud.on("host1", BUG_NEW)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.db.server_get(server.uuid).status == "VERIFY_RESIZE"
    if decision == "confirm":
        cloud.confirm(server)
        assert cloud.holds(server.uuid) == cloud.on("host1", BUG_NEW)
        assert cloud.db.migration_get(migration.uuid).status == "confirmed"
    else:
        cloud.revert(server)
        assert cloud.holds(server.uuid) == cloud.on("host1", BUG_OLD)
        assert cloud.db.migration_get(migration.uuid).status == "reverted"
    assert cloud.holds(migration.uuid) == {}
    assert cloud.db.server_get(server.uuid).status == "ACTIVE"


# -- the matrix: strategy x {same host, other host} x {confirm, revert} -------------

# What each strategy holds in VERIFY_RESIZE on the same host:
# (server on source, migration on source)
SAME_HOST_VERIFY = {
    "legacy": (NEW, OLD),
    "drop_and_reclaim": (NEW, {}),
    "max_flavor": (rs.maximum(OLD, NEW), {}),
}


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("decision", ["confirm", "revert"])
def test_same_host(make_cloud, strategy, decision):
    cloud = make_cloud(strategy)
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=500)
    f_old, f_new = _flavors(cloud)
    server = cloud.boot("vm", f_old)
    migration, dest = cloud.resize_to_verify(server, f_new)
    assert dest.same_host
    server_holds, migration_holds = SAME_HOST_VERIFY[strategy]
    assert cloud.holds(server.uuid) == cloud.on("host1", server_holds)
    assert cloud.holds(migration.uuid) == cloud.on("host1", migration_holds)
    assert cloud.usage("host1") == rs.add(server_holds, migration_holds)
    getattr(cloud, decision)(server)
    final = NEW if decision == "confirm" else OLD
    assert cloud.holds(server.uuid) == cloud.on("host1", final)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.usage("host1") == final


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("decision", ["confirm", "revert"])
def test_other_host(make_cloud, strategy, decision):
    cloud = make_cloud(strategy, resize={"allow_same_host": False})
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=500)
    cloud.add_host("host2", vcpus=8, memory_mb=16384, disk_gb=500)
    f_old, f_new = _flavors(cloud)
    server = cloud.boot("vm", f_old, host="host1")
    migration, dest = cloud.resize_to_verify(server, f_new)
    assert dest.host == "host2" and not dest.same_host
    assert cloud.holds(server.uuid) == cloud.on("host2", NEW)
    assert cloud.holds(migration.uuid) == cloud.on("host1", OLD)
    assert cloud.db.server_get(server.uuid).host == "host2"
    getattr(cloud, decision)(server)
    if decision == "confirm":
        assert cloud.holds(server.uuid) == cloud.on("host2", NEW)
        assert cloud.usage("host1") == {}
    else:
        assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
        assert cloud.usage("host2") == {}
        assert cloud.db.server_get(server.uuid).host == "host1"
    assert cloud.holds(migration.uuid) == {}


# -- no valid host: the old allocation is restored exactly --------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_infeasible_restores_exactly(make_cloud, strategy):
    cloud = make_cloud(strategy)
    cloud.add_host("host1", vcpus=4, memory_mb=4096, disk_gb=100)
    cloud.add_host("host2", vcpus=4, memory_mb=4096, disk_gb=100)
    f_old = cloud.flavor("old", 1, 1024, 10)
    f_huge = cloud.flavor("huge", 8, 1024, 10)
    server = cloud.boot("vm", f_old, host="host1")
    migration = cloud.resizes.begin(server.uuid, f_huge.flavorid)
    err = expect_no_valid_host(lambda: cloud.resizes.schedule(migration.uuid), "infeasible")
    assert "VCPU:8" in str(err)
    cloud.check()
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    assert cloud.holds(migration.uuid) == {}
    migration = cloud.db.migration_get(migration.uuid)
    assert (migration.status, migration.error_kind) == ("error", "infeasible")
    assert cloud.db.server_get(server.uuid).status == "ACTIVE"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_no_room_now_is_deferred_and_restores(make_cloud, strategy):
    cloud = make_cloud(strategy)
    cloud.add_host("host1", vcpus=2, memory_mb=4096, disk_gb=100)
    f_old, f_new = _flavors(cloud, new={"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10})
    server = cloud.boot("vm", f_old)
    cloud.squat("host1", VCPU=1)
    migration = cloud.resizes.begin(server.uuid, f_new.flavorid)
    expect_no_valid_host(lambda: cloud.resizes.schedule(migration.uuid), "deferred")
    cloud.check()
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    assert cloud.usage("host1") == rs.add(OLD, {"VCPU": 1})


def test_drop_restore_refused_flags_server(make_cloud):
    """Someone takes the freed room during the drop window and nothing fits."""
    cloud = make_cloud("drop_and_reclaim")
    cloud.add_host("host1", vcpus=2, memory_mb=4096, disk_gb=100)
    f_old = cloud.flavor("old", 1, 1024, 10)
    f_huge = cloud.flavor("huge", 4, 1024, 10)
    server = cloud.boot("vm", f_old)
    migration = cloud.resizes.begin(server.uuid, f_huge.flavorid)
    cloud.before_scheduling(lambda: cloud.squat("host1", VCPU=2))
    with pytest.raises(exception.RestoreFailed):
        cloud.resizes.schedule(migration.uuid)
    server = cloud.db.server_get(server.uuid)
    migration = cloud.db.migration_get(migration.uuid)
    assert server.needs_heal and server.status == "ACTIVE"
    assert migration.status == "error"
    assert migration.missing["server"] == cloud.on("host1", OLD)
    assert cloud.holds(server.uuid) == {}
    cloud.check()


# -- a claim refused between query and claim -> the next alternate ----------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_refused_claim_moves_to_alternate(make_cloud, strategy):
    cloud = make_cloud(strategy, resize={"allow_same_host": False})
    for name in ("host1", "host2", "host3"):
        cloud.add_host(name, vcpus=4, memory_mb=8192, disk_gb=100)
    f_old, f_new = _flavors(cloud)
    server = cloud.boot("vm", f_old, host="host1")
    taken = []

    def fill_chosen(selection):
        first = selection.destinations[0]
        assert len(selection.destinations) == 2
        taken.append(first.host)
        cloud.squat(first.host, VCPU=4)

    cloud.after_scheduling(fill_chosen)
    migration, dest = cloud.resize(server, f_new)
    assert dest.host not in (taken[0], "host1")
    assert cloud.holds(server.uuid) == cloud.on(dest.host, NEW)
    assert cloud.holds(migration.uuid) == cloud.on("host1", OLD)
    assert migration.dest_host == dest.host
    assert cloud.hosts[taken[0]] in migration.tried


@pytest.mark.parametrize("strategy", ["drop_and_reclaim", "max_flavor"])
def test_refused_same_host_claim_moves_to_other_host(make_cloud, strategy):
    cloud = make_cloud(strategy)
    cloud.add_host("host1", vcpus=4, memory_mb=16384, disk_gb=100)
    cloud.add_host("host2", vcpus=4, memory_mb=4096, disk_gb=100)
    f_old, f_new = _flavors(cloud)
    server = cloud.boot("vm", f_old, host="host1")

    def fill_source(selection):
        assert selection.destinations[0].same_host
        cloud.squat("host1", VCPU=3)

    cloud.after_scheduling(fill_source)
    migration, dest = cloud.resize(server, f_new)
    assert dest.host == "host2"
    assert cloud.holds(server.uuid) == cloud.on("host2", NEW)
    # drop_and_reclaim re-claims old on the source in the same write; the
    # squatter left exactly that much room.
    assert cloud.holds(migration.uuid) == cloud.on("host1", OLD)


# -- reschedules after a compute host fails prep_resize ------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_reschedule_same_host_to_other(make_cloud, strategy):
    cloud = make_cloud(strategy)
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=100)
    cloud.add_host("host2", vcpus=8, memory_mb=8192, disk_gb=100)
    f_old, f_new = _flavors(cloud)
    server = cloud.boot("vm", f_old, host="host1")
    migration, dest = cloud.resize(server, f_new)
    assert dest.same_host
    dest = cloud.resizes.reschedule(migration.uuid, "prep_resize failed on host1")
    cloud.check()
    assert dest.host == "host2"
    assert cloud.holds(server.uuid) == cloud.on("host2", NEW)
    assert cloud.holds(migration.uuid) == cloud.on("host1", OLD)
    cloud.resizes.finish(migration.uuid)
    cloud.check()
    cloud.confirm(server)
    assert cloud.holds(server.uuid) == cloud.on("host2", NEW)
    assert cloud.usage("host1") == {}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_reschedule_other_host_to_same(make_cloud, strategy):
    cloud = make_cloud(strategy)
    cloud.add_host("host1", vcpus=8, memory_mb=4096, disk_gb=100)
    cloud.add_host("host2", vcpus=8, memory_mb=16384, disk_gb=100)
    f_old, f_new = _flavors(cloud)
    server = cloud.boot("vm", f_old, host="host1")
    migration, dest = cloud.resize(server, f_new)
    assert dest.host == "host2"
    dest = cloud.resizes.reschedule(migration.uuid, "prep_resize failed on host2")
    cloud.check()
    assert dest.same_host
    server_holds, migration_holds = SAME_HOST_VERIFY[strategy]
    assert cloud.holds(server.uuid) == cloud.on("host1", server_holds)
    assert cloud.holds(migration.uuid) == cloud.on("host1", migration_holds)
    assert cloud.usage("host2") == {}
    cloud.resizes.finish(migration.uuid)
    cloud.check()
    cloud.revert(server)
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_reschedule_with_no_alternate_left_restores(make_cloud, strategy):
    cloud = make_cloud(strategy, resize={"allow_same_host": False})
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    cloud.add_host("host2", vcpus=8, memory_mb=8192, disk_gb=100)
    f_old, f_new = _flavors(cloud)
    server = cloud.boot("vm", f_old, host="host1")
    migration, dest = cloud.resize(server, f_new)
    assert dest.host == "host2"
    with pytest.raises(exception.NoValidHost):
        cloud.resizes.reschedule(migration.uuid, "prep_resize failed on host2")
    cloud.check()
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    assert cloud.usage("host2") == {}
    assert cloud.db.migration_get(migration.uuid).status == "error"


# -- the strategy recorded on the migration wins over the configured one --------------


def test_strategy_switch_mid_resize_keeps_recorded_strategy(make_cloud):
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=4096, disk_gb=100)
    cloud.add_host("host2", vcpus=8, memory_mb=16384, disk_gb=100)
    f_old, f_new = _flavors(cloud)
    server = cloud.boot("vm", f_old, host="host1")
    migration, dest = cloud.resize(server, f_new)
    assert dest.host == "host2" and migration.claim_strategy == "max_flavor"
    cloud.set_strategy("legacy")
    # The reschedule to the source claims as max_flavor would: the server
    # holds max(old, new) and the migration nothing (legacy would stack).
    cloud.resizes.reschedule(migration.uuid, "prep_resize failed on host2")
    cloud.check()
    assert cloud.holds(server.uuid) == cloud.on("host1", rs.maximum(OLD, NEW))
    assert cloud.holds(migration.uuid) == {}
    cloud.resizes.finish(migration.uuid)
    cloud.set_strategy("drop_and_reclaim")
    cloud.revert(server)
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    # A new resize takes the strategy configured now.
    migration2 = cloud.resizes.begin(server.uuid, f_new.flavorid)
    assert migration2.claim_strategy == "drop_and_reclaim"


@pytest.mark.parametrize("decision", ["confirm", "revert"])
def test_strategy_switch_in_verify_resize(make_cloud, decision):
    cloud = make_cloud("legacy")
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=100)
    f_old, f_new = _flavors(cloud)
    server = cloud.boot("vm", f_old)
    migration, _ = cloud.resize_to_verify(server, f_new)
    assert cloud.holds(migration.uuid) == cloud.on("host1", OLD)
    cloud.set_strategy("max_flavor")
    getattr(cloud, decision)(server)
    assert cloud.db.migration_get(migration.uuid).claim_strategy == "legacy"
    final = NEW if decision == "confirm" else OLD
    assert cloud.holds(server.uuid) == cloud.on("host1", final)
    assert cloud.holds(migration.uuid) == {}


# -- same-host specifics ----------------------------------------------------------------

MIXED_OLD = {"VCPU": 4, "MEMORY_MB": 1024, "DISK_GB": 10}
MIXED_NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}


def test_max_flavor_holds_per_class_max_and_revert_fits_a_full_host(make_cloud):
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    f_old, f_new = _flavors(cloud, MIXED_OLD, MIXED_NEW)
    server = cloud.boot("vm", f_old)
    cloud.resize_to_verify(server, f_new)
    peak = {"VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 10}
    assert cloud.usage("host1") == peak
    cloud.squat("host1", VCPU=4, MEMORY_MB=6144, DISK_GB=90)
    assert cloud.usage("host1") == {"VCPU": 8, "MEMORY_MB": 8192, "DISK_GB": 100}
    cloud.revert(server)
    assert cloud.holds(server.uuid) == cloud.on("host1", MIXED_OLD)


def test_max_flavor_confirm_shrinks_to_new(make_cloud):
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    f_old, f_new = _flavors(cloud, MIXED_OLD, MIXED_NEW)
    server = cloud.boot("vm", f_old)
    cloud.resize_to_verify(server, f_new)
    cloud.confirm(server)
    assert cloud.holds(server.uuid) == cloud.on("host1", MIXED_NEW)
    assert cloud.usage("host1") == MIXED_NEW


def test_drop_and_reclaim_revert_refused_then_retried(make_cloud):
    cloud = make_cloud("drop_and_reclaim")
    cloud.add_host("host1", vcpus=4, memory_mb=4096, disk_gb=100)
    f_old, f_new = _flavors(cloud, MIXED_OLD, MIXED_NEW)
    server = cloud.boot("vm", f_old)
    migration, _ = cloud.resize_to_verify(server, f_new)
    assert cloud.usage("host1") == MIXED_NEW
    squatter = cloud.squat("host1", VCPU=2)
    with pytest.raises(exception.ClaimRefused):
        cloud.resizes.revert(server.uuid)
    cloud.check()
    server_row = cloud.db.server_get(server.uuid)
    assert (server_row.status, server_row.task_state) == ("VERIFY_RESIZE", None)
    assert cloud.holds(server.uuid) == cloud.on("host1", MIXED_NEW)
    assert cloud.db.migration_get(migration.uuid).status == "finished"
    cloud.leave(squatter)
    cloud.revert(server)
    assert cloud.holds(server.uuid) == cloud.on("host1", MIXED_OLD)


# -- bad input ---------------------------------------------------------------------------


def test_resize_of_busy_server_is_refused_and_changes_nothing(make_cloud):
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=100)
    f_old, f_new = _flavors(cloud)
    server = cloud.boot("vm", f_old)
    cloud.resizes.begin(server.uuid, f_new.flavorid)
    with pytest.raises(exception.ServerStateConflict):
        cloud.resizes.begin(server.uuid, f_new.flavorid)
    with pytest.raises(exception.FlavorNotFound):
        cloud.resizes.begin(server.uuid, "no-such-flavor")
    with pytest.raises(exception.ServerStateConflict):
        cloud.resizes.confirm(server.uuid)
    assert len(cloud.db.migration_list(server_uuid=server.uuid)) == 1
    cloud.check()
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)


def test_resize_of_a_server_to_heal_is_refused_until_healed(make_cloud):
    """A failed restore left the server's allocation missing: a resize would
    start from holdings it does not have. Heal first."""
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=100)
    f_old, f_new = _flavors(cloud)
    server = cloud.boot("vm", f_old)
    cloud.db.server_update(server.uuid, needs_heal=True)
    with pytest.raises(exception.ServerStateConflict, match="heal"):
        cloud.resizes.begin(server.uuid, f_new.flavorid)
    assert cloud.db.server_get(server.uuid).status == "ACTIVE"
    assert cloud.db.migration_list(server_uuid=server.uuid) == []
    cloud.db.server_update(server.uuid, needs_heal=False)
    assert cloud.resizes.begin(server.uuid, f_new.flavorid).status == "pre-migrating"


def test_resize_to_current_flavor_is_invalid(make_cloud):
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=100)
    f_old, _ = _flavors(cloud)
    server = cloud.boot("vm", f_old)
    with pytest.raises(exception.Invalid):
        cloud.resizes.begin(server.uuid, f_old.flavorid)
    assert cloud.db.server_get(server.uuid).status == "ACTIVE"
    assert cloud.db.migration_list(server_uuid=server.uuid) == []


# -- Placement traffic ---------------------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("same_host", [True, False])
def test_round_trips_from_scheduling_to_claim(make_cloud, strategy, same_host):
    cloud = make_cloud(strategy, resize={"allow_same_host": same_host})
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=100)
    cloud.add_host("host2", vcpus=8, memory_mb=8192, disk_gb=100)
    f_old, f_new = _flavors(cloud)
    server = cloud.boot("vm", f_old, host="host1")
    migration = cloud.resizes.begin(server.uuid, f_new.flavorid)
    cloud.client.reset_request_count()
    dest = cloud.resizes.schedule(migration.uuid)
    assert dest.same_host is same_host
    assert cloud.client.request_count <= 3, cloud.client.request_count
    cloud.check()
