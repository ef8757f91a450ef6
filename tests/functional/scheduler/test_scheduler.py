"""Scheduler.select_destinations against the real Placement.

Hosts are real resource providers; usage comes from real allocations. The
client is spied on (the real requests still go out) so that the queries the
scheduler makes can be asserted exactly.
"""

import random
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from resize_sched import conf as rs_conf
from resize_sched import exception
from resize_sched import resources as rs
from resize_sched.conf import filter_scheduler
from resize_sched.db.api import Database
from resize_sched.placement.client import ConsumerWrite, PlacementClient
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT
from resize_sched.scheduler import hosts
from resize_sched.scheduler.manager import Scheduler, SchedulingRequest, Selection
from tests.functional.fixtures.database import fresh_sqlite_database
from tests.functional.fixtures.placement import PlacementInProcess
from tests.functional.fixtures.spy import Spy

OLD = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}
SHRUNK = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 10}
LIMIT = "1000"
#: What every candidates query asks of the root: ours, and not disabled.
ROOTS = f"{DEFAULT_OWNER_TRAIT},!COMPUTE_STATUS_DISABLED"


def _group_of(name: str) -> str:
    """The option group of a scheduler option a test overrides."""
    return "filter_scheduler" if name in {o.name for o in filter_scheduler.OPTS} else "scheduler"


class World:
    """Hosts in a real Placement and their compute nodes in a real database,
    and a scheduler with its own (spied) client."""

    def __init__(self, placement: PlacementInProcess, db: Database) -> None:
        self.placement = placement
        self.db = db
        self.other = placement.client()
        self.hosts: dict[str, str] = {}

    def add_host(
        self,
        name: str,
        vcpus: int = 8,
        memory_mb: int = 8192,
        disk_gb: int = 100,
        *,
        report: bool = True,
        **kw: Any,
    ) -> str:
        """Register a host; ``report``: its compute node too, as its service would."""
        self.hosts[name] = self.placement.add_host(name, vcpus, memory_mb, disk_gb, **kw)
        if report:
            self.report(name)
        return self.hosts[name]

    def report(self, name: str) -> None:
        """A compute service's report: the inventory Placement holds for ``name``."""
        inventory, generation = self.other.get_inventories(self.hosts[name])
        self.db.compute_node_report(
            host=name,
            node=name,
            rp_uuid=self.hosts[name],
            inventory=inventory,
            provider_generation=generation,
        )

    def hold(self, host: str, amounts: dict[str, int]) -> str:
        consumer = str(uuid.uuid4())
        write = ConsumerWrite({self.hosts[host]: amounts}, "p", "u", None)
        self.other.put_allocations(consumer, write)
        return consumer

    def traits(self, host: str, traits: Iterable[str]) -> None:
        """Set ``host``'s traits (it stays ours: the owner trait is kept)."""
        self.other.set_traits(self.hosts[host], [DEFAULT_OWNER_TRAIT, *traits])

    def disable(self, *names: str, disabled: bool = True) -> None:
        """Disable (or enable) hosts as ``resize-sched-manage host`` does: the
        provider's trait, then the compute service's flag (when it has one)."""
        for name in names:
            hosts.set_disabled(self.other, DEFAULT_OWNER_TRAIT, name, disabled)
            try:
                service = self.db.service_get_by_host(name)
            except exception.NotFound:
                continue
            self.db.service_set_disabled(service.uuid, disabled, "test" if disabled else None)

    def scheduler(self, **options: Any) -> tuple[Scheduler, PlacementClient, Spy]:
        conf = rs_conf.new_conf()
        rs_conf.parse_args(conf, [], default_config_files=[])
        self.placement.configure(conf)
        for name, value in options.items():
            conf.set_override(name, value, group=_group_of(name))
        client = PlacementClient.from_conf(conf)
        client.max_version  # noqa: B018 - negotiate now, so counts are exact
        client.reset_request_count()
        return Scheduler(client, conf, self.db, rng=random.Random(7)), client, Spy(client)

    def names(self, selection: Selection) -> list[str]:
        return [d.host for d in selection.destinations]


@pytest.fixture
def world(placement: PlacementInProcess, tmp_path: Path) -> Iterator[World]:
    db = fresh_sqlite_database(tmp_path / "db")
    yield World(placement, db)
    db.dispose()


def resize_request(world: World, source: str = "host1", **kw: Any) -> SchedulingRequest:
    """A max_flavor-style resize: the source is asked only for the increase."""
    values: dict[str, Any] = {
        "destination_request": NEW,
        "source": world.hosts[source],
        "source_request": rs.increase(OLD, NEW),
        "allow_same_host": True,
    }
    values.update(kw)
    return SchedulingRequest(**values)


def expect_no_valid_host(fn: Callable[[], Any], kind: str) -> exception.NoValidHost:
    with pytest.raises(exception.NoValidHost) as err:
        fn()
    assert err.value.kind == kind, err.value
    return err.value


# -- how many queries ------------------------------------------------------------------


