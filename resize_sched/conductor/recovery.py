"""Crash recovery: finish or roll back every resize and build found in flight.

Two steps per migration:

1. **Reconcile** the journal with Placement. An entry still ``intended`` was
   written (or not) when the previous conductor stopped; Placement's actual
   holdings say which: equal to the entry's target -> ``applied``, equal to
   what was held before -> ``abandoned``, after its consumers are fenced (a
   write whose answer was lost may still land late: the fence makes
   Placement refuse it). Either way the migration's known holdings become
   what Placement holds, with fresh generations.
2. **Resume** from the migration's status: a resize not yet claimed is
   scheduled again; one claimed is handed to its destination again (compute
   operations are idempotent); a confirm or revert in progress is completed;
   a live migration is scheduled again (``accepted``), or its destination
   asked to prepare again (``preparing``), or its source to hand over again
   (``running``); an evacuation is scheduled again (``accepted``) or its
   rebuild sent again (``pre-migrating``); a failed restore (``missing`` holdings) is retried, as
   :func:`resize_sched.conductor.heal.restore_missing` does for the heal
   command. The sweep retries it too, once per ``[conductor] stuck_after``
   (the stamp below), so a server flagged ``needs_heal`` heals by itself as
   soon as its host has room again; until then nothing changes.

A build journals its claim on the server (one consumer, one write: see
:mod:`resize_sched.placement.server_executor`); a server still ``BUILD`` is
resumed from its task state. In ``scheduling``, its journal is settled by
reading Placement and a claim Placement already holds is adopted, else the
server is scheduled again; in ``spawning``, the spawn is sent to its host
again (spawning is idempotent). A deleted server's entries still
``intended`` are settled the same way.

A shelve, an offload or an unshelve left with its task state set
(``shelving``, ``shelving_offloading``, ``unshelving``) has its host step
sent again (each report is a compare-and-swap, so a second one changes
nothing); an offloaded server's unshelve still ``unshelving`` is resumed as
a build in ``scheduling`` (a claim Placement holds is adopted, else it is
scheduled again), one ``spawning`` has its spawn sent again.

A delete the API accepted is finished whatever state it finds the server
in: ``deleting``, or with its ``delete`` action recorded and not carried out.

The sweep (not the start) begins again each confirm or revert Placement
refused whose refused provider changed since (:mod:`resize_sched.conductor.retry`),
then runs the reaper
(:mod:`resize_sched.conductor.reaper`) every ``[conductor] reap_interval``
seconds: what deleted servers and closed resizes still hold, a write that
landed after the delete, is given back. Of all the conductors only the
holder of the sweep's lease sweeps (:mod:`resize_sched.conductor.lease`).

The same code serves the conductor's start (everything in flight) and its
periodic sweep (only what has not changed for ``[conductor] stuck_after``
seconds: a step whose message was lost, or whose Placement call failed).
"""

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import oslo_messaging as messaging
from oslo_log import log as logging

from resize_sched import exception
from resize_sched.compute.rpcapi import server_message
from resize_sched.conductor import heal, reaper, retry
from resize_sched.context import admin_context
from resize_sched.db import models

LOG = logging.getLogger(__name__)

#: Outcomes of taking a migration on that are races or waits, not faults: a
#: second sweep got there first, a delete took the migration over, or a
#: restore still finds no room (the next sweep tries again). Logged at INFO.
_EXPECTED = (
    exception.MigrationStateConflict,
    exception.ServerStateConflict,
    exception.StepNotDue,
    exception.ClaimRefused,
)


@dataclass
class RecoveryReport:
    """What recovery found and did, for the start-up log and tests."""

    found: int = 0
    reconciled: dict[str, str] = field(default_factory=dict)  # journal entry id -> state
    resumed: dict[str, str] = field(default_factory=dict)  # migration or server uuid -> action
    failed: dict[str, str] = field(default_factory=dict)  # migration or server uuid -> error
    reaped: dict[str, str] = field(default_factory=dict)  # consumer -> what it was
    retried: dict[str, str] = field(default_factory=dict)  # migration -> refused decision retried


