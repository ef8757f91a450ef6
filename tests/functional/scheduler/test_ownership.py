"""Only this deployment's hosts, in a Placement shared with others.

The real Placement holds, beside our hosts, a provider another service
registered (no owner trait) and a host of a second resize_sched deployment
(its own owner trait), both far larger and emptier than ours so that the
free-RAM weigher would pick them first, and each with a consumer of its
owner's. Builds, resizes (every strategy, same host and other host, with and
without prefer_same_host), reschedules and infeasible checks must never see
them: their usage and their consumers' allocations stay exactly as they were,
and nothing of ours lands there. Disabled hosts are left out by Placement's
answer itself.
"""

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from resize_sched import exception
from resize_sched.placement.client import (
    Candidates,
    ConsumerAllocations,
    ConsumerWrite,
    PlacementClient,
)
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT
from resize_sched.scheduler import hosts
from tests.functional.fixtures.cloud import Cloud, expect_no_valid_host
from tests.functional.fixtures.database import fresh_sqlite_database
from tests.functional.fixtures.placement import PlacementInProcess
from tests.functional.fixtures.spy import Spy

STRATEGIES = ["legacy", "drop_and_reclaim", "max_flavor"]

OLD = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}
HUGE = {"VCPU": 64, "MEMORY_MB": 1024, "DISK_GB": 10}  # fits only the strangers

OTHER_DEPLOYMENT = "other"
OTHER_OWNER = "CUSTOM_RESIZE_SCHED_OTHER"

#: Requests from scheduling to VERIFY_RESIZE (schedule + finish), at most.
TO_VERIFY = 3
TO_VERIFY_MAX_FLAVOR_PREFERRED = 2


class Strangers:
    """Providers and consumers that are not ours, and what they held at the start.

    :param placement: the Placement shared with the cloud under test.
    :param client: a client that is not the conductor's (counts stay exact).
    """

    def __init__(self, placement: PlacementInProcess, client: PlacementClient) -> None:
        self.client = client
        # Another service's provider: unmarked, huge and nearly empty.
        self.providers = {
            "nova-big": placement.add_host("nova-big", 256, 1048576, 100000, owner=None),
            "other-big": placement.add_host("other-big", 256, 1048576, 100000, owner=OTHER_OWNER),
        }
        self.consumers = {
            name: self._consume(rp, project=name) for name, rp in self.providers.items()
        }
        self.before = self.snapshot()

    def _consume(self, rp: str, project: str) -> str:
        consumer = str(uuid.uuid4())
        write = ConsumerWrite({rp: {"VCPU": 2, "MEMORY_MB": 4096}}, project, project, None)
        self.client.put_allocations(consumer, write)
        return consumer

    def snapshot(self) -> tuple[dict, dict[str, ConsumerAllocations], dict]:
        """(usage per provider, each consumer as read, who holds what on each provider)."""
        usages = {name: self.client.get_usages(rp) for name, rp in self.providers.items()}
        consumers = {c: self.client.get_allocations(c) for c in self.consumers.values()}
        held = {
            name: self.client.get_provider_allocations(rp) for name, rp in self.providers.items()
        }
        return usages, consumers, held

    def untouched(self, *theirs: str) -> None:
        """Assert that nothing of theirs changed and nothing of ours is there.

        :param theirs: more consumers, not ours, that may hold on their providers.
        """
        assert self.snapshot() == self.before
        for name, rp in self.providers.items():
            assert set(self.client.get_provider_allocations(rp)) - set(theirs) == {
                self.consumers[name]
            }


def _world(
    placement: PlacementInProcess, make_cloud: Any, strategy: str, **options: Any
) -> tuple[Cloud, Strangers]:
    cloud = make_cloud(strategy, **options)
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=100)
    cloud.add_host("host2", vcpus=8, memory_mb=8192, disk_gb=100)
    return cloud, Strangers(placement, cloud.observer)


def _flavors(cloud: Cloud) -> tuple[Any, Any]:
    return (
        cloud.flavor("old", OLD["VCPU"], OLD["MEMORY_MB"], OLD["DISK_GB"]),
        cloud.flavor("new", NEW["VCPU"], NEW["MEMORY_MB"], NEW["DISK_GB"]),
    )


