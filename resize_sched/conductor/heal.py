"""Re-claim what our servers should hold (``resize-sched-manage placement heal``).

:func:`heal` gives every live server that should hold exactly its flavor on
its host (flagged ``needs_heal`` by a failed restore, or ACTIVE/ERROR with a
host whose allocation is missing or different) that allocation again. Its
counterpart :mod:`resize_sched.conductor.audit` finds allocations nothing of
ours accounts for.

This module joins the database's servers and migrations with Placement's
allocations, as crash recovery does, so it lives beside
:mod:`resize_sched.conductor.recovery` rather than in ``placement/`` (which
knows nothing of servers or flavors). A failed restore is healed by
:func:`restore_missing`, which recovery calls too; it writes through the
:class:`~resize_sched.placement.executor.TransitionExecutor`, so the
migration's journal records the heal. Allocations not tied to a migration are
written with one generation-checked ``PUT /allocations/{consumer}``.

Only this deployment's providers (those with its owner trait) are ever
written: a server recorded on a provider that is not one of ours is reported,
never healed there, and what a server's consumer holds on providers that are
not ours, or of classes its flavor does not ask (another service's: a port's
bandwidth), is neither compared nor changed (a write keeps it as it is).

Ordering against running conductors: each consumer is read from Placement
first, the database second, and written last with the generation read, so a
resize or build that starts in between makes the write fail with a
generation conflict instead of being overwritten; such a consumer is
reported, never retried (the executor heal uses has no conflict retries).
"""

from dataclasses import dataclass, field
from typing import Any

from oslo_log import log as logging

from resize_sched import exception
from resize_sched import resources as rs
from resize_sched.db import states
from resize_sched.placement import foreign
from resize_sched.placement.client import (
    CONCURRENT_UPDATE,
    INSTANCE,
    ConsumerWrite,
    PlacementClient,
)
from resize_sched.placement.executor import TransitionExecutor, known_from
from resize_sched.resources import Resources
from resize_sched.scheduler import hosts
from resize_sched.strategies import Holdings

LOG = logging.getLogger(__name__)

HEALED = "healed"
WOULD_HEAL = "would heal"
MISSING = "still missing"

_RESIZING = (states.STATUS_RESIZE, states.STATUS_VERIFY_RESIZE, states.STATUS_REVERT_RESIZE)

# Per-consumer refusals that must not stop the other consumers.
_PER_CONSUMER_ERRORS = (exception.PlacementConflict, exception.PlacementBadRequest)


@dataclass(frozen=True)
class HealResult:
    """What heal did (or would do) for one server."""

    server_uuid: str
    host: str | None
    outcome: str  # HEALED, WOULD_HEAL or MISSING
    resources: Resources = field(default_factory=dict)
    reason: str = ""

    def line(self) -> str:
        """``healed <uuid> on <host>: VCPU:2,...`` or ``still missing <uuid> on <host>: why``."""
        what = self.reason if self.outcome == MISSING else rs.format_resources(self.resources)
        if self.outcome == WOULD_HEAL and self.reason:
            what = f"{what} ({self.reason})"
        return f"{self.outcome} {self.server_uuid} on {self.host or '(no host)'}: {what}"


@dataclass
class HealReport:
    """Every server heal looked at: one result per server it acted on, counts for the rest."""

    dry_run: bool = False
    results: list[HealResult] = field(default_factory=list)
    ok: int = 0  # already held exactly their flavor
    in_flight: int = 0  # not looked at: a resize of theirs is in flight

    def count(self, outcome: str) -> int:
        """How many servers ended with ``outcome``."""
        return sum(1 for r in self.results if r.outcome == outcome)

    @property
    def complete(self) -> bool:
        """Nothing is (or, in a dry run, would still be) missing."""
        return not any(r.outcome in (MISSING, WOULD_HEAL) for r in self.results)

    def summary(self) -> str:
        """The last line the command prints."""
        if self.dry_run:
            return (
                f"Dry run, nothing written: {self.count(WOULD_HEAL)} would heal, "
                f"{self.count(MISSING)} still missing, {self.ok} ok, "
                f"{self.in_flight} skipped (resize in flight)."
            )
        return (
            f"{self.count(HEALED)} healed, {self.count(MISSING)} still missing, "
            f"{self.ok} ok, {self.in_flight} skipped (resize in flight)."
        )


