"""A flavor's CPU policy as PCPU and VCPU, and which extra specs are honoured."""

import pathlib
import re
from typing import Any

import pytest

from resize_sched import resources as rs
from resize_sched.resources import cpu, extra_specs


def _flavor(vcpus: int = 4, **specs: Any) -> dict[str, Any]:
    return {"vcpus": vcpus, "memory_mb": 2048, "root_gb": 10, "extra_specs": specs}


def _ask(vcpus: int = 4, **specs: Any) -> dict[str, int]:
    return rs.flavor_request(_flavor(vcpus, **specs)).resources


@pytest.mark.parametrize(
    "specs, cpus",
    [
        ({}, {"VCPU": 4}),
        ({"hw:cpu_policy": "shared"}, {"VCPU": 4}),
        ({"hw:cpu_policy": "dedicated"}, {"PCPU": 4}),
        ({"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "0-1"}, {"PCPU": 2, "VCPU": 2}),
        ({"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "^0"}, {"PCPU": 3, "VCPU": 1}),
        ({"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "^0-1"}, {"PCPU": 2, "VCPU": 2}),
        ({"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "3"}, {"PCPU": 1, "VCPU": 3}),
        (
            {"hw:cpu_policy": "dedicated", "hw:emulator_threads_policy": "isolate"},
            {"PCPU": 5},
        ),
        (
            {
                "hw:cpu_policy": "mixed",
                "hw:cpu_dedicated_mask": "0",
                "hw:emulator_threads_policy": "isolate",
            },
            {"PCPU": 2, "VCPU": 3},
        ),
        ({"hw:cpu_policy": "dedicated", "hw:emulator_threads_policy": "share"}, {"PCPU": 4}),
        ({"resources:PCPU": "4"}, {"PCPU": 4}),
        ({"resources:PCPU": "5", "hw:emulator_threads_policy": "isolate"}, {"PCPU": 5}),
        ({"resources:VCPU": "2"}, {"VCPU": 2}),
        ({"resources:VCPU": "0", "resources:PCPU": "4"}, {"PCPU": 4}),
        # NOTE: as Nova, a zero override is not "asked for" beside the policy.
        ({"hw:cpu_policy": "dedicated", "resources:VCPU": "0"}, {"PCPU": 4}),
    ],
)
def test_cpu_policy_becomes_pcpu_and_vcpu_as_in_nova(specs: dict, cpus: dict) -> None:
    assert _ask(4, **specs) == {**cpus, "MEMORY_MB": 2048, "DISK_GB": 10}


@pytest.mark.parametrize(
    "specs, words",
    [
        ({"hw:cpu_policy": "pinned"}, "hw:cpu_policy='pinned' is not one of shared"),
        ({"hw:cpu_policy": "mixed"}, "mixed needs hw:cpu_dedicated_mask"),
        ({"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "0-3"}, "at least one guest CPU"),
        ({"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "^0-3"}, "at least one guest CPU"),
        ({"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "2-5"}, "names guest CPUs [4, 5]"),
        ({"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "a"}, "'a' is not a CPU"),
        (
            {"hw:cpu_policy": "dedicated", "hw:cpu_dedicated_mask": "0"},
            "needs hw:cpu_policy=mixed",
        ),
        ({"hw:cpu_dedicated_mask": "0"}, "needs hw:cpu_policy=mixed"),
        ({"hw:cpu_policy": "dedicated", "resources:VCPU": "4"}, "cannot be combined"),
        ({"hw:cpu_policy": "shared", "resources:PCPU": "4"}, "cannot be combined"),
        ({"hw:cpu_policy": "dedicated", "resources1:PCPU": "4"}, "cannot be combined"),
        ({"resources:VCPU": "2", "resources:PCPU": "4"}, "cannot both be given"),
        ({"resources:PCPU": "3"}, "must be the flavor's 4 vcpus"),
        (
            {"resources:PCPU": "4", "hw:emulator_threads_policy": "isolate"},
            "plus one for hw:emulator_threads_policy=isolate",
        ),
        ({"hw:cpu_thread_policy": "isolate"}, "needs pinned CPUs"),
        ({"hw:cpu_policy": "shared", "hw:cpu_thread_policy": "require"}, "needs pinned CPUs"),
        ({"trait:HW_CPU_HYPERTHREADING": "required"}, "needs pinned CPUs"),
        ({"hw:emulator_threads_policy": "isolate"}, "needs pinned CPUs"),
        (
            {
                "hw:cpu_policy": "dedicated",
                "hw:cpu_thread_policy": "isolate",
                "trait:HW_CPU_HYPERTHREADING": "forbidden",
            },
            "cannot be combined with trait:HW_CPU_HYPERTHREADING",
        ),
        ({"hw:cpu_policy": "dedicated", "hw:cpu_thread_policy": "never"}, "is not one of"),
        (
            {"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "0", "hw:numa_nodes": "2"},
            "not honoured with hw:cpu_policy=mixed",
        ),
        ({"hw:numa_nodes": "2", "resources:PCPU": "4"}, "cannot be combined with resources:PCPU"),
        (
            {"hw:numa_nodes": "2", "resources1:PCPU": "4"},
            "cannot be combined with resources1:PCPU",
        ),
    ],
)
def test_cpu_policy_refusals_as_in_nova(specs: dict, words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(words)):
        rs.flavor_request(_flavor(4, **specs))


@pytest.mark.parametrize(
    "thread, required, forbidden",
    [
        ("isolate", frozenset(), frozenset({"HW_CPU_HYPERTHREADING"})),
        ("require", frozenset({"HW_CPU_HYPERTHREADING"}), frozenset()),
        ("prefer", frozenset(), frozenset()),
    ],
)
def test_thread_policy_is_the_hyperthreading_trait(
    thread: str, required: frozenset, forbidden: frozenset
) -> None:
    request = rs.flavor_request(
        _flavor(4, **{"hw:cpu_policy": "dedicated", "hw:cpu_thread_policy": thread})
    )
    assert (request.required_traits, request.forbidden_traits) == (required, forbidden)
    assert request.resources["PCPU"] == 4


def test_hyperthreading_trait_given_by_hand_with_pinned_cpus_is_kept() -> None:
    request = rs.flavor_request(
        _flavor(4, **{"hw:cpu_policy": "dedicated", "trait:HW_CPU_HYPERTHREADING": "forbidden"})
    )
    assert request.forbidden_traits == frozenset({"HW_CPU_HYPERTHREADING"})


def test_dedicated_numa_cells_claim_pcpu_per_cell() -> None:
    request = rs.flavor_request(
        _flavor(
            4,
            **{
                "hw:cpu_policy": "dedicated",
                "hw:numa_nodes": "2",
                "hw:emulator_threads_policy": "isolate",
            },
        )
    )
    assert {g.suffix: g.resources for g in request.groups} == {
        "_NUMA0": {"PCPU": 2, "MEMORY_MB": 1024},
        "_NUMA1": {"PCPU": 2, "MEMORY_MB": 1024},
    }
    assert request.unnumbered == {"PCPU": 1, "DISK_GB": 10}
    assert request.resources == {"PCPU": 5, "MEMORY_MB": 2048, "DISK_GB": 10}


def test_parse_cpu_spec_as_nova() -> None:
    assert cpu.parse_cpu_spec("0-5,^2,^4-5,8", "x") == {0, 1, 3, 8}
    with pytest.raises(ValueError, match="'3-1' is not a CPU or range"):
        cpu.parse_cpu_spec("3-1", "x")


def test_stored_snapshot_reads_specs_no_longer_accepted_as_claimed() -> None:
    """A server built when hw:cpu_policy=mixed without a mask, or a guest
    setting, was accepted and ignored is read as it was claimed."""
    stored = _flavor(4, **{"hw:cpu_policy": "mixed", "hw:cpu_cores": "2"})
    with pytest.raises(ValueError):
        rs.flavor_request(stored)
    assert rs.stored_request(stored).resources == {"VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 10}


# -- which keys are honoured ----------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "resources:VCPU",
        "resources1:CUSTOM_X",
        "resources_NUMA0:VCPU",
        "trait:HW_CPU_X86_AVX",
        "trait2:CUSTOM_Y",
        "member_of",
        "member_of1",
        "group_policy",
        "hw:cpu_policy",
        "hw:cpu_dedicated_mask",
        "hw:cpu_thread_policy",
        "hw:emulator_threads_policy",
        "hw:numa_nodes",
        "hw:numa_cpus.0",
        "hw:numa_mem.1",
        "aggregate_instance_extra_specs:ssd",
        "capabilities:hypervisor_type",
        # NOTE: namespaces Nova does not validate, and no namespace, pass.
        "key1",
        "custom:anything",
        "hw-x:y",
    ],
)
def test_honoured_or_ignored_as_nova_keys_pass(key: str) -> None:
    extra_specs.check(key)


@pytest.mark.parametrize(
    "key, why",
    [
        ("hw:cpu_cores", "guest hardware"),
        ("hw:cpu_max_sockets", "guest hardware"),
        ("hide_hypervisor_id", "guest hardware"),
        ("hw:cpu_realtime", "real-time vCPUs"),
        ("hw:cpu_realtime_mask", "real-time vCPUs"),
        ("hw:mem_page_size", "huge pages"),
        ("hw:mem_encryption", "MEM_ENCRYPTION_CONTEXT"),
        ("hw:tpm_version", "COMPUTE_SECURITY_TPM_2_0"),
        ("hw:pmem", "PMEM"),
        ("hw:x", "not an extra spec Nova knows"),
        ("hw_rng:allowed", "guest hardware"),
        ("hw_video:ram_max_mb", "guest hardware"),
        ("os:secure_boot", "UEFI_SECURE_BOOT"),
        ("quota:cpu_shares", "fake hypervisor enforces none"),
        ("accel:device_profile", "Cyborg"),
        ("pci_passthrough:alias", "PCI aliases"),
        ("vmware:hw_version", "VMware"),
    ],
)
def test_keys_not_honoured_are_refused_naming_key_and_reason(key: str, why: str) -> None:
    with pytest.raises(ValueError, match=f"extra spec {key} is not honoured.*{why}"):
        extra_specs.check(key)
    with pytest.raises(ValueError, match=f"extra spec {key} is not honoured"):
        rs.flavor_request(_flavor(4, **{key: "1"}))


def test_the_reference_page_shows_both_tables() -> None:
    """doc/reference/extra-specs.rst lists every row of HONOURED and REFUSED,
    with its words."""
    page = pathlib.Path(__file__).parents[2] / "doc" / "reference" / "extra-specs.rst"
    text = " ".join(page.read_text().split())
    for spec in (*extra_specs.HONOURED, *extra_specs.REFUSED):
        for key in spec.shown.split(","):
            assert f"``{key.strip()}``" in text, key
        assert spec.why[1:] in text, spec.why
