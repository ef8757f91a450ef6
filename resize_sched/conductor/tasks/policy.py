"""What the scheduling policies add to a :class:`SchedulingRequest`.

Every flow that asks the scheduler (a build, a resize, a migration) calls
:func:`policy_fields` once, with the server and its request spec, and passes
the fields on: the hints, the server's group and its members' hosts, the
zone it must land in and the aggregates that zone (or the tenant's
isolation) maps to in Placement. Each policy has a function of its own
below; none asks Placement.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oslo_config import cfg

from resize_sched.db.aggregate_api import ZoneMap
from resize_sched.db.api import Database
from resize_sched.scheduler.request import GroupPolicy


@dataclass(frozen=True)
class Placed:
    """The server being placed or moved, as the policies see it: read from
    the server row on a build, from the migration on a move (so a move's step
    reads nothing more for it)."""

    uuid: str
    project_id: str
    user_id: str
    #: the host it is on (None: a build, on none yet)
    host: str | None = None

    @classmethod
    def of_server(cls, server: Any) -> "Placed":
        return cls(server.uuid, server.project_id, server.user_id, server.host)

    @classmethod
    def of_migration(cls, migration: Any) -> "Placed":
        return cls(
            migration.server_uuid, migration.project_id, migration.user_id, migration.source_host
        )


def policy_fields(
    db: Database,
    server: Placed,
    spec: Any,
    *,
    flavor: Mapping[str, Any],
    moving: bool,
    conf: cfg.ConfigOpts | None = None,
    zones: tuple[str | None, ZoneMap] | None = None,
) -> dict[str, Any]:
    """The policy fields of :class:`~resize_sched.scheduler.request.SchedulingRequest`
    for placing ``server`` (a build: ``moving`` false) or moving it.

    :param spec: the server's request spec (None: none recorded): its
        ``scheduler_hints`` and ``availability_zone``.
    :param flavor: the flavor snapshot asked for (the new one of a resize).
    :param conf: the service's options (the default zone, tenant isolation);
        None: their defaults.
    :param zones: the zones as already read (the host asked about, and the
        map): see :func:`zone_fields`.
    """
    hints = dict(spec.scheduler_hints or {}) if spec is not None else {}
    fields: dict[str, Any] = {
        "server_uuid": server.uuid,
        "project_id": server.project_id,
        "user_id": server.user_id,
        "is_move": moving,
        "hints": hints,
        "flavor": dict(flavor),
    }
    fields.update(group_fields(db, server, hints, moving=moving))
    zone = zone_fields(db, server, spec, moving=moving, conf=conf, zones=zones)
    tenant = tenant_fields(db, server, conf)
    member_of = (*zone.pop("policy_member_of", ()), *tenant.pop("policy_member_of", ()))
    fields.update(zone)
    fields.update(tenant)
    if member_of:
        fields["policy_member_of"] = member_of
    return fields


# -- server groups --------------------------------------------------------------


def group_fields(
    db: Database, server: Placed, hints: Mapping[str, Any], *, moving: bool
) -> dict[str, Any]:
    """``group``: the server's group, its members and their hosts.

    Read only when the hints name a group (the ``group`` hint the API
    recorded when it made the server a member), in one query; a server in
    no group costs nothing. On a move the server's own host counts among
    the group's hosts, as in Nova, so that strict affinity keeps it there.
    """
    group_uuid = hinted_group(hints)
    if group_uuid is None:
        return {}
    found = db.group_policy_of(group_uuid, server.uuid, own_host=server.host if moving else None)
    if found is None:
        # NOTE: the group was deleted after the server joined it: no policy.
        return {}
    group, members, hosts = found
    return {
        "group": GroupPolicy(
            uuid=group.uuid,
            policy=group.policy,
            rules=dict(group.rules or {}),
            members=frozenset(members),
            hosts=frozenset(hosts),
        )
    }


def hinted_group(hints: Mapping[str, Any]) -> str | None:
    """The group a ``group`` hint names (Nova stores hints as lists)."""
    value = hints.get("group")
    if isinstance(value, list | tuple):
        value = value[0] if value else None
    return value if isinstance(value, str) and value else None


# -- availability zones ---------------------------------------------------------


#: A Placement aggregate no provider is in: ``member_of`` for "nowhere" (a
#: zone that no longer exists, a project with no aggregate where one is
#: required), so the one query answers no candidate and the flow fails as it
#: does for a full cloud (NoValidHost).
NOWHERE = "00000000-0000-0000-0000-000000000000"

#: ``[DEFAULT] default_availability_zone``'s default, when no conf is given.
DEFAULT_ZONE = "nova"


def _default_zone(conf: cfg.ConfigOpts | None) -> str:
    return conf.default_availability_zone if conf is not None else DEFAULT_ZONE


def zone_member_of(zone: str, zones: Mapping[str, list[str]], default_zone: str) -> str | None:
    """The ``member_of`` that asks Placement for the hosts of ``zone``, as
    Nova's ``query_placement_for_availability_zone``.

    :param zones: zone -> its aggregates' uuids (every zone aggregate).
    :param default_zone: ``[DEFAULT] default_availability_zone``: hosts in
        no zone aggregate (and those of aggregates naming it).
    :returns: ``in:a,b`` (a zone's aggregates); ``!in:c,d`` for the default
        zone, in none of the other zones' aggregates (Placement 1.32); None
        for the default zone when no aggregate makes any other (every host).
    """
    if zone == default_zone:
        others = sorted(u for z, uuids in zones.items() if z != zone for u in uuids)
        return f"!in:{','.join(others)}" if others else None
    return f"in:{','.join(zones.get(zone) or [NOWHERE])}"


def zone_fields(
    db: Database,
    server: Placed,
    spec: Any,
    *,
    moving: bool,
    conf: cfg.ConfigOpts | None = None,
    zones: tuple[str | None, ZoneMap] | None = None,
) -> dict[str, Any]:
    """``availability_zone`` and the zone's aggregates as ``policy_member_of``.

    The zone is the one asked at create (the request spec's); a move of a
    server created without one stays in the zone of its host, as it was
    placed. One database query, only when there is a zone to ask for and
    ``zones`` (the host asked about, and what the step's read found) does
    not answer it already.
    """
    asked = spec.availability_zone if spec is not None else None
    if asked is None and not (moving and server.host):
        return {}
    host = None if asked is not None else server.host
    if zones is not None and zones[0] == host:
        found = zones[1]
    else:
        found = db.zone_aggregates(host=host)
    default_zone = _default_zone(conf)
    zone = asked or found.host_zone or default_zone
    member_of = zone_member_of(zone, found.zones, default_zone)
    return {
        "availability_zone": zone,
        "policy_member_of": (member_of,) if member_of is not None else (),
    }


def placed_zone(db: Database, host: str, conf: cfg.ConfigOpts | None = None) -> str:
    """The zone ``host`` is in now (what a server placed there records)."""
    return db.zone_aggregates(host=host).host_zone or _default_zone(conf)


# -- tenant isolation -----------------------------------------------------------


def tenant_fields(
    db: Database, server: Placed, conf: cfg.ConfigOpts | None = None
) -> dict[str, Any]:
    """``policy_member_of`` of ``[scheduler] limit_tenants_to_placement_aggregate``.

    As Nova's ``require_tenant_aggregate``: the aggregates whose
    ``filter_tenant_id*`` metadata names the server's project; with none,
    anywhere, or nowhere under ``placement_aggregate_required_for_tenants``.
    One database query, only with the option set.
    """
    if conf is None or not conf.scheduler.limit_tenants_to_placement_aggregate:
        return {}
    found = db.tenant_aggregates(server.project_id)
    if found:
        return {"policy_member_of": (f"in:{','.join(found)}",)}
    if conf.scheduler.placement_aggregate_required_for_tenants:
        return {"policy_member_of": (f"in:{NOWHERE}",)}
    return {}