def restore_missing(db: Any, executor: TransitionExecutor, migration: Any, phase: str) -> Any:
    """Put back what a failed restore left missing, then clear the flags.

    Shared by :func:`heal` and crash recovery. The migration's ``missing``
    is the restore's target holdings (``{"server": ..., "migration": {}}``);
    one journaled transition goes there from the migration's known holdings,
    which the caller must have refreshed from Placement.

    :param db: the :class:`~resize_sched.db.api.Database`.
    :param executor: the transition executor.
    :param migration: an ``error`` migration with ``missing`` holdings.
    :param phase: the journal's label (``heal``, ``restore``).
    :returns: the migration, ``missing`` cleared.
    :raises ClaimRefused: still no room; nothing changed, the flags stay.
    :raises ServerStateConflict: the server has a task (an offload);
        nothing changed, the flags stay. A server offloaded
        meanwhile holds nothing by design: the flags are cleared, nothing
        restored. Both are checked again where the restore is journaled,
        with the server's row (an offload begun between the read here and
        the write is found there), and an offload does not begin while the
        restore's entry is ``intended``
        (:meth:`~resize_sched.db.server_api.ServerApi.server_update`).
    :raises StepNotDue: the journal found the server changed since it was
        read (a task of its own, a delete); nothing changed, the flags stay.
    :raises PlacementError: any other refusal or failure, as from
        :meth:`~resize_sched.placement.executor.TransitionExecutor.apply`.
    """
    try:
        server = db.server_get(migration.server_uuid)
    except exception.ServerNotFound:
        # NOTE: deleted meanwhile; giving it room back would leak it.
        LOG.info(
            "Migration %s: server %s is gone; nothing to restore",
            migration.uuid,
            migration.server_uuid,
        )
        return db.migration_update(migration.uuid, missing=None)
    if server.status == states.STATUS_SHELVED_OFFLOADED or server.rp_uuid is None:
        return _offloaded(db, migration, server)
    if server.task_state not in (None, states.TASK_DELETING):
        # NOTE: a task of its own (an offload) decides what the server holds
        # next; the restore waits for it to end. A delete is refused by the
        # journal (a write that holds anything, once the server is deleting).
        raise exception.ServerStateConflict(
            server_id=server.uuid,
            actual=f"{server.status} ({server.task_state})",
            operation="restoring what a failed resize left missing",
            expected="resting on its host with no task",
        )
    try:
        migration = executor.apply(migration, phase, Holdings.from_dict(migration.missing))
    except exception.StepNotDue as exc:
        # NOTE: the server changed since it was read (an offload began or
        # ended, a delete): the journal's check, with the server's row,
        # refused the write. Offloaded: nothing to restore; else it waits.
        LOG.info("Migration %s: restore not written: %s", migration.uuid, exc)
        server = db.server_get(migration.server_uuid)
        if server.status == states.STATUS_SHELVED_OFFLOADED or server.rp_uuid is None:
            return _offloaded(db, migration, server)
        raise
    generations = (migration.holdings or {}).get("generations", {})
    migration = db.migration_update(migration.uuid, missing=None)
    db.server_update(server.uuid, needs_heal=False, placement_generation=generations.get("server"))
    LOG.info(
        "Server %s: what migration %s left missing is held again", server.uuid, migration.uuid
    )
    return migration


def _offloaded(db: Any, migration: Any, server: Any) -> Any:
    """Offloaded meanwhile: it holds nothing on any host by design (an
    unshelve claims anew), and room restored now would leak. The flags go."""
    LOG.info(
        "Migration %s: server %s is %s with no host; nothing to restore",
        migration.uuid,
        server.uuid,
        server.status,
    )
    db.server_update(server.uuid, needs_heal=False)
    return db.migration_update(migration.uuid, missing=None)


def _needs_look(server: Any) -> bool:
    statuses = (states.STATUS_ACTIVE, states.STATUS_SHUTOFF, states.STATUS_ERROR)
    # NOTE: a SHELVED server holds its room on its host, as an ACTIVE one;
    # not while it is being offloaded (its room is being given back).
    shelved = server.status == states.STATUS_SHELVED and server.task_state is None
    return bool(server.needs_heal or ((server.status in statuses or shelved) and server.rp_uuid))


