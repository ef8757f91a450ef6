"""The resize flow: begin, schedule and claim, reschedule, finish, confirm, revert.

Every allocation change goes through the claim strategy recorded on the
migration (never the one configured now) and the transition executor, so each
step is one journaled, atomic Placement write. The compute side (prep_resize,
resize, finish_resize) is driven over RPC by the services; here its outcomes
arrive as calls to :meth:`ResizeTask.reschedule` and :meth:`ResizeTask.finish`.

Migration statuses follow Nova's: ``pre-migrating`` from begin until a host
is claimed, ``migrating`` once claimed and handed to compute, ``finished`` in
VERIFY_RESIZE, then ``confirming``/``confirmed`` or ``reverting``/``reverted``;
``error`` when the resize ended without a host.
"""

from typing import Any

from oslo_log import log as logging

from resize_sched import actions, exception
from resize_sched import resources as rs
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.scheduler.manager import Destination, SchedulingRequest, Selection
from resize_sched.strategies import ClaimStrategy, Holdings, ResizeFacts

LOG = logging.getLogger(__name__)


def facts_of(migration: Any) -> ResizeFacts:
    """The strategy's view of a migration row."""
    return ResizeFacts(
        source=migration.source_rp_uuid,
        old=migration.old_resources,
        new=migration.new_resources,
    )


def _dest_to_dict(dest: Destination) -> dict[str, Any]:
    return {
        "provider": dest.provider,
        "host": dest.host,
        "allocation_request": dest.allocation_request,
        "same_host": dest.same_host,
    }


def _dest_from_dict(data: dict[str, Any]) -> Destination:
    return Destination(
        data["provider"], data["host"], data["allocation_request"], data["same_host"]
    )


