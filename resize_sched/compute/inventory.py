"""A compute host's inventory: the records ``[compute]`` asks for, checked against Placement's.

The service (:mod:`resize_sched.compute.service`) writes these records on its
root provider and re-checks them every ``[compute] update_interval``.
"""

import math
from typing import Any

from oslo_config import cfg

from resize_sched import exception
from resize_sched.resources import DISK_GB, MEMORY_MB, PCPU, VCPU, inventory_record
from resize_sched.resources.cpu import parse_cpu_spec

# resource class, then its [compute] options: total, reserved, allocation ratio
_INVENTORY_OPTS = (
    (VCPU, "vcpus", "reserved_host_cpus", "cpu_allocation_ratio"),
    (MEMORY_MB, "memory_mb", "reserved_host_memory_mb", "ram_allocation_ratio"),
    (DISK_GB, "disk_gb", "reserved_host_disk_mb", "disk_allocation_ratio"),
)


def inventory_from_conf(conf: cfg.ConfigOpts) -> dict[str, dict[str, Any]]:
    """The full inventory records ``[compute]`` asks for.

    :param conf: a ConfigOpts with ``[compute]`` registered and parsed.
    :returns: class -> record (``total``, ``reserved``, ``min_unit``,
        ``max_unit``, ``step_size``, ``allocation_ratio``).
    VCPU and PCPU come from the host's CPUs (``[compute] vcpus`` of them,
    numbered from 0) as Nova's libvirt driver divides them: ``cpu_shared_set``
    is the VCPU (overcommitted by ``cpu_allocation_ratio``, less
    ``reserved_host_cpus``), ``cpu_dedicated_set`` the PCPU (one guest CPU
    each: no ratio, nothing reserved). Without ``cpu_shared_set``, a host with
    a dedicated set has no VCPU at all, and one with neither has every CPU as
    VCPU.

    :raises ConfigurationError: a reserved amount exceeds its total; a CPU
        set is malformed, empty, names a CPU the host does not have, or a CPU
        is in both sets.
    """
    c = conf.compute
    shared, dedicated = cpu_sets(conf)
    records = {}
    for rc, total_opt, reserved_opt, ratio_opt in _INVENTORY_OPTS:
        if rc == DISK_GB and c.sharing_aggregates:
            continue  # NOTE: the disk is a sharing provider's, not this host's
        total, reserved = getattr(c, total_opt), getattr(c, reserved_opt)
        if rc == VCPU:
            if shared is not None:
                total = len(shared)
            elif dedicated is not None:
                continue  # NOTE: every CPU is dedicated: no VCPU, as in Nova
        if rc == DISK_GB:
            # NOTE: reserved disk is configured in MiB, as in Nova; Placement
            # counts whole GiB, so round up rather than offer room that is not there.
            reserved = math.ceil(reserved / 1024)
        if reserved > total:
            raise exception.ConfigurationError(
                reason=f"[compute] {reserved_opt} ({getattr(c, reserved_opt)}) reserves "
                f"{reserved} {rc}, more than [compute] {total_opt} ({total})"
            )
        records[rc] = inventory_record(
            total, reserved=reserved, allocation_ratio=getattr(c, ratio_opt)
        )
    if dedicated is not None:
        records[PCPU] = inventory_record(len(dedicated))
    return records


def cpu_sets(conf: cfg.ConfigOpts) -> tuple[set[int] | None, set[int] | None]:
    """The host CPUs of ``[compute] cpu_shared_set`` and ``cpu_dedicated_set``
    (None for a set not given).

    :raises ConfigurationError: a set is malformed or empty, names a CPU
        beyond ``[compute] vcpus`` (the host's CPUs are 0 to vcpus - 1), or
        the two sets share a CPU.
    """
    c = conf.compute
    found = []
    for name in ("cpu_shared_set", "cpu_dedicated_set"):
        spec = getattr(c, name)
        if spec is None or not spec.strip():
            found.append(None)
            continue
        try:
            cpus = parse_cpu_spec(spec, f"[compute] {name}")
        except ValueError as exc:
            raise exception.ConfigurationError(reason=str(exc)) from None
        if not cpus:
            raise exception.ConfigurationError(reason=f"[compute] {name}={spec!r} names no CPU")
        beyond = sorted(cpus - set(range(c.vcpus)))
        if beyond:
            raise exception.ConfigurationError(
                reason=f"[compute] {name}={spec!r} names CPUs {beyond} this host does not "
                f"have: [compute] vcpus is {c.vcpus} (CPUs 0 to {c.vcpus - 1})"
            )
        found.append(cpus)
    shared, dedicated = found
    if shared is not None and dedicated is not None and shared & dedicated:
        raise exception.ConfigurationError(
            reason=f"CPUs {sorted(shared & dedicated)} are in both [compute] cpu_shared_set "
            "and cpu_dedicated_set; a CPU is either shared (VCPU) or dedicated (PCPU)"
        )
    return shared, dedicated


def inventory_matches(
    current: dict[str, dict[str, Any]], wanted: dict[str, dict[str, Any]]
) -> bool:
    """Whether Placement's records equal the wanted ones (ratios to 1e-6).

    NOTE: a Placement on MySQL keeps ratios in a single-precision FLOAT column,
    so 1.1 may read back as 1.100000023...; exact equality would rewrite forever.
    """
    if current.keys() != wanted.keys():
        return False
    for rc, record in wanted.items():
        for field, value in record.items():
            have = current[rc].get(field)
            if have is None:
                return False
            if field == "allocation_ratio":
                if not math.isclose(float(have), float(value), rel_tol=1e-6):
                    return False
            elif have != value:
                return False
    return True


def describe_inventory(inventory: dict[str, dict[str, Any]]) -> str:
    """One log line's worth of ``inventory``: each class's total, reserved and ratio."""
    return ", ".join(
        f"{rc}={r['total']} (reserved {r['reserved']}, ratio {r['allocation_ratio']})"
        for rc, r in sorted(inventory.items())
    )