def test_source_asked_the_same_as_others_costs_one_query(world: World) -> None:
    world.add_host("host1")
    world.add_host("host2")
    world.hold("host1", OLD)
    scheduler, client, spy = world.scheduler()
    request = resize_request(world, source_request=NEW)  # legacy / drop_and_reclaim

    selection = scheduler.select_destinations(request)

    assert spy.candidate_queries() == [
        {"resources": "DISK_GB:20,MEMORY_MB:2048,VCPU:2", "root_required": ROOTS, "limit": LIMIT}
    ]
    # The names of the hosts come from their compute nodes: no request.
    assert [(m, p) for m, p, _ in spy.calls] == [("GET", "/allocation_candidates")]
    assert client.request_count == 1
    # The source's answer came from the same query and is kept, as same_host.
    assert world.names(selection) == ["host2", "host1"]
    by_host = {d.host: d for d in selection.destinations}
    assert by_host["host1"].same_host and not by_host["host2"].same_host
    assert by_host["host1"].allocation_request == {world.hosts["host1"]: NEW}
    assert selection.complete

    client.reset_request_count()
    scheduler.select_destinations(request)
    assert client.request_count == 1


def test_a_host_without_a_compute_node_is_named_by_one_provider_read(world: World) -> None:
    world.add_host("host1")
    world.add_host("host2", report=False)
    scheduler, client, spy = world.scheduler()

    selection = scheduler.select_destinations(_build_request())

    # Only the provider the table does not know is read, and only once:
    # never a listing of every provider of the cloud.
    assert sorted(world.names(selection)) == ["host1", "host2"]
    assert [(m, p) for m, p, _ in spy.calls] == [
        ("GET", "/allocation_candidates"),
        ("GET", f"/resource_providers/{world.hosts['host2']}"),
    ]
    spy.calls.clear()
    scheduler.select_destinations(_build_request())
    assert [p for _, p, _ in spy.calls] == ["/allocation_candidates"]


def _second_resize(world: World, source_vcpus: int) -> tuple[Selection, PlacementClient, Spy]:
    """host1 (16 GB, holding OLD) and host2; a resize asked twice, the second
    spied on (the first warms the name cache)."""
    world.add_host("host1", vcpus=source_vcpus, memory_mb=16384)
    world.add_host("host2")
    world.hold("host1", OLD)
    # NOTE: ranked by free RAM alone, which these tests are about.
    scheduler, client, spy = world.scheduler(weight_classes=["RAMWeigher"])
    scheduler.select_destinations(resize_request(world))
    spy.calls.clear()
    client.reset_request_count()
    return scheduler.select_destinations(resize_request(world)), client, spy


def test_max_flavor_asks_others_for_new_and_the_source_for_the_increase(world: World) -> None:
    selection, client, spy = _second_resize(world, source_vcpus=2)

    # host1 lacks the VCPUs for the whole new flavor beside the old one, so
    # the query over every host leaves it out, and it could weigh the most:
    # its usage is read. The source's inventory is known from its service's
    # report, so its usage is enough.
    assert client.request_count == 2
    assert sorted(p for _, p, _ in spy.calls) == [
        "/allocation_candidates",
        f"/resource_providers/{world.hosts['host1']}/usages",
    ]
    assert spy.candidate_queries() == [
        {"resources": "DISK_GB:20,MEMORY_MB:2048,VCPU:2", "root_required": ROOTS, "limit": LIMIT}
    ]
    # The source is merged and weighed with the others: it has 15360 MB
    # free, host2 8192 MB.
    assert world.names(selection) == ["host1", "host2"]
    source, other = selection.destinations
    assert source.same_host and source.provider == world.hosts["host1"]
    assert source.allocation_request == {world.hosts["host1"]: rs.increase(OLD, NEW)}
    assert not other.same_host
    assert other.allocation_request == {world.hosts["host2"]: NEW}


def test_a_source_among_the_candidates_is_weighed_from_its_summary(world: World) -> None:
    """Room for the whole new flavor beside the old is room for the increase:
    a source the query returned is judged from its summary there, not from
    the usage read beside the query (which here says it is full)."""
    world.add_host("host1", vcpus=8, memory_mb=16384)
    world.add_host("host2")
    world.hold("host1", OLD)
    scheduler, client, spy = world.scheduler(weight_classes=["RAMWeigher"])
    real = client.get_usages

    def full(uuid: str) -> Any:
        return {**real(uuid), "MEMORY_MB": 16384}

    client.get_usages = full  # type: ignore[method-assign]
    selection = scheduler.select_destinations(resize_request(world))

    assert sorted(p for _, p, _ in spy.calls) == [
        "/allocation_candidates",
        f"/resource_providers/{world.hosts['host1']}/usages",
    ]
    assert world.names(selection) == ["host1", "host2"]
    source = selection.destinations[0]
    assert source.same_host
    # Claimed on top of what it holds: the increase, not the whole flavor.
    assert source.allocation_request == {world.hosts["host1"]: rs.increase(OLD, NEW)}


