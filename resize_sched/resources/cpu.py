"""A flavor's CPU policy as Placement amounts: how many PCPU and VCPU it claims.

Nova turns a flavor's CPU policy into resource classes before it asks
Placement (``ResourceRequest._translate_pinning_policies`` in its scheduler,
with the checks of ``numa_get_constraints`` in ``nova/virt/hardware.py``);
this module makes the same translation, with the same refusals:

``hw:cpu_policy=shared`` (or no policy)
    the flavor's vCPUs are ``VCPU``, as before.
``hw:cpu_policy=dedicated``
    every vCPU is pinned to a host CPU of its own: ``PCPU`` = the flavor's
    vcpus, no ``VCPU``.
``hw:cpu_policy=mixed`` with ``hw:cpu_dedicated_mask``
    the guest CPUs the mask names are ``PCPU``, the rest ``VCPU``. The mask
    is a CPU list (``0-1``, ``2,4-5``) or, starting with ``^``, the CPUs
    left out of ``0..vcpus-1`` (``^0-1``: all but 0 and 1 dedicated).
``resources:PCPU=N`` / ``resources:VCPU=N`` without a policy
    the older spelling: ``resources:PCPU`` must equal the flavor's vcpus
    (dedicated), ``resources:VCPU`` means shared; the two never together,
    and never beside ``hw:cpu_policy``.
``hw:emulator_threads_policy=isolate``
    one ``PCPU`` more for the emulator threads (dedicated and mixed only).
``hw:cpu_thread_policy``
    ``isolate`` forbids the trait ``HW_CPU_HYPERTHREADING`` (a host without
    SMT), ``require`` requires it, ``prefer`` asks nothing; only with pinned
    CPUs. ``trait:HW_CPU_HYPERTHREADING`` says the same and may not be given
    beside it.

Nova also reads the image's ``hw_cpu_policy``; here flavors alone ask for
resources (the image is not read for them).
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PCPU = "PCPU"
_VCPU = "VCPU"

POLICY = "hw:cpu_policy"
MASK = "hw:cpu_dedicated_mask"
THREAD_POLICY = "hw:cpu_thread_policy"
EMULATOR_POLICY = "hw:emulator_threads_policy"
HYPERTHREADING = "HW_CPU_HYPERTHREADING"

SHARED, DEDICATED, MIXED = "shared", "dedicated", "mixed"
_POLICIES = (SHARED, DEDICATED, MIXED)
_THREAD_POLICIES = ("prefer", "isolate", "require")
_EMULATOR_POLICIES = ("share", "isolate")
_THREAD_TRAIT = {"isolate": "forbidden", "require": "required"}


def parse_cpu_spec(spec: str, what: str) -> set[int]:
    """A CPU set such as ``0-3,^2,6``: single CPUs, ranges, and ``^N`` or
    ``^N-M`` to leave some out (Nova's ``parse_cpu_spec`` syntax).

    :param what: names the setting in the error.
    :raises ValueError: a part is not a CPU number or range.
    """
    wanted: set[int] = set()
    excluded: set[int] = set()
    for raw in str(spec).split(","):
        part = raw.strip()
        if not part:
            continue
        target = wanted
        if part.startswith("^"):
            target, part = excluded, part[1:].strip()
        try:
            low_text, sep, high_text = part.partition("-")
            low = int(low_text)
            high = int(high_text) if sep else low
        except ValueError:
            raise ValueError(f"{what}={spec!r}: {raw.strip()!r} is not a CPU or range") from None
        if low < 0 or high < low:
            raise ValueError(f"{what}={spec!r}: {raw.strip()!r} is not a CPU or range")
        target.update(range(low, high + 1))
    return wanted - excluded


@dataclass(frozen=True)
class CpuRequest:
    """What the CPU policy asks of Placement, for the unnumbered group.

    :ivar policy: ``shared``, ``dedicated`` or ``mixed`` as Nova settles it
        (``resources:PCPU`` counts as dedicated), None when nothing is said.
    :ivar vcpu: / :ivar pcpu: the amounts to claim; None leaves the class as
        the flavor and its ``resources:`` specs have it.
    :ivar hyperthreading: ``required`` or ``forbidden`` for the trait
        ``HW_CPU_HYPERTHREADING``, None when the thread policy asks nothing.
    """

    policy: str | None
    vcpu: int | None
    pcpu: int | None
    hyperthreading: str | None


def _explicit(specs: Mapping[str, Any], rc: str) -> int:
    """The sum of ``resources[N]:<rc>`` over every group, as Nova counts them
    (a value that is no number is refused elsewhere)."""
    total = 0
    for key, value in specs.items():
        prefix, sep, name = str(key).partition(":")
        if sep and name == rc and prefix.startswith("resources"):
            try:
                total += int(value)
            except (TypeError, ValueError):
                pass
    return total


def _hyperthreading_trait(specs: Mapping[str, Any]) -> str | None:
    for key, value in specs.items():
        prefix, sep, name = str(key).partition(":")
        if sep and name == HYPERTHREADING and prefix.startswith("trait"):
            return str(value).strip().lower()
    return None


def _choice(specs: Mapping[str, Any], key: str, allowed: tuple[str, ...]) -> str | None:
    value = specs.get(key)
    if value is None:
        return None
    value = str(value).strip()
    if value not in allowed:
        raise ValueError(f"extra spec {key}={value!r} is not one of {', '.join(allowed)}")
    return value


def dedicated_mask(specs: Mapping[str, Any], vcpus: int) -> set[int] | None:
    """The guest CPUs ``hw:cpu_dedicated_mask`` makes dedicated, or None when
    it is not given.

    :raises ValueError: a malformed mask, one that leaves no CPU dedicated
        or none shared, or names a CPU the flavor does not have.
    """
    mask = specs.get(MASK)
    if mask is None or not str(mask).strip():
        return None
    text = str(mask).strip()
    if text.startswith("^"):
        pcpus = parse_cpu_spec(f"0-{vcpus - 1},{text}", f"extra spec {MASK}")
    else:
        pcpus = parse_cpu_spec(text, f"extra spec {MASK}")
    if not pcpus <= set(range(vcpus)):
        raise ValueError(
            f"extra spec {MASK}={text!r} names guest CPUs {sorted(pcpus - set(range(vcpus)))} "
            f"the flavor does not have (it has 0 to {vcpus - 1})"
        )
    if not pcpus or pcpus == set(range(vcpus)):
        raise ValueError(
            f"extra spec {MASK}={text!r} must leave at least one guest CPU dedicated and "
            f"one shared (the flavor has {vcpus}); use hw:cpu_policy=dedicated or shared"
        )
    return pcpus


def request(specs: Mapping[str, Any], vcpus: int) -> CpuRequest:
    """What the flavor's CPU specs ask for.

    :param specs: the flavor's extra specs.
    :param vcpus: the flavor's vcpus.
    :raises ValueError: with Nova's reasons: an unknown policy value;
        ``resources:VCPU`` or ``resources:PCPU`` beside ``hw:cpu_policy``, or
        both together; ``resources:PCPU`` other than the flavor's vcpus (one
        more with ``hw:emulator_threads_policy=isolate``); a thread policy
        (or ``trait:HW_CPU_HYPERTHREADING``) or an isolated emulator thread
        without pinned CPUs; both a thread policy and the trait; a dedicated
        mask without ``mixed``; ``mixed`` without a mask; a bad mask.
    """
    policy = _choice(specs, POLICY, _POLICIES)
    thread = _choice(specs, THREAD_POLICY, _THREAD_POLICIES)
    emulator = _choice(specs, EMULATOR_POLICY, _EMULATOR_POLICIES)
    mask = dedicated_mask(specs, vcpus)
    asked_vcpu, asked_pcpu = _explicit(specs, _VCPU), _explicit(specs, PCPU)
    if policy is not None and (asked_vcpu or asked_pcpu):
        raise ValueError(
            f"extra spec {POLICY} cannot be combined with resources:VCPU or "
            "resources:PCPU; give one or the other"
        )
    if asked_vcpu and asked_pcpu:
        raise ValueError(
            "extra specs resources:VCPU and resources:PCPU cannot both be given; "
            "give one or the other"
        )
    extra = 1 if emulator == "isolate" else 0
    if asked_pcpu:
        if asked_pcpu != vcpus + extra:
            raise ValueError(
                f"extra spec resources:PCPU={asked_pcpu} must be the flavor's {vcpus} vcpus"
                + (f" plus one for {EMULATOR_POLICY}=isolate" if extra else "")
            )
        policy = DEDICATED
    elif asked_vcpu:
        policy = SHARED
    trait = _hyperthreading_trait(specs)
    if thread is not None and trait is not None:
        raise ValueError(
            f"extra spec {THREAD_POLICY} cannot be combined with trait:{HYPERTHREADING}; "
            "give one or the other"
        )
    pinned = policy in (DEDICATED, MIXED)
    if not pinned:
        if thread is not None or trait in ("required", "forbidden"):
            what = THREAD_POLICY if thread is not None else f"trait:{HYPERTHREADING}"
            raise ValueError(f"extra spec {what} needs pinned CPUs ({POLICY}=dedicated or mixed)")
        if emulator == "isolate":
            raise ValueError(
                f"extra spec {EMULATOR_POLICY}=isolate needs pinned CPUs "
                f"({POLICY}=dedicated or mixed)"
            )
    if mask is not None and policy != MIXED:
        raise ValueError(f"extra spec {MASK} needs {POLICY}=mixed")
    if policy == MIXED and mask is None:
        raise ValueError(
            f"extra spec {POLICY}=mixed needs {MASK} (which guest CPUs are dedicated)"
        )
    vcpu = pcpu = None
    if specs.get(POLICY) is not None and policy == DEDICATED:
        vcpu, pcpu = 0, vcpus + extra
    elif policy == MIXED:
        assert mask is not None
        vcpu, pcpu = vcpus - len(mask), len(mask) + extra
    elif asked_pcpu:
        vcpu = 0  # NOTE: PCPU is asked for: the flavor's vcpus are not VCPU
    return CpuRequest(policy, vcpu, pcpu, _THREAD_TRAIT.get(thread or ""))
