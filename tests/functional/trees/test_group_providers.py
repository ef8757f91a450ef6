"""Which provider holds which numbered request group, recorded and kept.

A host with two GPUs (one vGPU child each, told apart by a trait) and a
flavor with two numbered vGPU groups under ``group_policy=isolate``: one
vGPU on each GPU. Resized to a flavor whose group 2 asks for two vGPUs, the
extra vGPU must go to group 2's GPU, whichever of the two that is. Each
test runs with group 2 on either GPU, so a resize that puts the increase
on "the first provider that holds the class" is caught one way or the
other. After every step the server's recorded map
(``servers.group_providers``) and the exact holdings of both consumers,
provider by provider, are checked against the real Placement.
"""

import pytest

from resize_sched import exception
from resize_sched import resources as rs
from tests.functional.fixtures.cloud import PROJECT, USER
from tests.functional.trees.topology import add_child

A100 = "CUSTOM_VGPU_A100"
T4 = "CUSTOM_VGPU_T4"
BASE = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}

#: (group 1's GPU trait, group 2's GPU trait)
ORIENTATIONS = [
    pytest.param((A100, T4), id="g2-on-pgpu1"),
    pytest.param((T4, A100), id="g2-on-pgpu0"),
]
#: The same, the second orientation in the slow suite only.
ONE_QUICK = [
    ORIENTATIONS[0],
    pytest.param((T4, A100), id="g2-on-pgpu0", marks=pytest.mark.slow),
]
GPU_OF = {A100: "pgpu0", T4: "pgpu1"}


def _host(cloud, name):
    cloud.add_host(name, vcpus=8, memory_mb=8192, disk_gb=100)
    # NOTE: three vGPUs a GPU: room for legacy's old and new side by side.
    add_child(cloud, name, "pgpu0", {"VGPU": 3}, (A100,), ours=True)
    add_child(cloud, name, "pgpu1", {"VGPU": 3}, (T4,), ours=True)


def _flavor(cloud, name, traits, g1, g2, vcpus=2):
    specs = {
        "resources1:VGPU": str(g1),
        f"trait1:{traits[0]}": "required",
        "resources2:VGPU": str(g2),
        f"trait2:{traits[1]}": "required",
        "group_policy": "isolate",
    }
    return cloud.flavor(name, vcpus, 2048, 10, extra_specs=specs)


def _setup(make_cloud, strategy, traits, *, other=False, g1=1, g2=1):
    cloud = make_cloud(strategy, resize={"allow_same_host": not other})
    _host(cloud, "host1")
    if other:
        _host(cloud, "host2")
    old = _flavor(cloud, "old", traits, g1, g2)
    server = cloud.boot("vm", old, host="host1")
    cloud.check()
    return cloud, server


def _gpus(cloud, host, traits):
    """(group 1's child, group 2's child) on ``host``."""
    return tuple(cloud.hosts[f"{host}/{GPU_OF[t]}"] for t in traits)


def _map(cloud, server):
    return cloud.db.server_get(server.uuid).group_providers


def _exact(cloud, host, traits, g1, g2, **base):
    c1, c2 = _gpus(cloud, host, traits)
    return {cloud.hosts[host]: {**BASE, **base}, c1: {"VGPU": g1}, c2: {"VGPU": g2}}


def _expected_map(cloud, host, traits):
    c1, c2 = _gpus(cloud, host, traits)
    return {"": [cloud.hosts[host]], "1": [c1], "2": [c2]}


@pytest.mark.parametrize("traits", ONE_QUICK)
def test_the_build_records_which_gpu_took_which_group(make_cloud, traits):
    cloud, server = _setup(make_cloud, "max_flavor", traits)
    assert cloud.holds(server.uuid) == _exact(cloud, "host1", traits, 1, 1)
    assert _map(cloud, server) == _expected_map(cloud, "host1", traits)