def _full_source_world(world: World, others: int) -> dict[str, Any]:
    """host1 full but for the increase; ``others`` empty hosts with more RAM."""
    world.add_host("host1", vcpus=2, memory_mb=4096)
    world.hold("host1", OLD)
    world.hold("host1", {"VCPU": 0, "MEMORY_MB": 2048, "DISK_GB": 10})  # a neighbour
    for n in range(others):
        world.add_host(f"other{n}", memory_mb=16384)
    return {"source_holds": OLD}


@pytest.mark.parametrize("others", [2, 3])
def test_a_source_beside_others_is_weighed_from_its_usage(world: World, others: int) -> None:
    """host1 (4096 MB, 2048 free) is read once, beside the query, and weighed
    with the others (16384 MB free): with max_attempts 3 it is the last
    alternate behind two others, and left out behind three."""
    extra = _full_source_world(world, others)
    scheduler, client, spy = world.scheduler(max_attempts=3, weight_classes=["RAMWeigher"])
    selection = scheduler.select_destinations(resize_request(world, **extra))
    usages = [p for _, p, _ in spy.calls if p.endswith("/usages")]
    assert usages == [f"/resource_providers/{world.hosts['host1']}/usages"]
    assert len(selection.destinations) == 3
    if others == 3:
        assert "host1" not in world.names(selection)
    else:
        assert world.names(selection)[-1] == "host1"


def test_a_stacking_weigher_puts_the_fuller_source_first(world: World) -> None:
    # Stacking (a negative multiplier) favours the fullest host: the source first.
    extra = _full_source_world(world, 3)
    scheduler, _, spy = world.scheduler(
        max_attempts=3, ram_weight_multiplier=-1.0, weight_classes=["RAMWeigher"]
    )
    selection = scheduler.select_destinations(resize_request(world, **extra))
    assert any(p.endswith("/usages") for _, p, _ in spy.calls)
    assert world.names(selection)[0] == "host1"


def test_source_not_allowed_is_one_query_and_never_returned(world: World) -> None:
    world.add_host("host1", memory_mb=16384)
    world.add_host("host2")
    scheduler, _, spy = world.scheduler()
    selection = scheduler.select_destinations(resize_request(world, allow_same_host=False))
    assert len(spy.candidate_queries()) == 1
    assert "in_tree" not in spy.candidate_queries()[0]
    assert world.names(selection) == ["host2"]


def test_source_without_room_for_the_increase_is_left_out(world: World) -> None:
    world.add_host("host1", vcpus=1)
    world.add_host("host2")
    world.hold("host1", OLD)
    scheduler, _, spy = world.scheduler()
    selection = scheduler.select_destinations(resize_request(world))
    assert len(spy.candidate_queries()) == 1
    assert f"/resource_providers/{world.hosts['host1']}/usages" in [p for _, p, _ in spy.calls]
    assert world.names(selection) == ["host2"]


def test_a_source_no_service_reported_is_asked_with_a_candidates_query(world: World) -> None:
    world.add_host("host1", memory_mb=16384, report=False)
    world.add_host("host2")
    world.hold("host1", OLD)
    scheduler, _, spy = world.scheduler()
    selection = scheduler.select_destinations(resize_request(world))
    assert sorted(q.get("in_tree", "") for q in spy.candidate_queries()) == [
        "",
        world.hosts["host1"],
    ]
    assert not any(p.endswith("/usages") for _, p, _ in spy.calls)
    assert world.names(selection) == ["host1", "host2"]


def test_a_source_asked_for_traits_is_asked_with_a_candidates_query(world: World) -> None:
    world.add_host("host1", memory_mb=16384)
    world.add_host("host2")
    world.hold("host1", OLD)
    scheduler, _, spy = world.scheduler()
    # Placement answers 400 for a trait it does not know; a standard one
    # that no host has leaves both out.
    request = resize_request(world, required_traits=frozenset({"HW_CPU_X86_AVX512F"}))
    with pytest.raises(exception.NoValidHost):
        scheduler.select_destinations(request)
    assert world.hosts["host1"] in [q.get("in_tree") for q in spy.candidate_queries()]
    assert not any(p.endswith("/usages") for _, p, _ in spy.calls)


def test_max_flavor_shrink_needs_no_source_query_and_comes_first(world: World) -> None:
    world.add_host("host1", memory_mb=2048)
    world.add_host("host2", memory_mb=65536)
    world.hold("host1", OLD)
    scheduler, _, spy = world.scheduler()
    request = resize_request(
        world, destination_request=SHRUNK, source_request=rs.increase(OLD, SHRUNK)
    )
    assert request.source_request == {}
    selection = scheduler.select_destinations(request)
    assert spy.candidate_queries() == [
        {"resources": "DISK_GB:10,MEMORY_MB:512,VCPU:1", "root_required": ROOTS, "limit": LIMIT}
    ]
    # The source was among the candidates: owned and enabled, nothing more to ask.
    assert [p for _, p, params in spy.calls if "in_tree" in params] == []
    # Staying costs nothing: first, although host2 has far more free RAM.
    assert world.names(selection) == ["host1", "host2"]
    assert selection.destinations[0].allocation_request == {}
    assert selection.destinations[0].same_host


# -- weighing ---------------------------------------------------------------------------


