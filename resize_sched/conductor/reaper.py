"""Give back what deleted servers and closed resizes still hold after a late write.

A write can reach Placement after the delete that should have ended it: a
build's claim held up in a slow Placement (the client timed out, and the
request was still queued) arrives once the delete has released everything,
and Placement accepts it, for a claim that creates its consumer carries no
generation to refuse it on. The same holds for a resize whose two consumers
were both empty. Nothing of the flow is left to notice: the server is gone.

**Which consumers may hold such a write.** Every write of ours is journaled
before it is sent, under a check that its server is not being deleted and
that its step still owns its migration; so a late write was sent before
the delete or the resize's end was recorded, and lands at most the longest
a Placement request can take later. ``[conductor] reap_after`` is kept
above that, so once ``reap_after`` seconds have passed since a server was
deleted (``deleted_at``) or a migration reached a final status
(``confirmed``, ``reverted``, ``error``: its ``updated_at``), whatever will
land for it has landed, and one read finds it. Beside those, a deleted
server or closed migration with a journal entry still ``intended`` (a
write whose outcome is unknown) is read at every pass until it is settled.

**The pass** (:func:`reap`), every ``[conductor] reap_interval`` seconds,
reads each consumer deleted or closed between the end of the previous pass
and ``reap_after`` ago, one ``GET /allocations/{consumer}`` each, and gives
back what it holds; the end of the pass is recorded on the sweep's lease
(:mod:`resize_sched.conductor.lease`), so the next pass, by whichever
conductor, goes on from there and each consumer is read once. Its cost is
what was deleted, not the size of the cloud. A consumer the pass could not
give back (a refusal, a generation conflict: it changed meanwhile) keeps the
recorded end before it, and is read again at the next pass.

**The scan** (:func:`scan`), every ``[conductor] reap_scan_interval``
seconds (a day by default; 0: never), reads the allocations of every
provider this deployment's audit reads (:func:`resize_sched.conductor.audit.list_audited`)
and gives back what deleted servers and closed migrations of ours hold
there, however long ago: the safety net for what no record of the window
explains.

**What is given back**, in either, through the executor, journaled and
with the consumer generation read:

* a deleted server of ours: its whole consumer, every provider (our roots
  and children, a sharing pool, and what another service put on the
  instance's consumer, a port's bandwidth), as Nova's instance delete does
  (:meth:`~resize_sched.placement.server_executor.ServerTransitions.apply_server`);
* a closed migration of ours: only our share, what it holds on our
  providers (a root with our owner trait, a child with our child trait) and
  on sharing providers (the disk our claims take from a pool), journaled on
  the migration (:meth:`~resize_sched.placement.executor.TransitionExecutor.apply`);
  what it holds on another service's provider is left as it is.

A consumer that is neither (another service's) is never touched. A consumer
that changes meanwhile makes the generation-checked write fail; it is left
for the next pass.
"""

import datetime
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from oslo_log import log as logging

from resize_sched import exception
from resize_sched.conductor import audit
from resize_sched.placement.client import SHARING_TRAIT, child_trait, owner_trait
from resize_sched.strategies import Holdings

LOG = logging.getLogger(__name__)

Allocations = dict[str, dict[str, int]]

#: How far back the first pass of a deployment looks (no pass recorded yet).
FIRST_LOOKBACK = datetime.timedelta(days=1)

#: What one consumer's reap may fail with, without stopping the others.
_PER_CONSUMER_ERRORS = (
    exception.PlacementConflict,
    exception.PlacementBadRequest,
    exception.PlacementNotFound,
    exception.ServerStateConflict,
    exception.ServerNotFound,
    exception.StepNotDue,
    exception.MigrationNotFound,
)

#: Providers read by the scan between two checks that the lease is still held.
_SCAN_CHUNK = 100


@dataclass
class ReapReport:
    """What a pass (or a scan) of the reaper found and gave back."""

    #: providers read (the scan only)
    providers: int = 0
    #: consumers read from Placement
    consumers: int = 0
    #: consumer -> what it was (``deleted server``, ``migration confirmed``...)
    reaped: dict[str, str] = field(default_factory=dict)
    #: consumer -> why it was left (too recent, a refusal)
    left: dict[str, str] = field(default_factory=dict)
    #: the pass: every consumer deleted or closed before this was looked at
    until: datetime.datetime | None = None


