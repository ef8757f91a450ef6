"""Each filter on small host states: what passes, what does not, and why."""

import datetime
from typing import Any

import pytest

from resize_sched import conf as rs_conf
from resize_sched.db.host_state_api import AggregateRow
from resize_sched.scheduler import plugins
from resize_sched.scheduler.filters import BaseHostFilter, FilterChain, extra_specs_ops
from resize_sched.scheduler.host_state import HostState
from resize_sched.scheduler.request import GroupPolicy, SchedulingRequest

ME = "11111111-1111-1111-1111-111111111111"
OTHER = "22222222-2222-2222-2222-222222222222"
THIRD = "33333333-3333-3333-3333-333333333333"


def _conf(**default: Any) -> Any:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    for name, value in default.items():
        conf.set_override(name, value)
    return conf


def _filter(name: str, **default: Any) -> BaseHostFilter:
    [found] = plugins.load(plugins.FILTERS, [name], BaseHostFilter)
    found.configure(_conf(**default))
    return found


def _host(name: str = "h1", **kw: Any) -> HostState:
    kw.setdefault("service_known", True)
    kw.setdefault("last_seen_up", datetime.datetime.now(datetime.UTC))
    return HostState(f"rp-{name}", name, **kw)


def _request(**kw: Any) -> SchedulingRequest:
    return SchedulingRequest(destination_request={"VCPU": 1}, **kw)


def _aggregate(**metadata: str) -> AggregateRow:
    return AggregateRow("agg-uuid", "agg", dict(metadata))


# -- ComputeFilter ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "state, passes",
    [
        ({}, True),
        ({"disabled": True}, False),
        ({"forced_down": True}, False),
        ({"age": 61}, False),
        ({"age": 50}, True),
        ({"last_seen_up": None}, False),
        ({"service_known": False, "last_seen_up": None}, True),
    ],
)
def test_compute_filter(state: dict, passes: bool) -> None:
    if "age" in state:
        ago = datetime.timedelta(seconds=state.pop("age"))
        state["last_seen_up"] = datetime.datetime.now(datetime.UTC) - ago
    assert _filter("ComputeFilter").host_passes(_host(**state), _request()) is passes


def test_compute_filter_reads_service_down_time() -> None:
    now = datetime.datetime.now(datetime.UTC)
    stale = _host(last_seen_up=now - datetime.timedelta(seconds=100))
    assert not _filter("ComputeFilter").host_passes(stale, _request())
    assert _filter("ComputeFilter", service_down_time=120).host_passes(stale, _request())


# -- ComputeCapabilitiesFilter --------------------------------------------------------


@pytest.mark.parametrize(
    "specs, passes",
    [
        ({}, True),
        ({"capabilities:hypervisor_type": "fake"}, True),
        ({"capabilities:hypervisor_type": "s== kvm"}, False),
        ({"capabilities:free_ram_mb": ">= 2048"}, True),
        ({"capabilities:free_ram_mb": ">= 8192"}, False),
        ({"capabilities:no_such_thing": "1"}, False),
        ({"hypervisor_type": "<or> kvm <or> fake"}, True),  # unscoped attribute
        ({"hw:cpu_policy": "dedicated", "trait:HW_CPU_X86_AVX": "required"}, True),
        ({"not_an_attribute": "x"}, True),
    ],
)
def test_compute_capabilities_filter(specs: dict, passes: bool) -> None:
    host = _host(free={"MEMORY_MB": 4096})
    request = _request(flavor={"extra_specs": specs})
    assert _filter("ComputeCapabilitiesFilter").host_passes(host, request) is passes


# -- ImagePropertiesFilter -----------------------------------------------------------


@pytest.mark.parametrize(
    "props, passes",
    [
        ({}, True),
        ({"hw_architecture": "x86_64"}, True),
        ({"hw_architecture": "aarch64"}, False),
        ({"architecture": "aarch64"}, False),  # the old name
        ({"img_hv_type": "fake", "hw_vm_mode": "hvm"}, True),
        ({"img_hv_type": "kvm"}, False),
        ({"hw_vm_mode": "exe"}, False),
        ({"img_hv_requested_version": ">= 6.0"}, True),  # no version reported: not compared
    ],
)
def test_image_properties_filter(props: dict, passes: bool) -> None:
    request = _request(image_properties=props)
    assert _filter("ImagePropertiesFilter").host_passes(_host(), request) is passes