def _three_hosts(world: World) -> None:
    world.add_host("host1", memory_mb=8192)
    world.add_host("host2", memory_mb=16384)
    world.add_host("host3", memory_mb=16384)
    world.hold("host3", {"MEMORY_MB": 12288})  # 4096 free


def _build_request() -> SchedulingRequest:
    return SchedulingRequest(destination_request=OLD)


@pytest.mark.parametrize(
    "multiplier, expected",
    [
        (1.0, ["host2", "host1", "host3"]),  # spread: emptiest first
        (2.5, ["host2", "host1", "host3"]),
        (-1.0, ["host3", "host1", "host2"]),  # pack: fullest first
    ],
)
def test_ram_weigher(world: World, multiplier: float, expected: list[str]) -> None:
    _three_hosts(world)
    scheduler, _, _ = world.scheduler(ram_weight_multiplier=multiplier)
    assert world.names(scheduler.select_destinations(_build_request())) == expected


def test_ram_weight_zero_keeps_placement_order(world: World) -> None:
    _three_hosts(world)
    world.add_host("host4", memory_mb=65536)
    scheduler, _, _ = world.scheduler(ram_weight_multiplier=0.0, max_attempts=4)
    answer = world.other.get_allocation_candidates(OLD, root_required=ROOTS.split(","), limit=1000)
    placement_order = [next(iter(ar)) for ar in answer.allocation_requests]
    selection = scheduler.select_destinations(_build_request())
    assert [d.provider for d in selection.destinations] == placement_order
    assert sorted(world.names(selection)) == ["host1", "host2", "host3", "host4"]


@pytest.mark.parametrize("max_attempts, expected", [(1, 1), (2, 2), (3, 3), (10, 4)])
def test_max_attempts_caps_the_alternates(world: World, max_attempts: int, expected: int) -> None:
    for n, memory in enumerate((4096, 8192, 12288, 16384), start=1):
        world.add_host(f"host{n}", memory_mb=memory)
    scheduler, _, _ = world.scheduler(max_attempts=max_attempts)
    selection = scheduler.select_destinations(_build_request())
    assert world.names(selection) == ["host4", "host3", "host2", "host1"][:expected]
    assert all(
        d.allocation_request == {d.provider: OLD} and not d.same_host
        for d in selection.destinations
    )


# -- filters ----------------------------------------------------------------------------


def _four_hosts(world: World) -> None:
    for n, memory in enumerate((4096, 8192, 12288, 16384), start=1):
        world.add_host(f"host{n}", memory_mb=memory)


@pytest.mark.parametrize(
    "filters, expected",
    [
        ({"ignore_hosts": frozenset({"host4", "host2"})}, ["host3", "host1"]),
        ({"force_hosts": frozenset({"host1", "host2"})}, ["host2", "host1"]),
        ({"force_hosts": frozenset({"host1", "nowhere"})}, ["host1"]),
        (
            {"force_hosts": frozenset({"host1", "host2"}), "ignore_hosts": frozenset({"host2"})},
            ["host1"],
        ),
    ],
)
def test_host_name_filters(world: World, filters: dict, expected: list[str]) -> None:
    _four_hosts(world)
    scheduler, _, _ = world.scheduler(max_attempts=10)
    request = SchedulingRequest(destination_request=OLD, **filters)
    assert world.names(scheduler.select_destinations(request)) == expected


def test_ignore_providers_filter(world: World) -> None:
    _four_hosts(world)
    scheduler, _, _ = world.scheduler(max_attempts=10)
    tried = frozenset({world.hosts["host4"], world.hosts["host1"]})
    request = SchedulingRequest(destination_request=OLD, ignore_providers=tried)
    assert world.names(scheduler.select_destinations(request)) == ["host3", "host2"]


def test_ignore_providers_excludes_the_source(world: World) -> None:
    world.add_host("host1", memory_mb=16384)
    world.add_host("host2")
    scheduler, _, spy = world.scheduler()
    request = resize_request(world, ignore_providers=frozenset({world.hosts["host1"]}))
    assert world.names(scheduler.select_destinations(request)) == ["host2"]
    assert len(spy.candidate_queries()) == 1  # the source is not asked at all


def test_disabled_hosts_filter(world: World) -> None:
    _four_hosts(world)
    scheduler, _, _ = world.scheduler(max_attempts=10)
    world.disable("host3", "host4")
    assert world.names(scheduler.select_destinations(_build_request())) == ["host2", "host1"]
    world.disable("host3", "host4", disabled=False)  # Placement is asked at each call
    assert world.names(scheduler.select_destinations(_build_request())) == [
        "host4",
        "host3",
        "host2",
        "host1",
    ]


def test_filters_apply_to_the_separately_asked_source(world: World) -> None:
    world.add_host("host1", memory_mb=16384)
    world.add_host("host2")
    scheduler, _, _ = world.scheduler()
    world.disable("host1")
    assert world.names(scheduler.select_destinations(resize_request(world))) == ["host2"]
    world.disable("host1", disabled=False)
    request = resize_request(world, ignore_hosts=frozenset({"host1"}))
    assert world.names(scheduler.select_destinations(request)) == ["host2"]


