"""Flavor extra specs to request groups, as Nova translates them."""

import pytest

from resize_sched import resources as rs

FLAVOR = {"vcpus": 2, "memory_mb": 2048, "root_gb": 20}


def _request(**specs: str) -> rs.ResourceRequest:
    return rs.flavor_request({**FLAVOR, "extra_specs": specs})


def test_numbered_groups_add_to_the_total_and_leave_the_rest_unnumbered() -> None:
    request = _request(
        **{
            "resources1:VGPU": "1",
            "trait1:CUSTOM_VGPU_A100": "required",
            "resources_gpu2:VGPU": "1",
            "trait_gpu2:CUSTOM_VGPU_T4": "forbidden",
            "group_policy": "isolate",
            "trait:HW_CPU_X86_AVX2": "required",
            "trait:CUSTOM_SLOW": "forbidden",
            "member_of": "in:agg1,agg2",
        }
    )
    assert request.resources == {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20, "VGPU": 2}
    assert request.unnumbered == {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}
    assert request.groups == (
        rs.RequestGroup("1", {"VGPU": 1}, frozenset({"CUSTOM_VGPU_A100"})),
        rs.RequestGroup("_gpu2", {"VGPU": 1}, forbidden_traits=frozenset({"CUSTOM_VGPU_T4"})),
    )
    assert request.group_policy == "isolate"
    assert request.required_traits == {"HW_CPU_X86_AVX2"}
    assert request.forbidden_traits == {"CUSTOM_SLOW"}
    assert request.member_of == ("in:agg1,agg2",)


def test_a_flat_flavor_is_read_as_before() -> None:
    request = _request(**{"resources:CUSTOM_FPGA": "2", "resources:DISK_GB": "0"})
    assert request.resources == {"VCPU": 2, "MEMORY_MB": 2048, "CUSTOM_FPGA": 2}
    assert (request.groups, request.group_policy, request.forbidden_traits) == ((), None, set())


@pytest.mark.parametrize(
    "specs",
    [
        {"group_policy": "spread"},
        {"resources1:vgpu": "1"},
        {"resources1:VGPU": "one"},
        {"resources1:VGPU": "-1"},
    ],
)
def test_malformed_specs_are_refused(specs: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        _request(**specs)
