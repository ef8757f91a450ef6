"""Scheduler helpers and the weighing/filtering logic, with a small fake client.

The functional tests run the same code against the real Placement; these pin
down the edge cases that are awkward to build there (nested providers, ties,
inventory constraints).
"""

import random
import threading
from typing import Any

import pytest

from resize_sched import conf as rs_conf
from resize_sched import exception
from resize_sched.conf import filter_scheduler
from resize_sched.placement.client import DISABLED_TRAIT, Candidates
from resize_sched.scheduler import verdict
from resize_sched.scheduler.manager import Destination, Scheduler, SchedulingRequest

SMALL = {"VCPU": 1, "MEMORY_MB": 512}
OWNER = "CUSTOM_RESIZE_SCHED_DEFAULT"
USABLE = [OWNER, "!" + DISABLED_TRAIT]


def _group_of(name: str) -> str:
    """The option group of a scheduler option a test overrides."""
    return "filter_scheduler" if name in {o.name for o in filter_scheduler.OPTS} else "scheduler"


def inv(total: int, **kw: Any) -> dict[str, Any]:
    return {"total": total, **kw}


# -- _fits_empty --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "inventories, amounts, fits",
    [
        ({"VCPU": inv(4)}, {"VCPU": 4}, True),
        ({"VCPU": inv(4)}, {"VCPU": 5}, False),
        ({"VCPU": inv(4)}, {}, True),
        ({"VCPU": inv(4)}, {"MEMORY_MB": 1}, False),  # class missing
        ({"VCPU": inv(8, reserved=2)}, {"VCPU": 6}, True),
        ({"VCPU": inv(8, reserved=2)}, {"VCPU": 7}, False),
        ({"VCPU": inv(4, allocation_ratio=2.0)}, {"VCPU": 8}, True),
        ({"VCPU": inv(4, allocation_ratio=2.0)}, {"VCPU": 9}, False),
        ({"VCPU": inv(8, reserved=2, allocation_ratio=1.5)}, {"VCPU": 9}, True),
        ({"VCPU": inv(8, reserved=2, allocation_ratio=1.5)}, {"VCPU": 10}, False),
        ({"VCPU": inv(4, allocation_ratio=0.5)}, {"VCPU": 3}, False),
        ({"VCPU": inv(16, max_unit=4)}, {"VCPU": 4}, True),
        ({"VCPU": inv(16, max_unit=4)}, {"VCPU": 5}, False),
        ({"DISK_GB": inv(100, min_unit=20)}, {"DISK_GB": 20}, True),
        ({"DISK_GB": inv(100, min_unit=20)}, {"DISK_GB": 10}, False),
        ({"DISK_GB": inv(100, step_size=10)}, {"DISK_GB": 30}, True),
        ({"DISK_GB": inv(100, step_size=10)}, {"DISK_GB": 15}, False),
        ({"VCPU": inv(4), "MEMORY_MB": inv(1024)}, {"VCPU": 4, "MEMORY_MB": 1025}, False),
        ({"VCPU": inv(4), "MEMORY_MB": inv(1024)}, {"VCPU": 4, "MEMORY_MB": 1024}, True),
    ],
)
def test_fits_empty(inventories: dict, amounts: dict, fits: bool) -> None:
    assert verdict._fits_empty(inventories, amounts) is fits


# -- a fake client -------------------------------------------------------------------------


def summary(capacity: int, used: int = 0, root: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"resources": {"MEMORY_MB": {"capacity": capacity, "used": used}}}
    if root:
        out["root_provider_uuid"] = root
    return out


class FakeClient:
    """Just what the scheduler calls, answering from canned data.

    Every provider has the default deployment's owner trait and the traits
    in :attr:`traits`; ``required`` may forbid (``!TRAIT``).
    """

    def __init__(self, providers: dict[str, str], candidates: dict[str | None, Candidates]):
        self.providers = providers  # uuid -> name
        self.candidates = candidates  # in_tree -> answer
        self.inventories: dict[str, dict] = {}
        self.traits: dict[str, set[str]] = {}
        self.queries: list[dict[str, Any]] = []
        self.provider_lists: list[dict[str, Any]] = []
        self.provider_reads: list[str] = []

    def get_allocation_candidates(self, resources: Any, **kw: Any) -> Candidates:
        self.queries.append({"resources": dict(resources), **kw})
        return self.candidates.get(kw.get("in_tree"), Candidates([], {}))

    def list_resource_providers(self, **kw: Any) -> list[dict]:
        self.provider_lists.append(kw)
        required = [t for t in kw.get("required") or () if not t.startswith("!")]
        forbidden = {t[1:] for t in kw.get("required") or () if t.startswith("!")}
        return [
            {"uuid": u, "name": n}
            for u, n in self.providers.items()
            if (kw.get("in_tree") in (None, u))
            and set(required) <= self.traits.get(u, set()) | {OWNER}
            and not forbidden & self.traits.get(u, set())
        ]

    def get_inventories(self, uuid: str) -> tuple[dict, int]:
        return self.inventories.get(uuid, {}), 1

    def get_resource_provider(self, uuid: str) -> dict:
        self.provider_reads.append(uuid)
        if uuid not in self.providers:
            raise exception.PlacementNotFound(what=uuid)
        return {"uuid": uuid, "name": self.providers[uuid]}


