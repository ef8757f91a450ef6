"""Resource amounts and allocations, and the arithmetic the strategies need.

Two plain shapes are used everywhere:

* ``Resources``: resource class -> amount, e.g. ``{"VCPU": 2, "MEMORY_MB": 2048}``.
  Classes with amount 0 are never stored.
* ``Allocations``: resource provider uuid -> ``Resources``; what one consumer
  holds. Providers with nothing are never stored.

They are plain dicts so they serialise to JSON (journal, RPC) unchanged; the
functions here always return new, normalised dicts.
"""

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from resize_sched.resources import cpu, extra_specs, numa

Resources = dict[str, int]
Allocations = dict[str, Resources]

VCPU = "VCPU"
PCPU = cpu.PCPU
MEMORY_MB = "MEMORY_MB"
DISK_GB = "DISK_GB"

_RESOURCES_PREFIX = "resources:"
_TRAIT_PREFIX = "trait:"
_CLASS_NAME = re.compile(r"^[A-Z0-9_]+$")


def normalize(resources: Mapping[str, int]) -> Resources:
    """Drop zero amounts; reject negative ones."""
    out: Resources = {}
    for rc, amount in resources.items():
        amount = int(amount)
        if amount < 0:
            raise ValueError(f"negative amount {amount} of {rc}")
        if amount:
            out[rc] = amount
    return out


def add(a: Mapping[str, int], b: Mapping[str, int]) -> Resources:
    """Class-by-class sum."""
    return normalize({rc: a.get(rc, 0) + b.get(rc, 0) for rc in set(a) | set(b)})


def maximum(a: Mapping[str, int], b: Mapping[str, int]) -> Resources:
    """Class-by-class ``max(a, b)``."""
    return normalize({rc: max(a.get(rc, 0), b.get(rc, 0)) for rc in set(a) | set(b)})


def increase(old: Mapping[str, int], new: Mapping[str, int]) -> Resources:
    """Class-by-class ``new - old``, negatives taken as 0: what a resize adds."""
    return normalize({rc: max(new.get(rc, 0) - old.get(rc, 0), 0) for rc in new})


def normalize_allocations(allocations: Mapping[str, Mapping[str, int]]) -> Allocations:
    """Normalise every provider's resources and drop empty providers."""
    out: Allocations = {}
    for rp, resources in allocations.items():
        norm = normalize(resources)
        if norm:
            out[rp] = norm
    return out


def add_allocations(*many: Mapping[str, Mapping[str, int]]) -> Allocations:
    """Sum several allocations provider by provider."""
    out: Allocations = {}
    for allocations in many:
        for rp, resources in allocations.items():
            out[rp] = add(out.get(rp, {}), resources)
    return normalize_allocations(out)


def on(provider: str, resources: Mapping[str, int]) -> Allocations:
    """Allocations holding ``resources`` on one provider (empty if nothing)."""
    return normalize_allocations({provider: resources})


def shrink(
    allocations: Mapping[str, Mapping[str, int]], amounts: Mapping[str, int]
) -> Allocations:
    """``allocations`` lowered, class by class, to hold ``amounts`` in all.

    Each provider keeps what it holds of a class while the total allows it;
    what must go is taken from the providers last in ``allocations``' order
    first, so a device kept on a child stays where it is. A class not in
    ``amounts`` goes entirely; nothing is ever added (a class ``amounts``
    holds more of than ``allocations`` stays at what is held).

    :param allocations: provider -> class -> amount, e.g. ``max(old, new)``
        on a host, held while a same-host resize waits.
    :param amounts: class -> the total to keep, e.g. the new flavor.
    :returns: new, normalised allocations.
    """
    out: Allocations = {rp: dict(resources) for rp, resources in allocations.items()}
    held = total(allocations)
    for rc, amount in held.items():
        excess = amount - amounts.get(rc, 0)
        for rp in reversed(list(out)):
            if excess <= 0:
                break
            taken = min(out[rp].get(rc, 0), excess)
            if taken:
                out[rp][rc] -= taken
                excess -= taken
    return normalize_allocations(out)


