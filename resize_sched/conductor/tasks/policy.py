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
) -> dict[str, Any]:
    """The policy fields of :class:`~resize_sched.scheduler.request.SchedulingRequest`
    for placing ``server`` (a build: ``moving`` false) or moving it.

    :param spec: the server's request spec (None: none recorded): its
        ``scheduler_hints`` and ``availability_zone``.
    :param flavor: the flavor snapshot asked for (the new one of a resize).
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
    zone = zone_fields(db, server, spec, moving=moving)
    tenant = tenant_fields(db, server)
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


def zone_fields(db: Database, server: Placed, spec: Any, *, moving: bool) -> dict[str, Any]:
    """``availability_zone`` and the zone's aggregates as ``policy_member_of``."""
    return {}


# -- tenant isolation -----------------------------------------------------------


def tenant_fields(db: Database, server: Placed) -> dict[str, Any]:
    """``policy_member_of`` of ``[scheduler] limit_tenants_to_placement_aggregate``."""
    return {}