def make_scheduler(client: FakeClient, rng: random.Random | None = None, **opts: Any) -> Scheduler:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    for name, value in opts.items():
        conf.set_override(name, value, group=_group_of(name))
    return Scheduler(client, conf, rng=rng)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "name, trait",
    [("default", OWNER), ("Blue_2", "CUSTOM_RESIZE_SCHED_BLUE_2")],
)
def test_owner_trait_names_the_deployment(name: str, trait: str) -> None:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    conf.set_override("deployment_name", name, group="placement")
    assert Scheduler(FakeClient({}, {}), conf).owner_trait == trait  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["", "blue-green", "a b", "x" * 201])
def test_deployment_name_must_make_a_valid_trait(bad: str) -> None:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    with pytest.raises(ValueError):
        conf.set_override("deployment_name", bad, group="placement")


# -- one destination per host; nested providers ---------------------------------------------


def test_nested_candidates_map_to_their_root_host_once() -> None:
    answer = Candidates(
        allocation_requests=[
            {"h1-numa0": SMALL},
            {"h1-numa1": SMALL},  # the same host again: skipped
            {"h2": SMALL},
        ],
        provider_summaries={
            "h1": summary(8192),
            "h1-numa0": summary(4096, root="h1"),
            "h1-numa1": summary(4096, root="h1"),
            "h2": summary(4096, root="h2"),
        },
    )
    client = FakeClient(
        {"h1": "host1", "h1-numa0": "n0", "h1-numa1": "n1", "h2": "host2"}, {None: answer}
    )
    selection = make_scheduler(client).select_destinations(SchedulingRequest(SMALL))
    assert selection.destinations == [
        # host1's free RAM is read from its root's summary
        Destination("h1", "host1", {"h1-numa0": SMALL}, False),
        Destination("h2", "host2", {"h2": SMALL}, False),
    ]


def test_root_of_an_empty_allocation_request_is_an_error() -> None:
    with pytest.raises(ValueError):
        Scheduler._root_of({}, Candidates([], {}))


def test_unknown_provider_name_falls_back_to_uuid() -> None:
    answer = Candidates([{"h9": SMALL}], {"h9": summary(1024)})
    client = FakeClient({}, {None: answer})
    selection = make_scheduler(client).select_destinations(SchedulingRequest(SMALL))
    assert [(d.provider, d.host) for d in selection.destinations] == [("h9", "h9")]


def test_names_without_a_database_are_read_one_provider_at_a_time_and_cached() -> None:
    client = _hosts([1024, 2048])
    scheduler = make_scheduler(client)
    scheduler.select_destinations(SchedulingRequest(SMALL))
    scheduler.select_destinations(SchedulingRequest(SMALL))
    assert sorted(client.provider_reads) == ["h0", "h1"]  # never a listing of every provider
    assert client.provider_lists == []


# -- weighing -------------------------------------------------------------------------------


def _hosts(frees: list[int]) -> FakeClient:
    names = {f"h{i}": f"host{i}" for i in range(len(frees))}
    answer = Candidates(
        [{u: SMALL} for u in names],
        {u: summary(16384, used=16384 - free) for u, free in zip(names, frees)},
    )
    return FakeClient(names, {None: answer})


def test_equal_weights_keep_placement_order() -> None:
    client = _hosts([4096, 4096, 4096, 4096])
    selection = make_scheduler(client, max_attempts=4).select_destinations(
        SchedulingRequest(SMALL)
    )
    assert [d.host for d in selection.destinations] == ["host0", "host1", "host2", "host3"]


@pytest.mark.parametrize(
    "multiplier, expected",
    [
        (1.0, ["host1", "host3", "host0", "host2"]),
        (-1.0, ["host2", "host0", "host3", "host1"]),
        (0.0, ["host0", "host1", "host2", "host3"]),
    ],
)
def test_ram_weight_multiplier(multiplier: float, expected: list[str]) -> None:
    client = _hosts([4096, 16384, 1024, 8192])
    scheduler = make_scheduler(client, ram_weight_multiplier=multiplier, max_attempts=4)
    selection = scheduler.select_destinations(SchedulingRequest(SMALL))
    assert [d.host for d in selection.destinations] == expected