def _ours(cloud: Cloud, provider: str) -> None:
    assert provider in cloud.hosts.values(), f"{provider} is not a host of ours"


# -- builds -------------------------------------------------------------------------------


def test_builds_land_only_on_our_hosts(placement: PlacementInProcess, make_cloud: Any) -> None:
    cloud, strangers = _world(placement, make_cloud, "max_flavor")
    f_old, _ = _flavors(cloud)
    spy = Spy(cloud.client)
    for n in range(6):
        server = cloud.boot(f"vm{n}", f_old)
        _ours(cloud, server.rp_uuid)
        cloud.check()
    # Every query asked Placement for our roots only.
    assert spy.candidate_queries()
    for query in spy.candidate_queries():
        assert query["root_required"] == f"{DEFAULT_OWNER_TRAIT},!COMPUTE_STATUS_DISABLED"
    strangers.untouched()


def test_build_alternates_are_ours_when_the_first_claim_is_refused(
    placement: PlacementInProcess, make_cloud: Any
) -> None:
    cloud, strangers = _world(placement, make_cloud, "max_flavor")
    f_old, _ = _flavors(cloud)
    server = cloud.builds.create(name="vm", flavorid=f_old.flavorid, project_id="p", user_id="u")
    chosen: list[list[str]] = []

    def fill_the_first(selection: Any) -> None:
        chosen.append([d.provider for d in selection.destinations])
        first = next(
            h for h, rp in cloud.hosts.items() if rp == selection.destinations[0].provider
        )
        cloud.squat(first, VCPU=8)

    cloud.after_scheduling(fill_the_first)
    placed = cloud.builds.schedule(server.uuid)
    assert sorted(chosen[0]) == sorted(cloud.hosts.values())  # alternates: ours only
    assert placed.rp_uuid == chosen[0][1]
    cloud.check()
    strangers.untouched()


def test_only_strangers_could_hold_it_is_infeasible(
    placement: PlacementInProcess, make_cloud: Any
) -> None:
    cloud, strangers = _world(placement, make_cloud, "max_flavor")
    huge = cloud.flavor("huge", HUGE["VCPU"], HUGE["MEMORY_MB"], HUGE["DISK_GB"])
    server = cloud.builds.create(name="vm", flavorid=huge.flavorid, project_id="p", user_id="u")
    err = expect_no_valid_host(lambda: cloud.builds.schedule(server.uuid), "infeasible")
    assert "VCPU:64" in err.reason
    strangers.untouched()


# -- resizes ----------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("same_host", [True, False], ids=["same-host", "other-host"])
@pytest.mark.parametrize("prefer", [True, False], ids=["prefer", "no-prefer"])
def test_resizes_use_only_our_hosts(
    placement: PlacementInProcess, make_cloud: Any, strategy: str, same_host: bool, prefer: bool
) -> None:
    cloud, strangers = _world(
        placement,
        make_cloud,
        strategy,
        resize={"allow_same_host": same_host, "prefer_same_host": prefer},
    )
    f_old, f_new = _flavors(cloud)
    server = cloud.boot("vm", f_old, host="host1")

    # Up to VERIFY_RESIZE, then confirm.
    migration = cloud.resizes.begin(server.uuid, f_new.flavorid)
    cloud.client.reset_request_count()
    dest = cloud.resizes.schedule(migration.uuid)
    cloud.check()
    cloud.resizes.finish(migration.uuid)
    cloud.check()
    to_verify = cloud.client.request_count
    assert (dest.host, dest.same_host) == (("host1", True) if same_host else ("host2", False))
    _ours(cloud, dest.provider)
    assert all(alt["provider"] in cloud.hosts.values() for alt in _alternates(cloud, migration))
    budget = (
        TO_VERIFY_MAX_FLAVOR_PREFERRED
        if strategy == "max_flavor" and prefer and same_host
        else TO_VERIFY
    )
    assert to_verify <= budget, to_verify
    strangers.untouched()
    cloud.client.reset_request_count()
    cloud.confirm(server)
    assert cloud.client.request_count <= 1
    strangers.untouched()

    # Back to the old flavor, then revert.
    server = cloud.db.server_get(server.uuid)
    migration, dest = cloud.resize_to_verify(server, f_old)
    _ours(cloud, dest.provider)
    strangers.untouched()
    cloud.client.reset_request_count()
    cloud.revert(server)
    assert cloud.client.request_count == 1
    assert cloud.holds(server.uuid) == cloud.on(dest_host(cloud, server), NEW)
    strangers.untouched()