# -- server groups ------------------------------------------------------------------------


def _group(
    policy: str, hosts: set[str] = frozenset(), members: set[str] = frozenset(), **rules: Any
) -> GroupPolicy:
    return GroupPolicy("g1", policy, rules, frozenset(members), frozenset(hosts))


def test_affinity_only_the_group_hosts_pass() -> None:
    f = _filter("ServerGroupAffinityFilter")
    request = _request(group=_group("affinity", hosts={"h1"}))
    assert f.host_passes(_host("h1"), request)
    assert not f.host_passes(_host("h2"), request)


def test_affinity_first_member_and_other_policies_go_anywhere() -> None:
    f = _filter("ServerGroupAffinityFilter")
    assert f.host_passes(_host("h2"), _request(group=_group("affinity")))
    assert f.host_passes(_host("h2"), _request(group=_group("anti-affinity", hosts={"h1"})))
    assert f.host_passes(_host("h2"), _request(group=_group("soft-affinity", hosts={"h1"})))
    assert f.host_passes(_host("h2"), _request())


def test_anti_affinity_refuses_a_host_with_a_member() -> None:
    f = _filter("ServerGroupAntiAffinityFilter")
    request = _request(server_uuid=ME, group=_group("anti-affinity", members={ME, OTHER}))
    assert not f.host_passes(_host("h1", servers={OTHER}), request)
    assert f.host_passes(_host("h2", servers={THIRD}), request)


def test_anti_affinity_max_server_per_host() -> None:
    f = _filter("ServerGroupAntiAffinityFilter")
    group = _group("anti-affinity", members={ME, OTHER, THIRD}, max_server_per_host=2)
    request = _request(server_uuid=ME, group=group)
    assert f.host_passes(_host("h1", servers={OTHER}), request)
    assert not f.host_passes(_host("h1", servers={OTHER, THIRD}), request)


def test_anti_affinity_a_moved_server_passes_its_own_host() -> None:
    """Its source holds it and another member: it is leaving, so it passes."""
    f = _filter("ServerGroupAntiAffinityFilter")
    group = _group("anti-affinity", members={ME, OTHER})
    request = _request(server_uuid=ME, is_move=True, group=group)
    assert f.host_passes(_host("h1", servers={ME, OTHER}), request)
    assert not f.host_passes(_host("h2", servers={OTHER}), request)


def test_anti_affinity_needs_servers_only_for_its_policy() -> None:
    f = _filter("ServerGroupAntiAffinityFilter")
    assert f.needs_for(_request()) == frozenset()
    assert f.needs_for(_request(group=_group("anti-affinity"))) == {"servers"}


# -- hints ---------------------------------------------------------------------------------


@pytest.mark.parametrize("hint", [OTHER, [OTHER], [THIRD, OTHER]])
def test_same_host_and_different_host(hint: Any) -> None:
    same, different = _filter("SameHostFilter"), _filter("DifferentHostFilter")
    with_other, empty = _host("h1", servers={OTHER}), _host("h2")
    request = _request(hints={"same_host": hint, "different_host": hint})
    assert same.host_passes(with_other, request) and not same.host_passes(empty, request)
    assert different.host_passes(empty, request)
    assert not different.host_passes(with_other, request)


def test_no_hint_passes_everywhere() -> None:
    for name in ("SameHostFilter", "DifferentHostFilter"):
        f = _filter(name)
        assert f.host_passes(_host(servers={OTHER}), _request())
        assert f.needs_for(_request()) == frozenset()


# -- zones and aggregates --------------------------------------------------------------


