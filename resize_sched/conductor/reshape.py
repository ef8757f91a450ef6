"""The conductor's records follow a host whose tree changed (a reshape).

A compute service that re-describes its host (NUMA cells added or removed, a
class handed from the root to a child) moves its consumers' allocations in
Placement itself (:mod:`resize_sched.compute.reshape`). What the database
recorded of them still names the providers that held each class before: a
server's ``allocations`` and ``group_providers``, its consumer generation,
and, for a resize in flight, the migration's ``holdings``,
``old_allocations`` (what a revert or a failed resize gives back) and
``old_group_providers``. Written back as they are, they would put VCPU on a
root that holds none.

:func:`follow` runs when a host's report shows another layout (which
provider of the host holds which class) than the one recorded, before the
report is recorded: it re-reads from Placement what each of the host's
servers and resizes holds, records the consumer generations read, and
*translates* each stored shape (a server's ``allocations``, a resize's
``old_allocations``): each amount on a provider that no longer holds its
class goes to the provider of the host that holds it now, where the
server's and resize's consumers hold that class (the reshape put it
there). A shape is translated rather than copied from Placement, so a
server missing part of its flavor (flagged for heal) or holding what
another service put on its consumer keeps the shape that is its own. It
is safe to run twice: a translated shape names no
provider that lost its class. A host whose layout did not change costs
nothing.
"""

from collections.abc import Mapping
from typing import Any

from oslo_log import log as logging

from resize_sched import exception
from resize_sched import resources as rs
from resize_sched.db import states
from resize_sched.placement.client import PlacementClient
from resize_sched.placement.executor import Known
from resize_sched.resources import group_map as gm
from resize_sched.strategies import Holdings

LOG = logging.getLogger(__name__)

#: provider uuid -> the classes it holds
Layout = dict[str, frozenset[str]]


def layout(
    rp_uuid: str,
    inventory: Mapping[str, Any] | None,
    children: Mapping[str, Mapping[str, Any]] | None,
) -> Layout:
    """Which provider of a host holds which class, from its report."""
    out = {rp_uuid: frozenset(inventory or {})}
    for uuid, child in (children or {}).items():
        out[uuid] = frozenset(child.get("inventory") or {})
    return out


def translate(
    stored: Mapping[str, Mapping[str, int]],
    before: Layout,
    after: Layout,
    hints: Mapping[str, Mapping[str, int]],
) -> rs.Allocations:
    """``stored`` with each amount on a provider that no longer holds its
    class moved to the providers that hold it ``after``: first those
    ``hints`` (what the consumers hold now) hold it on, up to that much, then
    the first that holds it (the root before the children). A provider the
    hints name that neither layout does (a child of another service) counts
    as holding the classes held on it.

    Providers ``before`` did not name (another host, a sharing pool) and
    classes still where they were are kept as they are.
    """
    # NOTE: a child another service created (its NUMA cells) is in no
    # report: a provider the consumers hold the class on now, outside the
    # layout before, holds it too.
    outside = {rp for rp, res in hints.items() if rp not in before and rp not in after}
    budget = {rp: dict(res) for rp, res in hints.items() if rp in after or rp in outside}
    kept: rs.Allocations = {}
    moving: dict[str, int] = {}
    for rp, res in stored.items():
        for rc, amount in res.items():
            if rp in before and rc not in after.get(rp, frozenset()):
                moving[rc] = moving.get(rc, 0) + amount
            else:
                kept.setdefault(rp, {})[rc] = amount
    placed: list[rs.Allocations] = [kept]
    for rc, amount in sorted(moving.items()):
        holders = [rp for rp, classes in after.items() if rc in classes]
        holders += sorted(rp for rp in outside if hints[rp].get(rc))
        if not holders:
            placed.append({next(iter(after)): {rc: amount}})
            continue
        for rp in sorted(holders, key=lambda rp: -budget.get(rp, {}).get(rc, 0)):
            take = min(amount, budget.get(rp, {}).get(rc, 0))
            if take > 0:
                budget[rp][rc] -= take
                placed.append({rp: {rc: take}})
                amount -= take
        if amount:
            placed.append({holders[0]: {rc: amount}})
    return rs.normalize_allocations(rs.add_allocations(*placed))


def _derived(allocations: Mapping[str, Mapping[str, int]], flavor: Any) -> Any:
    try:
        request = rs.stored_request(flavor)
    except ValueError:
        return None
    if not request.groups:
        return None
    return gm.derive(allocations, request.groups, request.group_policy)


def _recorded(allocations: Mapping[str, Mapping[str, int]], root: str) -> Any:
    if not allocations or set(allocations) == {root}:
        return None
    return rs.normalize_allocations(allocations)


def follow(
    db: Any, client: PlacementClient, host: str, rp_uuid: str, before: Layout, after: Layout
) -> int:
    """Re-record what the host's servers and resizes hold (see the module doc).

    :returns: how many servers and migrations were re-recorded.
    :raises PlacementError: Placement could not be read (nothing more is
        recorded; the next report runs this again).
    """
    done = 0
    tree = set(before) | set(after)
    migrations = [
        m
        for m in db.migration_list(statuses=states.IN_FLIGHT_STATUSES)
        if {m.source_rp_uuid, m.dest_rp_uuid} & tree
    ]
    resizing = {m.server_uuid for m in migrations}
    for server in db.server_list(host=host):
        if server.rp_uuid not in tree or server.uuid in resizing:
            continue
        try:
            flavor = rs.stored_request(server.flavor).resources
        except ValueError:
            continue  # NOTE: heal reports it; nothing here to translate it by
        actual = client.get_allocations(server.uuid)
        values: dict[str, Any] = {"placement_generation": actual.generation}
        stored = server.allocations or rs.on(server.rp_uuid, flavor)
        shape = translate(stored, before, after, actual.allocations)
        if shape != rs.normalize_allocations(stored):
            values["allocations"] = _recorded(shape, server.rp_uuid)
            groups = _derived(shape, server.flavor)
            if groups is not None or server.group_providers:
                values["group_providers"] = groups
        try:
            db.server_update(server.uuid, **values)
        except exception.ServerNotFound:
            continue
        done += 1
    for migration in migrations:
        server = client.get_allocations(migration.server_uuid)
        held = client.get_allocations(migration.uuid)
        known = Known(
            Holdings(server=server.allocations, migration=held.allocations),
            server.generation,
            held.generation,
        )
        values = {"holdings": known.to_dict()}
        if migration.source_rp_uuid in tree:
            stored = migration.old_allocations or rs.on(
                migration.source_rp_uuid, migration.old_resources
            )
            # NOTE: a resize away from the reshaped host holds its old
            # allocation there on the migration consumer alone (every
            # strategy); the server's consumer holds the destination, another
            # host, whose providers must not read as this tree's.
            away = migration.dest_rp_uuid not in (None, migration.source_rp_uuid)
            hints = (
                rs.normalize_allocations(held.allocations)
                if away
                else rs.add_allocations(server.allocations, held.allocations)
            )
            original = translate(stored, before, after, hints)
            if original != rs.normalize_allocations(stored):
                values["old_allocations"] = original
                values["old_group_providers"] = _derived(original, migration.old_flavor)
        db.migration_update(migration.uuid, **values)
        try:
            claimed = _derived(server.allocations, migration.new_flavor)
            if claimed is not None:
                db.server_update(migration.server_uuid, group_providers=claimed)
        except exception.ServerNotFound:
            pass
        done += 1
    LOG.info(
        "The providers of %s changed which classes they hold: %d server(s) and resize(s) "
        "re-recorded from Placement",
        host,
        done,
    )
    return done
