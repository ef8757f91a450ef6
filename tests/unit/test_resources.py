"""resize_sched.resources: amounts, allocations and a flavor's request."""

import pytest

from resize_sched import resources as rs

A = "rp-a"
B = "rp-b"


# -- normalize and the class-by-class arithmetic ---------------------------------------


def test_normalize_drops_zeros_and_converts_to_int() -> None:
    assert rs.normalize({"VCPU": 2, "MEMORY_MB": 0, "DISK_GB": "3"}) == {"VCPU": 2, "DISK_GB": 3}
    assert rs.normalize({}) == {}
    assert rs.normalize({"VCPU": 0}) == {}


def test_normalize_rejects_negative_amounts() -> None:
    with pytest.raises(ValueError, match="negative amount -1 of VCPU"):
        rs.normalize({"VCPU": -1})


def test_normalize_returns_a_new_dict() -> None:
    original = {"VCPU": 1}
    out = rs.normalize(original)
    out["VCPU"] = 5
    assert original == {"VCPU": 1}


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ({"VCPU": 1}, {"VCPU": 2}, {"VCPU": 3}),
        ({"VCPU": 1}, {"MEMORY_MB": 512}, {"VCPU": 1, "MEMORY_MB": 512}),
        ({}, {}, {}),
        ({"VCPU": 0}, {"DISK_GB": 0}, {}),
        ({"CUSTOM_FPGA": 1}, {}, {"CUSTOM_FPGA": 1}),
    ],
)
def test_add(a: dict, b: dict, expected: dict) -> None:
    assert rs.add(a, b) == expected
    assert rs.add(b, a) == expected


@pytest.mark.parametrize(
    "a, b, expected",
    [
        (
            {"VCPU": 4, "MEMORY_MB": 1024},
            {"VCPU": 2, "MEMORY_MB": 2048},
            {"VCPU": 4, "MEMORY_MB": 2048},
        ),
        ({"VCPU": 1}, {"DISK_GB": 10}, {"VCPU": 1, "DISK_GB": 10}),
        ({"VCPU": 1}, {"VCPU": 1}, {"VCPU": 1}),
        ({}, {}, {}),
        ({"VCPU": 0}, {}, {}),
    ],
)
def test_maximum(a: dict, b: dict, expected: dict) -> None:
    assert rs.maximum(a, b) == expected
    assert rs.maximum(b, a) == expected


@pytest.mark.parametrize(
    "old, new, expected",
    [
        # the bug's resize: only VCPU and RAM grow
        (
            {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 1028},
            {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 1028},
            {"VCPU": 1, "MEMORY_MB": 1024},
        ),
        # mixed: VCPU shrinks (taken as 0), RAM grows
        ({"VCPU": 4, "MEMORY_MB": 1024}, {"VCPU": 2, "MEMORY_MB": 2048}, {"MEMORY_MB": 1024}),
        # a pure shrink needs nothing
        ({"VCPU": 4, "MEMORY_MB": 4096}, {"VCPU": 2, "MEMORY_MB": 1024}, {}),
        # a class only the new flavor has is wholly an increase
        ({"VCPU": 1}, {"VCPU": 1, "CUSTOM_FPGA": 2}, {"CUSTOM_FPGA": 2}),
        # a class only the old flavor has is dropped, not negative
        ({"VCPU": 1, "CUSTOM_FPGA": 2}, {"VCPU": 1}, {}),
        ({}, {"VCPU": 3}, {"VCPU": 3}),
        ({}, {}, {}),
    ],
)
def test_increase(old: dict, new: dict, expected: dict) -> None:
    assert rs.increase(old, new) == expected


def test_max_equals_old_plus_increase() -> None:
    old = {"VCPU": 4, "MEMORY_MB": 1024, "DISK_GB": 10, "CUSTOM_A": 1}
    new = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10, "CUSTOM_B": 3}
    assert rs.add(old, rs.increase(old, new)) == rs.maximum(old, new)


# -- allocations -----------------------------------------------------------------------