# -- required traits ----------------------------------------------------------------------


def _flavor(extra_specs: dict[str, str], **amounts: int) -> rs.ResourceRequest:
    flavor = {"vcpus": 1, "memory_mb": 1024, "root_gb": 10, "extra_specs": extra_specs}
    flavor.update(amounts)
    return rs.flavor_request(flavor)


def test_required_trait_from_flavor_extra_spec(world: World) -> None:
    _four_hosts(world)
    world.traits("host1", ["CUSTOM_X"])
    world.traits("host2", ["CUSTOM_X", "CUSTOM_Y"])
    scheduler, _, spy = world.scheduler(max_attempts=10)
    wanted = _flavor({"trait:CUSTOM_X": "required"})
    assert wanted.required_traits == frozenset({"CUSTOM_X"})
    request = SchedulingRequest(
        destination_request=wanted.resources, required_traits=wanted.required_traits
    )
    assert world.names(scheduler.select_destinations(request)) == ["host2", "host1"]
    assert spy.candidate_queries()[0]["required"] == "CUSTOM_X"


def test_required_traits_on_the_source_increase_query(world: World) -> None:
    world.add_host("host1", memory_mb=16384)
    world.add_host("host2")
    world.hold("host1", OLD)
    world.traits("host2", ["CUSTOM_X"])
    scheduler, _, spy = world.scheduler()
    request = resize_request(world, required_traits=frozenset({"CUSTOM_X"}))
    assert world.names(scheduler.select_destinations(request)) == ["host2"]
    assert [q.get("required") for q in spy.candidate_queries()] == ["CUSTOM_X", "CUSTOM_X"]
    assert {q.get("in_tree") for q in spy.candidate_queries()} == {None, world.hosts["host1"]}


@pytest.mark.parametrize("source_has_trait", [False, True])
def test_shrink_with_a_newly_required_trait(world: World, source_has_trait: bool) -> None:
    world.add_host("host1", memory_mb=2048)
    world.add_host("host2")
    world.hold("host1", OLD)
    world.traits("host2", ["CUSTOM_X"])
    if source_has_trait:
        world.traits("host1", ["CUSTOM_X"])
    scheduler, _, spy = world.scheduler()
    wanted = _flavor({"trait:CUSTOM_X": "required"}, memory_mb=512)
    request = resize_request(
        world,
        destination_request=wanted.resources,
        source_request=rs.increase(OLD, wanted.resources),
        required_traits=wanted.required_traits,
    )
    assert request.source_request == {}

    selection = scheduler.select_destinations(request)

    # No candidates query for the source. With the trait it is among the
    # candidates of the query over every host (which asked for the trait), so
    # nothing more is asked; else one provider query checks it.
    assert len(spy.candidate_queries()) == 1
    trait_checks = [
        params for m, p, params in spy.calls if p == "/resource_providers" and "in_tree" in params
    ]
    required = f"{ROOTS},CUSTOM_X"
    expected = (
        [] if source_has_trait else [{"in_tree": world.hosts["host1"], "required": required}]
    )
    assert trait_checks == expected
    if source_has_trait:
        assert world.names(selection) == ["host1", "host2"]
        assert selection.destinations[0].allocation_request == {}
    else:
        assert world.names(selection) == ["host2"]


# -- no valid host: infeasible or deferred --------------------------------------------------


def test_bigger_than_any_host_is_infeasible(world: World) -> None:
    world.add_host("host1", vcpus=4)
    world.add_host("host2", vcpus=8)
    scheduler, _, _ = world.scheduler()
    request = SchedulingRequest(destination_request={"VCPU": 9, "MEMORY_MB": 1024})
    err = expect_no_valid_host(lambda: scheduler.select_destinations(request), "infeasible")
    assert err.reason == "no allowed host could hold MEMORY_MB:1024,VCPU:9 even when empty"
    assert str(err) == f"No valid host was found (infeasible): {err.reason}"


def test_max_unit_makes_it_infeasible(world: World) -> None:
    world.add_host("host1", VCPU={"total": 16, "max_unit": 4})
    scheduler, _, _ = world.scheduler()
    request = SchedulingRequest(destination_request={"VCPU": 5})
    expect_no_valid_host(lambda: scheduler.select_destinations(request), "infeasible")


@pytest.mark.parametrize(
    "inventory, amount",
    [({"total": 100, "step_size": 10}, 15), ({"total": 100, "min_unit": 20}, 10)],
)
def test_step_size_or_min_unit_nobody_meets_is_infeasible(
    world: World, inventory: dict, amount: int
) -> None:
    """Placement never grants an amount off the step or below min_unit."""
    world.add_host("host1", DISK_GB=inventory)
    scheduler, _, _ = world.scheduler()
    request = SchedulingRequest(destination_request={"VCPU": 1, "DISK_GB": amount})
    expect_no_valid_host(lambda: scheduler.select_destinations(request), "infeasible")


