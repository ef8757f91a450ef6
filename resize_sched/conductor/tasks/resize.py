"""The resize flow: begin, finish, confirm, revert (over :mod:`.move`).

A resize is a move whose new flavor may differ from the old; the steps every
move shares (schedule and claim, reschedule, fail, the give-back after a
delete) are :class:`~resize_sched.conductor.tasks.move.MoveTask`'s. The
compute side (prep_resize, resize, finish_resize) is driven over RPC by the
services; its outcomes arrive here as calls to :meth:`ResizeTask.prepared`,
:meth:`ResizeTask.finish` and the base's ``reschedule``.

Migration statuses follow Nova's: ``pre-migrating`` from begin until a host
is claimed, ``migrating`` once claimed and handed to compute, ``finished`` in
VERIFY_RESIZE, then ``confirming``/``confirmed`` or ``reverting``/``reverted``;
``error`` when the resize ended without a host (or the server was deleted).
"""

from typing import Any, ClassVar

from oslo_log import log as logging

from resize_sched import actions, exception, words
from resize_sched import resources as rs
from resize_sched.conductor.tasks.facts import facts_of, grouped
from resize_sched.conductor.tasks.move import MoveTask, recorded_allocations
from resize_sched.context import RequestContext
from resize_sched.db import action_api
from resize_sched.db.project_scope import ALL_PROJECTS, ProjectScope
from resize_sched.db.steps import StepRun
from resize_sched.strategies import Holdings

LOG = logging.getLogger(__name__)


def _decided_on(migration: Any, decision: str) -> str:
    """The host whose allocation a confirm or revert changes: the one it keeps."""
    return str(migration.dest_host if decision == "confirm" else migration.source_host)