def spread(
    allocations: Mapping[str, Mapping[str, int]], amounts: Mapping[str, int]
) -> Allocations | None:
    """``amounts`` put on the providers that already hold each class in
    ``allocations`` (the first of them, when a class is held on several).

    :returns: provider -> class -> amount, or None when ``allocations`` holds
        none of some class of ``amounts`` (Placement must say where it goes).
    """
    out: Allocations = {}
    for rc, amount in normalize(amounts).items():
        holder = next((rp for rp, res in allocations.items() if res.get(rc, 0) > 0), None)
        if holder is None:
            return None
        out.setdefault(holder, {})[rc] = amount
    return normalize_allocations(out)


def total(allocations: Mapping[str, Mapping[str, int]]) -> Resources:
    """Everything a consumer holds, summed over providers."""
    out: Resources = {}
    for resources in allocations.values():
        out = add(out, resources)
    return out


def capacity(inventory: Mapping[str, Any]) -> float:
    """What one inventory record can hold in all, as Placement counts it:
    ``(total - reserved) * allocation_ratio``."""
    return (inventory.get("total", 0) - inventory.get("reserved", 0)) * inventory.get(
        "allocation_ratio", 1.0
    )


def inventory_record(
    total: int, *, reserved: int = 0, allocation_ratio: float = 1.0
) -> dict[str, Any]:
    """A full Placement inventory record of ``total`` units, taken one at a
    time up to the whole (``min_unit`` 1, ``max_unit`` the total,
    ``step_size`` 1), as a compute service sets it.

    :param reserved: units kept back from consumers.
    :param allocation_ratio: the overcommit ratio.
    """
    return {
        "total": total,
        "reserved": reserved,
        "min_unit": 1,
        "max_unit": total,
        "step_size": 1,
        "allocation_ratio": allocation_ratio,
    }


def inventory_records(totals: Mapping[str, int]) -> dict[str, dict[str, Any]]:
    """Class -> :func:`inventory_record` of that total, nothing reserved, no overcommit."""
    return {rc: inventory_record(total) for rc, total in totals.items()}


def format_resources(resources: Mapping[str, int]) -> str:
    """``VCPU:2,MEMORY_MB:2048``: Placement's query syntax, sorted for stable logs."""
    return ",".join(f"{rc}:{amount}" for rc, amount in sorted(normalize(resources).items()))


@dataclass(frozen=True)
class RequestGroup:
    """One numbered (granular) request group: all of it from one provider.

    :ivar suffix: the group's suffix (``1`` for ``resources1:VGPU``).
    """

    suffix: str
    resources: Resources
    required_traits: frozenset[str] = field(default_factory=frozenset)
    forbidden_traits: frozenset[str] = field(default_factory=frozenset)
    member_of: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResourceRequest:
    """What a flavor asks of one host.

    :ivar resources: every class the flavor needs, summed over its groups
        (what the server holds in all).
    :ivar required_traits: / :ivar forbidden_traits: of the unnumbered group.
    :ivar groups: the numbered groups, each satisfied by one provider.
    :ivar group_policy: ``isolate`` (each numbered group on its own provider)
        or ``none``; None when not given.
    :ivar member_of: aggregate filters of the unnumbered group.
    """

    resources: Resources
    required_traits: frozenset[str] = field(default_factory=frozenset)
    forbidden_traits: frozenset[str] = field(default_factory=frozenset)
    groups: tuple[RequestGroup, ...] = ()
    group_policy: str | None = None
    member_of: tuple[str, ...] = ()

    @property
    def unnumbered(self) -> Resources:
        """The classes of the unnumbered group: the total less the numbered groups."""
        out = dict(self.resources)
        for group in self.groups:
            for rc, amount in group.resources.items():
                out[rc] = out.get(rc, 0) - amount
        return normalize(out)


