"""The soak's final check: Placement's real state against our database.

:func:`check` reads every server, migration and journal entry of our
database, and every allocation, usage and inventory of our providers
straight from Placement (never through the fault proxy), and returns a
:class:`Violation` for each thing that is not as ``doc/design.rst`` says it
must be once everything has settled:

``transitional``
    a server still in BUILD, RESIZE, REVERT_RESIZE or MIGRATING or with a
    task, a migration in flight (a live migration's ``accepted``,
    ``preparing`` or ``running`` too) other than the ``finished`` one of a
    server in VERIFY_RESIZE, two migrations in flight for one server, a journal entry
    still ``intended``, a server flagged ``needs_heal`` or a migration still
    owing a restore (only a note, not a violation, while the server's host
    has no room to heal it).
``holdings``
    a consumer holding other than exactly what its server's or migration's
    state says (the strategy tables of ``doc/design.rst``; a cold migration
    awaiting confirmation as a resize to the same flavor; a closed migration
    of any type, a live migration's ``completed``, ``error`` or
    ``cancelled`` included, and a deleted server hold nothing; an ACTIVE or
    SHELVED server exactly its flavor on its host; a SHELVED_OFFLOADED
    server has no host and holds nothing).
``orphan``
    a consumer on our providers that is neither a server nor a migration of
    ours.
``usage``
    a provider's usage over its capacity, or not the sum of its allocations.
``delete lost``
    a delete the API accepted (202/204) whose server is not deleted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from resize_sched import resources as rs
from resize_sched.db import models

#: Server statuses that are resting states once nothing is in flight.
RESTING = (
    models.STATUS_ACTIVE,
    models.STATUS_VERIFY_RESIZE,
    models.STATUS_ERROR,
    models.STATUS_SHELVED,
    models.STATUS_SHELVED_OFFLOADED,
)

Allocations = dict[str, dict[str, int]]


@dataclass(frozen=True)
class Violation:
    """One thing found wrong; ``blocking=False`` for a note that is not (yet) a
    fault: a server flagged ``needs_heal`` whose host has no room to heal it,
    as ``doc/design.rst`` allows ("Failure restores")."""

    kind: str
    detail: str
    blocking: bool = True

    def __str__(self) -> str:
        return f"[{self.kind}] {self.detail}"


def _clean(allocations: Mapping[str, Mapping[str, int]]) -> Allocations:
    """Allocations without empty providers or zero amounts, for comparing."""
    out: Allocations = {}
    for rp, resources in allocations.items():
        kept = {rc: n for rc, n in resources.items() if n}
        if kept:
            out[rp] = kept
    return out


def expected_in_verify(migration: Any) -> tuple[Allocations, Allocations]:
    """What the server and the migration hold once a resize awaits confirmation.

    :param migration: a ``finished`` migration.
    :returns: (server's allocations, migration's allocations), from the
        strategy table of the strategy the resize began with.
    """
    old, new = rs.normalize(migration.old_resources), rs.normalize(migration.new_resources)
    src, dest = migration.source_rp_uuid, migration.dest_rp_uuid
    if src != dest:
        # Every strategy: the server holds new on the destination, the
        # migration old on the source.
        return rs.on(dest, new), rs.on(src, old)
    strategy = migration.claim_strategy
    if strategy == "legacy":
        return rs.on(src, new), rs.on(src, old)
    if strategy == "max_flavor":
        # max(old, new) on the source, split: the server what it keeps at
        # confirm, the migration the excess (so a confirm only empties it).
        return rs.on(src, new), rs.on(src, rs.increase(new, old))
    return rs.on(src, new), {}  # drop_and_reclaim


def _read_placement(
    client: Any, providers: Mapping[str, str], free: dict[str, dict[str, float]]
) -> tuple[dict[str, Allocations], list[Violation]]:
    """Every consumer's allocations on our providers; the usage violations.

    :param free: filled with each provider's room left, class by class.
    """
    held: dict[str, Allocations] = {}
    found: list[Violation] = []
    for name, rp in sorted(providers.items()):
        by_consumer = client.get_provider_allocations(rp)
        summed: dict[str, int] = {}
        for consumer, resources in by_consumer.items():
            held.setdefault(consumer, {})[rp] = dict(resources)
            summed = rs.add(summed, resources)
        usage = {rc: n for rc, n in client.get_usages(rp).items() if n}
        summed = {rc: n for rc, n in summed.items() if n}
        if usage != summed:
            found.append(
                Violation("usage", f"{name}: usage {usage} != the sum of its allocations {summed}")
            )
        inventories, _ = client.get_inventories(rp)
        free[rp] = {rc: rs.capacity(r) - usage.get(rc, 0) for rc, r in inventories.items()}
        for rc, amount in usage.items():
            record = inventories.get(rc)
            room = rs.capacity(record) if record else 0
            if amount > room:
                found.append(
                    Violation("usage", f"{name}: {rc} used {amount} over its capacity {room}")
                )
    return {c: _clean(a) for c, a in held.items()}, found


def check(
    db: Any, client: Any, providers: Mapping[str, str], accepted_deletes: Iterable[str]
) -> list[Violation]:
    """Everything wrong now; an empty list when the deployment is as it must be.

    :param db: our database.
    :param client: a PlacementClient straight to Placement.
    :param providers: host name -> provider uuid, every provider of ours.
    :param accepted_deletes: servers whose DELETE the API accepted.
    :returns: the violations, in a stable order.
    """
    free: dict[str, dict[str, float]] = {}
    held, found = _read_placement(client, providers, free)
    servers = {s.uuid: s for s in db.server_list(read_deleted=True)}
    migrations = db.migration_list()
    ours = set(servers) | {m.uuid for m in migrations}

    def holds(consumer: str) -> Allocations:
        return held.get(consumer, {})

    for consumer in sorted(set(held) - ours):
        found.append(Violation("orphan", f"consumer {consumer} holds {held[consumer]}"))

    in_flight: dict[str, Any] = {}
    for m in migrations:
        if m.status in models.IN_FLIGHT_STATUSES:
            if m.server_uuid in in_flight:
                found.append(
                    Violation("transitional", f"server {m.server_uuid}: two migrations in flight")
                )
            in_flight[m.server_uuid] = m
    for m in migrations:
        if in_flight.get(m.server_uuid) is m:
            continue
        if holds(m.uuid):
            found.append(
                Violation(
                    "holdings",
                    f"migration {m.uuid} ({m.status}, {m.claim_strategy}) of server "
                    f"{m.server_uuid} holds {holds(m.uuid)}, expected nothing",
                )
            )
        if m.missing:
            server = servers.get(m.server_uuid)
            waits = server is not None and not _room_to_heal(server, holds(server.uuid), free)
            found.append(
                Violation(
                    "transitional",
                    f"migration {m.uuid} still owes {m.missing}"
                    + (" (no room on its host yet)" if waits else ""),
                    blocking=not waits,
                )
            )

    for entry in db.journal_pending():
        found.append(
            Violation(
                "transitional",
                f"journal entry {entry.migration_uuid}#{entry.seq} ({entry.phase}) still intended",
            )
        )

    for uuid, server in sorted(servers.items()):
        found += _check_server(server, in_flight.get(uuid), holds, free)

    for uuid in sorted(set(accepted_deletes)):
        server = servers.get(uuid)
        if server is None:
            found.append(Violation("delete lost", f"server {uuid} is not in the database"))
        elif server.deleted_at is None or server.status != models.STATUS_DELETED:
            found.append(
                Violation(
                    "delete lost",
                    f"server {uuid} ({server.name}) accepted a delete but is "
                    f"{server.status}/{server.task_state}",
                )
            )
    return found


def _room_to_heal(server: Any, mine: Allocations, free: Mapping[str, Mapping[str, float]]) -> bool:
    """Whether the server's host has room for what it lacks of its flavor."""
    if not server.rp_uuid:
        return True
    flavor = rs.flavor_request(server.flavor).resources
    have = mine.get(server.rp_uuid, {})
    room = free.get(server.rp_uuid, {})
    return all(
        amount - have.get(rc, 0) <= room.get(rc, 0)
        for rc, amount in flavor.items()
        if amount > have.get(rc, 0)
    )


