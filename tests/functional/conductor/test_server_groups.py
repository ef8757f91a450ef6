"""Server groups in the conductor's flows, over the real Placement: the
group the scheduler is told about (members, their hosts, read in one query
and only for a server in a group), and the late check that keeps a strict
policy when boots or moves race onto one host."""

import pytest

from resize_sched import actions, exception
from resize_sched.conductor.tasks.policy import Placed, policy_fields
from tests.functional.fixtures.cloud import PROJECT, USER

SMALL = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}


def _group(cloud, policy, rules=None):
    return cloud.db.group_create(
        name="g", project_id=PROJECT, user_id=USER, policy=policy, rules=rules
    )


def _member(cloud, group, flavor, name="vm"):
    """A server recorded as the API records it: with the ``group`` hint, a
    member of ``group`` (None: in no group)."""
    return actions.create_server(
        cloud.db,
        name=name,
        flavorid=flavor.flavorid,
        project_id=PROJECT,
        user_id=USER,
        scheduler_hints={"group": group.uuid} if group else None,
        group_uuid=group.uuid if group else None,
    )


def _boot(cloud, group, flavor, name="vm"):
    server = _member(cloud, group, flavor, name)
    cloud.builds.schedule(server.uuid)
    return cloud.builds.spawned(server.uuid)


def _two_hosts(cloud):
    # host1 is the roomier: the RAM weigher prefers it for every boot.
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=200)
    cloud.add_host("host2", vcpus=8, memory_mb=8192, disk_gb=200)
    return cloud.flavor("small", 1, 1024, 10)


def test_the_scheduler_is_told_the_group_and_the_other_members_hosts(make_cloud):
    cloud = make_cloud("max_flavor")
    flavor = _two_hosts(cloud)
    group = _group(cloud, "anti-affinity", {"max_server_per_host": 2})
    first = _boot(cloud, group, flavor, "a")
    second = _member(cloud, group, flavor, "b")
    spec = cloud.db.request_spec_get(second.uuid)
    fields = policy_fields(
        cloud.db, Placed.of_server(second), spec, flavor=second.flavor, moving=False
    )
    told = fields["group"]
    assert (told.uuid, told.policy, dict(told.rules)) == (
        group.uuid,
        "anti-affinity",
        {"max_server_per_host": 2},
    )
    assert told.members == {first.uuid, second.uuid}
    assert told.hosts == {first.host}
    # On a move the moved server's own host is among them, as Nova's.
    moved = policy_fields(
        cloud.db,
        Placed(first.uuid, PROJECT, USER, first.host),
        cloud.db.request_spec_get(first.uuid),
        flavor=first.flavor,
        moving=True,
    )["group"]
    assert moved.hosts == {first.host}


def test_a_server_in_no_group_costs_no_query(make_cloud):
    cloud = make_cloud("max_flavor")
    flavor = _two_hosts(cloud)
    server = _member(cloud, None, flavor)
    spec = cloud.db.request_spec_get(server.uuid)
    with cloud.statements() as seen:
        fields = policy_fields(
            cloud.db, Placed.of_server(server), spec, flavor=server.flavor, moving=False
        )
    assert "group" not in fields
    assert seen == []
    grouped = _member(cloud, _group(cloud, "affinity"), flavor, "b")
    spec = cloud.db.request_spec_get(grouped.uuid)
    with cloud.statements() as seen:
        policy_fields(
            cloud.db, Placed.of_server(grouped), spec, flavor=grouped.flavor, moving=False
        )
    assert len([s for s in seen if "server_groups" in s]) == 1, seen


def test_racing_boots_never_break_strict_anti_affinity(make_cloud):
    """Two members of a strict anti-affinity group are scheduled at once,
    both onto host1; the one that records its host second is refused by the
    late check, gives its claim back and goes to its alternate."""
    cloud = make_cloud("max_flavor")
    flavor = _two_hosts(cloud)
    group = _group(cloud, "anti-affinity")
    a = _member(cloud, group, flavor, "a")
    b = _member(cloud, group, flavor, "b")
    raced = []

    def b_first(selection):
        # a chose host1 first; b is scheduled (onto host1) before a claims.
        assert selection.destinations[0].host == "host1"
        if not raced:
            raced.append(True)
            assert cloud.builds.schedule(b.uuid).host == "host1"

    cloud.after_scheduling(b_first)
    placed = cloud.builds.schedule(a.uuid)
    assert placed.host == "host2"
    assert cloud.db.server_get(b.uuid).host == "host1"
    assert cloud.holds(a.uuid) == cloud.on("host2", SMALL)
    assert cloud.holds(b.uuid) == cloud.on("host1", SMALL)
    assert cloud.usage("host1") == SMALL
    assert cloud.usage("host2") == SMALL
    cloud.check()


def test_a_boot_the_policy_refuses_everywhere_ends_in_error_holding_nothing(make_cloud):
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=200)
    flavor = cloud.flavor("small", 1, 1024, 10)
    group = _group(cloud, "anti-affinity")
    first = _boot(cloud, group, flavor, "a")
    second = _member(cloud, group, flavor, "b")
    with pytest.raises(exception.NoValidHost):
        cloud.builds.schedule(second.uuid)
    row = cloud.db.server_get(second.uuid)
    assert (row.status, row.host) == ("ERROR", None)
    assert f"member of server group {group.uuid} (anti-affinity)" in row.fault_message
    assert "ServerGroupAntiAffinityFilter removed 1" in row.fault_message
    assert "holds nothing" in row.fault_message
    assert cloud.holds(second.uuid) == {}
    assert cloud.usage("host1") == SMALL
    assert cloud.holds(first.uuid) == cloud.on("host1", SMALL)
    cloud.check()