@pytest.mark.parametrize("decision", ["confirm", "revert"])
@pytest.mark.parametrize("traits", ORIENTATIONS)
def test_max_flavor_puts_group_2s_increase_on_group_2s_gpu(make_cloud, traits, decision):
    cloud, server = _setup(make_cloud, "max_flavor", traits)
    migration, dest = cloud.resize_to_verify(server, _flavor(cloud, "new", traits, 1, 2))
    assert dest.same_host
    assert migration.old_group_providers == _expected_map(cloud, "host1", traits)
    assert cloud.holds(server.uuid) == _exact(cloud, "host1", traits, 1, 2)
    assert cloud.holds(migration.uuid) == {}
    assert _map(cloud, server) == _expected_map(cloud, "host1", traits)
    getattr(cloud, decision)(server)
    assert cloud.holds(migration.uuid) == {}
    g2 = 2 if decision == "confirm" else 1
    assert cloud.holds(server.uuid) == _exact(cloud, "host1", traits, 1, g2)
    assert _map(cloud, server) == _expected_map(cloud, "host1", traits)


@pytest.mark.parametrize("traits", ORIENTATIONS)
def test_max_flavor_grows_one_group_and_shrinks_the_other_on_their_gpus(make_cloud, traits):
    """1 + 2 vGPUs to 2 + 1: the class total does not change, yet group 1's
    GPU needs one more vGPU, and the confirm takes one from group 2's GPU."""
    cloud, server = _setup(make_cloud, "max_flavor", traits, g1=1, g2=2)
    migration, dest = cloud.resize_to_verify(server, _flavor(cloud, "new", traits, 2, 1))
    assert dest.same_host
    # max(old, new) per group on the GPUs: the server holds the new flavor
    # (group 2 already shrunk on its GPU), the migration group 2's excess.
    assert cloud.holds(server.uuid) == _exact(cloud, "host1", traits, 2, 1)
    assert rs.add_allocations(cloud.holds(server.uuid), cloud.holds(migration.uuid)) == _exact(
        cloud, "host1", traits, 2, 2
    )
    cloud.confirm(server)
    assert cloud.holds(server.uuid) == _exact(cloud, "host1", traits, 2, 1)
    assert _map(cloud, server) == _expected_map(cloud, "host1", traits)


@pytest.mark.parametrize("decision", ["confirm", "revert"])
@pytest.mark.parametrize("strategy", ["drop_and_reclaim", "legacy"])
@pytest.mark.parametrize("traits", ONE_QUICK)
def test_the_other_strategies_on_the_same_host(make_cloud, traits, strategy, decision):
    cloud, server = _setup(make_cloud, strategy, traits)
    migration, dest = cloud.resize(server, _flavor(cloud, "new", traits, 1, 2, vcpus=3))
    assert dest.same_host
    assert cloud.holds(server.uuid) == _exact(cloud, "host1", traits, 1, 2, VCPU=3)
    old = _exact(cloud, "host1", traits, 1, 1) if strategy == "legacy" else {}
    assert cloud.holds(migration.uuid) == old
    assert _map(cloud, server) == _expected_map(cloud, "host1", traits)
    cloud.resizes.finish(migration.uuid)
    getattr(cloud, decision)(server)
    assert cloud.holds(migration.uuid) == {}
    if decision == "confirm":
        assert cloud.holds(server.uuid) == _exact(cloud, "host1", traits, 1, 2, VCPU=3)
    else:
        assert cloud.holds(server.uuid) == _exact(cloud, "host1", traits, 1, 1)
    assert _map(cloud, server) == _expected_map(cloud, "host1", traits)


@pytest.mark.parametrize("decision", ["confirm", "revert"])
@pytest.mark.parametrize("traits", ONE_QUICK)
def test_another_host_takes_the_candidates_map(make_cloud, traits, decision):
    cloud, server = _setup(make_cloud, "max_flavor", traits, other=True)
    migration, dest = cloud.resize_to_verify(server, _flavor(cloud, "new", traits, 1, 2))
    assert dest.host == "host2"
    assert cloud.holds(server.uuid) == _exact(cloud, "host2", traits, 1, 2)
    assert cloud.holds(migration.uuid) == _exact(cloud, "host1", traits, 1, 1)
    assert _map(cloud, server) == _expected_map(cloud, "host2", traits)
    getattr(cloud, decision)(server)
    assert cloud.holds(migration.uuid) == {}
    if decision == "confirm":
        assert cloud.holds(server.uuid) == _exact(cloud, "host2", traits, 1, 2)
        assert _map(cloud, server) == _expected_map(cloud, "host2", traits)
    else:
        assert cloud.holds(server.uuid) == _exact(cloud, "host1", traits, 1, 1)
        assert _map(cloud, server) == _expected_map(cloud, "host1", traits)


