"""A compute host's inventory: the records ``[compute]`` asks for, checked against Placement's.

The service (:mod:`resize_sched.compute.service`) writes these records on its
root provider and re-checks them every ``[compute] update_interval``.
"""

import math
from typing import Any

from oslo_config import cfg

from resize_sched import exception
from resize_sched.resources import DISK_GB, MEMORY_MB, VCPU, inventory_record

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
    :raises ConfigurationError: a reserved amount exceeds its total.
    """
    c = conf.compute
    records = {}
    for rc, total_opt, reserved_opt, ratio_opt in _INVENTORY_OPTS:
        if rc == DISK_GB and c.sharing_aggregates:
            continue  # NOTE: the disk is a sharing provider's, not this host's
        total, reserved = getattr(c, total_opt), getattr(c, reserved_opt)
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
    return records


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