def test_a_trait_nobody_has_is_infeasible(world: World) -> None:
    world.add_host("host1")
    world.traits("host1", ["CUSTOM_X"])
    scheduler, _, _ = world.scheduler()
    request = SchedulingRequest(
        destination_request=OLD, required_traits=frozenset({"CUSTOM_NOBODY"})
    )
    # The trait exists in Placement (else the query is a 400), but no host has it.
    world.traits("host1", ["CUSTOM_X", "CUSTOM_NOBODY"])
    world.traits("host1", ["CUSTOM_X"])
    err = expect_no_valid_host(lambda: scheduler.select_destinations(request), "infeasible")
    assert err.reason == (
        "no allowed host could hold DISK_GB:10,MEMORY_MB:1024,VCPU:1 "
        "with traits ['CUSTOM_NOBODY'] even when empty"
    )


def test_full_now_is_deferred(world: World) -> None:
    world.add_host("host1", vcpus=2)
    world.add_host("host2", vcpus=2)
    world.hold("host1", {"VCPU": 1})
    world.hold("host2", {"VCPU": 2})
    scheduler, _, _ = world.scheduler()
    request = SchedulingRequest(destination_request=NEW)
    err = expect_no_valid_host(lambda: scheduler.select_destinations(request), "deferred")
    assert err.reason == (
        "no host has DISK_GB:20,MEMORY_MB:2048,VCPU:2 free now (0 candidate(s) before "
        "filtering); retry when room is freed"
    )


def test_every_host_filtered_out_is_infeasible(world: World) -> None:
    world.add_host("host1")
    world.add_host("host2")
    scheduler, _, _ = world.scheduler()
    world.disable("host1")
    request = SchedulingRequest(destination_request=NEW, ignore_hosts=frozenset({"host2"}))
    err = expect_no_valid_host(lambda: scheduler.select_destinations(request), "infeasible")
    assert err.reason.startswith("no allowed host could hold")


def test_room_only_on_hosts_already_tried_is_deferred(world: World) -> None:
    world.add_host("host1")
    world.add_host("host2")
    scheduler, _, _ = world.scheduler()
    tried = frozenset(world.hosts.values())
    request = SchedulingRequest(destination_request=NEW, ignore_providers=tried)
    err = expect_no_valid_host(lambda: scheduler.select_destinations(request), "deferred")
    assert "(2 candidate(s) before filtering)" in err.reason


def test_only_an_ignored_host_could_ever_fit_is_infeasible(world: World) -> None:
    world.add_host("host1", vcpus=16)
    world.add_host("host2", vcpus=2)
    scheduler, _, _ = world.scheduler()
    request = SchedulingRequest(destination_request={"VCPU": 8}, ignore_hosts=frozenset({"host1"}))
    expect_no_valid_host(lambda: scheduler.select_destinations(request), "infeasible")


def test_placement_down_is_not_no_valid_host(placement: PlacementInProcess) -> None:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    placement.configure(conf, endpoint="http://127.0.0.1:1/placement", connect_retries=0)
    scheduler = Scheduler(PlacementClient.from_conf(conf), conf)
    with pytest.raises(exception.PlacementUnavailable):
        scheduler.select_destinations(SchedulingRequest(destination_request=OLD))


# -- prefer_same_host -----------------------------------------------------------------------


def test_prefer_same_host_asks_only_the_source_when_it_fits(world: World) -> None:
    world.add_host("host1")
    world.add_host("host2", memory_mb=65536)
    world.hold("host1", OLD)
    scheduler, client, spy = world.scheduler()
    selection = scheduler.select_destinations(resize_request(world, prefer_same_host=True))
    assert [p for _, p, _ in spy.calls] == [f"/resource_providers/{world.hosts['host1']}/usages"]
    assert world.names(selection) == ["host1"]
    assert selection.destinations[0].allocation_request == {
        world.hosts["host1"]: rs.increase(OLD, NEW)
    }
    assert selection.complete is False
    assert selection.destinations[0].same_host


def test_prefer_same_host_falls_back_to_every_host(world: World) -> None:
    world.add_host("host1", vcpus=1)
    world.add_host("host2")
    world.hold("host1", OLD)
    scheduler, _, spy = world.scheduler()
    selection = scheduler.select_destinations(resize_request(world, prefer_same_host=True))
    assert [p for _, p, _ in spy.calls] == [
        f"/resource_providers/{world.hosts['host1']}/usages",
        "/allocation_candidates",
    ]
    assert world.names(selection) == ["host2"]
    assert selection.complete is True


def test_prefer_same_host_ignored_without_allow_same_host(world: World) -> None:
    world.add_host("host1", memory_mb=65536)
    world.add_host("host2")
    scheduler, _, spy = world.scheduler()
    request = resize_request(world, prefer_same_host=True, allow_same_host=False)
    selection = scheduler.select_destinations(request)
    assert [q.get("in_tree") for q in spy.candidate_queries()] == [None]
    assert world.names(selection) == ["host2"]
    assert selection.complete


