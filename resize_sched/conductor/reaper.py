"""Give back what our providers still hold for deleted servers and closed resizes.

A write can reach Placement after the delete that should have ended it: a
build's claim held up in a slow Placement (the client timed out, and the
request was still queued) arrives once the delete has released everything,
and Placement accepts it, for a claim that creates its consumer carries no
generation to refuse it on. The same holds for a resize whose two consumers
were both empty. Nothing of the flow is left to notice: the server is gone.

The reaper, run by the conductor's sweep every ``[conductor] reap_interval``
seconds, lists the allocations on this deployment's providers (those with
its owner trait, as ``resize-sched-manage placement audit`` does), and for
each consumer that is

* a deleted server of ours, deleted at least ``[conductor] reap_after``
  seconds ago: empties what it holds on our providers, through the executor
  with its consumer generation, journaled on the server
  (:meth:`~resize_sched.placement.server_executor.ServerTransitions.apply_server`);
* a migration of ours in a final status (``confirmed``, ``reverted``,
  ``error``) that last changed at least that long ago: empties what it holds
  on our providers, journaled on the migration like any transition
  (:meth:`~resize_sched.placement.executor.TransitionExecutor.apply`).

The grace period leaves writes still in flight time to land, so one pass
gives them back, and keeps the reaper out of the way of a delete or a step
still releasing. A consumer that is neither (another service's), and what
our consumers hold on providers that are not ours, are never touched. A
consumer that changes meanwhile makes the generation-checked write fail; it
is left for the next pass.
"""

import datetime
import time
from dataclasses import dataclass, field
from typing import Any

from oslo_log import log as logging

from resize_sched import exception
from resize_sched.placement.client import owner_trait
from resize_sched.scheduler import hosts
from resize_sched.strategies import Holdings

LOG = logging.getLogger(__name__)

Allocations = dict[str, dict[str, int]]

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


@dataclass
class ReapReport:
    """What a pass of the reaper found and gave back."""

    providers: int = 0
    #: consumer -> what it was (``deleted server``, ``migration confirmed``...)
    reaped: dict[str, str] = field(default_factory=dict)
    #: consumer -> why it was left (too recent, a refusal)
    left: dict[str, str] = field(default_factory=dict)


def _age(then: datetime.datetime | None, now: datetime.datetime) -> float:
    if then is None:
        return float("inf")
    if then.tzinfo is None:
        then = then.replace(tzinfo=datetime.UTC)
    return (now - then).total_seconds()


def _keep_not_ours(owned: frozenset[str]) -> Any:
    """A target: what a consumer holds on providers that are not ours, only."""

    def target(held: Allocations) -> Allocations:
        return {rp: amounts for rp, amounts in held.items() if rp not in owned}

    return target


def reap(manager: Any, grace: float | None = None) -> ReapReport:
    """One pass of the reaper (see the module doc).

    :param manager: the :class:`~resize_sched.conductor.manager.ConductorManager`.
    :param grace: seconds since the delete or the resize's end before its
        consumers are reaped; ``[conductor] reap_after`` when None.
    :returns: what was reaped and left; per-consumer refusals are reported,
        never raised.
    :raises PlacementUnavailable: Placement could not be reached.
    """
    conf, db, client = manager.deps.conf, manager.db, manager.deps.client
    executor = manager.deps.executor
    if grace is None:
        grace = conf.conductor.reap_after
    report = ReapReport()
    holders: set[str] = set()
    owned_list = hosts.list_owned(client, owner_trait(conf.placement.deployment_name))
    for provider in owned_list:
        try:
            holders.update(client.get_provider_allocations(provider["uuid"]))
        except exception.PlacementNotFound:
            continue  # deleted meanwhile
        report.providers += 1
    if not holders:
        return report
    owned = frozenset(p["uuid"] for p in owned_list)
    keep = _keep_not_ours(owned)
    servers, migrations = db.reap_candidates(holders)
    now = datetime.datetime.now(datetime.UTC)
    # NOTE: servers first: a deleted server's closed migration is then reaped
    # from a server consumer already empty, a write that only takes away.
    for server in servers:
        what = "deleted server"
        if _age(server.deleted_at, now) < grace:
            report.left[server.uuid] = f"{what}, within the grace period"
            continue
        try:
            if executor.apply_server(server, "reap", keep):
                report.reaped[server.uuid] = what
        except _PER_CONSUMER_ERRORS as exc:
            report.left[server.uuid] = f"{what}: {exc}"
    for migration in migrations:
        what = f"migration {migration.status}"
        if _age(migration.updated_at or migration.created_at, now) < grace:
            report.left[migration.uuid] = f"{what}, within the grace period"
            continue
        try:
            before = executor.read(migration)
            if keep(before.holdings.migration) != before.holdings.migration:
                executor.apply(
                    migration,
                    "reap",
                    lambda held: Holdings(server=held.server, migration=keep(held.migration)),
                    fresh=True,
                )
                report.reaped[migration.uuid] = what
        except _PER_CONSUMER_ERRORS as exc:
            report.left[migration.uuid] = f"{what}: {exc}"
    if report.reaped:
        LOG.warning(
            "Reaper gave back what %d consumer(s) of deleted servers or closed resizes "
            "still held on our providers: %s",
            len(report.reaped),
            report.reaped,
        )
    for consumer, why in report.left.items():
        LOG.info("Reaper left %s: %s", consumer, why)
    return report


def reap_if_due(manager: Any) -> ReapReport | None:
    """Run :func:`reap` when ``[conductor] reap_interval`` has passed since the
    manager's last pass (or its start).

    :returns: the report, or None when not due.
    """
    interval = manager.deps.conf.conductor.reap_interval
    now = time.monotonic()
    if now - manager.last_reap < interval:
        return None
    manager.last_reap = now
    return reap(manager)