def _check_server(
    server: Any, migration: Any, holds: Any, free: Mapping[str, Mapping[str, float]]
) -> list[Violation]:
    """The violations of one server and its migration in flight."""
    where = f"server {server.uuid} ({server.name}, {server.status}/{server.task_state})"
    mine = holds(server.uuid)
    flavor = rs.flavor_request(server.flavor).resources
    if server.deleted_at is not None or server.status == models.STATUS_DELETED:
        if mine:
            return [Violation("holdings", f"deleted {where} holds {mine}")]
        return []
    found: list[Violation] = []
    if server.status not in RESTING or server.task_state is not None:
        return [Violation("transitional", f"{where} left in flight")]
    if server.needs_heal:
        waits = not _room_to_heal(server, mine, free)
        found.append(
            Violation(
                "transitional",
                f"{where} flagged needs_heal, holds {mine}"
                + (" (no room on its host to heal it yet)" if waits else ""),
                blocking=not waits,
            )
        )
    if server.status == models.STATUS_VERIFY_RESIZE:
        if migration is None or migration.status != models.MIGRATION_FINISHED:
            status = migration.status if migration is not None else "none"
            return found + [Violation("transitional", f"{where} with migration {status}")]
        want_server, want_migration = expected_in_verify(migration)
        got_migration = holds(migration.uuid)
        moved = migration.source_rp_uuid != migration.dest_rp_uuid
        if migration.migration_type == models.MIGRATION_TYPE_MIGRATION and not moved:
            # NOTE: a cold migration never stays on its source.
            found.append(
                Violation(
                    "holdings",
                    f"{where}: cold migration {migration.uuid} stayed on its source "
                    f"{migration.source_rp_uuid}",
                )
            )
        if (mine, got_migration) != (_clean(want_server), _clean(want_migration)):
            found.append(
                Violation(
                    "holdings",
                    f"{where}, {migration.claim_strategy} "
                    f"{'moved' if moved else 'same host'}"
                    f": server holds {mine}, migration {migration.uuid} holds {got_migration}; "
                    f"expected {want_server} and {want_migration}",
                )
            )
        return found
    if migration is not None:
        return found + [
            Violation(
                "transitional", f"{where} with migration {migration.uuid} {migration.status}"
            )
        ]
    if server.status == models.STATUS_SHELVED_OFFLOADED:
        if mine or server.rp_uuid or server.host:
            found.append(
                Violation(
                    "holdings",
                    f"{where} on host {server.host} ({server.rp_uuid}) holds {mine}, "
                    "expected no host and nothing",
                )
            )
        return found
    exact = _clean(rs.on(server.rp_uuid, flavor)) if server.rp_uuid else {}
    if server.status in (models.STATUS_ACTIVE, models.STATUS_SHELVED) and not exact:
        found.append(Violation("holdings", f"{where} holds {mine} and has no host"))
    elif (
        server.status in (models.STATUS_ACTIVE, models.STATUS_SHELVED)
        and not server.needs_heal
        and mine != exact
    ):
        found.append(Violation("holdings", f"{where} holds {mine}, expected {exact}"))
    elif server.status == models.STATUS_ERROR and mine not in ({}, exact):
        found.append(Violation("holdings", f"{where} holds {mine}, expected nothing or {exact}"))
    return found