def _alternates(cloud: Cloud, migration: Any) -> list[dict]:
    return list(cloud.db.migration_get(migration.uuid).alternates or ())


def dest_host(cloud: Cloud, server: Any) -> str:
    return cloud.db.server_get(server.uuid).host


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_reschedules_never_reach_strangers(
    placement: PlacementInProcess, make_cloud: Any, strategy: str
) -> None:
    cloud, strangers = _world(
        placement, make_cloud, strategy, resize={"allow_same_host": False}, scheduler={}
    )
    cloud.add_host("host3", vcpus=8, memory_mb=4096, disk_gb=100)
    f_old, f_new = _flavors(cloud)
    server = cloud.boot("vm", f_old, host="host1")
    migration = cloud.resizes.begin(server.uuid, f_new.flavorid)
    dest = cloud.resizes.schedule(migration.uuid)
    cloud.check()
    visited = [dest.host]
    while True:
        try:
            dest = cloud.resizes.reschedule(migration.uuid, f"prep_resize failed on {dest.host}")
        except exception.NoValidHost:
            break
        cloud.check()
        visited.append(dest.host)
        strangers.untouched()
    assert visited == ["host2", "host3"]  # the source is not allowed; strangers never
    cloud.check()
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    strangers.untouched()


# -- a second deployment in the same Placement -------------------------------------------


@pytest.fixture
def second_cloud(placement: PlacementInProcess, tmp_path: Path) -> Iterator[Cloud]:
    """Another resize_sched deployment (its own database) on the same Placement."""
    db = fresh_sqlite_database(tmp_path / "db-other")
    cloud = Cloud(placement, db, overrides=(("deployment_name", OTHER_DEPLOYMENT, "placement"),))
    yield cloud
    db.dispose()


def test_two_deployments_never_see_each_others_hosts(
    placement: PlacementInProcess, make_cloud: Any, second_cloud: Cloud
) -> None:
    ours = make_cloud("max_flavor")
    ours.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=100)
    # The other deployment's hosts are far bigger than ours.
    theirs = second_cloud
    for name in ("blue1", "blue2"):
        rp = placement.add_host(name, 64, 262144, 1000, owner=OTHER_OWNER)
        theirs.hosts[name] = rp
    f_old, f_new = _flavors(ours)
    g_old, g_new = _flavors(theirs)

    mine = [ours.boot(f"mine{n}", f_old) for n in range(3)]
    their = [theirs.boot(f"theirs{n}", g_old) for n in range(3)]
    assert {s.host for s in mine} == {"host1"}
    assert {s.host for s in their} <= {"blue1", "blue2"}
    _, dest = ours.resize_to_verify(mine[0], f_new)
    assert dest.host == "host1"
    _, dest = theirs.resize_to_verify(their[0], g_new)
    assert dest.host in ("blue1", "blue2")
    ours.confirm(mine[0])
    theirs.confirm(their[0])
    ours.check()
    theirs.check()

    # Each scheduler names only its own hosts.
    assert set(ours.deps.scheduler._names.values()) == {"host1"}
    assert set(theirs.deps.scheduler._names.values()) == {"blue1", "blue2"}
    # What only the other deployment could hold is infeasible here.
    huge = ours.flavor("huge", 32, 1024, 10)
    server = ours.builds.create(name="big", flavorid=huge.flavorid, project_id="p", user_id="u")
    expect_no_valid_host(lambda: ours.builds.schedule(server.uuid), "infeasible")