def reconcile(manager: Any, migration: Any, report: RecoveryReport) -> Any:
    """Settle the migration's ``intended`` journal entries against Placement
    (see :meth:`~resize_sched.placement.executor.TransitionExecutor.settle`)."""
    db, executor = manager.db, manager.deps.executor
    actual, verdicts = executor.settle(migration, executor.read(migration))
    for entry_id, state in verdicts.items():
        if state == "unknown":
            LOG.error(
                "Migration %s journal entry %s matches neither its target nor what was "
                "held before; Placement holds %s. Leaving it for an operator.",
                migration.uuid,
                entry_id,
                actual.holdings.to_dict(),
            )
            continue
        report.reconciled[str(entry_id)] = state
    return db.migration_update(migration.uuid, holdings=actual.to_dict())


def resume(manager: Any, migration: Any) -> str:
    """Take one migration on from where it stopped; return what was done."""
    ctxt = admin_context()
    status = migration.status
    if migration.migration_type == "evacuation":
        return _resume_evacuation(manager, ctxt, migration)
    if status == "pre-migrating":
        manager.resize_server(ctxt, migration.uuid)
        return "scheduled again"
    if status == "post-migrating":
        manager.compute.resize_instance(
            ctxt, migration.source_host, manager.running_message(migration)
        )
        return f"resize sent again to {migration.source_host}"
    if status == "migrating":
        manager._prep(ctxt, migration.uuid, migration.dest_host)
        return f"prep_resize sent again to {migration.dest_host}"
    if status == "confirming":
        manager.confirm_resize(ctxt, migration.uuid)
        return "confirm completed"
    if status == "reverting":
        manager.revert_resize(ctxt, migration.uuid)
        return "revert completed"
    if status == "accepted":
        manager.live_migrate_server(ctxt, migration.uuid)
        return "live migration scheduled again"
    if status == "preparing":
        manager._pre_live(ctxt, migration.uuid)
        return f"pre_live_migration sent again to {migration.dest_host}"
    if status == "running":
        # NOTE: each part is idempotent on the fake driver (a host adopts a
        # server it does not know), and completing is a compare-and-swap on
        # ``running``: a hand-over that had ended reports again, once.
        manager._live_migrate_on_source(ctxt, manager.db.migration_get(migration.uuid))
        return f"live_migration sent again to {migration.source_host}"
    if status == "error" and migration.missing:
        # NOTE: the same step as 'resize-sched-manage placement heal'; the
        # server's status was settled when the restore first failed.
        heal.restore_missing(manager.db, manager.deps.executor, migration, "restore")
        return "restore retried"
    return "nothing to do"


def _resume_evacuation(manager: Any, ctxt: Any, migration: Any) -> str:
    """An evacuation: scheduled again (``accepted``), its rebuild sent again
    (``pre-migrating``); a ``done`` one waits for its source host's report."""
    if migration.status == "accepted":
        manager.evacuate_server(ctxt, migration.uuid)
        return "evacuation scheduled again"
    if migration.status == "pre-migrating":
        manager._rebuild(ctxt, migration.uuid)
        return f"rebuild sent again to {migration.dest_host}"
    if migration.status == "failed" and migration.missing:
        heal.restore_missing(manager.db, manager.deps.executor, migration, "restore")
        return "restore retried"
    return "nothing to do"


def release_if_deleted(manager: Any, migration: Any) -> str:
    """Give back what a closed migration's consumers hold if its server is deleted."""
    server = manager.db.server_get(migration.server_uuid, read_deleted=True)
    if server.deleted_at is None and server.task_state != "deleting":
        return "nothing to do"
    manager.deps.executor.release(migration)
    return "released after the delete"


def settle_deleted(manager: Any, server: Any) -> str:
    """Settle the journal of a deleted server by reading its consumer."""
    held = manager.deps.client.get_allocations(server.uuid).allocations
    verdicts = manager.deps.executor.settle_server(server.uuid, held)
    if held:
        return f"journal settled {sorted(verdicts.values())}; what it holds is the reaper's"
    return f"journal settled {sorted(verdicts.values())}"