def test_placement_limit_is_max_placement_results() -> None:
    client = _hosts([1024])
    make_scheduler(client, max_placement_results=7).select_destinations(
        SchedulingRequest(SMALL, required_traits=frozenset({"B", "A"}), member_of=("agg",))
    )
    assert client.queries == [
        {
            "resources": SMALL,
            "required": ["A", "B"],
            "member_of": ("agg",),
            "in_tree": None,
            "root_required": (OWNER, "!COMPUTE_STATUS_DISABLED"),
            "limit": 7,
        }
    ]


# -- no valid host ----------------------------------------------------------------------------


def _empty_world(inventories: dict[str, dict]) -> FakeClient:
    client = FakeClient({u: f"host-{u}" for u in inventories}, {})
    client.inventories = inventories
    return client


def test_deferred_when_some_allowed_host_could_hold_it_empty() -> None:
    client = _empty_world({"a": {"VCPU": inv(2)}, "b": {"VCPU": inv(8)}})
    with pytest.raises(exception.NoValidHost) as err:
        make_scheduler(client).select_destinations(SchedulingRequest({"VCPU": 4}))
    assert err.value.kind == "deferred"
    assert err.value.reason == (
        "no host has VCPU:4 free now (0 candidate(s) before filtering); retry when room is freed"
    )


@pytest.mark.parametrize(
    "filters, disabled",
    [
        ({"ignore_hosts": frozenset({"host-b"})}, ()),
        ({"force_hosts": frozenset({"host-a"})}, ()),
        ({}, ("b",)),
        ({"source": "b", "allow_same_host": False}, ()),
    ],
)
def test_infeasible_when_only_excluded_hosts_could_hold_it(
    filters: dict, disabled: tuple[str, ...]
) -> None:
    client = _empty_world({"a": {"VCPU": inv(2)}, "b": {"VCPU": inv(8)}})
    client.traits = {rp: {DISABLED_TRAIT} for rp in disabled}
    scheduler = make_scheduler(client)
    with pytest.raises(exception.NoValidHost) as err:
        scheduler.select_destinations(SchedulingRequest({"VCPU": 4}, **filters))
    assert err.value.kind == "infeasible"
    assert err.value.reason == "no allowed host could hold VCPU:4 even when empty"


def test_infeasible_checks_only_providers_with_the_required_traits() -> None:
    client = _empty_world({"a": {"VCPU": inv(2)}, "b": {"VCPU": inv(8)}})
    client.traits = {"a": {"CUSTOM_X"}}
    request = SchedulingRequest(
        {"VCPU": 4}, required_traits=frozenset({"CUSTOM_X"}), member_of=("agg",)
    )
    with pytest.raises(exception.NoValidHost) as err:
        make_scheduler(client).select_destinations(request)
    assert err.value.kind == "infeasible"
    assert err.value.reason == (
        "no allowed host could hold VCPU:4 with traits ['CUSTOM_X'] even when empty"
    )
    assert client.provider_lists[-1] == {
        "required": [*USABLE, "CUSTOM_X"],
        "member_of": ("agg",),
    }


def test_infeasible_lists_only_our_enabled_providers() -> None:
    client = _empty_world({"a": {"VCPU": inv(8)}})
    with pytest.raises(exception.NoValidHost):
        make_scheduler(client).select_destinations(SchedulingRequest({"VCPU": 9}))
    assert client.provider_lists == [{"required": USABLE, "member_of": ()}]


# -- the source ------------------------------------------------------------------------------


def test_shrink_source_costs_one_provider_query_that_also_names_it() -> None:
    client = FakeClient({"src": "source"}, {})
    request = SchedulingRequest(
        {"VCPU": 1}, source="src", source_request={}, allow_same_host=True, prefer_same_host=True
    )
    selection = make_scheduler(client).select_destinations(request)
    assert selection.destinations == [Destination("src", "source", {}, True)]
    assert selection.complete is False
    assert client.queries == []
    # one listing checks that the source is ours and enabled, and names it
    assert client.provider_lists == [{"in_tree": "src", "required": USABLE, "member_of": ()}]


def test_disabled_shrink_source_is_not_chosen() -> None:
    answer = Candidates([{"h2": SMALL}], {"h2": summary(1024)})
    client = FakeClient({"src": "source", "h2": "host2"}, {None: answer})
    client.traits = {"src": {DISABLED_TRAIT}}
    request = SchedulingRequest(
        {"VCPU": 1}, source="src", source_request={}, allow_same_host=True, prefer_same_host=True
    )
    selection = make_scheduler(client).select_destinations(request)
    assert [(d.host, d.same_host) for d in selection.destinations] == [("host2", False)]
    assert selection.complete