# -- disabled hosts ----------------------------------------------------------------------


def test_a_disabled_host_is_left_out_by_the_query_itself(
    placement: PlacementInProcess, make_cloud: Any
) -> None:
    cloud, strangers = _world(placement, make_cloud, "max_flavor")
    f_old, _ = _flavors(cloud)
    answers: list[Candidates] = []
    real = cloud.client.get_allocation_candidates

    def recording(*args: Any, **kwargs: Any) -> Candidates:
        answers.append(real(*args, **kwargs))
        return answers[-1]

    cloud.client.get_allocation_candidates = recording  # type: ignore[method-assign]

    assert hosts.set_disabled(cloud.observer, DEFAULT_OWNER_TRAIT, "host1", True)
    traits, _ = cloud.observer.get_traits(cloud.hosts["host1"])
    assert traits == {DEFAULT_OWNER_TRAIT, "COMPUTE_STATUS_DISABLED"}  # still ours
    server = cloud.boot("vm", f_old)
    assert server.host == "host2"
    # Placement's answer itself had no allocation request for host1.
    assert [list(ar) for ar in answers[-1].allocation_requests] == [[cloud.hosts["host2"]]]

    # Disabling again changes nothing; enabling puts host1 back in the answer.
    assert not hosts.set_disabled(cloud.observer, DEFAULT_OWNER_TRAIT, "host1", True)
    assert hosts.set_disabled(cloud.observer, DEFAULT_OWNER_TRAIT, "host1", False)
    assert cloud.observer.get_traits(cloud.hosts["host1"])[0] == {DEFAULT_OWNER_TRAIT}
    server = cloud.boot("vm2", f_old)
    assert server.host == "host1"  # the emptier again
    assert {r for ar in answers[-1].allocation_requests for r in ar} == set(cloud.hosts.values())
    cloud.check()
    strangers.untouched()


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_disabled_source_is_not_resized_onto(
    placement: PlacementInProcess, make_cloud: Any, strategy: str
) -> None:
    cloud, strangers = _world(placement, make_cloud, strategy, resize={"prefer_same_host": True})
    f_old, f_new = _flavors(cloud)
    server = cloud.boot("vm", f_old, host="host1")
    # As os-services and resize-sched-manage do: the provider's trait, which
    # the queries over every host filter on, and the service's flag, which
    # the source's own check reads (see Scheduler._judge_source).
    hosts.set_disabled(cloud.observer, DEFAULT_OWNER_TRAIT, "host1", True)
    service = cloud.db.service_get_by_host("host1")
    cloud.db.service_set_disabled(service.uuid, True, "maintenance")
    migration, dest = cloud.resize_to_verify(server, f_new)
    assert (dest.host, dest.same_host) == ("host2", False)
    cloud.revert(server)  # a revert to a disabled source still works
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    assert cloud.holds(migration.uuid) == {}
    strangers.untouched()


def test_a_disabled_host_with_another_owner_cannot_be_disabled_by_us(
    placement: PlacementInProcess, placement_client: PlacementClient
) -> None:
    placement.add_host("nova-big", 8, 8192, 100, owner=None)
    placement.add_host("blue1", 8, 8192, 100, owner=OTHER_OWNER)
    for name in ("nova-big", "blue1", "nowhere"):
        with pytest.raises(exception.NotFound):
            hosts.set_disabled(placement_client, DEFAULT_OWNER_TRAIT, name, True)


def test_before_any_host_of_ours_registered_there_is_no_host(
    placement: PlacementInProcess, make_cloud: Any
) -> None:
    """Placement refuses a query naming a trait it does not know; ours is
    created by the first compute service that registers."""
    cloud = make_cloud("max_flavor")
    strangers = Strangers(placement, cloud.observer)
    assert not cloud.observer.trait_exists(DEFAULT_OWNER_TRAIT)
    f_old, _ = _flavors(cloud)
    server = cloud.builds.create(name="vm", flavorid=f_old.flavorid, project_id="p", user_id="u")
    expect_no_valid_host(lambda: cloud.builds.schedule(server.uuid), "infeasible")
    strangers.untouched()
