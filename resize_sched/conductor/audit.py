"""Find allocations nothing of ours accounts for (``resize-sched-manage placement audit``).

:func:`audit` lists, provider by provider, the allocations whose consumer is
neither a live server of ours on that provider nor a resize of ours in flight
(like ``nova-manage placement audit``), and with ``delete`` removes them.

Only this deployment's providers (its hosts' roots, which carry its owner
trait, see :mod:`resize_sched.scheduler.hosts`, and the children its
compute services created) and the sharing providers (disk pools) are read
(:func:`list_audited`): in a Placement shared with Nova or other
deployments, their providers and the consumers on them are never listed. On
a sharing pool, which other services' and deployments' consumers use too,
only our own servers' and migrations' allocations are judged. A deletion
only ever removes the part of a consumer's allocations that is on one of
those providers. What another service put on a live consumer of ours (a
class none of its flavors asks: a port's bandwidth, see
:mod:`resize_sched.placement.foreign`) is not ours to judge: never listed,
never removed, wherever it is.

As in :mod:`resize_sched.conductor.heal`, a consumer is read from Placement
before the database is asked about it, and written with the generation read:
a build or resize that touches it in between makes the write fail with a
generation conflict, and the consumer is reported as left, never retried.
"""

from dataclasses import dataclass, field
from typing import Any

from oslo_log import log as logging

from resize_sched import exception
from resize_sched import resources as rs
from resize_sched.db import states
from resize_sched.placement.client import (
    INSTANCE,
    SHARING_TRAIT,
    ConsumerWrite,
    PlacementClient,
    child_trait,
)
from resize_sched.placement.executor import ours_of
from resize_sched.placement.server_executor import server_classes
from resize_sched.resources import Resources
from resize_sched.scheduler import hosts

LOG = logging.getLogger(__name__)

FOUND = "orphan"
DELETED = "deleted"
LEFT = "left"

# Per-consumer refusals that must not stop the other consumers.
_PER_CONSUMER_ERRORS = (exception.PlacementConflict, exception.PlacementBadRequest)


@dataclass(frozen=True)
class Orphan:
    """One consumer's allocation on one provider that nothing of ours accounts for."""

    consumer: str
    rp_uuid: str
    provider: str  # the provider's name
    resources: Resources
    reason: str  # why it is an orphan
    outcome: str = FOUND  # FOUND, DELETED or LEFT (asked to delete, but not deleted)
    detail: str = ""  # why it was left
    root: str | None = None  # the root of the provider's tree

    def line(self) -> str:
        """``orphan|deleted|left <consumer> on <provider> (<rp>): <resources>: <why>``."""
        text = (
            f"{self.outcome} {self.consumer} on {self.provider} ({self.rp_uuid}): "
            f"{rs.format_resources(self.resources)}: {self.reason}"
        )
        return f"{text}; {self.detail}" if self.detail else text


@dataclass
class AuditReport:
    """Every provider and allocation audit read, and the orphans among them."""

    providers: int = 0
    allocations: int = 0
    orphans: list[Orphan] = field(default_factory=list)

    @property
    def left(self) -> list[Orphan]:
        """Orphans that still hold their allocation."""
        return [o for o in self.orphans if o.outcome != DELETED]

    def summary(self) -> str:
        """The last line the command prints."""
        head = f"Audited {self.providers} provider(s), {self.allocations} allocation(s):"
        if not self.orphans:
            return f"{head} no orphaned allocations."
        deleted = len(self.orphans) - len(self.left)
        return f"{head} {len(self.orphans)} orphaned, {deleted} deleted, {len(self.left)} left."


