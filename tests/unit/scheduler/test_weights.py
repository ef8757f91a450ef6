"""Each weigher on small host states, the scaling to 0..1 and the multipliers."""

from typing import Any

import pytest

from resize_sched import conf as rs_conf
from resize_sched.scheduler.host_state import HostState
from resize_sched.scheduler.request import GroupPolicy, SchedulingRequest
from resize_sched.scheduler.weights import WeigherChain, normalize

ME, A, B = "me", "a", "b"


def _chain(names: list[str], **multipliers: float) -> WeigherChain:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    for name, value in multipliers.items():
        conf.set_override(name, value, group="filter_scheduler")
    return WeigherChain(conf, names)


def _request(**kw: Any) -> SchedulingRequest:
    return SchedulingRequest(destination_request={"VCPU": 1}, **kw)


def _hosts(*free: dict[str, float], **kw: Any) -> list[HostState]:
    return [HostState(f"rp{i}", f"h{i}", free=f, **kw) for i, f in enumerate(free)]


def test_normalize() -> None:
    assert normalize([]) == []
    assert normalize([5, 5, 5]) == [0, 0, 0]
    assert normalize([0, 5, 10]) == [0, 0.5, 1]
    assert normalize([2, 4], minval=0) == [0.5, 1]


@pytest.mark.parametrize(
    "name, rc, option",
    [
        ("RAMWeigher", "MEMORY_MB", "ram_weight_multiplier"),
        ("CPUWeigher", "VCPU", "cpu_weight_multiplier"),
        ("DiskWeigher", "DISK_GB", "disk_weight_multiplier"),
    ],
)
def test_resource_weighers_spread_or_pack(name: str, rc: str, option: str) -> None:
    hosts = _hosts({rc: 10}, {rc: 40}, {rc: 20})
    assert _chain([name]).weigh(hosts, _request()) == [0.25, 1.0, 0.5]  # minval 0
    assert _chain([name], **{option: -2.0}).weigh(hosts, _request()) == [-0.5, -2.0, -1.0]
    assert _chain([name], **{option: 0.0}).weigh(hosts, _request()) == [0, 0, 0]


def test_weights_are_summed_after_scaling() -> None:
    """4 GB against 40 GB of disk: each counts as much once scaled."""
    hosts = _hosts({"MEMORY_MB": 4096, "DISK_GB": 10}, {"MEMORY_MB": 2048, "DISK_GB": 40})
    weights = _chain(["RAMWeigher", "DiskWeigher"]).weigh(hosts, _request())
    assert weights == [1.0 + 0.25, 0.5 + 1.0]


def test_build_failure_weigher() -> None:
    hosts = [
        HostState("rp0", "h0", failed_builds=0),
        HostState("rp1", "h1", failed_builds=3),
        HostState("rp2", "h2", failed_builds=1),
    ]
    weights = _chain(["BuildFailureWeigher"]).weigh(hosts, _request())
    assert weights == [1000000.0, 0.0, pytest.approx(666666.667)]
    assert max(range(3), key=weights.__getitem__) == 0


def _group(policy: str) -> GroupPolicy:
    return GroupPolicy("g", policy, {}, frozenset({ME, A, B}), frozenset())


def test_soft_affinity_toward_members_and_anti_away() -> None:
    hosts = [
        HostState("rp0", "h0", servers={A, B}),
        HostState("rp1", "h1", servers={A}),
        HostState("rp2", "h2", servers={"stranger"}),
    ]
    names = ["ServerGroupSoftAffinityWeigher", "ServerGroupSoftAntiAffinityWeigher"]
    chain = _chain(names)
    soft = _request(server_uuid=ME, group=_group("soft-affinity"))
    anti = _request(server_uuid=ME, group=_group("soft-anti-affinity"))
    assert chain.weigh(hosts, soft) == [1.0, 0.5, 0.0]
    assert chain.weigh(hosts, anti) == [0.0, 0.5, 1.0]
    assert chain.weigh(hosts, _request()) == [0, 0, 0]
    assert chain.weigh(hosts, _request(group=_group("affinity"))) == [0, 0, 0]
    assert chain.needs_for(_request()) == frozenset()
    assert chain.needs_for(soft) == {"servers"}


def test_soft_anti_affinity_the_moved_server_does_not_count_on_its_source() -> None:
    hosts = [HostState("rp0", "h0", servers={ME}), HostState("rp1", "h1", servers={A})]
    request = _request(server_uuid=ME, is_move=True, group=_group("soft-anti-affinity"))
    weights = _chain(["ServerGroupSoftAntiAffinityWeigher"]).weigh(hosts, request)
    assert weights[0] > weights[1]


def test_default_weighers_are_every_one() -> None:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    assert sorted(conf.filter_scheduler.weight_classes) == [
        "BuildFailureWeigher",
        "CPUWeigher",
        "DiskWeigher",
        "RAMWeigher",
        "ServerGroupSoftAffinityWeigher",
        "ServerGroupSoftAntiAffinityWeigher",
    ]
