"""Which flavor extra specs this service honours, and why it refuses the rest.

One table, :data:`HONOURED`, lists every key the scheduler acts on; one,
:data:`REFUSED`, every key of Nova's that it does not, with the reason.
:func:`check` decides a key as Nova's extra spec validation does from API
microversion 2.86, with one rule more:

* a key this service honours is accepted (its value is checked where it is
  translated: :func:`resize_sched.resources.flavor_request`);
* a key of Nova's it does not honour is refused, saying why (Nova would
  act on it; accepting it here would silently do less than Nova);
* a key in a namespace Nova validates (``hw:``, ``hw_rng:``, ``os:``,
  ``quota:``...) that Nova does not know is refused, as Nova refuses it;
* any other key passes untouched: no namespace at all (``key1``; the
  aggregate and capabilities filters may read it), or a namespace Nova does
  not register (``custom:x``), as Nova lets them pass.

``doc/extra-specs.rst`` shows both tables.
"""

import re
from dataclasses import dataclass

_GROUP = r"[A-Za-z0-9_-]{0,64}"


@dataclass(frozen=True)
class Spec:
    """One row: the keys ``pattern`` matches (whole key), as ``shown``.

    :ivar why: what the service does with it (honoured) or why it is
        refused.
    """

    pattern: str
    shown: str
    why: str

    def matches(self, key: str) -> bool:
        return re.fullmatch(self.pattern, key) is not None


HONOURED: tuple[Spec, ...] = (
    Spec(
        rf"resources{_GROUP}:.+",
        "resources[N]:CLASS",
        "claims N of the resource class (unnumbered: overrides or, at 0, removes the "
        "flavor's own VCPU, MEMORY_MB, DISK_GB); with a suffix, a numbered request group "
        "one provider satisfies",
    ),
    Spec(
        rf"trait{_GROUP}:.+",
        "trait[N]:TRAIT",
        "required or forbidden trait of the unnumbered or numbered group",
    ),
    Spec(rf"member_of{_GROUP}", "member_of[N]", "aggregate uuids, Placement's member_of"),
    Spec(r"group_policy", "group_policy", "isolate or none: how numbered groups share providers"),
    Spec(
        r"hw:cpu_policy",
        "hw:cpu_policy",
        "shared (VCPU), dedicated (PCPU for every vCPU) or mixed (PCPU for the CPUs of "
        "hw:cpu_dedicated_mask, VCPU for the rest), as Nova translates it",
    ),
    Spec(r"hw:cpu_dedicated_mask", "hw:cpu_dedicated_mask", "a mixed guest's dedicated CPUs"),
    Spec(
        r"hw:cpu_thread_policy",
        "hw:cpu_thread_policy",
        "isolate forbids, require requires the trait HW_CPU_HYPERTHREADING; prefer asks "
        "nothing (pinned CPUs only)",
    ),
    Spec(
        r"hw:emulator_threads_policy",
        "hw:emulator_threads_policy",
        "isolate claims one PCPU more for the emulator threads; share nothing (pinned CPUs only)",
    ),
    Spec(r"hw:numa_nodes", "hw:numa_nodes", "guest NUMA cells: one request group per cell"),
    Spec(r"hw:numa_cpus\.\d+", "hw:numa_cpus.X", "the guest CPUs of cell X"),
    Spec(r"hw:numa_mem\.\d+", "hw:numa_mem.X", "the memory (MB) of cell X"),
    Spec(
        r"aggregate_instance_extra_specs:.+",
        "aggregate_instance_extra_specs:KEY",
        "matched against host aggregates' metadata by AggregateInstanceExtraSpecsFilter "
        "(when [filter_scheduler] enabled_filters has it)",
    ),
    Spec(
        r"capabilities:.+",
        "capabilities:ATTR",
        "matched against the host's state by ComputeCapabilitiesFilter (when enabled)",
    ),
)

_GUEST = "guest hardware the hypervisor driver sets up, and the fake hypervisor sets up no guest"