def _why_orphan(
    rp: str, server: Any, migration: Any, in_flight: Any, root: str | None = None
) -> str | None:
    """Why the consumer's allocation on ``rp`` is an orphan; None when it is not.

    :param server: the consumer as a server of ours (deleted ones too), or None.
    :param migration: the consumer as a migration of ours, or None.
    :param in_flight: the server's resize in flight, if any.
    :param root: the root of ``rp``'s tree (None: not known).
    """
    if migration is not None:
        if migration.status in states.IN_FLIGHT_STATUSES:
            return None
        return f"migration of server {migration.server_uuid}, {migration.status}"
    if server is None:
        return "neither a server nor a migration of ours"
    if server.deleted_at is not None or server.status == states.STATUS_DELETED:
        return "server deleted"
    if rp == server.rp_uuid or rp in (server.allocations or {}):
        return None  # its host, or a child of its host it holds a device on
    if root is not None and root == server.rp_uuid:
        # NOTE: a child of its host: the host's tree changed (a NUMA cell now
        # holds what the root held) before the records followed.
        return None
    if in_flight is not None and (
        # NOTE: while pre-migrating a claim may land on any candidate before
        # the migration records it as the destination.
        in_flight.status == states.MIGRATION_PRE_MIGRATING
        or {rp, root} & {in_flight.source_rp_uuid, in_flight.dest_rp_uuid}
        or rp in _providers_of(in_flight)
    ):
        return None
    if server.status == states.STATUS_BUILD and server.rp_uuid is None:
        return None  # being placed: claimed before the database records where
    if (server.status, server.task_state) == (
        states.STATUS_SHELVED_OFFLOADED,
        states.TASK_UNSHELVING,
    ):
        return None  # an unshelve being placed, as a build
    return f"server runs on {server.host or 'no host'}"


def _ours(resources: Resources, server: Any, migration: Any, in_flight: Any) -> Resources:
    """What of a consumer's ``resources`` on one provider is ours to judge:
    the classes a migration's flavors ask, or a live server's flavor and its
    resize in flight; everything, for a consumer that is neither (a deleted
    server's whole consumer is given back). What another service put on a
    live consumer of ours (a class no flavor of it asks) is never an orphan."""
    if migration is not None:
        classes: frozenset[str] | None = ours_of(migration)
    elif server is not None and server.deleted_at is None and server.status != "DELETED":
        classes = server_classes(server)
        if classes is not None and in_flight is not None:
            classes |= ours_of(in_flight)
    else:
        classes = None
    if classes is None:
        return dict(resources)
    return {rc: n for rc, n in resources.items() if rc in classes}


def _providers_of(migration: Any) -> set[str]:
    """Every provider a resize holds or held for its server: what it last
    wrote (a destination's child) and what the server held when it began."""
    held = migration.holdings or {}
    return (
        set(held.get("server") or {})
        | set(held.get("migration") or {})
        | set(migration.old_allocations or {})
    )


def _lookup(db: Any, consumer: str) -> tuple[Any, Any, Any]:
    """(server, migration, server's resize in flight) of ``consumer``, fresh."""
    try:
        return None, db.migration_get(consumer), None
    except exception.MigrationNotFound:
        pass
    try:
        server = db.server_get(consumer, read_deleted=True)
    except exception.ServerNotFound:
        return None, None, None
    return server, None, db.migration_get_in_progress_for_server(consumer)


def _delete(db: Any, client: PlacementClient, consumer: str, found: list[Orphan]) -> list[Orphan]:
    """Remove ``consumer``'s orphaned allocations, generation-checked; keep the rest."""
    current = client.get_allocations(consumer)  # before the database: see the module's note
    server, migration, in_flight = _lookup(db, consumer)
    done: list[Orphan] = []
    drop: list[Orphan] = []
    for orphan in found:
        held = {
            rc: n
            for rc, n in current.allocations.get(orphan.rp_uuid, {}).items()
            if rc in orphan.resources
        }
        if not held:
            done.append(_outcome(orphan, DELETED, "already gone"))
        elif _why_orphan(orphan.rp_uuid, server, migration, in_flight, orphan.root) is None:
            done.append(_outcome(orphan, LEFT, "no longer an orphan"))
        elif held != orphan.resources:
            done.append(_outcome(orphan, LEFT, "changed since it was listed; audit again"))
        else:
            drop.append(orphan)
    if not drop:
        return done
    # NOTE: only the classes listed go: what another service holds on the
    # same provider for the consumer stays.
    gone = {o.rp_uuid: set(o.resources) for o in drop}
    remaining = rs.normalize_allocations(
        {
            rp: {rc: n for rc, n in res.items() if rc not in gone.get(rp, ())}
            for rp, res in current.allocations.items()
        }
    )
    write = ConsumerWrite(
        remaining,
        current.project_id or "",
        current.user_id or "",
        current.generation,
        current.consumer_type or INSTANCE,
    )
    try:
        client.put_allocations(consumer, write)
    except exception.ConsumerGenerationConflict:
        detail = "changed in Placement meanwhile (generation conflict); audit again"
        return done + [_outcome(o, LEFT, detail) for o in drop]
    except _PER_CONSUMER_ERRORS as exc:
        return done + [_outcome(o, LEFT, str(exc)) for o in drop]
    if server is not None and server.deleted_at is None and current.generation is not None:
        # NOTE: our own server's consumer moved on; keep its known generation right.
        generation = current.generation + 1 if remaining else None
        db.server_update(consumer, placement_generation=generation)
    LOG.info("Deleted orphaned allocations of %s on %s", consumer, sorted(gone))
    return done + [_outcome(o, DELETED) for o in drop]