def _utc(then: datetime.datetime) -> datetime.datetime:
    return then if then.tzinfo is not None else then.replace(tzinfo=datetime.UTC)


class _Reaper:
    """Gives back one consumer at a time; knows which providers are ours."""

    def __init__(self, manager: Any, report: ReapReport) -> None:
        conf = manager.deps.conf
        self.client = manager.deps.client
        self.executor = manager.deps.executor
        self.report = report
        owner = owner_trait(conf.placement.deployment_name)
        self._marks = frozenset({owner, child_trait(owner), SHARING_TRAIT})
        self._ours: dict[str, bool] = {}

    def ours(self, rp: str) -> bool:
        """Whether our claims' share on ``rp`` is ours to give back: one of
        our roots or children, or a sharing pool (read once per pass)."""
        if rp not in self._ours:
            try:
                traits, _ = self.client.get_traits(rp)
            except exception.PlacementNotFound:
                traits = frozenset()
            self._ours[rp] = bool(self._marks & traits)
        return self._ours[rp]

    def server(self, server: Any) -> None:
        """A deleted server: its whole consumer is given back."""
        self.report.consumers += 1
        try:
            if self.executor.apply_server(server, "reap", {}):
                self.report.reaped[server.uuid] = "deleted server"
        except _PER_CONSUMER_ERRORS as exc:
            self.report.left[server.uuid] = f"deleted server: {exc}"

    def migration(self, migration: Any) -> None:
        """A closed migration: what its consumer holds on our providers."""
        what = f"migration {migration.status}"
        self.report.consumers += 1
        try:
            held = self.client.get_allocations(migration.uuid).allocations
            if not any(self.ours(rp) for rp in held):
                return

            def keep(holdings: Holdings) -> Holdings:
                theirs = {rp: a for rp, a in holdings.migration.items() if not self.ours(rp)}
                return Holdings(server=holdings.server, migration=theirs)

            self.executor.apply(migration, "reap", keep, fresh=True)
            self.report.reaped[migration.uuid] = what
        except _PER_CONSUMER_ERRORS as exc:
            self.report.left[migration.uuid] = f"{what}: {exc}"


def _run(
    manager: Any, report: ReapReport, servers: Iterable[Any], migrations: Iterable[Any]
) -> None:
    reaper = _Reaper(manager, report)
    # NOTE: servers first: a deleted server's closed migration is then reaped
    # from a server consumer already empty, a write that only takes away.
    for server in servers:
        reaper.server(server)
    for migration in migrations:
        reaper.migration(migration)
    if report.reaped:
        LOG.warning(
            "Reaper gave back what %d consumer(s) of deleted servers or closed resizes "
            "still held on our providers: %s",
            len(report.reaped),
            report.reaped,
        )
    for consumer, why in report.left.items():
        LOG.info("Reaper left %s: %s", consumer, why)


def reap(
    manager: Any,
    grace: float | None = None,
    *,
    since: datetime.datetime | None = None,
    now: datetime.datetime | None = None,
) -> ReapReport:
    """One pass of the reaper over the consumers deleted or closed lately
    (see the module doc).

    :param manager: the :class:`~resize_sched.conductor.manager.ConductorManager`.
    :param grace: seconds since the delete or the resize's end before its
        consumers are read; ``[conductor] reap_after`` when None.
    :param since: the end of the previous pass; :data:`FIRST_LOOKBACK`
        before this one's end when None.
    :param now: the time the pass runs at (tests); the clock when None.
    :returns: what was read, reaped and left, and the end of this pass
        (``until``) for the next one to go on from; per-consumer refusals
        are reported, never raised.
    :raises PlacementUnavailable: Placement could not be reached.
    """
    conf, db = manager.deps.conf, manager.db
    if grace is None:
        grace = conf.conductor.reap_after
    now = now or datetime.datetime.now(datetime.UTC)
    end = now - datetime.timedelta(seconds=grace)
    since = since or end - FIRST_LOOKBACK
    report = ReapReport(until=end)
    servers, migrations = db.reap_recent(min(since, end))
    due: list[list[Any]] = [[], []]
    closed: dict[str, datetime.datetime] = {}
    recent: list[str] = []
    for bucket, rows, when in (
        (due[0], servers, lambda s: s.deleted_at),
        (due[1], migrations, lambda m: m.updated_at or m.created_at),
    ):
        for row in rows:
            closed[row.uuid] = _utc(when(row))
            if closed[row.uuid] > end:
                recent.append(row.uuid)  # read by a later pass
            else:
                bucket.append(row)
    _run(manager, report, *due)
    refused = [closed[c] for c in report.left]
    report.left.update((c, "within the grace period") for c in recent)
    if refused:
        # NOTE: read again next pass: end just before the first one left.
        report.until = min(refused) - datetime.timedelta(microseconds=1)
    LOG.info(
        "Reaper pass over what was deleted or closed from %s to %s: %d consumer(s) read, "
        "%d given back",
        since.isoformat(),
        end.isoformat(),
        report.consumers,
        len(report.reaped),
    )
    return report


