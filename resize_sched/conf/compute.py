"""Options of the ``[compute]`` group: the inventory a compute host reports.

A compute service registers its host in Placement as a resource provider
named ``[DEFAULT] host`` and keeps its VCPU, PCPU, MEMORY_MB and DISK_GB
inventory equal to what is configured here. The fake hypervisor has no hardware to
measure, so the totals are configuration too.
"""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    "compute",
    title="Compute service options",
    help="What a compute host offers to the scheduler: the totals, reserved amounts "
    "and allocation ratios of its VCPU, PCPU, MEMORY_MB and DISK_GB inventory in "
    "Placement.",
)

OPTS = [
    cfg.IntOpt(
        "vcpus",
        default=8,
        min=1,
        help="The host's CPUs (numbered 0 to vcpus - 1), and so its VCPU inventory "
        "total unless cpu_shared_set or cpu_dedicated_set divides them. The fake "
        "hypervisor cannot measure the machine, so set it to what the host should "
        "offer; the default of 8 suits demos and tests only.",
    ),
    cfg.IntOpt(
        "memory_mb",
        default=16384,
        min=1,
        help="MEMORY_MB inventory total of this host, in MiB. The default (16 GiB) "
        "suits demos and tests only; set the host's real memory.",
    ),
    cfg.IntOpt(
        "disk_gb",
        default=500,
        min=1,
        help="DISK_GB inventory total of this host, in GiB. The default (500) suits "
        "demos and tests only; set the size of the host's instance storage.",
    ),
    cfg.StrOpt(
        "cpu_shared_set",
        help="The host CPUs that run unpinned guest CPUs: the host's VCPU inventory "
        "is this many CPUs (times cpu_allocation_ratio, less reserved_host_cpus), as "
        "in Nova. A CPU list of single CPUs, ranges and ^ exclusions, e.g. '0-3,^2,8'. "
        "Unset: with cpu_dedicated_set set the host offers no VCPU at all (as Nova); "
        "with neither set, all [compute] vcpus are VCPU. Set both to offer both.",
    ),
    cfg.StrOpt(
        "cpu_dedicated_set",
        help="The host CPUs guests may pin (hw:cpu_policy=dedicated or mixed): the "
        "host's PCPU inventory is this many CPUs, never overcommitted and nothing "
        "reserved, as in Nova. Same syntax as cpu_shared_set; the two must not share "
        "a CPU, and both must name CPUs below [compute] vcpus (the service refuses to "
        "start otherwise). Unset: the host offers no PCPU, and a flavor with "
        "dedicated CPUs cannot be placed on it.",
    ),
    cfg.IntOpt(
        "reserved_host_cpus",
        default=0,
        min=0,
        help="VCPUs kept back for the host itself (Placement's 'reserved' for VCPU): "
        "servers can never be placed on them. Raise it when host processes need "
        "CPU time. Must not exceed the VCPU total (vcpus, or the size of "
        "cpu_shared_set). PCPU has nothing reserved: leave host CPUs out of "
        "cpu_dedicated_set instead.",
    ),
    cfg.IntOpt(
        "reserved_host_memory_mb",
        default=512,
        min=0,
        help="Memory in MiB kept back for the host itself (Placement's 'reserved' "
        "for MEMORY_MB). The default of 512 is Nova's; raise it when the host's own "
        "services need more. Must not exceed memory_mb.",
    ),
    cfg.IntOpt(
        "reserved_host_disk_mb",
        default=0,
        min=0,
        help="Disk in MiB kept back for the host itself, as in Nova. Placement counts "
        "DISK_GB, so this is rounded up to whole GiB for its 'reserved'. Must not "
        "exceed disk_gb.",
    ),
    cfg.FloatOpt(
        "cpu_allocation_ratio",
        default=1.0,
        min=0.0,
        help="Overcommit of VCPU: Placement lets servers hold up to (vcpus - "
        "reserved_host_cpus) x this ratio. The default 1.0 means no overcommit, so "
        "the resize arithmetic a demo or test shows is exactly what the host has; "
        "production clouds often use 4.0 or more for CPU.",
    ),
    cfg.FloatOpt(
        "ram_allocation_ratio",
        default=1.0,
        min=0.0,
        help="Overcommit of MEMORY_MB, as for cpu_allocation_ratio. 1.0 (no "
        "overcommit) is the safe value for memory; raise it only with swap or "
        "memory ballooning you trust.",
    ),
    cfg.FloatOpt(
        "disk_allocation_ratio",
        default=1.0,
        min=0.0,
        help="Overcommit of DISK_GB, as for cpu_allocation_ratio. Keep 1.0 unless "
        "instance disks are thin-provisioned and you watch real usage.",
    ),
    cfg.ListOpt(
        "sharing_aggregates",
        default=[],
        help="Aggregate uuids this host's resource provider joins, for a DISK_GB pool "
        "shared with the hosts through an aggregate (a provider with the "
        "MISC_SHARES_VIA_AGGREGATE trait, created by the storage service or with "
        "'openstack resource provider'). When set, the host reports no DISK_GB of its "
        "own (disk_gb and reserved_host_disk_mb are ignored) and servers take their "
        "disk from the pool; the host's other aggregates are kept. Leave it empty for "
        "local instance storage.",
    ),
    cfg.IntOpt(
        "update_interval",
        default=60,
        min=0,
        help="Seconds between checks that the host's Placement inventory and owner "
        "trait still match this configuration; a difference (someone edited them, or "
        "the provider was deleted) is put right. Lower it to heal faster, at two "
        "Placement requests per check; 0 disables the check (both are still set at "
        "start).",
    ),
]
