"""What a build or a resize asks of the scheduler, and what it answers.

:class:`SchedulingRequest` is the question (the amounts, traits and groups
every host must have, and what the source of a resize is asked instead);
:class:`Selection` the answer, a list of :class:`Destination` (the chosen
host first, then the alternates), each with the allocation request to claim
it with. :func:`flavor_filters` reads the request fields a flavor's extra
specs set beside its amounts.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from resize_sched import resources as rs
from resize_sched.resources import Allocations, Resources


@dataclass(frozen=True)
class Destination:
    """A host that can take the request, with what to claim on it, and the
    candidate's ``mappings`` (group suffix -> providers) when the request has
    numbered groups (None: a flat request, or no candidate to map).

    ``free`` is what the scheduler learned the host's root has free, class by
    class (Placement's capacity less usage), for the filters and weighers
    (None: not known, e.g. a source that needs nothing more). ``total`` is
    what it can hold in all, class by class (Placement's capacity), when the
    scheduler learned it with ``free`` (None: the host state reads it from
    the compute node's inventory). ``node`` is the host's compute node and
    service row when the scheduler has read them already (a resize's source:
    :class:`~resize_sched.db.host_api.NodeRow`); its host state then reads
    nothing more.
    """

    provider: str
    host: str
    allocation_request: Allocations
    same_host: bool = False
    mappings: dict[str, list[str]] | None = None
    free: Mapping[str, float] | None = field(default=None, compare=False)
    total: Mapping[str, float] | None = field(default=None, compare=False)
    node: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Selection:
    """The chosen host first, then the alternates in order of preference.

    ``complete`` is false when only the source was asked (prefer_same_host);
    the caller asks again, without the source, if it cannot use it.
    """

    destinations: list[Destination]
    complete: bool = True


@dataclass(frozen=True)
class GroupPolicy:
    """The server group a server is a member of, as the scheduler sees it.

    :ivar uuid: the group's uuid.
    :ivar policy: ``affinity``, ``anti-affinity``, ``soft-affinity`` or
        ``soft-anti-affinity``.
    :ivar rules: the policy's rules (``max_server_per_host``).
    :ivar members: the uuids of every member, the scheduled server included.
    :ivar hosts: the hosts the members other than the scheduled server are
        on, and, on a move, the moved server's own host (as Nova's
        ``instance_group.hosts``).
    """

    uuid: str
    policy: str
    rules: Mapping[str, Any] = field(default_factory=dict)
    members: frozenset[str] = frozenset()
    hosts: frozenset[str] = frozenset()


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

    The policy fields (filled by :mod:`resize_sched.conductor.tasks.policy`;
    read by the filters and weighers):

    :ivar server_uuid: the server being placed or moved (None: not known).
    :ivar project_id: its project; ``user_id`` its user.
    :ivar is_move: a resize or migration rather than a build.
    :ivar hints: the scheduler hints given at create (``same_host``,
        ``different_host``, ``group``...), as stored in the request spec.
    :ivar flavor: the flavor snapshot being asked for (its extra specs).
    :ivar image_properties: the image's properties (``hw_architecture``...).
    :ivar availability_zone: the zone the server must land in (None: any).
    :ivar group: the server's group and its members' hosts (None: in none).
    :ivar policy_member_of: ``member_of`` values the policies add (a zone's
        aggregates, a tenant's); asked in the query over every host, not of a
        moved server's own source, which is in them already.
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
    server_uuid: str | None = None
    project_id: str | None = None
    user_id: str | None = None
    is_move: bool = False
    hints: Mapping[str, Any] = field(default_factory=dict)
    flavor: Mapping[str, Any] = field(default_factory=dict)
    image_properties: Mapping[str, Any] = field(default_factory=dict)
    availability_zone: str | None = None
    group: GroupPolicy | None = None
    policy_member_of: tuple[str, ...] = ()


def flavor_filters(flavor: dict[str, Any]) -> dict[str, Any]:
    """The :class:`SchedulingRequest` fields a flavor's extra specs set
    beside its amounts: traits, aggregates and numbered groups.

    :raises ValueError: malformed extra specs (see :func:`rs.stored_request`:
        a stored snapshot is read as it was claimed).
    """
    request = rs.stored_request(flavor)
    return {
        "required_traits": request.required_traits,
        "forbidden_traits": request.forbidden_traits,
        "member_of": request.member_of,
        "groups": request.groups,
        "group_policy": request.group_policy,
    }
