"""Where a move goes: the prepare, the scheduling request, the claim and its alternates.

:class:`MoveClaims` is the part of :class:`~resize_sched.conductor.tasks.move.MoveTask`
that finds and claims a destination: it writes what the migration's
strategy holds before scheduling (beside the scheduler's query when that
write changes no provider's usage), builds the scheduling request with the
policies (:mod:`resize_sched.conductor.tasks.policy`), and claims the first
destination Placement accepts, moving on through the alternates. What
distinguishes one kind of move here is declared, not overridden: whether it
always leaves its source (:attr:`MoveClaims.LEAVES_SOURCE`) and which of the
migration's columns names the host asked for (:attr:`MoveClaims.NAMED_HOST`).
"""

import dataclasses
import threading
from concurrent import futures
from typing import Any, ClassVar

from oslo_log import log as logging

from resize_sched import exception
from resize_sched import resources as rs
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.conductor.tasks.facts import group_devices, grouped
from resize_sched.conductor.tasks.policy import Placed, hinted_group, policy_fields
from resize_sched.db import states
from resize_sched.db.steps import StepRun
from resize_sched.scheduler.manager import (
    Destination,
    SchedulingRequest,
    Selection,
    flavor_filters,
)
from resize_sched.strategies import ClaimStrategy, Holdings, ResizeFacts

LOG = logging.getLogger(__name__)


def _held_on(migration: Any, provider: str) -> dict[str, int]:
    """What both consumers of ``migration`` are known to hold on ``provider``
    (empty when the holdings are not known)."""
    held = Holdings.from_dict(migration.holdings or {})
    return rs.add(held.server.get(provider, {}), held.migration.get(provider, {}))


def _moves_usage_nowhere(holdings: dict[str, Any] | None, target: Holdings) -> bool:
    """Whether going from the known ``holdings`` to ``target`` is a write that
    leaves every provider's usage as it is (it only hands amounts from one
    consumer to the other). False when nothing would be written, or the
    holdings are not known."""
    if not holdings:
        return False
    held = Holdings.from_dict(holdings)
    if held == target:
        return False
    return rs.add_allocations(held.server, held.migration) == rs.add_allocations(
        target.server, target.migration
    )


def recorded_allocations(
    allocations: dict[str, Any] | None, provider: str
) -> dict[str, Any] | None:
    """What to record as a server's ``allocations``: None when it holds
    everything on ``provider`` alone (a flat host, the usual case), else its
    holdings provider by provider."""
    if not allocations or set(allocations) == {provider}:
        return None
    return rs.normalize_allocations(allocations)


_SIDE_POOL: futures.ThreadPoolExecutor | None = None
_SIDE_POOL_LOCK = threading.Lock()


def _side_pool() -> futures.ThreadPoolExecutor:
    """The threads a step's Placement write runs on beside the scheduler's queries."""
    global _SIDE_POOL
    with _SIDE_POOL_LOCK:
        if _SIDE_POOL is None:
            _SIDE_POOL = futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="prepare")
        return _SIDE_POOL


def dest_to_dict(dest: Destination) -> dict[str, Any]:
    data = {
        "provider": dest.provider,
        "host": dest.host,
        "allocation_request": dest.allocation_request,
        "same_host": dest.same_host,
    }
    if dest.mappings is not None:
        data["mappings"] = dest.mappings
    return data


def dest_from_dict(data: dict[str, Any]) -> Destination:
    return Destination(
        data["provider"],
        data["host"],
        data["allocation_request"],
        data["same_host"],
        data.get("mappings"),
    )