def _heal_server(
    db: Any,
    client: PlacementClient,
    executor: TransitionExecutor,
    uuid: str,
    report: HealReport,
    owned: frozenset[str],
) -> HealResult | None:
    actual = client.get_allocations(uuid)  # before the database: see the module's note
    try:
        server = db.server_get(uuid)
    except exception.ServerNotFound:
        return None  # deleted meanwhile
    if not _needs_look(server):
        return None
    in_flight = db.migration_get_in_progress_for_server(uuid)
    if in_flight is not None:
        if server.needs_heal:
            reason = f"resize {in_flight.uuid} is {in_flight.status}; heal again once it ends"
            return HealResult(uuid, server.host, MISSING, reason=reason)
        report.in_flight += 1
        return None
    if server.rp_uuid is None:
        return HealResult(uuid, server.host, MISSING, reason="no host recorded for it")
    if server.rp_uuid not in owned:
        reason = f"its provider {server.rp_uuid} is not a host of this deployment"
        return HealResult(uuid, server.host, MISSING, reason=reason)
    # NOTE: a server on a tree holds part of its flavor on a child (a vGPU)
    # or a sharing provider (a disk pool), recorded on the server; those
    # providers are its host's as much as the root is, though only the root
    # carries the owner trait.
    try:
        # NOTE: a stored flavor today's checks refuse (hw:numa_nodes) is read
        # as it was claimed; one refused even so is reported, never raised,
        # so one server cannot stop the heal of the others.
        expected = rs.normalize_allocations(
            server.allocations or rs.on(server.rp_uuid, rs.stored_request(server.flavor).resources)
        )
    except ValueError as exc:
        reason = f"its stored flavor is refused: {exc}"
        return HealResult(uuid, server.host, MISSING, reason=reason)
    # NOTE: what another service put on the consumer (a class the flavor
    # does not ask: a port's bandwidth) is never ours; nor is a class of the
    # flavor held on a provider that is not ours. Both are kept as they are.
    mine = owned | set(expected)
    held, theirs = foreign.split(actual.allocations, foreign.classes(*expected.values()))
    ours = {rp: res for rp, res in held.items() if rp in mine}
    strays = {rp: res for rp, res in held.items() if rp not in mine}
    theirs = foreign.merge(theirs, strays)
    pending = [m for m in db.migration_list(server_uuid=uuid, statuses=["error"]) if m.missing]
    if ours == expected and not server.needs_heal and not pending:
        report.ok += 1
        return None
    target = Holdings.from_dict(pending[-1].missing).server if pending else expected
    resources = rs.total(target)
    if pending and (strays or not set(target) <= mine):
        # NOTE: the restore writes the consumer's whole allocations; that
        # would change what it holds on a provider that is not ours.
        reason = "the restore to heal involves providers that are not hosts of this deployment"
        return HealResult(uuid, server.host, MISSING, reason=reason)
    if report.dry_run:
        held = rs.format_resources(rs.total(ours)) or "nothing"
        return HealResult(uuid, server.host, WOULD_HEAL, resources, reason=f"holds {held}")
    try:
        if pending:
            # NOTE: the newest failed restore is the one that counts; older
            # records are superseded by it. The server's generation is the
            # one read before the database was asked, as for a direct write.
            migration = pending[-1]
            known = known_from(migration, actual, client.get_allocations(migration.uuid))
            migration = db.migration_update(migration.uuid, holdings=known.to_dict())
            restore_missing(db, executor, migration, "heal")
            for older in pending[:-1]:
                db.migration_update(older.uuid, missing=None)
        else:
            write = ConsumerWrite(
                foreign.merge(expected, theirs),
                server.project_id,
                server.user_id,
                actual.generation,
                INSTANCE,
            )
            client.put_allocations(uuid, write)
            generation = 1 if actual.generation is None else actual.generation + 1
            db.server_update(uuid, needs_heal=False, placement_generation=generation)
    except (exception.ServerStateConflict, exception.StepNotDue) as exc:
        return HealResult(uuid, server.host, MISSING, reason=str(exc))
    except _PER_CONSUMER_ERRORS as exc:
        if exc.kwargs.get("placement_code") == CONCURRENT_UPDATE:
            reason = "its allocations changed in Placement meanwhile; run heal again"
            return HealResult(uuid, server.host, MISSING, reason=reason)
        return HealResult(uuid, server.host, MISSING, reason=str(exc))
    LOG.info("Healed server %s on %s: %s", uuid, server.host, resources)
    return HealResult(uuid, server.host, HEALED, resources)


def heal(
    db: Any, client: PlacementClient, *, owner_trait: str, dry_run: bool = False
) -> HealReport:
    """Give every live server that lacks it exactly its flavor on its host.

    Looked at: servers flagged ``needs_heal``, and ACTIVE or ERROR servers
    with a host. Skipped: servers with a resize in flight (their allocations
    belong to the resize; a flagged one is reported missing).

    :param db: the :class:`~resize_sched.db.api.Database`.
    :param client: the Placement client.
    :param owner_trait: this deployment's owner trait: only providers with
        it are written.
    :param dry_run: read only; report what would be written.
    :returns: the report; a refusal is reported per server, never raised.
    :raises PlacementUnavailable: Placement could not be reached.
    """
    # NOTE: no retry after a generation conflict: someone else (a resize that
    # began meanwhile) owns the consumer now; the server is reported instead.
    executor = TransitionExecutor(client, db, conflict_retries=0)
    report = HealReport(dry_run=dry_run)
    servers = [s for s in db.server_list() if _needs_look(s) or s.status in _RESIZING]
    owned: frozenset[str] = frozenset()
    if any(_needs_look(s) for s in servers):
        owned = frozenset(rp["uuid"] for rp in hosts.list_owned(client, owner_trait))
    for server in servers:
        if _needs_look(server):
            result = _heal_server(db, client, executor, server.uuid, report, owned)
            if result is not None:
                report.results.append(result)
        elif server.status in _RESIZING:
            report.in_flight += 1
    return report
