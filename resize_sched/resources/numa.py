"""A flavor's guest NUMA topology, as Placement request groups.

Nova's flavor extra spec ``hw:numa_nodes=N`` gives the guest ``N`` NUMA
cells; by default the flavor's vCPUs and memory are split evenly over them,
and ``hw:numa_cpus.X`` (a CPU list such as ``0-3,^2,6``) and
``hw:numa_mem.X`` (MB) say otherwise, cell by cell. A guest pinned to host
NUMA cells can only use the VCPU and MEMORY_MB of one host cell per guest
cell, so each guest cell becomes one numbered request group
(``resources_NUMA<X>``) that Placement must satisfy from one provider: a
NUMA child of the host, or the root of a flat host.

This translation is ours: Nova itself (as released) fits the guest's cells
in its NUMATopologyFilter and asks Placement for unnumbered VCPU and
MEMORY_MB; the NUMA-in-Placement modelling it describes is not upstream.
This module only parses and checks; :func:`resize_sched.resources.flavor_request`
builds the groups.
"""

from collections.abc import Mapping
from typing import Any

NUMA_NODES = "hw:numa_nodes"
NUMA_CPUS = "hw:numa_cpus."
NUMA_MEM = "hw:numa_mem."

#: The suffix of guest cell ``X``'s group is ``_NUMA<X>``: request group
#: suffixes of letters, digits, ``_`` and ``-`` (up to 64) are accepted by
#: Placement from microversion 1.33; our client asks for 1.35 whenever
#: there are numbered groups.
SUFFIX_PREFIX = "_NUMA"


def suffix(cell: int) -> str:
    """The request group suffix of guest NUMA cell ``cell``."""
    return f"{SUFFIX_PREFIX}{cell}"


def _cpu_list(key: str, value: Any) -> set[int]:
    """Parse a CPU list such as ``0-3,^2,6`` (ranges, single CPUs, and
    ``^N`` to leave one out), as Nova writes ``hw:numa_cpus.X``."""
    wanted: set[int] = set()
    excluded: set[int] = set()
    for raw in str(value).split(","):
        part = raw.strip()
        if not part:
            continue
        target = wanted
        if part.startswith("^"):
            target, part = excluded, part[1:]
        try:
            if "-" in part and target is wanted:
                low, high = (int(p) for p in part.split("-", 1))
                if low < 0 or high < low:
                    raise ValueError
                target.update(range(low, high + 1))
            else:
                cpu = int(part)
                if cpu < 0:
                    raise ValueError
                target.add(cpu)
        except ValueError:
            raise ValueError(
                f"extra spec {key}={value!r} is not a CPU list (e.g. 0-3,^2,6)"
            ) from None
    return wanted - excluded


def _whole(key: str, value: Any) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise ValueError(f"extra spec {key}={value!r} is not a whole number") from None


def cells(specs: Mapping[str, Any], vcpus: int, memory_mb: int) -> list[dict[str, int]] | None:
    """The VCPU and MEMORY_MB of each guest NUMA cell the extra specs ask for.

    :param specs: the flavor's extra specs.
    :param vcpus: / :param memory_mb: the flavor's sizes.
    :returns: one ``{"VCPU": n, "MEMORY_MB": m}`` per cell, cell 0 first;
        None when ``hw:numa_nodes`` is not given (nothing to pin).
    :raises ValueError: ``hw:numa_nodes`` not a positive whole number, an
        even split that does not divide the sizes, per-cell specs without
        ``hw:numa_nodes``, for a cell that does not exist, given for some
        cells only, or that do not add up to the flavor (each vCPU in
        exactly one cell, the memory summed), or a cell left empty.
    """
    per_cell = sorted(k for k in specs if k.startswith((NUMA_CPUS, NUMA_MEM)))
    if NUMA_NODES not in specs:
        if per_cell:
            raise ValueError(f"extra spec {per_cell[0]} needs {NUMA_NODES}")
        return None
    nodes = _whole(NUMA_NODES, specs[NUMA_NODES])
    if nodes < 1:
        raise ValueError(f"extra spec {NUMA_NODES}={specs[NUMA_NODES]!r} must be 1 or more")
    for key in per_cell:
        prefix = NUMA_CPUS if key.startswith(NUMA_CPUS) else NUMA_MEM
        index = key[len(prefix) :]
        if not index.isdigit() or int(index) >= nodes:
            raise ValueError(f"extra spec {key}: the guest has cells 0 to {nodes - 1} only")
    cpus = _split_cpus(specs, nodes, vcpus)
    memory = _split_memory(specs, nodes, memory_mb)
    out = [{"VCPU": n, "MEMORY_MB": m} for n, m in zip(cpus, memory, strict=True)]
    for cell, amounts in enumerate(out):
        if not all(amounts.values()):
            raise ValueError(
                f"{NUMA_NODES}={nodes}: guest cell {cell} would have no "
                f"{'vCPU' if not amounts['VCPU'] else 'memory'}"
            )
    return out


def _cell_keys(
    specs: Mapping[str, Any], prefix: str, nodes: int, total: int, unit: str
) -> list[str] | None:
    """The per-cell keys (``prefix0`` ..) when every cell has one; None when
    none has, and ``total`` splits evenly over the cells.

    :raises ValueError: some cells only, or ``total`` not divisible.
    """
    keys = [f"{prefix}{cell}" for cell in range(nodes)]
    given = [key for key in keys if key in specs]
    if not given:
        if total % nodes:
            raise ValueError(
                f"{NUMA_NODES}={nodes} does not divide the flavor's {total} {unit} evenly; "
                f"give {prefix}0..{nodes - 1}"
            )
        return None
    if len(given) != nodes:
        missing = sorted(set(keys) - set(given))
        raise ValueError(f"{prefix}X is given for some guest cells only: {missing} missing")
    return keys


