"""What a build or a resize asks of the scheduler, and what it answers.

:class:`SchedulingRequest` is the question (the amounts, traits and groups
every host must have, and what the source of a resize is asked instead);
:class:`Selection` the answer, a list of :class:`Destination` (the chosen
host first, then the alternates), each with the allocation request to claim
it with.
"""

from dataclasses import dataclass, field

from resize_sched import resources as rs
from resize_sched.resources import Allocations, Resources


@dataclass(frozen=True)
class Destination:
    """A host that can take the request, with what to claim on it, and the
    candidate's ``mappings`` (group suffix -> providers) when the request has
    numbered groups (None: a flat request, or no candidate to map)."""

    provider: str
    host: str
    allocation_request: Allocations
    same_host: bool = False
    mappings: dict[str, list[str]] | None = None


@dataclass(frozen=True)
class Selection:
    """The chosen host first, then the alternates in order of preference.

    ``complete`` is false when only the source was asked (prefer_same_host);
    the caller asks again, without the source, if it cannot use it.
    """

    destinations: list[Destination]
    complete: bool = True


@dataclass(frozen=True)
class SchedulingRequest:
    """What a build or resize asks of the scheduler.

    :ivar destination_request: amounts every host but the source must have free
        (in all: the numbered ``groups`` are part of them).
    :ivar groups: numbered request groups (a vGPU from one child), asked as
        Placement's ``resourcesN``/``requiredN``/``member_ofN``; the rest of
        ``destination_request`` is the unnumbered group.
    :ivar source: the source provider of a resize (``None`` for a build).
    :ivar source_request: what the source must have free (empty: it fits
        without asking); ignored without ``source``.
    :ivar ignore_hosts: host names never to choose.
    :ivar force_hosts: when given, only these host names may be chosen.
    :ivar ignore_providers: provider uuids never to choose (hosts already tried).
    :ivar source_placement: ``source_request`` provider by provider, when it
        must be free beside what the server holds there (a child's vGPU, a
        sharing provider's disk); empty: anywhere in the source's tree.
    :ivar source_groups: numbered groups the source must satisfy as groups,
        part of ``source_request`` (a second vGPU); Placement is asked, in
        the source's tree.
    :ivar source_avoid: providers none of ``source_groups`` may use (the
        devices the server's groups hold, under ``group_policy=isolate``).
    :ivar source_holds: what the resize already holds on the source (both
        consumers; empty when unknown): the source's usage is at least that,
        which bounds how well it can weigh without asking Placement.
    """

    destination_request: Resources
    required_traits: frozenset[str] = frozenset()
    member_of: tuple[str, ...] = ()
    forbidden_traits: frozenset[str] = frozenset()
    groups: tuple[rs.RequestGroup, ...] = ()
    group_policy: str | None = None
    source: str | None = None
    source_request: Resources = field(default_factory=dict)
    allow_same_host: bool = False
    prefer_same_host: bool = False
    ignore_hosts: frozenset[str] = frozenset()
    force_hosts: frozenset[str] = frozenset()
    ignore_providers: frozenset[str] = frozenset()
    source_holds: Resources = field(default_factory=dict)
    source_placement: Allocations = field(default_factory=dict)
    source_groups: tuple[rs.RequestGroup, ...] = ()
    source_avoid: frozenset[str] = frozenset()
