"""The scheduler's shortcuts for large answers say what the long way says.

A thousand candidates per request made the scheduler walk each allocation
request's providers, build host states through keyword arguments and add
the weighers' values one index at a time; the shortcuts must give the same
roots, host states and weights, in the same order.
"""

import datetime
import random

from resize_sched import conf as rs_conf
from resize_sched.db.host_api import NodeRow
from resize_sched.placement.client import SHARING_TRAIT, Candidates
from resize_sched.scheduler.host_state import HostState, build_host_states
from resize_sched.scheduler.manager import Scheduler
from resize_sched.scheduler.request import Destination, SchedulingRequest
from resize_sched.scheduler.weights import WeigherChain


def _summary(root: str, traits: tuple[str, ...] = ()) -> dict:
    return {"resources": {}, "traits": list(traits), "root_provider_uuid": root}


def test_firsts_match_root_of_whatever_the_tree() -> None:
    summaries = {
        "h1": _summary("h1"),
        "h1-numa0": _summary("h1"),  # a child: the candidate is h1's
        "pool": _summary("pool", (SHARING_TRAIT,)),  # a sharing provider
        "h2": _summary("h2"),
        "nested-no-root": {"resources": {}},  # no root named: its own
    }
    requests = [
        {"h1-numa0": {"VCPU": 1}},
        {"pool": {"DISK_GB": 1}},  # the pool alone names itself
        {"pool": {"DISK_GB": 1}, "h2": {"VCPU": 1}},  # the pool beside a host: h2
        {"h1": {"VCPU": 1}},  # h1 again: not its first
        {"nested-no-root": {"VCPU": 1}},
        {"unknown": {"VCPU": 1}},  # no summary at all
    ]
    candidates = Candidates(requests, summaries)
    firsts = Scheduler._firsts(candidates)

    expected: dict[str, int] = {}
    for index, ar in enumerate(requests):
        expected.setdefault(Scheduler._root_of(ar, candidates), index)
    assert {root: index for root, (index, _) in firsts.items()} == expected
    assert list(firsts) == ["h1", "pool", "h2", "nested-no-root", "unknown"]
    assert firsts["h1"][1] is requests[0]


def _by_init(dest: Destination, node: NodeRow | None) -> HostState:
    """What build_host_states built before it set slots itself."""
    total = dest.total
    if total is None:
        total = {rc: r["total"] for rc, r in node.inventory.items()} if node else {}
    return HostState(
        dest.provider,
        dest.host,
        free=dest.free,
        total=total,
        service_known=node is not None and node.disabled is not None,
        disabled=bool(node and node.disabled),
        forced_down=bool(node and node.forced_down),
        last_seen_up=node.last_seen_up if node else None,
        hypervisor_type=node.hypervisor_type if node else "fake",
        hypervisor_hostname=node.hypervisor_hostname if node else None,
        failed_builds=node.failed_builds if node else 0,
        same_host=dest.same_host,
    )


def test_built_host_states_equal_those_of_the_constructor() -> None:
    seen = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    inventory = {"VCPU": {"total": 8, "reserved": 0, "allocation_ratio": 1.0}}
    nodes = [
        NodeRow("a", "ha", "ha-node", "fake", inventory, 2, False, True, seen),
        NodeRow("b", "hb", "", "qemu", inventory, 0, None, False, None),
        NodeRow("c", "hc", "hc", "fake", inventory, 0, True, False, seen),
        None,
    ]
    dests = [
        Destination("a", "ha", {"a": {}}, free={"VCPU": 3}, total={"VCPU": 8}, node=nodes[0]),
        Destination("b", "hb", {"b": {}}, free=None, total=None, node=nodes[1]),
        Destination("c", "hc", {"c": {}}, True, free={}, total=None, node=nodes[2]),
        Destination("d", "hd", {"d": {}}, free={"VCPU": 1}, total={"VCPU": 2}),
    ]
    states = build_host_states(None, dests)
    slots = [s for s in HostState.__slots__ if s != "_metadata"]
    for state, dest, node in zip(states, dests, nodes, strict=True):
        old = _by_init(dest, node)
        assert {s: getattr(state, s) for s in slots} == {s: getattr(old, s) for s in slots}
        assert state.aggregate_metadata() == {}
    # NOTE: a copy, never the destination's own mapping
    assert states[0].free is not dests[0].free and states[0].total is not dests[0].total


def test_weigher_chain_sums_as_index_by_index() -> None:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    conf.set_override("cpu_weight_multiplier", -0.3, group="filter_scheduler")
    chain = WeigherChain(conf, ["RAMWeigher", "CPUWeigher", "DiskWeigher", "BuildFailureWeigher"])
    rng = random.Random(7)
    hosts = [
        HostState(
            f"rp{i}",
            f"h{i}",
            free={"MEMORY_MB": rng.randint(0, 9999), "VCPU": rng.random() * 64, "DISK_GB": i % 5},
            failed_builds=rng.choice([0, 0, 1]),
        )
        for i in range(200)
    ]
    request = SchedulingRequest({"VCPU": 1})
    expected = [0.0] * len(hosts)
    for w in chain.weighers:
        raw = w.weigh_objects(hosts, request)
        low = min(raw) if w.minval is None else w.minval
        span = max(raw) - low
        for i, value in enumerate(raw):
            expected[i] += w.weight_multiplier() * ((value - low) / span if span else 0.0)
    assert chain.weigh(hosts, request) == expected