class ResizeTask(MoveTask):
    """Runs one server's resize through its phases.

    :param deps: configuration, database, Placement client, scheduler, executor.
    """

    STEP_EVENTS: ClassVar[dict[str, tuple[str, tuple[str, ...]]]] = {
        "schedule": ("conductor_migrate_server", action_api.RESIZE_OR_MIGRATE),
        "reschedule": ("conductor_migrate_server", action_api.RESIZE_OR_MIGRATE),
        "confirm": ("conductor_confirm_resize", (action_api.CONFIRM_RESIZE,)),
        "revert": ("conductor_revert_resize", (action_api.REVERT_RESIZE,)),
    }

    # -- begin ------------------------------------------------------------------

    def begin(
        self,
        server_uuid: str,
        flavorid: str,
        project_id: ProjectScope = ALL_PROJECTS,
        context: RequestContext | None = None,
    ) -> Any:
        """Validate and record a resize with the strategy configured now.

        :param context: the caller's; given, the resize is recorded as an
            instance action too (os-instance-actions), as the API records it.

        See :func:`resize_sched.actions.begin_resize` for the errors.
        """
        strategy = self.deps.configured_strategy()
        return actions.begin_resize(
            self.db, strategy, server_uuid, flavorid, project_id, context=context
        )

    # -- finish, confirm, revert ---------------------------------------------------

    def finish(self, migration_uuid: str) -> Any:
        """The destination finished the resize: the server waits in VERIFY_RESIZE.

        :returns: the migration, or None when it is no longer ``migrating``
            (a duplicate report, or the server is being deleted).
        """
        migration = self.db.migration_get(migration_uuid)
        return self._advance_on_report(
            migration_uuid,
            expected_status=("migrating", "post-migrating"),
            step="finish",
            status="finished",
            server_expected={"status": "RESIZE"},
            server_values={
                "status": "VERIFY_RESIZE",
                "vm_state": "resized",
                "task_state": None,
                "host": migration.dest_host,
                "node": migration.dest_node,
                "rp_uuid": migration.dest_rp_uuid,
                "flavor": migration.new_flavor,
            },
        )

    def prepared(self, migration_uuid: str, host: str | None = None) -> Any:
        """The destination prepared: the source may hand the server over.

        ``migrating`` -> ``post-migrating``, once: a duplicate report, or one
        from a host the resize has left (``host`` is not the destination),
        changes nothing.

        :returns: the migration, or None when the report is not due.
        """
        expected = {"dest_host": host} if host is not None else {}
        return self._advance_on_report(
            migration_uuid,
            expected_status="migrating",
            migration_expected=expected,
            step="prepared report" + (f" from {host}" if host else ""),
            status="post-migrating",
            server_values={"task_state": "resize_migrating"},
        )

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

        :returns: the migration, or None when it is not ``confirming`` (a
            duplicate, a confirm the API never accepted, or a delete).
        :raises PlacementError: Placement refused (never for room or
            inventory: a confirm only empties the migration consumer, save a
            resize claimed before the split, whose server is shrunk); the
            server is back in VERIFY_RESIZE and the confirm can be retried.
        :raises PlacementUnavailable: twice unanswered; the confirm stays in
            progress and the sweep completes it.
        """
        return self._step(
            migration_uuid,
            "confirming",
            "confirm",
            lambda migration, run: self._decide(migration, run, "confirm"),
        )

    def complete_revert(self, migration_uuid: str) -> Any:
        """Go back to the old flavor on the source.

        :returns: the migration, or None when it is not ``reverting``.
        :raises PlacementConflict: the source no longer admits the old flavor
            (:class:`ClaimRefused`: its room was taken, a same-host
            ``drop_and_reclaim``'s, or its capacity lowered; or an amount is
            beyond its inventory's ``max_unit``); nothing changed, the server
            is back in VERIFY_RESIZE, and the sweep begins the revert again
            once the source's inventory or usage changes.
        """
        return self._step(
            migration_uuid,
            "reverting",
            "revert",
            lambda migration, run: self._decide(migration, run, "revert"),
        )

    def _decide(self, migration: Any, run: StepRun, decision: str) -> Any:
        """Apply the recorded strategy's confirm or revert target, then settle.

        The target is worked out once from what we last wrote, and only the
        consumers it changes are written. A confirm writes the migration
        consumer alone, to empty (every strategy's claim gave the server
        exactly what it keeps), which Placement never refuses for capacity
        or inventory; a revert writes the server back to the old flavor and
        empties the migration. A consumer that keeps what it holds is not
        written again: Placement checks every amount written against the
        provider's inventory as it is now (``max_unit``, capacity), so a
        re-write of an unchanged holding could be refused for what is already
        held. What that re-write used to notice (someone else writing one of
        our consumers since we did) is still noticed where it is cheap: every
        write carries the consumer generation we last wrote, so a change to a
        written consumer is a 409, re-read and judged; a change to the
        unwritten server is the audit's and heal's to find.
        """
        strategy = self.deps.strategy(migration.claim_strategy)
        phase = strategy.confirm if decision == "confirm" else strategy.revert
        facts = facts_of(migration)
        dest = migration.dest_rp_uuid
        known = self.deps.executor.known(migration)
        if (
            decision == "confirm"
            and facts.new_groups
            and dest == facts.source
            and rs.total(known.holdings.server) != facts.new
        ):
            # NOTE: a same-host resize claimed before the claim split what it
            # holds (the server holds max(old, new)): the shrink keeps each
            # group on the provider the claim recorded (one read).
            server = self.db.server_get(migration.server_uuid)
            facts = facts_of(migration, server.group_providers)
        status = "confirming" if decision == "confirm" else "reverting"
        target = phase(facts, known.holdings, dest)
        for attempt in (1, 2):
            try:
                migration = self.deps.executor.apply(migration, decision, target, run=run)
                break
            except exception.PlacementUnavailable as exc:
                # NOTE: whether the write landed is unknown, so the server
                # cannot go back to VERIFY_RESIZE: the write may have given
                # up room it still runs in. Once more now (the executor reads
                # Placement first); then the migration stays confirming or
                # reverting, and the sweep completes it.
                if attempt == 2:
                    LOG.warning(
                        "Migration %s: %s left for the sweep: %s", migration.uuid, status, exc
                    )
                    run.failure = words.decision_unanswered(
                        decision, _decided_on(migration, decision)
                    )
                    raise
                LOG.warning(
                    "Migration %s: %s unanswered (%s); once more", migration.uuid, status, exc
                )
                migration = self.db.migration_get(migration.uuid)
            except exception.PlacementError as exc:
                self._undecide(migration, run, status, exc)
                raise
        known_after = migration.holdings or {}
        generations = known_after.get("generations", {})
        status_after, vm_state_after = self._settled(migration.server_uuid)
        if decision == "confirm":
            values = {
                "flavor": migration.new_flavor,
                "host": migration.dest_host,
                "node": migration.dest_node,
                "rp_uuid": dest,
            }
        else:
            values = {
                "flavor": migration.old_flavor,
                "host": migration.source_host,
                "node": migration.source_node,
                "rp_uuid": migration.source_rp_uuid,
            }
            if grouped(facts):
                values["group_providers"] = facts.group_providers
        return self.db.migration_advance(
            migration.uuid,
            ends=run,
            expected_status=status,
            step=decision,
            status="confirmed" if decision == "confirm" else "reverted",
            server_expected={"task_state": f"resize_{status}"},
            server_values={
                "status": status_after,
                "vm_state": vm_state_after,
                "task_state": None,
                "placement_generation": generations.get("server"),
                "allocations": recorded_allocations(known_after.get("server"), values["rp_uuid"]),
                **values,
            },
        )

    def _undecide(self, migration: Any, run: StepRun, status: str, exc: Exception) -> None:
        """A confirm or revert failed: back to VERIFY_RESIZE, the fault recorded.

        Nothing changed in Placement (the executor put back what is held).
        The fault quotes Placement and names the host it refused (the source
        for a revert) and what the resize still holds. A refusal the host's
        inventory or usage may lift (no room, a ``max_unit`` below the
        flavor) is recorded on the migration with the refused provider's
        generation, and the conductor's sweep begins the same decision again
        once that generation moves (:mod:`resize_sched.conductor.retry`).
        """
        LOG.warning("Migration %s: %s failed: %s", migration.uuid, status, exc)
        decision = "confirm" if status == "confirming" else "revert"
        hosts = {
            migration.source_rp_uuid: migration.source_host,
            migration.dest_rp_uuid: migration.dest_host,
        }
        known = self.db.migration_get(migration.uuid).holdings
        held = Holdings.from_dict(known or {})
        refused = None
        if words.placement_refusal(exc) != "other":
            provider = _refused_provider(migration, decision, held, exc)
            refused = {
                "decision": decision,
                "provider": provider,
                "generation": self._generation_of(provider),
            }
        run.failure = words.decision_refused(
            decision,
            _decided_on(migration, decision),
            exc,
            hosts,
            running_on=migration.dest_host,
            # NOTE: holdings forgotten (an unanswered write before) are not
            # said rather than said to be nothing.
            holds=words.held_by_resize(held.server, held.migration, hosts) if known else "",
            retried=refused is not None,
        )
        self.db.migration_advance(
            migration.uuid,
            token=run.token,
            expected_status=status,
            step=f"undo {status}",
            status="finished",
            refused_decision=refused,
            server_values={
                "status": "VERIFY_RESIZE",
                "task_state": None,
                "fault_message": run.failure,
                "fault_code": 409 if isinstance(exc, exception.PlacementConflict) else 500,
            },
        )

    def _generation_of(self, provider: str) -> int | None:
        """The provider's generation now; None when Placement does not say
        (the sweep then tries the decision again at its next pass).

        Read after the refusal, on the refusal path only: a change between
        the two is seen at the provider's next change, not this one."""
        try:
            return self.deps.client.get_resource_provider(provider).get("generation")
        except exception.PlacementError as exc:
            LOG.info("Provider %s: generation not read (%s)", provider, exc)
            return None


def _refused_provider(migration: Any, decision: str, held: Holdings, exc: Exception) -> str:
    """The provider Placement refused: the one its answer names among those
    the resize holds or gives back; else the host the decision writes (the
    source for a revert)."""
    text = str(exc)
    known = set(held.server) | set(held.migration) | set(migration.old_allocations or {})
    known |= {migration.source_rp_uuid, migration.dest_rp_uuid}
    for provider in sorted(p for p in known if p):
        if provider in text:
            return str(provider)
    return str(migration.source_rp_uuid if decision == "revert" else migration.dest_rp_uuid)