def _outcome(orphan: Orphan, outcome: str, detail: str = "") -> Orphan:
    return Orphan(
        orphan.consumer,
        orphan.rp_uuid,
        orphan.provider,
        orphan.resources,
        orphan.reason,
        outcome,
        detail,
        orphan.root,
    )


def list_audited(client: PlacementClient, owner_trait: str) -> tuple[list[dict], frozenset[str]]:
    """The providers audit (and the reaper's scan) read: our hosts' roots,
    the children our compute services created, and the sharing providers.

    A child another service put under one of our roots (Neutron, Cyborg) is
    not ours to read. The sharing providers are every provider with
    ``MISC_SHARES_VIA_AGGREGATE`` (one listing): which of them a host of
    ours shares would cost a request per host.

    :returns: the providers, and the uuids of the sharing ones among them
        (where only our own consumers are judged).
    """
    owned = hosts.list_owned(client, owner_trait) + hosts.unless_unknown(
        client,
        child_trait(owner_trait),
        lambda: client.list_resource_providers(required=[child_trait(owner_trait)]),
        [],
    )
    seen = {p["uuid"] for p in owned}
    pools = [p for p in client.list_resource_providers(required=[SHARING_TRAIT])]
    pools = [p for p in pools if p["uuid"] not in seen]
    return owned + pools, frozenset(p["uuid"] for p in pools)


def audit(
    db: Any, client: PlacementClient, *, owner_trait: str, delete: bool = False
) -> AuditReport:
    """Find (and optionally delete) allocations nothing of ours accounts for.

    An allocation of consumer C on provider P is ours when C is a live server
    whose provider is P or P's root (a child of its host: a NUMA cell, a
    device), a migration in flight, or a server with a resize in
    flight and P its source or destination (any provider while the resize is
    still being claimed), or a server still being placed.

    :param db: the :class:`~resize_sched.db.api.Database`.
    :param client: the Placement client.
    :param owner_trait: this deployment's owner trait: only providers with
        it are audited.
    :param delete: remove the orphans: for each consumer, re-read it, check
        again that it is an orphan holding what was listed, and write what
        it holds elsewhere (``{}`` when nothing) with the generation read. A
        consumer that changed meanwhile is left and reported.
    :returns: the report.
    :raises PlacementUnavailable: Placement could not be reached.
    """
    report = AuditReport()
    held: list[tuple[dict, dict[str, Resources]]] = []
    providers, pools = list_audited(client, owner_trait)
    for provider in providers:
        try:
            held.append((provider, client.get_provider_allocations(provider["uuid"])))
        except exception.PlacementNotFound:
            continue  # deleted meanwhile
    servers = {s.uuid: s for s in db.server_list(read_deleted=True)}
    migrations = {m.uuid: m for m in db.migration_list()}
    in_flight = {
        m.server_uuid: m for m in migrations.values() if m.status in states.IN_FLIGHT_STATUSES
    }
    for provider, allocations in held:
        report.providers += 1
        for consumer, held_there in sorted(allocations.items()):
            migration = migrations.get(consumer)
            server = None if migration else servers.get(consumer)
            if provider["uuid"] in pools and migration is None and server is None:
                continue  # another service's or deployment's consumer on a shared pool
            report.allocations += 1
            resources = _ours(held_there, server, migration, in_flight.get(consumer))
            if not resources:
                continue  # another service's, on a consumer of ours
            root = provider.get("root_provider_uuid")
            reason = _why_orphan(
                provider["uuid"], server, migration, in_flight.get(consumer), root
            )
            if reason is not None:
                orphan = Orphan(
                    consumer, provider["uuid"], provider["name"], resources, reason, root=root
                )
                report.orphans.append(orphan)
    if delete and report.orphans:
        by_consumer: dict[str, list[Orphan]] = {}
        for orphan in report.orphans:
            by_consumer.setdefault(orphan.consumer, []).append(orphan)
        report.orphans = [
            outcome
            for consumer, found in by_consumer.items()
            for outcome in _delete(db, client, consumer, found)
        ]
    return report