_SPEC_KEY = re.compile(r"^(resources|trait|member_of)([A-Za-z0-9_-]{0,64})(?::(.*))?$")
_GROUP_POLICIES = ("none", "isolate")


def flavor_request(flavor: Mapping[str, Any]) -> ResourceRequest:
    """Turn a flavor snapshot into the resources, traits and groups it asks for.

    As in Nova: DISK_GB is root + ephemeral + swap (swap is in MB, rounded up
    to whole GB); extra specs ``resources:CLASS=N`` override or add a class
    (``N = 0`` removes it), ``trait:NAME=required|forbidden`` requires or
    forbids a trait; ``resourcesN:CLASS=N`` and ``traitN:NAME=...`` make a
    numbered group (any suffix of letters, digits, ``_`` and ``-``) that one
    provider must satisfy whole, and ``group_policy=isolate|none`` says
    whether two numbered groups may share a provider. ``member_of`` (and
    ``member_ofN``) is passed to Placement as its query parameter (aggregate
    uuids, ``in:`` for any of several), for operators who tie a flavor to
    aggregates without a request filter.

    ``hw:cpu_policy`` and its companions make the flavor's vCPUs PCPU, VCPU
    or both, as Nova does (:mod:`resize_sched.resources.cpu`).

    ``hw:numa_nodes=N`` (Nova's name; our translation, see
    :mod:`resize_sched.resources.numa`) moves the flavor's CPUs and MEMORY_MB into one
    numbered group per guest cell, suffixes ``_NUMA0`` to ``_NUMA<N-1>``,
    split evenly unless ``hw:numa_cpus.X`` / ``hw:numa_mem.X`` say
    otherwise, so each guest cell's vCPUs and memory come from one provider
    (a host NUMA cell, or a flat host's root); two cells or more are sent
    with ``group_policy=isolate``.

    An extra spec the service does not honour is refused
    (:mod:`resize_sched.resources.extra_specs`).

    :param flavor: a mapping with ``vcpus``, ``memory_mb``, ``root_gb``,
        ``ephemeral_gb``, ``swap`` and optionally ``extra_specs``.
    :raises ValueError: an extra spec not honoured; a malformed
        ``resources``, ``trait``, ``group_policy``, CPU policy or
        ``hw:numa_*`` extra spec, or NUMA cells that cannot be sent as
        asked (see :func:`resize_sched.resources.numa.groups`).
    """
    for key in flavor.get("extra_specs") or {}:
        extra_specs.check(str(key))
    return _translate(flavor)