def test_strict_affinity_goes_to_the_groups_host(make_cloud):
    cloud = make_cloud("max_flavor")
    flavor = _two_hosts(cloud)
    group = _group(cloud, "affinity")
    # The first member lands on host2 (forced), the roomier host1 is refused.
    first = _member(cloud, group, flavor, "a")
    cloud.db.request_spec_update(first.uuid, force_hosts=["host2"])
    cloud.builds.schedule(first.uuid)
    cloud.builds.spawned(first.uuid)
    second = _boot(cloud, group, flavor, "b")
    assert second.host == "host2"
    assert cloud.holds(second.uuid) == cloud.on("host2", SMALL)
    assert cloud.usage("host1") == {}
    cloud.check()


@pytest.mark.parametrize("policy", ["soft-affinity", "soft-anti-affinity"])
def test_soft_policies_are_never_refused(make_cloud, policy):
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=200)
    flavor = cloud.flavor("small", 1, 1024, 10)
    group = _group(cloud, policy)
    hosts = [_boot(cloud, group, flavor, name).host for name in ("a", "b")]
    assert hosts == ["host1", "host1"]
    assert cloud.usage("host1") == {k: 2 * v for k, v in SMALL.items()}


def test_max_server_per_host(make_cloud):
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=200)
    flavor = cloud.flavor("small", 1, 1024, 10)
    group = _group(cloud, "anti-affinity", {"max_server_per_host": 2})
    assert [_boot(cloud, group, flavor, n).host for n in ("a", "b")] == ["host1", "host1"]
    third = _member(cloud, group, flavor, "c")
    with pytest.raises(exception.NoValidHost):
        cloud.builds.schedule(third.uuid)
    assert cloud.holds(third.uuid) == {}
    assert cloud.usage("host1") == {k: 2 * v for k, v in SMALL.items()}
    cloud.check()


def test_a_move_onto_a_members_host_is_refused_and_goes_to_the_next(make_cloud):
    """A resize of an anti-affinity member whose scheduler chose a host
    another member took meanwhile claims the next alternate instead."""
    cloud = make_cloud("max_flavor", resize={"allow_same_host": False})
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=200)
    cloud.add_host("host2", vcpus=8, memory_mb=16384, disk_gb=200)
    cloud.add_host("host3", vcpus=8, memory_mb=12288, disk_gb=200)
    flavor = cloud.flavor("small", 1, 1024, 10)
    big = cloud.flavor("big", 2, 2048, 10)
    group = _group(cloud, "anti-affinity")
    mover = _member(cloud, group, flavor, "a")
    cloud.db.request_spec_update(mover.uuid, force_hosts=["host1"])
    cloud.builds.schedule(mover.uuid)
    mover = cloud.builds.spawned(mover.uuid)
    other = _member(cloud, group, flavor, "b")
    raced = []

    def other_lands_on_host2(selection):
        # The resize chose host2; the other member is placed there first.
        assert selection.destinations[0].host == "host2"
        if not raced:
            raced.append(True)
            cloud.db.request_spec_update(other.uuid, force_hosts=["host2"])
            assert cloud.builds.schedule(other.uuid).host == "host2"

    cloud.after_scheduling(other_lands_on_host2)
    migration, dest = cloud.resize(mover, big)
    assert (migration.dest_host, dest.host) == ("host3", "host3")
    assert cloud.holds(migration.uuid) == cloud.on("host1", SMALL)
    assert cloud.holds(mover.uuid) == cloud.on(
        "host3", {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}
    )
    assert cloud.holds(other.uuid) == cloud.on("host2", SMALL)
    assert cloud.usage("host2") == SMALL


def test_a_race_lost_with_no_alternate_left_ends_in_error_holding_nothing(make_cloud):
    """The late check refuses the only host (a racing member took it after
    the filters passed it): the claim is given back, the server is ERROR."""
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=200)
    flavor = cloud.flavor("small", 1, 1024, 10)
    group = _group(cloud, "anti-affinity")
    a = _member(cloud, group, flavor, "a")
    b = _member(cloud, group, flavor, "b")
    raced = []

    def b_first(selection):
        if not raced:
            raced.append(True)
            assert cloud.builds.schedule(b.uuid).host == "host1"

    cloud.after_scheduling(b_first)
    with pytest.raises(exception.NoValidHost) as caught:
        cloud.builds.schedule(a.uuid)
    assert "policy refused every candidate host" in str(caught.value)
    row = cloud.db.server_get(a.uuid)
    assert (row.status, row.host) == ("ERROR", None)
    assert f"member of server group {group.uuid}" in row.fault_message
    assert cloud.holds(a.uuid) == {}
    assert cloud.holds(b.uuid) == cloud.on("host1", SMALL)
    assert cloud.usage("host1") == SMALL
    cloud.check()