def test_normalize_allocations_drops_empty_providers_and_zero_classes() -> None:
    allocations = {A: {"VCPU": 1, "DISK_GB": 0}, B: {"VCPU": 0}}
    assert rs.normalize_allocations(allocations) == {A: {"VCPU": 1}}
    assert rs.normalize_allocations({}) == {}


def test_add_allocations_sums_provider_by_provider() -> None:
    assert rs.add_allocations(
        {A: {"VCPU": 1}},
        {A: {"VCPU": 2, "MEMORY_MB": 512}, B: {"DISK_GB": 10}},
        {B: {"DISK_GB": 5}},
    ) == {A: {"VCPU": 3, "MEMORY_MB": 512}, B: {"DISK_GB": 15}}
    assert rs.add_allocations() == {}
    assert rs.add_allocations({A: {}}, {B: {"VCPU": 0}}) == {}


def test_on_and_total() -> None:
    assert rs.on(A, {"VCPU": 2, "DISK_GB": 0}) == {A: {"VCPU": 2}}
    assert rs.on(A, {}) == {}
    assert rs.total({A: {"VCPU": 1, "MEMORY_MB": 512}, B: {"VCPU": 2}}) == {
        "VCPU": 3,
        "MEMORY_MB": 512,
    }
    assert rs.total({}) == {}