def _split_cpus(specs: Mapping[str, Any], nodes: int, vcpus: int) -> list[int]:
    keys = _cell_keys(specs, NUMA_CPUS, nodes, vcpus, "vCPUs")
    if keys is None:
        return [vcpus // nodes] * nodes
    seen: set[int] = set()
    counts = []
    for key in keys:
        cpus = _cpu_list(key, specs[key])
        if cpus & seen:
            raise ValueError(f"extra spec {key}: vCPUs {sorted(cpus & seen)} are in two cells")
        seen |= cpus
        counts.append(len(cpus))
    if seen != set(range(vcpus)):
        raise ValueError(
            f"{NUMA_CPUS}X must name each of the flavor's vCPUs 0 to {vcpus - 1} once, "
            f"not {sorted(seen)}"
        )
    return counts


def _split_memory(specs: Mapping[str, Any], nodes: int, memory_mb: int) -> list[int]:
    keys = _cell_keys(specs, NUMA_MEM, nodes, memory_mb, "MB")
    if keys is None:
        return [memory_mb // nodes] * nodes
    amounts = [_whole(key, specs[key]) for key in keys]
    if any(amount < 0 for amount in amounts):
        raise ValueError(f"{NUMA_MEM}X must not be negative: {amounts}")
    if sum(amounts) != memory_mb:
        raise ValueError(
            f"{NUMA_MEM}X add up to {sum(amounts)} MB, not the flavor's {memory_mb} MB"
        )
    return amounts


_CPU_CLASSES = ("VCPU", "PCPU")


def groups(
    specs: Mapping[str, Any],
    vcpus: int,
    resources: dict[str, int],
    granular: dict[str, dict[str, int]],
    suffixes: set[str],
    policy: str | None,
    cpu_policy: str | None,
) -> str | None:
    """Move the flavor's CPUs and MEMORY_MB into one numbered group per
    guest NUMA cell, changing ``resources`` and ``granular`` in place.

    A cell's CPUs are VCPU, or PCPU under ``hw:cpu_policy=dedicated`` (the
    emulator threads' PCPU, if any, stays in the unnumbered group).

    :param vcpus: the flavor's vcpus.
    :param resources: the unnumbered group, its CPU already translated
        (:mod:`resize_sched.resources.cpu`).
    :param suffixes: every numbered group suffix written by hand.
    :param policy: ``group_policy`` as given, or None.
    :param cpu_policy: the CPU policy as settled, or None.
    :returns: the group policy to send: ``isolate`` when there are two
        cells or more (each on its own host cell), else ``policy`` unchanged.
    :raises ValueError: the NUMA specs are malformed (see :func:`cells`),
        ``resources:VCPU``, ``resources:PCPU`` or ``resources:MEMORY_MB`` is
        given beside them, or ``hw:cpu_policy=mixed`` (a cell's share of the
        mask is not modelled), a ``_NUMA`` group is also written by hand, or
        two cells or more come with other numbered groups and no explicit
        ``group_policy=isolate``, or with ``group_policy=none``.
    """
    found = cells(specs, vcpus, resources.get("MEMORY_MB", 0))
    if found is None:
        return policy
    for key in specs:
        prefix, _, rc = str(key).partition(":")
        # NOTE: a numbered PCPU group would be counted beside the cells' own.
        if prefix.startswith("resources") and (
            (prefix == "resources" and rc in (*_CPU_CLASSES, "MEMORY_MB")) or rc == "PCPU"
        ):
            raise ValueError(
                f"{NUMA_NODES} splits the flavor's vcpus and ram over the guest's cells; "
                f"it cannot be combined with {key}"
            )
    if cpu_policy == "mixed":
        raise ValueError(
            f"{NUMA_NODES} is not honoured with hw:cpu_policy=mixed (how the dedicated "
            "mask divides over the guest's cells is not modelled)"
        )
    by_hand = sorted(s for s in suffixes if s.startswith(SUFFIX_PREFIX))
    if by_hand:
        raise ValueError(f"request group suffix {by_hand[0]} is kept for {NUMA_NODES}'s cells")
    if len(found) > 1:
        # NOTE: two guest cells on one host cell would be one guest cell
        # for the hypervisor; Placement keeps numbered groups apart only
        # under group_policy=isolate, which applies to every numbered group
        # of the request: the operator must say so when there are others.
        if policy == "none":
            raise ValueError(
                f"{NUMA_NODES}={len(found)} needs group_policy=isolate "
                "(each guest cell on its own host cell), not none"
            )
        if policy is None and granular:
            raise ValueError(
                f"{NUMA_NODES}={len(found)} with other numbered groups needs "
                "group_policy=isolate, given explicitly: it keeps those groups apart too"
            )
        policy = "isolate"
    cpu_class = "PCPU" if cpu_policy == "dedicated" else "VCPU"
    resources["VCPU"] = 0
    resources["PCPU"] = max(resources.get("PCPU", 0) - vcpus, 0) if cpu_class == "PCPU" else 0
    resources["MEMORY_MB"] = 0
    for cell, amounts in enumerate(found):
        granular[suffix(cell)] = {cpu_class: amounts["VCPU"], "MEMORY_MB": amounts["MEMORY_MB"]}
    return policy