def _translate(flavor: Mapping[str, Any]) -> ResourceRequest:
    """:func:`flavor_request` without the check of which keys are honoured:
    a key not honoured is ignored."""
    disk_gb = (
        int(flavor.get("root_gb", 0))
        + int(flavor.get("ephemeral_gb", 0))
        + math.ceil(int(flavor.get("swap", 0)) / 1024)
    )
    resources: dict[str, int] = {
        VCPU: int(flavor["vcpus"]),
        MEMORY_MB: int(flavor["memory_mb"]),
        DISK_GB: disk_gb,
    }
    required: dict[str, set[str]] = {}
    forbidden: dict[str, set[str]] = {}
    member_of: dict[str, list[str]] = {}
    granular: dict[str, dict[str, int]] = {}
    policy = None
    for key, value in (flavor.get("extra_specs") or {}).items():
        if key == "group_policy":
            policy = str(value).strip()
            if policy not in _GROUP_POLICIES:
                raise ValueError(f"extra spec group_policy={value!r} is not one of none, isolate")
            continue
        match = _SPEC_KEY.match(key)
        if match is None:
            continue
        kind, suffix, name = match.groups()
        if kind == "member_of":
            if name is None:
                member_of.setdefault(suffix, []).append(str(value).strip())
            continue
        if name is None:
            continue
        if kind == "resources":
            if not _CLASS_NAME.match(name):
                raise ValueError(
                    f"extra spec {key}: {name!r} is not a resource class name "
                    "(upper-case letters, digits and underscores)"
                )
            try:
                amount = int(value)
            except (TypeError, ValueError):
                raise ValueError(f"extra spec {key}={value!r} is not a whole number") from None
            if amount < 0:
                raise ValueError(f"extra spec {key}={value!r} is negative")
            if suffix:
                if amount:
                    granular.setdefault(suffix, {})[name] = amount
            else:
                resources[name] = amount
        else:
            wish = str(value).strip().lower()
            if wish == "required":
                required.setdefault(suffix, set()).add(name)
            elif wish == "forbidden":
                forbidden.setdefault(suffix, set()).add(name)
    specs = flavor.get("extra_specs") or {}
    pinning = cpu.request(specs, int(flavor["vcpus"]))
    if pinning.vcpu is not None:
        resources[VCPU] = pinning.vcpu
    if pinning.pcpu is not None:
        resources[PCPU] = pinning.pcpu
    if pinning.hyperthreading == "required":
        required.setdefault("", set()).add(cpu.HYPERTHREADING)
    elif pinning.hyperthreading == "forbidden":
        forbidden.setdefault("", set()).add(cpu.HYPERTHREADING)
    suffixes = {*granular, *required, *forbidden, *member_of} - {""}
    policy = numa.groups(
        specs, int(flavor["vcpus"]), resources, granular, suffixes, policy, pinning.policy
    )
    groups = tuple(
        RequestGroup(
            suffix,
            normalize(amounts),
            frozenset(required.get(suffix, ())),
            frozenset(forbidden.get(suffix, ())),
            tuple(member_of.get(suffix, ())),
        )
        for suffix, amounts in sorted(granular.items())
    )
    total = normalize(resources)
    for group in groups:
        total = {**total, **add(total, group.resources)}
    return ResourceRequest(
        total,
        frozenset(required.get("", ())),
        frozenset(forbidden.get("", ())),
        groups,
        policy,
        tuple(member_of.get("", ())),
    )


def refusal(flavor: Mapping[str, Any]) -> str | None:
    """Why :func:`flavor_request` refuses a flavor snapshot, or None when it does not."""
    try:
        flavor_request(flavor)
    except ValueError as exc:
        return str(exc)
    return None


def stored_request(flavor: Mapping[str, Any]) -> ResourceRequest:
    """:func:`flavor_request` of a snapshot already stored (a server's
    flavor, a migration's old and new flavors), which must be read whatever
    today's checks say of it.

    A key this service does not honour is ignored, as it always was (the
    check of :mod:`resize_sched.resources.extra_specs` refuses it when it is
    set). Before ``hw:numa_nodes`` and the CPU policy were translated any
    ``hw:`` extra spec was accepted and ignored, so a server may run with, or
    a resize may be in flight to, a flavor whose NUMA or CPU specs are now
    refused (``hw:numa_nodes=3`` with 2 vCPUs, ``hw:cpu_policy=mixed``
    without a mask). Its claim was made without them: such a snapshot is read
    as it was then, those specs left out, so heal, audit, the scheduler's
    view of a host and a resize in flight go on as before, and the server can
    be resized away from it (a revert gives it back as stored). A new build
    of it, or a resize to it, is refused (see
    :func:`resize_sched.actions.create_server`); ``resize-sched-status
    upgrade check`` lists them.

    :raises ValueError: the snapshot is refused even without those specs.
    """
    try:
        return _translate(flavor)
    except ValueError:
        specs = flavor.get("extra_specs") or {}
        kept = {k: v for k, v in specs.items() if not str(k).startswith(_TRANSLATED_SINCE)}
        if len(kept) == len(specs):
            raise
        return _translate({**flavor, "extra_specs": kept})


#: The extra specs once accepted and ignored, translated now.
_TRANSLATED_SINCE = ("hw:numa_", "hw:cpu_", "hw:emulator_threads_policy")