def resume_build(manager: Any, server: Any) -> str:
    """Take one server still in BUILD on from where it stopped."""
    ctxt = admin_context()
    if server.task_state not in ("scheduling", "spawning"):
        return "nothing to do"
    # NOTE: stamp the server first, compare-and-swap on when it last changed:
    # of two conductors sweeping at once exactly one takes it on, and the next
    # sweep leaves it another stuck_after seconds.
    server = manager.db.server_touch(
        server.uuid,
        expected={
            "status": "BUILD",
            "task_state": server.task_state,
            "updated_at": server.updated_at,
        },
        operation="resume the build",
    )
    if server.task_state == "scheduling":
        adopted = manager.builds.adopt(server.uuid)
        if adopted is None:
            manager.build_server(ctxt, server.uuid)
            after = manager.db.server_get(server.uuid)
            # NOTE: a quick host may have finished the spawn already (ACTIVE):
            # what matters is that the build was placed and sent.
            if after.host and after.task_state in ("spawning", None):
                return f"scheduled again, spawn sent to {after.host}"
            return f"scheduled again, now {after.status}/{after.task_state}"
        server = adopted
    manager.compute.spawn(ctxt, server.host, server_message(server))
    return f"spawn sent to {server.host}"


#: The shelving task states a lost message or a stopped conductor can leave
#: a server in, and the operation the sweep sends again for each.
_SHELVING = {
    models.TASK_SHELVING: "shelve",
    models.TASK_SHELVING_OFFLOADING: "shelve_offload",
    models.TASK_UNSHELVING: "unshelve",
}


def shelving_in_flight(manager: Any) -> list[Any]:
    """The servers a shelve, an offload or an unshelve is under way for."""
    found = [s for task in _SHELVING for s in manager.db.server_list(task_state=task)]
    found += [
        s
        for s in manager.db.server_list(
            status=models.STATUS_SHELVED_OFFLOADED, task_state=models.TASK_SPAWNING
        )
    ]
    return found


def resume_shelving(manager: Any, server: Any) -> str:
    """Take a shelve, an offload or an unshelve on from where it stopped.

    Each host step is safe to send again (its report is a compare-and-swap);
    an offloaded server's unshelve that stopped while scheduling adopts the
    claim Placement holds for it, else is scheduled again, as a build is.
    """
    ctxt = admin_context()
    # NOTE: of two conductors sweeping at once exactly one takes it on.
    server = manager.db.server_touch(
        server.uuid,
        expected={
            "status": server.status,
            "task_state": server.task_state,
            "updated_at": server.updated_at,
        },
        operation="resume the shelving",
    )
    if server.status == models.STATUS_SHELVED_OFFLOADED:
        if server.task_state == models.TASK_UNSHELVING:
            adopted = manager.unshelves.adopt(server.uuid)
            if adopted is None:
                manager.unshelve_server(ctxt, server.uuid)
                after = manager.db.server_get(server.uuid)
                return f"unshelve scheduled again, now {after.status}/{after.task_state}"
            server = adopted
        manager.compute.unshelve_instance(ctxt, server.host, server_message(server))
        return f"unshelve sent to {server.host}"
    operation = _SHELVING[server.task_state]
    manager._shelve_cast(ctxt, server.uuid, operation)
    return f"{operation} sent again to {server.host}"


def _idle(row: Any, now: datetime.datetime) -> float:
    """Seconds since the migration or server last changed."""
    changed = row.updated_at or row.created_at
    if changed.tzinfo is None:
        changed = changed.replace(tzinfo=datetime.UTC)
    return (now - changed).total_seconds()


def _log_failure(what: str, exc: Exception) -> None:
    """INFO for an expected race or wait, WARNING for the rest; never a traceback."""
    if isinstance(exc, _EXPECTED):
        LOG.info("Recovery of %s left for later: %s", what, exc)
    else:
        LOG.warning("Recovery of %s: %s", what, exc)