def test_format_resources_is_sorted_and_skips_zeros() -> None:
    assert rs.format_resources({"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 0}) == (
        "MEMORY_MB:2048,VCPU:2"
    )
    assert rs.format_resources({}) == ""


def _flavor(**kw: object) -> dict:
    flavor: dict = {"vcpus": 2, "memory_mb": 2048, "root_gb": 20, "ephemeral_gb": 0, "swap": 0}
    flavor.update(kw)
    return flavor


def test_flavor_request_basic() -> None:
    request = rs.flavor_request(_flavor())
    assert request.resources == {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}
    assert request.required_traits == frozenset()


def test_flavor_request_missing_optional_keys_default_to_zero() -> None:
    request = rs.flavor_request({"vcpus": 1, "memory_mb": 512})
    assert request.resources == {"VCPU": 1, "MEMORY_MB": 512}


@pytest.mark.parametrize(
    "swap_mb, swap_gb",
    [(0, 0), (1, 1), (512, 1), (1023, 1), (1024, 1), (1025, 2), (2048, 2), (2049, 3)],
)
def test_flavor_request_swap_rounds_up_to_whole_gb(swap_mb: int, swap_gb: int) -> None:
    request = rs.flavor_request(_flavor(root_gb=10, ephemeral_gb=5, swap=swap_mb))
    assert request.resources["DISK_GB"] == 10 + 5 + swap_gb


def test_flavor_request_no_disk_at_all() -> None:
    request = rs.flavor_request(_flavor(root_gb=0))
    assert request.resources == {"VCPU": 2, "MEMORY_MB": 2048}


def test_extra_spec_resources_override_add_and_remove() -> None:
    request = rs.flavor_request(
        _flavor(
            extra_specs={
                "resources:VCPU": "4",  # override
                "resources:CUSTOM_FPGA": "2",  # add
                "resources:DISK_GB": "0",  # remove (e.g. boot from volume)
                "resources:MEMORY_MB": 4096,  # a number, not a string
            }
        )
    )
    assert request.resources == {"VCPU": 4, "MEMORY_MB": 4096, "CUSTOM_FPGA": 2}
    assert request.required_traits == frozenset()


def test_extra_spec_removing_a_class_the_flavor_lacks_is_harmless() -> None:
    request = rs.flavor_request(_flavor(extra_specs={"resources:CUSTOM_GPU": "0"}))
    assert request.resources == {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}


def test_extra_spec_required_traits() -> None:
    request = rs.flavor_request(
        _flavor(
            extra_specs={
                "trait:CUSTOM_X": "required",
                "trait:HW_CPU_X86_AVX2": "REQUIRED",
                "trait:CUSTOM_NOT": "forbidden",  # only required is understood
                "trait:CUSTOM_OTHER": "preferred",
            }
        )
    )
    assert request.required_traits == frozenset({"CUSTOM_X", "HW_CPU_X86_AVX2"})
    assert request.resources == {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}


@pytest.mark.parametrize("value", ["two", "", "1.5", None, "2x"])
def test_extra_spec_resource_amount_must_be_a_whole_number(value: object) -> None:
    with pytest.raises(ValueError, match="resources:VCPU"):
        rs.flavor_request(_flavor(extra_specs={"resources:VCPU": value}))


def test_extra_spec_negative_resource_amount_is_rejected() -> None:
    with pytest.raises(ValueError, match="negative"):
        rs.flavor_request(_flavor(extra_specs={"resources:VCPU": "-1"}))


@pytest.mark.parametrize("key", ["resources:", "resources:vcpu", "resources:CUSTOM-X"])
def test_extra_spec_with_a_malformed_resource_class_is_rejected(key: str) -> None:
    """flavor_request documents a ValueError for a malformed ``resources:``
    spec (and flavor_create relies on it to refuse bad flavors), but a class
    name Placement can never accept (empty, or not ``[A-Z0-9_]+``) is kept;
    every build of such a flavor then fails with Placement's 400."""
    with pytest.raises(ValueError, match="resource class"):
        rs.flavor_request(_flavor(extra_specs={key: "2"}))


def test_flavor_request_does_not_change_its_input() -> None:
    flavor = _flavor(extra_specs={"resources:VCPU": "8"})
    before = {**flavor, "extra_specs": dict(flavor["extra_specs"])}
    rs.flavor_request(flavor)
    assert flavor == before


# -- hw:numa_nodes ---------------------------------------------------------------------


def _numa(specs: dict, vcpus: int = 4, memory_mb: int = 4096) -> rs.ResourceRequest:
    return rs.flavor_request(_flavor(vcpus=vcpus, memory_mb=memory_mb, extra_specs=specs))


def test_one_numa_node_puts_vcpu_and_memory_in_one_group() -> None:
    request = _numa({"hw:numa_nodes": "1"})
    assert request.groups == (rs.RequestGroup("_NUMA0", {"VCPU": 4, "MEMORY_MB": 4096}),)
    assert request.unnumbered == {"DISK_GB": 20}
    assert request.resources == {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 20}
    assert request.group_policy is None


def test_two_numa_nodes_split_evenly_and_isolate() -> None:
    request = _numa({"hw:numa_nodes": 2})
    assert request.groups == (
        rs.RequestGroup("_NUMA0", {"VCPU": 2, "MEMORY_MB": 2048}),
        rs.RequestGroup("_NUMA1", {"VCPU": 2, "MEMORY_MB": 2048}),
    )
    assert request.group_policy == "isolate"
    assert request.resources == {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 20}


def test_numa_cells_sized_by_cpu_lists_and_memory() -> None:
    request = _numa(
        {
            "hw:numa_nodes": "2",
            "hw:numa_cpus.0": "0",
            "hw:numa_cpus.1": "1-3",
            "hw:numa_mem.0": "1024",
            "hw:numa_mem.1": "3072",
        }
    )
    assert [g.resources for g in request.groups] == [
        {"VCPU": 1, "MEMORY_MB": 1024},
        {"VCPU": 3, "MEMORY_MB": 3072},
    ]


def test_numa_cpu_lists_leave_out_with_a_caret() -> None:
    request = _numa({"hw:numa_nodes": "2", "hw:numa_cpus.0": "0-3,^1,^2", "hw:numa_cpus.1": "1,2"})
    assert [g.resources["VCPU"] for g in request.groups] == [2, 2]


def test_numa_nodes_with_another_group_and_isolate() -> None:
    request = _numa({"hw:numa_nodes": "2", "resources1:VGPU": "1", "group_policy": "isolate"})
    assert [g.suffix for g in request.groups] == ["1", "_NUMA0", "_NUMA1"]
    assert request.group_policy == "isolate"


def test_one_numa_node_leaves_the_policy_of_other_groups_alone() -> None:
    request = _numa({"hw:numa_nodes": "1", "resources1:VGPU": "1", "group_policy": "none"})
    assert [g.suffix for g in request.groups] == ["1", "_NUMA0"]
    assert request.group_policy == "none"


def test_a_flavor_without_numa_nodes_is_unchanged() -> None:
    request = _numa({"hw:cpu_policy": "shared"})
    assert request.groups == ()
    assert request.unnumbered == {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 20}


@pytest.mark.parametrize(
    ("specs", "vcpus", "memory_mb", "message"),
    [
        ({"hw:numa_nodes": "0"}, 4, 4096, "must be 1 or more"),
        ({"hw:numa_nodes": "-2"}, 4, 4096, "must be 1 or more"),
        ({"hw:numa_nodes": "two"}, 4, 4096, "not a whole number"),
        ({"hw:numa_nodes": "1.5"}, 4, 4096, "not a whole number"),
        ({"hw:numa_nodes": "3"}, 4, 4096, "does not divide the flavor's 4 vCPUs"),
        ({"hw:numa_nodes": "2"}, 4, 4095, "does not divide the flavor's 4095 MB"),
        ({"hw:numa_nodes": "8"}, 8, 4, "does not divide the flavor's 4 MB"),
        ({"hw:numa_nodes": "2"}, 0, 4096, "cell 0 would have no vCPU"),
        ({"hw:numa_cpus.0": "0-3"}, 4, 4096, "needs hw:numa_nodes"),
        ({"hw:numa_nodes": "1", "hw:numa_mem.1": "1"}, 4, 4096, "cells 0 to 0 only"),
        ({"hw:numa_nodes": "2", "hw:numa_cpus.0": "0-3"}, 4, 4096, "some guest cells only"),
        (
            {"hw:numa_nodes": "2", "hw:numa_cpus.0": "0-2", "hw:numa_cpus.1": "2-3"},
            4,
            4096,
            "in two cells",
        ),
        (
            {"hw:numa_nodes": "2", "hw:numa_cpus.0": "0", "hw:numa_cpus.1": "1-4"},
            4,
            4096,
            "each of the flavor's vCPUs 0 to 3 once",
        ),
        (
            {"hw:numa_nodes": "2", "hw:numa_cpus.0": "0-1", "hw:numa_cpus.1": "x"},
            4,
            4096,
            "not a CPU list",
        ),
        (
            {"hw:numa_nodes": "2", "hw:numa_mem.0": "1024", "hw:numa_mem.1": "1024"},
            4,
            4096,
            "add up to 2048 MB",
        ),
        (
            {"hw:numa_nodes": "2", "hw:numa_mem.0": "4096", "hw:numa_mem.1": "0"},
            4,
            4096,
            "cell 1 would have no memory",
        ),
        ({"hw:numa_nodes": "1", "resources:VCPU": "2"}, 4, 4096, "resources:VCPU"),
        ({"hw:numa_nodes": "1", "resources:MEMORY_MB": "2"}, 4, 4096, "resources:MEMORY_MB"),
        ({"hw:numa_nodes": "1", "resources_NUMA0:VGPU": "1"}, 4, 4096, "kept for"),
        ({"hw:numa_nodes": "2", "group_policy": "none"}, 4, 4096, "not none"),
        (
            {"hw:numa_nodes": "2", "resources1:VGPU": "1"},
            4,
            4096,
            "group_policy=isolate, given explicitly",
        ),
    ],
)
def test_numa_specs_that_cannot_be_sent_are_refused(
    specs: dict, vcpus: int, memory_mb: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        _numa(specs, vcpus=vcpus, memory_mb=memory_mb)


def test_stored_request_reads_a_refused_numa_snapshot_without_its_numa_specs():
    flavor = {
        "vcpus": 2,
        "memory_mb": 2048,
        "root_gb": 10,
        "extra_specs": {"hw:numa_nodes": "3", "resources1:VGPU": "1"},
    }
    assert "hw:numa_nodes=3" in rs.refusal(flavor)
    request = rs.stored_request(flavor)
    assert request.resources == {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10, "VGPU": 1}
    assert [g.suffix for g in request.groups] == ["1"]


def test_stored_request_still_refuses_what_was_always_refused():
    flavor = {"vcpus": 2, "memory_mb": 2048, "root_gb": 10, "extra_specs": {"resources:vcpu": "1"}}
    with pytest.raises(ValueError):
        rs.stored_request(flavor)
    assert rs.refusal({**flavor, "extra_specs": {}}) is None