def test_source_request_equal_to_destination_request_is_compared_normalised() -> None:
    answer = Candidates([{"src": SMALL}, {"h2": SMALL}], {"src": summary(1), "h2": summary(2)})
    client = FakeClient({"src": "source", "h2": "host2"}, {None: answer})
    request = SchedulingRequest(
        SMALL,
        source="src",
        source_request={**SMALL, "DISK_GB": 0},
        allow_same_host=True,
    )
    selection = make_scheduler(client).select_destinations(request)
    assert len(client.queries) == 1
    assert [(d.host, d.same_host) for d in selection.destinations] == [
        ("host2", False),
        ("source", True),
    ]


# -- the two queries of a resize run at once ------------------------------------------------


class MeetingClient(FakeClient):
    """Answers a candidates query only once a second one is in flight too."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.meeting = threading.Barrier(2, timeout=10)
        self.threads: set[str] = set()

    def get_allocation_candidates(self, resources: Any, **kw: Any) -> Candidates:
        self.threads.add(threading.current_thread().name)
        self.meeting.wait()  # BrokenBarrierError if the other query never comes
        return super().get_allocation_candidates(resources, **kw)


def test_source_and_other_hosts_are_asked_at_once() -> None:
    others = Candidates([{"h2": SMALL}], {"h2": summary(4096)})
    source = Candidates([{"src": {"VCPU": 1}}], {"src": summary(8192)})
    client = MeetingClient({"src": "source", "h2": "host2"}, {None: others, "src": source})
    scheduler = make_scheduler(client)
    request = SchedulingRequest(
        SMALL, source="src", source_request={"VCPU": 1}, allow_same_host=True
    )
    selection = scheduler.select_destinations(request)
    assert [(d.host, d.same_host) for d in selection.destinations] == [
        ("source", True),
        ("host2", False),
    ]
    assert len(client.queries) == 2 and len(client.threads) == 2
    scheduler.close()


def test_a_failed_query_fails_the_selection_after_both_ended() -> None:
    class Failing(MeetingClient):
        def get_allocation_candidates(self, resources: Any, **kw: Any) -> Candidates:
            answer = super().get_allocation_candidates(resources, **kw)
            if kw.get("in_tree"):
                raise exception.PlacementUnavailable(method="GET", url="/x", reason="down")
            return answer

    client = Failing({"src": "source"}, {})
    request = SchedulingRequest(
        SMALL, source="src", source_request={"VCPU": 1}, allow_same_host=True
    )
    with pytest.raises(exception.PlacementUnavailable):
        make_scheduler(client).select_destinations(request)
    assert len(client.queries) == 2


# -- host_subset_size ----------------------------------------------------------------------


def _choices(client: FakeClient, runs: int = 200, **opts: Any) -> list[str]:
    scheduler = make_scheduler(client, rng=random.Random(1234), max_attempts=4, **opts)
    return [
        scheduler.select_destinations(SchedulingRequest(SMALL)).destinations[0].host
        for _ in range(runs)
    ]


def test_host_subset_size_one_always_takes_the_best() -> None:
    assert set(_choices(_hosts([4096, 4096, 4096, 4096]))) == {"host0"}


def test_host_subset_size_spreads_among_equal_hosts() -> None:
    chosen = _choices(_hosts([4096, 4096, 4096, 4096]), host_subset_size=4)
    counts = {host: chosen.count(host) for host in sorted(set(chosen))}
    assert set(counts) == {"host0", "host1", "host2", "host3"}
    assert min(counts.values()) >= 25  # 50 each expected out of 200


def test_host_subset_size_picks_among_the_best_only_and_keeps_the_rest_in_order() -> None:
    client = _hosts([1024, 16384, 2048, 8192])  # best first: host1, host3, host2, host0
    scheduler = make_scheduler(client, rng=random.Random(5), max_attempts=4, host_subset_size=2)
    seen = set()
    for _ in range(50):
        hosts = [
            d.host for d in scheduler.select_destinations(SchedulingRequest(SMALL)).destinations
        ]
        seen.add(hosts[0])
        rest = ["host1", "host3", "host2", "host0"]
        rest.remove(hosts[0])
        assert hosts[1:] == rest
    assert seen == {"host1", "host3"}


def test_host_subset_size_never_displaces_a_free_source() -> None:
    answer = Candidates(
        [{u: SMALL} for u in ("src", "h1", "h2")],
        {u: summary(16384) for u in ("src", "h1", "h2")},
    )
    client = FakeClient({"src": "source", "h1": "host1", "h2": "host2"}, {None: answer})
    scheduler = make_scheduler(client, rng=random.Random(3), host_subset_size=3)
    request = SchedulingRequest(SMALL, source="src", source_request={}, allow_same_host=True)
    for _ in range(20):
        first = scheduler.select_destinations(request).destinations[0]
        assert (first.host, first.same_host) == ("source", True)