def recover(manager: Any, idle_for: float | None = None) -> RecoveryReport:
    """Reconcile and resume every migration and build in flight.

    :param manager: the :class:`~resize_sched.conductor.manager.ConductorManager`.
    :param idle_for: only those that have not changed for this many seconds
        (the periodic sweep); all of them when None (start-up).
    :returns: what was found and done; failures are logged, never raised, so
        one stuck migration cannot keep the conductor from starting.
    """
    report = RecoveryReport()
    now = datetime.datetime.now(datetime.UTC)

    def stale(row: Any) -> bool:
        return idle_for is None or _idle(row, now) >= idle_for

    def take_on(what: str, key: str, action: Callable[[], str]) -> None:
        report.found += 1
        try:
            report.resumed[key] = action()
        except (exception.ResizeSchedException, messaging.ExpectedException) as exc:
            # NOTE: the RPC handlers called directly re-raise their expected
            # failures wrapped; the one inside is what happened.
            if isinstance(exc, messaging.ExpectedException):
                exc = exc.exc_info[1]
            _log_failure(what, exc)
            report.failed[key] = str(exc)

    def settled(migration: Any, then: Callable[[Any], str]) -> Callable[[], str]:
        def action() -> str:
            # NOTE: the stamp makes this worker the only one to take it on,
            # and gives the re-sent step another stuck_after seconds.
            taken = manager.db.migration_touch(migration.uuid, seen=migration)
            return then(reconcile(manager, taken, report))

        return action

    in_flight = manager.db.migration_list_in_flight()
    for migration in in_flight:
        if idle_for is not None and (migration.status == "finished" or not stale(migration)):
            continue
        take_on(
            f"migration {migration.uuid}",
            migration.uuid,
            settled(migration, lambda m: resume(manager, m)),
        )
    handled = {m.uuid for m in in_flight}
    for migration_uuid in sorted({e.migration_uuid for e in manager.db.journal_pending()}):
        # NOTE: a step that wrote (or was writing) when its migration was
        # closed under it by a delete, and then stopped: settle the entry and
        # give back whatever the write left.
        migration = manager.db.migration_get(migration_uuid)
        if migration_uuid in handled or not stale(migration):
            continue
        take_on(
            f"migration {migration.uuid}",
            migration.uuid,
            settled(migration, lambda m: release_if_deleted(manager, m)),
        )
    for server_uuid in sorted({e.server_uuid for e in manager.db.server_journal_pending()}):
        # NOTE: a write to a server's own consumer whose answer never came
        # (Placement unreachable, or the conductor stopped). A live build
        # settles its entries when it is taken on (adopt, below); a deleted
        # server's are settled here, and what they left is the reaper's.
        server = manager.db.server_get(server_uuid, read_deleted=True)
        if server.deleted_at is not None and stale(server):
            take_on(
                f"the journal of server {server_uuid}",
                server_uuid,
                lambda s=server: settle_deleted(manager, s),
            )
    deleting: set[str] = set()
    for server in manager.db.server_list_delete_unfinished():
        # NOTE: a delete whose cast was lost, or whose conductor stopped; or
        # one whose ``deleting`` a writer cleared (whatever state the build or
        # resize left it in, an accepted delete is carried out).
        if not stale(server):
            continue
        if server.task_state != "deleting":
            LOG.warning(
                "Server %s: its delete was accepted but it is %s/%s; deleting it",
                server.uuid,
                server.status,
                server.task_state,
            )
        deleting.add(server.uuid)
        take_on(
            f"the delete of server {server.uuid}",
            server.uuid,
            lambda s=server: manager.delete_server(admin_context(), s.uuid) or "delete completed",
        )
    for server in manager.db.server_list(status="BUILD"):
        if server.task_state != "deleting" and server.uuid not in deleting and stale(server):
            take_on(
                f"the build of server {server.uuid}",
                server.uuid,
                lambda s=server: resume_build(manager, s),
            )
    for server in shelving_in_flight(manager):
        if server.uuid not in deleting and stale(server):
            take_on(
                f"the {server.task_state} of server {server.uuid}",
                server.uuid,
                lambda s=server: resume_shelving(manager, s),
            )
    if idle_for is not None:
        # NOTE: a sweep: a confirm or revert Placement refused is begun again
        # once the refused provider's inventory or usage changed
        # (resize_sched.conductor.retry); it does not wait for stuck_after.
        ctxt = admin_context()
        report.retried = retry.retry_refused(
            manager.db,
            manager.deps.client,
            lambda decision, uuid: getattr(manager, f"{decision}_resize")(ctxt, uuid),
        )
        # NOTE: then, after the flows, what Placement still holds for
        # deleted servers and closed resizes (see resize_sched.conductor.reaper).
        try:
            reaped = reaper.reap_if_due(manager)
        except exception.PlacementError as exc:
            LOG.warning("Reaper left for the next sweep: %s", exc)
            reaped = None
        if reaped is not None:
            report.reaped = reaped.reaped
    if report.found:
        LOG.info(
            "Recovery: %d resize(s) and build(s) in flight, %d journal entr(ies) settled, %s",
            report.found,
            len(report.reconciled),
            report.resumed,
        )
    return report