class MoveClaims:
    """Prepares, schedules and claims a move's destination.

    :param deps: configuration, database, Placement client, scheduler, executor.
    """

    #: The migration's status while it waits for a destination, and once one
    #: is claimed.
    SCHEDULING_STATUS: ClassVar[str] = "pre-migrating"
    CLAIMED_STATUS: ClassVar[str] = "migrating"
    #: Whether the move always leaves its source (a live migration, an
    #: evacuation): never the source again, never the same host. A resize
    #: leaves it only when it is a cold migration (``migration_type``).
    LEAVES_SOURCE: ClassVar[bool] = False
    #: The migration's column naming the only host the scheduler may choose
    #: (unset: any host).
    NAMED_HOST: ClassVar[str] = "requested_host"

    deps: TaskDeps

    def __init__(self, deps: TaskDeps) -> None:
        self.deps = deps
        self.db = deps.db

    def _prepare_and_select(
        self, migration: Any, run: StepRun, strategy: ClaimStrategy, facts: ResizeFacts
    ) -> tuple[Any, Selection]:
        """Write what the strategy holds before scheduling, and schedule.

        A prepare that only hands amounts from one consumer to the other on
        the same providers (``legacy``: ``old`` from the server to the
        migration) changes no provider's usage, so the scheduler's answer
        cannot depend on it: the write runs on a small pool while the
        scheduler asks, and the resize waits for one round trip, not two. A
        prepare that changes usage (``drop_and_reclaim``'s drop) lands first.
        Either way the prepare's own failure is the one raised, as if it had
        run alone first.

        :returns: the migration as prepared, and the scheduler's selection.
        """
        target = strategy.prepare(facts)

        def prepare() -> Any:
            return self.deps.executor.apply(migration, "prepare", target, run=run)

        if not _moves_usage_nowhere(migration.holdings, target):
            migration = prepare()
            request = self._scheduling_request(migration, strategy, facts, run=run)
            return migration, self.deps.scheduler.select_destinations(request)
        request = self._scheduling_request(migration, strategy, facts, run=run)
        future = _side_pool().submit(prepare)
        try:
            selection = self.deps.scheduler.select_destinations(request)
        except BaseException:
            future.result()  # the prepare's failure first, as it would have come
            raise
        return future.result(), selection

    def _scheduling_request(
        self,
        migration: Any,
        strategy: ClaimStrategy,
        facts: ResizeFacts,
        tried: frozenset[str] = frozenset(),
        *,
        run: StepRun | None = None,
    ) -> SchedulingRequest:
        conf = self.deps.conf
        spec = self._request_spec(migration.server_uuid, run)
        # NOTE: a move that leaves its source goes never back to it, and only
        # to the host an administrator named, when one was.
        leaves = self.LEAVES_SOURCE or migration.migration_type == states.MIGRATION_TYPE_MIGRATION
        requested = getattr(migration, self.NAMED_HOST, None)
        return SchedulingRequest(
            destination_request=strategy.destination_request(facts),
            **flavor_filters(migration.new_flavor),
            source=facts.source,
            source_request=strategy.source_request(facts),
            source_placement=strategy.source_placement(facts),
            source_groups=strategy.source_groups(facts),
            source_avoid=group_devices(facts),
            source_holds=_held_on(migration, facts.source),
            allow_same_host=conf.resize.allow_same_host and not leaves,
            prefer_same_host=conf.resize.prefer_same_host and not leaves,
            ignore_hosts=frozenset(spec.ignore_hosts if spec else ()),
            force_hosts=frozenset({requested} if requested else ()),
            # NOTE: as in Nova, hosts forced at boot do not bind a resize.
            ignore_providers=tried,
            **policy_fields(
                self.db,
                Placed.of_migration(migration),
                spec,
                flavor=migration.new_flavor,
                moving=True,
                conf=conf,
                zones=run.zones if run is not None else None,
            ),
        )

    def _grouped(self, migration: Any, run: StepRun) -> bool:
        """Whether the moved server's request spec names a server group."""
        spec = self._request_spec(migration.server_uuid, run)
        return spec is not None and hinted_group(spec.scheduler_hints or {}) is not None

    def _request_spec(self, server_uuid: str, run: StepRun | None = None) -> Any:
        """The server's request spec, or None: the one the step read when it
        took the migration (``run``), else read now."""
        if run is not None and run.request_spec_loaded and run.server_uuid == server_uuid:
            return run.request_spec
        try:
            return self.db.request_spec_get(server_uuid)
        except exception.RequestSpecNotFound:
            return None

    def _claim_first(
        self,
        migration: Any,
        run: StepRun,
        strategy: ClaimStrategy,
        facts: ResizeFacts,
        selection: Selection,
        tried: frozenset[str],
    ) -> Destination:
        """Claim the first destination that Placement accepts."""
        queue = list(selection.destinations)
        complete = selection.complete
        while True:
            while queue:
                dest = queue.pop(0)
                if dest.provider in tried:
                    continue
                groups = None
                if grouped(facts):
                    # NOTE: which provider holds which group from now on (a
                    # failure or a revert gives the old map back); known
                    # before the write, so a same-host claim that splits what
                    # it holds keeps each group where the map says.
                    groups = strategy.claim_groups(
                        facts, dest.provider, dest.allocation_request, dest.mappings
                    )
                target = strategy.claim(
                    dataclasses.replace(facts, claimed_groups=groups),
                    dest.provider,
                    dest.allocation_request,
                )
                try:
                    migration = self.deps.executor.apply(migration, "claim", target, run=run)
                except exception.PlacementConflict as exc:
                    # NOTE: a capacity refusal, or generation conflicts past
                    # the executor's retries: either way this host is out.
                    LOG.info(
                        "Migration %s: claim on %s refused (%s); next alternate",
                        migration.uuid,
                        dest.host,
                        exc,
                    )
                    tried = tried | {dest.provider}
                    continue
                server_values = {"group_providers": groups} if grouped(facts) else None
                try:
                    self.db.migration_advance(
                        migration.uuid,
                        ends=run,
                        reload=False,
                        expected_status=self.SCHEDULING_STATUS,
                        step="claim",
                        dest_host=dest.host,
                        dest_node=dest.host,
                        dest_rp_uuid=dest.provider,
                        alternates=[dest_to_dict(d) for d in queue],
                        alternates_complete=complete,
                        tried=sorted(tried),
                        status=self.CLAIMED_STATUS,
                        server_values=server_values,
                        group_host=dest.host if self._grouped(migration, run) else None,
                    )
                except exception.GroupPolicyViolation as exc:
                    # NOTE: the late check (Nova's): a member racing onto
                    # this host recorded it first. The next claim replaces
                    # this one; with none left the failure restores the old.
                    LOG.info("Migration %s: %s; next alternate", migration.uuid, exc)
                    tried = tried | {dest.provider}
                    continue
                LOG.info("Migration %s claimed %s", migration.uuid, dest.host)
                return dest
            if complete:
                break
            # NOTE: prefer_same_host answered from the source alone; it could
            # not be claimed (or failed to prepare), so now ask every other host.
            complete = True
            request = self._scheduling_request(migration, strategy, facts, tried, run=run)
            queue = list(self.deps.scheduler.select_destinations(request).destinations)
        # NOTE: a claim can be refused for good, not only for want of room
        # now: max_flavor's source query asks only for the increase, but the
        # claim holds the larger flavor whole, which a max_unit may forbid.
        # Judge it as a failed query is judged (failure path only).
        verdict = self.deps.scheduler.no_valid_host(
            self._scheduling_request(migration, strategy, facts, run=run), found=len(tried)
        )
        if verdict.kind == exception.NoValidHost.INFEASIBLE:
            raise verdict
        raise exception.NoValidHost(
            kind=exception.NoValidHost.DEFERRED,
            reason=f"every candidate host refused the claim ({len(tried)} tried)",
        )