@pytest.mark.parametrize(
    "how",
    ["disabled", "ignore_hosts", "force_hosts"],
)
def test_prefer_same_host_respects_host_filters_on_the_source(world: World, how: str) -> None:
    """A disabled (or ignored, or not forced) source must not be chosen.

    The prefer_same_host shortcut returned the source without filtering it.
    """
    world.add_host("host1")
    world.add_host("host2")
    world.hold("host1", OLD)
    scheduler, _, _ = world.scheduler()
    extra: dict[str, Any] = {}
    if how == "disabled":
        world.disable("host1")
    elif how == "ignore_hosts":
        extra["ignore_hosts"] = frozenset({"host1"})
    else:
        extra["force_hosts"] = frozenset({"host2"})
    selection = scheduler.select_destinations(
        resize_request(world, prefer_same_host=True, **extra)
    )
    assert world.names(selection) == ["host2"]
    assert selection.complete


def test_source_not_allowed_and_only_source_fits_is_infeasible(world: World) -> None:
    """With allow_same_host off the source is no candidate: if no other host
    could ever hold the flavor, waiting for room will not help."""
    world.add_host("host1", vcpus=16)
    world.add_host("host2", vcpus=1)
    world.hold("host1", OLD)
    scheduler, _, _ = world.scheduler()
    request = resize_request(world, allow_same_host=False)
    expect_no_valid_host(lambda: scheduler.select_destinations(request), "infeasible")


# -- the verdict of a failure at constant cost --------------------------------------------


def _verdict_requests(world: World, request: SchedulingRequest, kind: str) -> list[str]:
    scheduler, client, spy = world.scheduler()
    expect_no_valid_host(lambda: scheduler.select_destinations(request), kind)
    assert client.request_count == len(spy.calls)
    return [p for _, p, _ in spy.calls]


@pytest.mark.parametrize(
    "sizes", [(2, 8), pytest.param((5, 50), marks=pytest.mark.slow)], ids=["2-8", "5-50"]
)
def test_infeasible_and_deferred_cost_the_same_requests_at_any_size(
    world: World, sizes: tuple[int, int]
) -> None:
    """The verdict is judged on the reported compute nodes: no request of its own."""
    too_big = SchedulingRequest(destination_request={"VCPU": 9})
    no_room = SchedulingRequest(destination_request={"VCPU": 8})
    counts = []
    for size in sizes:
        for n in range(len(world.hosts), size):
            world.add_host(f"host{n}")
            world.hold(f"host{n}", {"VCPU": 1})  # never room for 8 now
        infeasible = _verdict_requests(world, too_big, "infeasible")
        deferred = _verdict_requests(world, no_room, "deferred")
        counts.append((infeasible, deferred))
    # The candidates query alone, as for a success.
    expected = ["/allocation_candidates"]
    assert counts == [(expected, expected), (expected, expected)]


def test_an_unreported_provider_counts_only_when_no_node_is_reported(world: World) -> None:
    world.add_host("host2", vcpus=16, report=False)
    world.hold("host2", {"VCPU": 12})
    request = SchedulingRequest(destination_request={"VCPU": 8})
    # No compute node reported at all (services that never report): the
    # owned providers are listed, and host2's inventory is read; it could
    # hold 8 once emptied.
    assert _verdict_requests(world, request, "deferred") == [
        "/allocation_candidates",
        "/resource_providers",
        f"/resource_providers/{world.hosts['host2']}/inventories",
    ]
    # Once some node is reported, the verdict is the reported nodes': host1
    # can never hold 8, and host2 is no host until its service reports.
    world.add_host("host1", vcpus=4)
    assert _verdict_requests(world, request, "infeasible") == ["/allocation_candidates"]
    world.report("host2")
    assert _verdict_requests(world, request, "deferred") == ["/allocation_candidates"]


def test_a_new_report_changes_the_verdict(world: World) -> None:
    world.add_host("host1", vcpus=4)
    world.hold("host1", {"VCPU": 4})
    request = SchedulingRequest(destination_request={"VCPU": 8})
    expect_no_valid_host(lambda: world.scheduler()[0].select_destinations(request), "infeasible")
    # The host grows (its service set more inventory); until it reports,
    # the verdict is the last report's.
    world.other.set_inventory(
        world.hosts["host1"], {"VCPU": 16, "MEMORY_MB": 8192, "DISK_GB": 100}
    )
    world.hold("host1", {"VCPU": 10})
    scheduler = world.scheduler()[0]
    expect_no_valid_host(lambda: scheduler.select_destinations(request), "infeasible")
    world.report("host1")
    expect_no_valid_host(lambda: scheduler.select_destinations(request), "deferred")


def test_the_verdict_still_leaves_out_disabled_and_untraited_hosts(world: World) -> None:
    world.add_host("host1", vcpus=4)
    world.add_host("host2", vcpus=16)
    world.hold("host2", {"VCPU": 12})
    world.traits("host1", ["CUSTOM_X"])
    request = SchedulingRequest(destination_request={"VCPU": 8})
    scheduler = world.scheduler()[0]
    expect_no_valid_host(lambda: scheduler.select_destinations(request), "deferred")
    world.disable("host2")
    expect_no_valid_host(lambda: scheduler.select_destinations(request), "infeasible")
    world.disable("host2", disabled=False)
    traited = SchedulingRequest(
        destination_request={"VCPU": 8}, required_traits=frozenset({"CUSTOM_X"})
    )
    expect_no_valid_host(lambda: scheduler.select_destinations(traited), "infeasible")