class ResizeTask:
    """Runs one server's resize through its phases.

    :param deps: configuration, database, Placement client, scheduler, executor.
    """

    def __init__(self, deps: TaskDeps) -> None:
        self.deps = deps
        self.db = deps.db

    # -- begin ------------------------------------------------------------------

    def begin(self, server_uuid: str, flavorid: str, project_id: str | None = None) -> Any:
        """Validate and record a resize with the strategy configured now.

        See :func:`resize_sched.actions.begin_resize` for the errors.
        """
        strategy = self.deps.configured_strategy()
        return actions.begin_resize(self.db, strategy, server_uuid, flavorid, project_id)

    # -- schedule and claim -------------------------------------------------------

    def schedule(self, migration_uuid: str) -> Destination:
        """Prepare, schedule and claim; return the claimed destination.

        :raises NoValidHost: no host could take it; the server got its old
            allocation back and the migration is in ``error``.
        :raises RestoreFailed: as above, but even the old allocation could not
            be put back; the server is flagged for healing.
        """
        migration = self.db.migration_get(migration_uuid)
        strategy = self.deps.strategy(migration.claim_strategy)
        facts = facts_of(migration)
        try:
            migration = self.deps.executor.apply(migration, "prepare", strategy.prepare(facts))
            selection = self.deps.scheduler.select_destinations(
                self._scheduling_request(migration, strategy, facts)
            )
            return self._claim_first(migration, strategy, facts, selection, frozenset())
        except exception.NoValidHost as exc:
            self.fail(migration_uuid, kind=exc.kind, reason=exc.reason)
            raise

    def reschedule(self, migration_uuid: str, reason: str) -> Destination:
        """The claimed destination failed to prepare: move to the next alternate.

        One transition goes from the current holdings to the next host's
        target; with no alternate left the resize fails and restores.

        :raises NoValidHost: no alternate could be claimed (restored).
        """
        migration = self.db.migration_get(migration_uuid)
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
        migration = self.db.migration_update(
            migration.uuid,
            expected_status=("pre-migrating", "migrating"),
            tried=sorted(tried),
            status="pre-migrating",
        )
        try:
            return self._claim_first(
                migration, strategy, facts, Selection(alternates, complete=True), tried
            )
        except exception.NoValidHost as exc:
            self.fail(migration_uuid, kind=exc.kind, reason=f"{reason}; {exc.reason}")
            raise

    def _scheduling_request(
        self,
        migration: Any,
        strategy: ClaimStrategy,
        facts: ResizeFacts,
        tried: frozenset[str] = frozenset(),
    ) -> SchedulingRequest:
        conf = self.deps.conf
        request = rs.flavor_request(migration.new_flavor)
        spec = self._request_spec(migration.server_uuid)
        return SchedulingRequest(
            destination_request=strategy.destination_request(facts),
            required_traits=request.required_traits,
            source=facts.source,
            source_request=strategy.source_request(facts),
            allow_same_host=conf.resize.allow_same_host,
            prefer_same_host=conf.resize.prefer_same_host,
            ignore_hosts=frozenset(spec.ignore_hosts if spec else ()),
            # NOTE: as in Nova, hosts forced at boot do not bind a resize.
            ignore_providers=tried,
        )

    def _request_spec(self, server_uuid: str) -> Any:
        try:
            return self.db.request_spec_get(server_uuid)
        except exception.RequestSpecNotFound:
            return None

    def _claim_first(
        self,
        migration: Any,
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
                    migration = self.deps.executor.apply(migration, "claim", target)
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
                self.db.migration_update(
                    migration.uuid,
                    dest_host=dest.host,
                    dest_node=dest.host,
                    dest_rp_uuid=dest.provider,
                    alternates=[_dest_to_dict(d) for d in queue],
                    tried=sorted(tried),
                    status="migrating",
                )
                LOG.info("Migration %s claimed %s", migration.uuid, dest.host)
                return dest
            if complete:
                break
            # NOTE: prefer_same_host answered from the source alone; it could
            # not be claimed after all, so now ask about every other host.
            complete = True
            request = self._scheduling_request(migration, strategy, facts, tried)
            queue = list(self.deps.scheduler.select_destinations(request).destinations)
        raise exception.NoValidHost(
            kind=exception.NoValidHost.DEFERRED,
            reason=f"every candidate host refused the claim ({len(tried)} tried)",
        )

    # -- finish, confirm, revert ---------------------------------------------------

    def finish(self, migration_uuid: str) -> Any:
        """The destination finished the resize: the server waits in VERIFY_RESIZE."""
        migration = self.db.migration_update(
            migration_uuid, expected_status="migrating", status="finished"
        )
        self.db.server_update(
            migration.server_uuid,
            expected={"status": "RESIZE"},
            status="VERIFY_RESIZE",
            vm_state="resized",
            task_state=None,
            host=migration.dest_host,
            node=migration.dest_node,
            rp_uuid=migration.dest_rp_uuid,
            flavor=migration.new_flavor,
        )
        return migration

    def confirm(self, server_uuid: str) -> Any:
        """Record and complete a confirm (what the API and conductor do in turn)."""
        migration = actions.begin_confirm(self.db, server_uuid)
        return self.complete_confirm(migration.uuid)

    def revert(self, server_uuid: str) -> Any:
        """Record and complete a revert (what the API and conductor do in turn)."""
        migration = actions.begin_revert(self.db, server_uuid)
        return self.complete_revert(migration.uuid)

    def complete_confirm(self, migration_uuid: str) -> Any:
        """Keep the new flavor: release what the resize held beyond it.

        :raises PlacementError: Placement refused or failed; the server is back
            in VERIFY_RESIZE and the confirm can be retried.
        """
        return self._decide(migration_uuid, "confirm")

    def complete_revert(self, migration_uuid: str) -> Any:
        """Go back to the old flavor on the source.

        :raises ClaimRefused: the old flavor no longer fits on the source (only
            possible for a same-host ``drop_and_reclaim``); nothing changed, the
            server is back in VERIFY_RESIZE and the revert can be retried.
        """
        return self._decide(migration_uuid, "revert")

    def _decide(self, migration_uuid: str, decision: str) -> Any:
        """Apply the recorded strategy's confirm or revert target, then settle."""
        migration = self.db.migration_get(migration_uuid)
        strategy = self.deps.strategy(migration.claim_strategy)
        phase = strategy.confirm if decision == "confirm" else strategy.revert
        facts = facts_of(migration)
        dest = migration.dest_rp_uuid
        try:
            migration = self.deps.executor.apply(
                migration, decision, lambda cur: phase(facts, cur, dest)
            )
        except exception.PlacementError as exc:
            self._undecide(migration, exc)
            raise
        if decision == "confirm":
            return self._settle(
                migration,
                "confirmed",
                flavor=migration.new_flavor,
                host=migration.dest_host,
                node=migration.dest_node,
                rp_uuid=dest,
            )
        return self._settle(
            migration,
            "reverted",
            flavor=migration.old_flavor,
            host=migration.source_host,
            node=migration.source_node,
            rp_uuid=migration.source_rp_uuid,
        )

    def _undecide(self, migration: Any, exc: Exception) -> None:
        """A confirm or revert failed: back to VERIFY_RESIZE, the fault recorded."""
        LOG.warning("Migration %s: %s failed: %s", migration.uuid, migration.status, exc)
        self.db.migration_update(migration.uuid, status="finished")
        self.db.server_update(
            migration.server_uuid,
            status="VERIFY_RESIZE",
            task_state=None,
            fault_message=str(exc),
            fault_code=409 if isinstance(exc, exception.PlacementConflict) else 500,
        )

    def _settle(self, migration: Any, status: str, **server_values: Any) -> Any:
        """Record the final holdings on the server and close the migration."""
        generations = (migration.holdings or {}).get("generations", {})
        self.db.server_update(
            migration.server_uuid,
            status="ACTIVE",
            vm_state="active",
            task_state=None,
            placement_generation=generations.get("server"),
            **server_values,
        )
        return self.db.migration_update(migration.uuid, status=status)

    # -- failure -------------------------------------------------------------------

    def fail(
        self, migration_uuid: str, *, kind: str, reason: str, server_error: bool = False
    ) -> Any:
        """End the resize without a host: the server gets exactly its old allocation.

        :param kind: ``deferred``, ``infeasible`` (no host) or ``failed`` (a
            compute host failed after the claim).
        :param server_error: put the server in ERROR (a compute host failed
            part-way, as Nova does) instead of back to ACTIVE.
        :raises RestoreFailed: Placement refused even that; the server is
            flagged ``needs_heal`` and the migration records what is missing.
        """
        migration = self.db.migration_get(migration_uuid)
        strategy = self.deps.strategy(migration.claim_strategy)
        facts = facts_of(migration)
        LOG.warning("Migration %s failed (%s): %s", migration.uuid, kind, reason)
        server_values: dict[str, Any] = {
            "status": "ERROR" if server_error else "ACTIVE",
            "vm_state": "error" if server_error else "active",
            "task_state": None,
            "host": migration.source_host,
            "node": migration.source_node,
            "rp_uuid": migration.source_rp_uuid,
            "flavor": migration.old_flavor,
        }
        if server_error:
            server_values.update(fault_message=reason, fault_code=500)
        try:
            migration = self.deps.executor.apply(migration, "restore", strategy.restore(facts))
        except exception.ClaimRefused as exc:
            self.db.migration_update(
                migration.uuid,
                status="error",
                error_kind=kind,
                error_reason=f"{reason}; restore refused: {exc}",
                missing=Holdings(server=facts.original).to_dict(),
            )
            server_values.update(needs_heal=True, fault_message=str(exc), fault_code=409)
            self.db.server_update(migration.server_uuid, **server_values)
            raise exception.RestoreFailed(
                server_id=migration.server_uuid, source=migration.source_host, reason=str(exc)
            ) from exc
        migration = self.db.migration_update(
            migration.uuid, status="error", error_kind=kind, error_reason=reason
        )
        generations = (migration.holdings or {}).get("generations", {})
        self.db.server_update(
            migration.server_uuid,
            placement_generation=generations.get("server"),
            **server_values,
        )
        return migration
