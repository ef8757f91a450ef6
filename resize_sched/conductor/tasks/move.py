"""What every move of a server shares: the step, the schedule, the claim, the failure.

A move (a resize, a cold migration, and every later kind) holds the server's
source through its migration record: the migration's uuid is a Placement
consumer, and every allocation change goes through the claim strategy
recorded on the migration (never the one configured now) and the transition
executor, so each step is one journaled, atomic Placement write.

:class:`MoveTask` is the base each move's task extends. It owns:

- the one way a step runs (:meth:`MoveTask._step`): it takes the migration
  with a compare-and-swap on its status
  (:meth:`~resize_sched.db.step_api.StepApi.migration_acquire`) and opens its
  instance-action event in the same transaction, so a duplicate or late
  delivery of the same message finds another status or an owner and is a
  logged no-op; the step ends with one transaction that moves the migration
  and its server on together, and only while no delete has been asked for
  (:meth:`~resize_sched.db.step_api.StepApi.migration_advance`);
- scheduling with the policies (:mod:`resize_sched.conductor.tasks.policy`),
  the claim on the first destination Placement accepts, and moving to the
  alternates when a destination fails;
- the failure: the server gets exactly its old allocation back, and the
  verdict is recorded in words an operator can act on;
- giving back, through the executor, what a step wrote when it lost to a
  delete.

A subclass names its steps' events (:attr:`MoveTask.STEP_EVENTS`) and adds
what only its move does (a resize's finish, confirm and revert).
"""

import threading
import uuid as uuidlib
from collections.abc import Callable
from concurrent import futures
from typing import Any, ClassVar

from oslo_log import log as logging

from resize_sched import exception, words
from resize_sched import resources as rs
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.conductor.tasks.facts import facts_of, group_devices, grouped
from resize_sched.conductor.tasks.policy import Placed, hinted_group, policy_fields
from resize_sched.db import models
from resize_sched.db.steps import StepEvent, StepRun
from resize_sched.scheduler.manager import (
    Destination,
    SchedulingRequest,
    Selection,
    flavor_filters,
)
from resize_sched.strategies import ClaimStrategy, Holdings, ResizeFacts

LOG = logging.getLogger(__name__)

#: The steps that may ask the scheduler: they read the server's request spec
#: in the transaction that takes the migration.
SCHEDULING_STEPS = frozenset({"schedule", "reschedule"})


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


def _dest_to_dict(dest: Destination) -> dict[str, Any]:
    data = {
        "provider": dest.provider,
        "host": dest.host,
        "allocation_request": dest.allocation_request,
        "same_host": dest.same_host,
    }
    if dest.mappings is not None:
        data["mappings"] = dest.mappings
    return data


def _dest_from_dict(data: dict[str, Any]) -> Destination:
    return Destination(
        data["provider"],
        data["host"],
        data["allocation_request"],
        data["same_host"],
        data.get("mappings"),
    )