def test_a_failure_after_the_claim_gives_the_old_map_back(make_cloud):
    traits = (A100, T4)
    cloud, server = _setup(make_cloud, "max_flavor", traits, other=True)
    migration, dest = cloud.resize(server, _flavor(cloud, "new", traits, 1, 2))
    assert _map(cloud, server) == _expected_map(cloud, "host2", traits)
    with pytest.raises(exception.NoValidHost):
        cloud.resizes.reschedule(migration.uuid, "prep_resize failed", host="host2")
    cloud.check()
    assert cloud.holds(server.uuid) == _exact(cloud, "host1", traits, 1, 1)
    assert _map(cloud, server) == _expected_map(cloud, "host1", traits)


def _adopt(cloud, flavor):
    """Build a server whose claim lands but whose host is never recorded,
    then adopt the claim as recovery does."""
    server = cloud.builds.create(
        name="vm", flavorid=flavor.flavorid, project_id=PROJECT, user_id=USER
    )
    real = cloud.db.server_advance

    def advance(uuid_, /, **kwargs):
        cloud.db.server_advance = real
        raise Crash()

    cloud.db.server_advance = advance
    with pytest.raises(Crash):
        cloud.builds.schedule(server.uuid)
    cloud.builds.adopt(server.uuid)
    return cloud.builds.spawned(server.uuid)


class Crash(BaseException):
    """The process dies here."""


def test_an_adopted_claim_of_interchangeable_groups_gets_a_map(make_cloud):
    """GET /allocations has no mappings: two groups asking for the same thing
    are read from the allocations (either reading is one Placement could have
    given), and the resize grows group 2 where the map says it is."""
    cloud = make_cloud("max_flavor")
    _host(cloud, "host1")
    specs = {"resources1:VGPU": "1", "resources2:VGPU": "1", "group_policy": "isolate"}
    server = _adopt(cloud, cloud.flavor("old", 2, 2048, 10, extra_specs=specs))
    recorded = _map(cloud, server)
    assert recorded is not None
    assert sorted(recorded) == ["", "1", "2"]
    assert {recorded["1"][0], recorded["2"][0]} == {
        cloud.hosts["host1/pgpu0"],
        cloud.hosts["host1/pgpu1"],
    }
    new = cloud.flavor("new", 2, 2048, 10, extra_specs={**specs, "resources2:VGPU": "2"})
    cloud.resize_to_verify(server, new)
    held = cloud.holds(server.uuid)
    assert held[recorded["2"][0]] == {"VGPU": 2}
    assert held[recorded["1"][0]] == {"VGPU": 1}
    cloud.confirm(server)
    assert _map(cloud, server) == recorded


def test_an_adopted_claim_of_groups_that_could_be_swapped_records_no_map(make_cloud):
    """Groups told apart by traits, one vGPU on each GPU: the allocations
    alone cannot say which is which, so nothing is guessed; the next claim
    records Placement's map."""
    traits = (A100, T4)
    cloud = make_cloud("legacy")
    _host(cloud, "host1")
    server = _adopt(cloud, _flavor(cloud, "old", traits, 1, 1))
    assert cloud.holds(server.uuid) == _exact(cloud, "host1", traits, 1, 1)
    assert _map(cloud, server) is None
    cloud.resize_to_verify(server, _flavor(cloud, "new", traits, 1, 1, vcpus=3))
    cloud.confirm(server)
    assert cloud.holds(server.uuid) == _exact(cloud, "host1", traits, 1, 1, VCPU=3)
    assert _map(cloud, server) == _expected_map(cloud, "host1", traits)
