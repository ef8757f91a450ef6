"""The all-in-one's fake compute hosts, as ``[all_in_one] hosts`` describes them."""

from dataclasses import dataclass
from typing import Any

from resize_sched import exception


@dataclass(frozen=True)
class HostSpec:
    """One fake compute host: ``NAME:VCPUS:MEMORY_MB:DISK_GB[:PCPUS]``.

    :ivar pcpus: host CPUs set aside for pinned guests (PCPU), beside the
        ``vcpus`` shared ones (VCPU): the host has ``vcpus + pcpus`` CPUs,
        ``[compute] cpu_shared_set`` the first ``vcpus`` of them,
        ``cpu_dedicated_set`` the rest. 0: no PCPU, every CPU is VCPU.
    """

    name: str
    vcpus: int
    memory_mb: int
    disk_gb: int
    pcpus: int = 0

    @classmethod
    def parse(cls, item: str) -> "HostSpec":
        parts = item.split(":")
        try:
            if len(parts) not in (4, 5):
                raise ValueError
            name, *sizes = parts
            spec = cls(name.strip(), *(int(size) for size in sizes))
        except ValueError:
            raise exception.ConfigurationError(
                reason=f"[all_in_one] hosts item {item!r} is not "
                "NAME:VCPUS:MEMORY_MB:DISK_GB[:PCPUS]"
            ) from None
        if not spec.name or min(spec.vcpus, spec.memory_mb, spec.disk_gb) < 1 or spec.pcpus < 0:
            raise exception.ConfigurationError(
                reason=f"[all_in_one] hosts item {item!r} needs a name and positive sizes"
            )
        return spec

    def compute_options(self) -> dict[str, Any]:
        """The host's ``[compute]`` sizes: ``vcpus + pcpus`` CPUs, the first
        ``vcpus`` shared and the rest dedicated when ``pcpus`` is given."""
        options: dict[str, Any] = {
            "vcpus": self.vcpus + self.pcpus,
            "memory_mb": self.memory_mb,
            "disk_gb": self.disk_gb,
        }
        if self.pcpus:
            options["cpu_shared_set"] = f"0-{self.vcpus - 1}"
            options["cpu_dedicated_set"] = f"{self.vcpus}-{self.vcpus + self.pcpus - 1}"
        return options