class MoveTask:
    """Runs the steps every move of a server shares.

    :param deps: configuration, database, Placement client, scheduler, executor.
    """

    #: The instance-action event each step records (os-instance-actions), and
    #: the actions it belongs to; a step not named records none.
    STEP_EVENTS: ClassVar[dict[str, tuple[str, tuple[str, ...]]]] = {}
    #: The migration's status while it waits for a destination, once one is
    #: claimed, and every status from which the move may still fail (a live
    #: migration has Nova's own: ``accepted``, ``preparing``, ``running``).
    SCHEDULING_STATUS: ClassVar[str] = "pre-migrating"
    CLAIMED_STATUS: ClassVar[str] = "migrating"
    FAILABLE_STATUSES: ClassVar[tuple[str, ...]] = ("pre-migrating", "migrating", "post-migrating")

    def __init__(self, deps: TaskDeps) -> None:
        self.deps = deps
        self.db = deps.db

    # -- the one way a step runs -----------------------------------------------------

    def _step(
        self,
        migration_uuid: str,
        expect: str | tuple[str, ...],
        name: str,
        body: Callable[[Any, StepRun], Any],
        *,
        take_late: bool = False,
    ) -> Any:
        """Run ``body(migration, run)`` if the step is due; else do nothing.

        The step takes the migration and opens its event in one transaction;
        its last write ends it (``migration_advance(..., ends=run)``), or one
        more transaction does when it fails or was not due after all.

        :param take_late: the step starts with a read and takes the
            migration with its first journal entry (a schedule: its first
            write is one; see :mod:`resize_sched.db.steps`).

        :returns: what ``body`` returns, or None when the step was not due or
            lost the migration part-way (a delete, another step).
        """
        event = None
        if name in self.STEP_EVENTS:
            event_name, belongs_to = self.STEP_EVENTS[name]
            event = StepEvent(event_name, belongs_to, self.deps.conf.host)
        run = StepRun(
            migration_uuid,
            str(uuidlib.uuid4()),
            name,
            event,
            load_request_spec=name in SCHEDULING_STEPS,
            take_late=take_late,
        )
        try:
            migration = self.db.step_begin(run, expect)
        except exception.StepNotDue as exc:
            LOG.info("%s Nothing to do.", exc)
            return None
        error: BaseException | None = None
        not_due = False
        try:
            return body(migration, run)
        except exception.StepNotDue as exc:
            LOG.info("%s Stopping the step.", exc)
            not_due = True
            self._give_back_if_deleted(migration_uuid)
            return None
        except BaseException as exc:
            error = exc
            if run.failure is None and isinstance(exc, exception.PlacementError):
                run.failure = words.step_failed(
                    name,
                    exc,
                    migration.source_host,
                    {
                        migration.source_rp_uuid: migration.source_host,
                        migration.dest_rp_uuid: migration.dest_host,
                    },
                )
            raise
        finally:
            self.db.step_end(run, error=error, not_due=not_due)

    def _give_back_if_deleted(self, migration_uuid: str) -> None:
        """A step lost to a delete: release anything it wrote after the delete's release."""
        migration = self.db.migration_get(migration_uuid)
        server = self.db.server_get(migration.server_uuid, read_deleted=True)
        if server.deleted_at is None and server.task_state != "deleting":
            return
        try:
            self.deps.executor.release(migration)
        except exception.PlacementError as exc:
            # NOTE: the journal keeps the entry intended; recovery releases it.
            LOG.warning(
                "Migration %s: release after the delete left to recovery: %s", migration_uuid, exc
            )

    # -- schedule and claim -------------------------------------------------------

    def schedule(self, migration_uuid: str) -> Destination | None:
        """Prepare, schedule and claim; return the claimed destination.

        :returns: the destination, or None when the migration is no longer
            ``pre-migrating`` (a duplicate, or deleted meanwhile).
        :raises NoValidHost: no host could take it; the server got its old
            allocation back and the migration is in ``error``.
        :raises RestoreFailed: as above, but even the old allocation could not
            be put back; the server is flagged for healing.
        """
        return self._step(
            migration_uuid, self.SCHEDULING_STATUS, "schedule", self._schedule, take_late=True
        )

    def _schedule(self, migration: Any, run: StepRun) -> Destination:
        strategy = self.deps.strategy(migration.claim_strategy)
        facts = facts_of(migration)
        try:
            migration, selection = self._prepare_and_select(migration, run, strategy, facts)
            return self._claim_first(migration, run, strategy, facts, selection, frozenset())
        except exception.NoValidHost as exc:
            run.failure = self._no_host_words(migration, exc.kind, exc.reason)
            self._fail(migration.uuid, run, kind=exc.kind, reason=exc.reason)
            raise

    def _no_host_words(self, migration: Any, kind: str, why: str) -> str:
        """The verdict, in words, of a move that found no host: what the
        scheduler said and what to do next, by the move's kind."""
        return words.no_host_for_move(
            migration.migration_type, kind, why, migration.new_flavor, migration.source_host
        )

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

    def reschedule(
        self, migration_uuid: str, reason: str, host: str | None = None
    ) -> Destination | None:
        """The claimed destination failed to prepare: move to the next alternate.

        One transition goes from the current holdings to the next host's
        target; with no alternate left the resize fails and restores. When
        the first answer came from the source alone (``prefer_same_host``),
        the other hosts are asked now.

        :param host: the host that failed; a report from a host the resize
            has already left changes nothing.
        :returns: the new destination, or None when the migration is no
            longer ``migrating`` (a duplicate report, or deleted meanwhile).
        :raises NoValidHost: no alternate could be claimed (restored).
        """
        return self._step(
            migration_uuid,
            "migrating",
            "reschedule",
            lambda migration, run: self._reschedule(migration, run, reason, host),
        )

    def _reschedule(
        self, migration: Any, run: StepRun, reason: str, host: str | None
    ) -> Destination:
        if host is not None and host != migration.dest_host:
            # NOTE: the step owns the migration, so its destination cannot
            # change under this check.
            raise exception.StepNotDue(
                migration_id=migration.uuid,
                step=f"reschedule after a failure on {host}",
                reason=f"the resize has moved on to {migration.dest_host}",
            )
        strategy = self.deps.strategy(migration.claim_strategy)
        facts = facts_of(migration)
        LOG.warning(
            "Migration %s: destination %s failed (%s); trying alternates",
            migration.uuid,
            migration.dest_host,
            reason,
        )
        tried = frozenset(migration.tried or ()) | {migration.dest_rp_uuid}
        alternates = [_dest_from_dict(d) for d in migration.alternates or ()]
        complete = migration.alternates_complete is not False
        migration = self.db.migration_update(
            migration.uuid,
            expected_status="migrating",
            owner=run.token,
            tried=sorted(tried),
            status="pre-migrating",
        )
        try:
            return self._claim_first(
                migration, run, strategy, facts, Selection(alternates, complete), tried
            )
        except exception.NoValidHost as exc:
            run.failure = self._no_host_words(
                migration,
                exc.kind,
                f"preparing it on host {host or migration.dest_host} failed "
                f"({words.reason_of(reason)}), and {exc.reason}",
            )
            self._fail(migration.uuid, run, kind=exc.kind, reason=f"{reason}; {exc.reason}")
            raise

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
        # NOTE: a cold migration moves the server off its host: never back
        # to the source, and only to the host an administrator named.
        leaves = migration.migration_type == models.MIGRATION_TYPE_MIGRATION
        requested = getattr(migration, "requested_host", None)
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
                target = strategy.claim(facts, dest.provider, dest.allocation_request)
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
                server_values = None
                if grouped(facts):
                    # NOTE: which provider holds which group from now on; a
                    # failure or a revert gives the old map back.
                    server_values = {
                        "group_providers": strategy.claim_groups(
                            facts, dest.provider, dest.allocation_request, dest.mappings
                        )
                    }
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
                        alternates=[_dest_to_dict(d) for d in queue],
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

    def _settled(self, server_uuid: str) -> tuple[str, str]:
        """(status, vm_state) the server ends a resize in: SHUTOFF when it
        was stopped (its power state is kept through the resize), as Nova."""
        try:
            server = self.db.server_get(server_uuid)
        except exception.ServerNotFound:
            return models.settled_state(None)
        return models.settled_state(server.power_state)

    # -- failure -------------------------------------------------------------------

    def fail(
        self, migration_uuid: str, *, kind: str, reason: str, server_error: bool = False
    ) -> Any:
        """End the resize without a host: the server gets exactly its old allocation.

        :param kind: ``deferred``, ``infeasible`` (no host) or ``failed`` (a
            compute host failed after the claim).
        :param server_error: put the server in ERROR (a compute host failed
            part-way, as Nova does) instead of back to ACTIVE.
        :returns: the migration, or None when it had already ended (or the
            server is being deleted).
        :raises RestoreFailed: Placement refused even that; the server is
            flagged ``needs_heal`` and the migration records what is missing.
        """
        return self._step(
            migration_uuid,
            self.FAILABLE_STATUSES,
            "fail",
            lambda migration, run: self._fail(
                migration.uuid, run, kind=kind, reason=reason, server_error=server_error
            ),
        )

    def _fail(
        self,
        migration_uuid: str,
        run: StepRun,
        *,
        kind: str,
        reason: str,
        server_error: bool = False,
        ended: str = "error",
    ) -> Any:
        """Give the server exactly its old allocation back on the source and
        end the migration in ``ended`` (``error``; ``cancelled`` for an
        aborted live migration)."""
        if not run.taken:
            # NOTE: a schedule that wrote nothing yet (see MoveTask._step)
            # takes the migration before failing it: a duplicate that read
            # it before its twin claimed and handed it on stops here.
            self.db.step_take(run)
        migration = self.db.migration_get(migration_uuid)
        strategy = self.deps.strategy(migration.claim_strategy)
        facts = facts_of(migration)
        LOG.warning("Migration %s failed (%s): %s", migration.uuid, kind, reason)
        status_after, vm_state_after = self._settled(migration.server_uuid)
        server_values: dict[str, Any] = {
            "status": "ERROR" if server_error else status_after,
            "vm_state": "error" if server_error else vm_state_after,
            "task_state": None,
            "host": migration.source_host,
            "node": migration.source_node,
            "rp_uuid": migration.source_rp_uuid,
            "flavor": migration.old_flavor,
        }
        if server_error:
            server_values.update(fault_message=reason, fault_code=500)
        ending = {
            "expected_status": self.FAILABLE_STATUSES,
            "step": "fail",
            "status": ended,
            "error_kind": kind,
        }
        try:
            migration = self.deps.executor.apply(
                migration, "restore", strategy.restore(facts), run=run
            )
        except exception.ClaimRefused as exc:
            why = "a compute host failed its part" if kind == "failed" else reason
            run.failure = words.restore_refused(migration.source_host, why)
            server_values.update(needs_heal=True, fault_message=run.failure, fault_code=409)
            self.db.migration_advance(
                migration.uuid,
                token=run.token,
                error_reason=f"{reason}; restore refused: {exc}",
                missing=Holdings(server=facts.original).to_dict(),
                server_values=server_values,
                **ending,
            )
            raise exception.RestoreFailed(
                server_id=migration.server_uuid, source=migration.source_host, reason=str(exc)
            ) from exc
        generations = (migration.holdings or {}).get("generations", {})
        server_values["placement_generation"] = generations.get("server")
        server_values["allocations"] = recorded_allocations(
            facts.original, migration.source_rp_uuid
        )
        if grouped(facts):
            server_values["group_providers"] = facts.group_providers
        return self.db.migration_advance(
            migration.uuid,
            token=run.token,
            error_reason=reason,
            server_values=server_values,
            **ending,
        )