def test_availability_zone_filter() -> None:
    f = _filter("AvailabilityZoneFilter")
    zoned = _host("h1", aggregates=[_aggregate(availability_zone="az1")])
    unzoned = _host("h2", aggregates=[_aggregate(ssd="true")])
    assert f.host_passes(zoned, _request(availability_zone="az1"))
    assert not f.host_passes(unzoned, _request(availability_zone="az1"))
    assert f.host_passes(unzoned, _request(availability_zone="nova"))
    assert not f.host_passes(zoned, _request(availability_zone="nova"))
    assert f.host_passes(zoned, _request())
    other_default = _filter("AvailabilityZoneFilter", default_availability_zone="plain")
    assert other_default.host_passes(unzoned, _request(availability_zone="plain"))
    assert not other_default.host_passes(unzoned, _request(availability_zone="nova"))


@pytest.mark.parametrize(
    "specs, passes",
    [
        ({}, True),
        ({"ssd": "true"}, True),
        ({"aggregate_instance_extra_specs:ssd": "true"}, True),
        ({"aggregate_instance_extra_specs:ssd": "false"}, False),
        ({"gpus": ">= 2"}, True),
        ({"gpus": ">= 8"}, False),
        ({"missing": "x"}, False),
        ({"hw:cpu_policy": "dedicated", "resources:VCPU": "2"}, True),
    ],
)
def test_aggregate_instance_extra_specs_filter(specs: dict, passes: bool) -> None:
    host = _host(aggregates=[_aggregate(ssd="true"), _aggregate(gpus="4")])
    request = _request(flavor={"extra_specs": specs})
    assert _filter("AggregateInstanceExtraSpecsFilter").host_passes(host, request) is passes


def test_aggregate_multitenancy_isolation() -> None:
    f = _filter("AggregateMultiTenancyIsolation")
    kept = _host("h1", aggregates=[_aggregate(filter_tenant_id="p1, p2", filter_tenant_id3="p3")])
    free = _host("h2", aggregates=[_aggregate(ssd="true")])
    for project, passes in (("p1", True), ("p2", True), ("p3", True), ("p4", False)):
        assert f.host_passes(kept, _request(project_id=project)) is passes
    assert f.host_passes(free, _request(project_id="p4"))


# -- operators ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, requirement, matches",
    [
        ("4", "2", False),  # bare: equal as text
        ("4", "= 2", True),
        ("1", "= 2", False),
        ("4", "== 4", True),
        ("4", "!= 4", False),
        ("4", "<= 4", True),
        ("abc", "s== abc", True),
        ("abc", "s< abd", True),
        ("abc", "s>= abd", False),
        ("avx avx2", "<in> avx2", True),
        ("avx", "<in> sse", False),
        ("avx avx2 sse", "<all-in> avx sse", True),
        ("avx", "<all-in> avx sse", False),
        ("b", "<or> a <or> b", True),
        ("c", "<or> a <or> b", False),
        ("x", ">= 2", False),  # not a number
    ],
)
def test_extra_specs_operators(value: str, requirement: str, matches: bool) -> None:
    assert extra_specs_ops.match(value, requirement) is matches


# -- the chain ------------------------------------------------------------------------------


def test_the_chain_counts_what_each_filter_removed_and_stops_when_empty() -> None:
    chain = FilterChain(_conf(), ["ComputeFilter", "SameHostFilter", "DifferentHostFilter"])
    hosts = [_host("h1", disabled=True), _host("h2"), _host("h3", servers={OTHER})]
    kept, removed = chain.run(hosts, _request(hints={"same_host": OTHER}))
    assert [h.host for h in kept] == ["h3"]
    assert removed == [("ComputeFilter", 1), ("SameHostFilter", 1)]
    kept, removed = chain.run(hosts, _request(hints={"same_host": THIRD}))
    assert kept == [] and removed == [("ComputeFilter", 1), ("SameHostFilter", 2)]


def test_default_filters_are_novas() -> None:
    conf = _conf()
    assert conf.filter_scheduler.enabled_filters == [
        "ComputeFilter",
        "ComputeCapabilitiesFilter",
        "ImagePropertiesFilter",
        "ServerGroupAntiAffinityFilter",
        "ServerGroupAffinityFilter",
    ]
    assert len(FilterChain(conf, conf.filter_scheduler.enabled_filters).filters) == 5