def scan(
    manager: Any, grace: float | None = None, *, held: Callable[[], bool] | None = None
) -> ReapReport:
    """Read every provider audit reads; give back what deleted servers and
    closed migrations of ours hold there (see the module doc).

    :param grace: as for :func:`reap`.
    :param held: whether the sweep's lease is still held, asked between
        chunks of providers; the scan stops when it is not.
    :returns: the report (``until`` is None).
    :raises PlacementUnavailable: Placement could not be reached.
    """
    conf, db, client = manager.deps.conf, manager.db, manager.deps.client
    if grace is None:
        grace = conf.conductor.reap_after
    report = ReapReport()
    holders: set[str] = set()
    providers, _ = audit.list_audited(client, owner_trait(conf.placement.deployment_name))
    for number, provider in enumerate(providers):
        if held is not None and number % _SCAN_CHUNK == 0 and number and not held():
            LOG.warning("Reaper scan stopped after %d providers: the lease was lost", number)
            return report
        try:
            holders.update(client.get_provider_allocations(provider["uuid"]))
        except exception.PlacementNotFound:
            continue  # deleted meanwhile
        report.providers += 1
    servers, migrations = db.reap_candidates(holders)
    now = datetime.datetime.now(datetime.UTC)
    end = now - datetime.timedelta(seconds=grace)
    recent = []
    for rows, when in (
        (servers, lambda s: s.deleted_at),
        (migrations, lambda m: m.updated_at or m.created_at),
    ):
        for row in list(rows):
            if when(row) is not None and _utc(when(row)) > end:
                recent.append(row.uuid)
                rows.remove(row)
    _run(manager, report, servers, migrations)
    report.left.update((c, "within the grace period") for c in recent)
    LOG.info(
        "Reaper scan of %d provider(s): %d consumer(s) of ours held something, %d given back",
        report.providers,
        report.consumers,
        len(report.reaped),
    )
    return report


def reap_if_due(manager: Any) -> ReapReport | None:
    """Run the pass when ``[conductor] reap_interval`` has passed since the
    last one recorded on the sweep's lease, and the scan when
    ``reap_scan_interval`` has; record each on the lease.

    :returns: what the pass and the scan did together, or None when neither
        was due.
    """
    conf, lease = manager.deps.conf.conductor, manager.lease
    state = manager.db.lease_get(lease.name)
    now = datetime.datetime.now(datetime.UTC)
    end = now - datetime.timedelta(seconds=conf.reap_after)
    since = state.reaped_until if state is not None else None
    done: ReapReport | None = None
    if since is None or (end - _utc(since)).total_seconds() >= conf.reap_interval:
        done = reap(manager, since=since, now=now)
        lease.record(reaped_until=done.until)
    scanned = (state.scanned_at or state.created_at) if state is not None else None
    interval = conf.reap_scan_interval
    if state is None or scanned is None or interval <= 0:
        return done
    if (now - _utc(scanned)).total_seconds() >= interval:
        found = scan(manager, held=lease.held)
        lease.record(scanned_at=now)
        if done is None:
            return found
        done.reaped.update(found.reaped)
        done.left.update(found.left)
        done.providers = found.providers
        done.consumers += found.consumers
    return done