REFUSED: tuple[Spec, ...] = (
    Spec(
        r"hw:cpu_realtime(_mask)?",
        "hw:cpu_realtime, hw:cpu_realtime_mask",
        "real-time vCPUs are not modelled; for a mixed guest give hw:cpu_dedicated_mask",
    ),
    Spec(
        r"hw:(mem_page_size|locked_memory)",
        "hw:mem_page_size, hw:locked_memory",
        "huge pages are fitted by Nova's NUMATopologyFilter to each host cell's pages, "
        "which this service does not model",
    ),
    Spec(
        r"hw:pci_numa_affinity_policy",
        "hw:pci_numa_affinity_policy",
        "PCI devices' NUMA affinity is not modelled; ask for the device with "
        "resourcesN:CLASS on a child provider",
    ),
    Spec(
        r"hw:mem_encryption(_model)?",
        "hw:mem_encryption, hw:mem_encryption_model",
        "not translated; ask for resources:MEM_ENCRYPTION_CONTEXT=1 and the CPU trait "
        "(trait:HW_CPU_X86_AMD_SEV=required) instead",
    ),
    Spec(
        r"hw:pmem",
        "hw:pmem",
        "persistent memory namespaces are not translated; ask for "
        "resources:CUSTOM_PMEM_NAMESPACE_<LABEL>=N instead",
    ),
    Spec(
        r"hw:tpm_(model|version|secret_security)",
        "hw:tpm_model, hw:tpm_version, hw:tpm_secret_security",
        "not translated; ask for the host trait (trait:COMPUTE_SECURITY_TPM_2_0=required) instead",
    ),
    Spec(
        r"hw:ephemeral_encryption(_format)?",
        "hw:ephemeral_encryption, hw:ephemeral_encryption_format",
        "ephemeral disk encryption is not modelled",
    ),
    Spec(
        r"hw:(cpu_(max_)?(sockets|cores|threads)|boot_menu|vif_multiqueue_enabled|pmu"
        r"|serial_port_count|watchdog_action|viommu_model|virtio_packed_ring|sound_model"
        r"|usb_model|redirected_usb_ports|hide_hypervisor_id)|hide_hypervisor_id",
        "hw:cpu_sockets, hw:cpu_cores, hw:cpu_threads, hw:cpu_max_*, hw:boot_menu, "
        "hw:vif_multiqueue_enabled, hw:pmu, hw:serial_port_count, hw:watchdog_action, "
        "hw:viommu_model, hw:virtio_packed_ring, hw:sound_model, hw:usb_model, "
        "hw:redirected_usb_ports, hw:hide_hypervisor_id, hide_hypervisor_id",
        _GUEST,
    ),
    Spec(r"hw_rng:.*", "hw_rng:*", _GUEST),
    Spec(r"hw_video:.*", "hw_video:*", _GUEST),
    Spec(
        r"os:.*",
        "os:*",
        "not translated (os:secure_boot is a host trait: ask for "
        "trait:COMPUTE_SECURITY_UEFI_SECURE_BOOT=required)",
    ),
    Spec(
        r"quota:.*", "quota:*", "limits the hypervisor enforces; the fake hypervisor enforces none"
    ),
    Spec(r"accel:.*", "accel:*", "Cyborg device profiles are not served"),
    Spec(
        r"pci_passthrough:.*",
        "pci_passthrough:*",
        "PCI aliases are Nova's [pci] configuration; ask for the device's class with "
        "resourcesN:CLASS on a child provider",
    ),
    Spec(r"vmware:.*", "vmware:*", "settings of Nova's VMware driver, which is not here"),
    Spec(r"hw:.*", "hw:* (any other)", "not an extra spec Nova knows (Nova refuses it too)"),
)


def check(key: str) -> None:
    """Accept ``key`` or say why it is refused.

    :raises ValueError: a key of Nova's this service does not honour, or an
        unknown key in a namespace Nova validates; the message names the key
        and the reason.
    """
    if any(spec.matches(key) for spec in HONOURED):
        return
    for spec in REFUSED:
        if spec.matches(key):
            raise ValueError(f"extra spec {key} is not honoured by this service: {spec.why}")