@pytest.mark.parametrize(
    "how", ["disabled service", "ignore_hosts", "force_hosts", "source not allowed"]
)
def test_the_database_verdict_leaves_out_hosts_the_request_cannot_use(
    world: World, how: str
) -> None:
    world.add_host("host1", vcpus=4)
    world.add_host("host2", vcpus=16)
    world.hold("host2", {"VCPU": 12})
    wanted = {"VCPU": 8}
    # host2 could hold 8 once emptied; host1 never could.
    request = SchedulingRequest(destination_request=wanted)
    assert _verdict_requests(world, request, "deferred") == ["/allocation_candidates"]
    options: dict[str, Any] = {}
    if how == "disabled service":
        # The service row alone (the provider keeps no disabled trait).
        service = world.db.service_get_by_host("host2")
        world.db.service_set_disabled(service.uuid, True, "test")
    elif how == "ignore_hosts":
        options = {"ignore_hosts": frozenset({"host2"})}
    elif how == "force_hosts":
        options = {"force_hosts": frozenset({"host1"})}
    else:
        options = {"source": world.hosts["host2"], "allow_same_host": False}
    request = SchedulingRequest(destination_request=wanted, **options)
    assert _verdict_requests(world, request, "infeasible") == ["/allocation_candidates"]


@pytest.mark.parametrize("asked", ["required_traits", "member_of"])
def test_traits_or_aggregates_asked_for_list_the_providers(world: World, asked: str) -> None:
    """Traits and aggregates live in Placement alone: the verdict lists who has them."""
    world.add_host("host1", vcpus=4)
    world.add_host("host2", vcpus=16)
    world.hold("host2", {"VCPU": 12})
    world.traits("host2", ["CUSTOM_X"])
    if asked == "required_traits":
        # host2 has the trait and could hold 8 once emptied.
        request = SchedulingRequest(
            destination_request={"VCPU": 8}, required_traits=frozenset({"CUSTOM_X"})
        )
        kind = "deferred"
    else:
        # No host is in the aggregate: host2's room does not count.
        request = SchedulingRequest(
            destination_request={"VCPU": 8}, member_of=(str(uuid.uuid4()),)
        )
        kind = "infeasible"
    assert _verdict_requests(world, request, kind) == [
        "/allocation_candidates",
        "/resource_providers",
    ]


# -- host_subset_size -------------------------------------------------------------------------


def test_host_subset_size_spreads_the_choice_among_equal_hosts(world: World) -> None:
    for n in range(4):
        world.add_host(f"host{n}")
    scheduler, client, _ = world.scheduler(host_subset_size=3, max_attempts=4)
    chosen = []
    for _ in range(30):
        selection = scheduler.select_destinations(_build_request())
        names = world.names(selection)
        chosen.append(names[0])
        assert sorted(names) == ["host0", "host1", "host2", "host3"]  # alternates kept
    best = world.names(world.scheduler(max_attempts=4)[0].select_destinations(_build_request()))
    # Only the three best are ever chosen, and each of them some of the time.
    assert set(chosen) == set(best[:3])
    assert client.request_count == 30  # nothing more asked


def test_the_source_is_asked_when_other_weighers_rank_too(world: World) -> None:
    """With the CPU and disk weighers as well, free RAM bounds no rank: the
    source that RAM alone would leave out is asked and weighed."""
    extra = _full_source_world(world, 3)
    scheduler, _, spy = world.scheduler(max_attempts=3)
    scheduler.select_destinations(resize_request(world, **extra))
    assert [p for _, p, _ in spy.calls if p.endswith("/usages")] == [
        f"/resource_providers/{world.hosts['host1']}/usages"
    ]


def test_the_source_usage_is_read_while_the_query_runs(world: World) -> None:
    """The resize waits for one round trip: the query over every host does
    not answer until the source's usage has been read (it would wait in
    vain, and fail, if the usage were read after it)."""
    world.add_host("host1", vcpus=2, memory_mb=16384)  # no room for all of NEW
    world.add_host("host2")
    world.hold("host1", OLD)
    scheduler, client, _ = world.scheduler(weight_classes=["RAMWeigher"])
    usage_read = threading.Event()
    real_usages, real_query = client.get_usages, client.get_allocation_candidates

    def usages(uuid: str) -> Any:
        try:
            return real_usages(uuid)
        finally:
            usage_read.set()

    def query(*args: Any, **kwargs: Any) -> Any:
        answer = real_query(*args, **kwargs)
        assert usage_read.wait(10), "the source's usage was not read during the query"
        return answer

    client.get_usages = usages  # type: ignore[method-assign]
    client.get_allocation_candidates = query  # type: ignore[method-assign]
    selection = scheduler.select_destinations(resize_request(world))
    assert world.names(selection) == ["host1", "host2"]
