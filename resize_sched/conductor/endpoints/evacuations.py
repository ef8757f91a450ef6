"""The conductor's endpoints of an evacuation.

Schedule, the destination's rebuilt report, a failed rebuild, and the source
given back once its host reports again.
"""

from resize_sched import exception
from resize_sched.conductor.endpoints.base import Endpoint, MoveFailure
from resize_sched.conductor.endpoints.checks import LOG, handler
from resize_sched.context import RequestContext
from resize_sched.db import action_api, states


class EvacuationEndpoints(Endpoint):
    """``evacuate_server`` and ``evacuation_rebuilt``."""

    @handler
    def evacuate_server(self, ctxt: RequestContext, migration_uuid: str) -> None:
        """Schedule and claim an evacuation, then ask the destination to rebuild."""
        self._schedule_move(
            self.evacuations,
            migration_uuid,
            then=lambda dest: self._rebuild(ctxt, migration_uuid),
            ended=lambda exc: self._evacuation_ended(migration_uuid),
        )

    def _rebuild(self, ctxt: RequestContext, migration_uuid: str) -> None:
        migration = self.db.migration_get(migration_uuid)
        self._compute_event("rebuild", migration.server_uuid, migration.dest_host)
        # NOTE: with its server, and whether it runs after (a stopped server
        # stays powered off).
        message = self._message(migration, with_server=True, power=True)
        self.compute.rebuild_instance(ctxt, migration.dest_host, message)

    def _evacuation_ended(self, migration_uuid: str) -> None:
        try:
            migration = self.db.migration_get(migration_uuid)
        except exception.NotFound:
            return
        if migration.status in (*states.FINAL_STATUSES, states.MIGRATION_DONE):
            self.db.action_finish(migration.server_uuid, (action_api.EVACUATE,))

    @handler
    def evacuation_rebuilt(self, ctxt: RequestContext, migration_uuid: str, host: str) -> None:
        migration = self.evacuations.rebuilt(migration_uuid, host)
        if migration is None:
            return
        self._compute_event("rebuild", migration.server_uuid, host, result=action_api.SUCCESS)
        self.db.action_finish(migration.server_uuid, (action_api.EVACUATE,))

    def _evacuation_failed(self, ctxt: RequestContext, failure: MoveFailure) -> None:
        said = self._said(failure)
        migration = self.db.migration_get(failure.migration_uuid)
        if failure.host is not None and failure.host != migration.dest_host:
            LOG.info(
                "Rebuild failure of %s from %s, not its destination",
                failure.migration_uuid,
                failure.host,
            )
            return
        try:
            ended = self.evacuations.fail_rebuild(failure.migration_uuid, said)
        except exception.RestoreFailed as exc:
            LOG.warning("Evacuation %s: restore refused: %s", failure.migration_uuid, exc)
            ended = self.db.migration_get(failure.migration_uuid)
        if ended is None:
            return
        self._compute_event("rebuild", failure.server_uuid, failure.host, reason=said)
        self.compute.destroy(ctxt, ended.dest_host, failure.server_uuid)
        self.db.action_finish(failure.server_uuid, (action_api.EVACUATE,))

    def _sources_back(self, ctxt: RequestContext, host: str) -> None:
        """``host`` reported: it is back. Each server evacuated from it has
        its copy there removed and the room it held there given back."""
        for server_uuid in self.evacuations.host_back(host):
            self.compute.destroy(ctxt, host, server_uuid)
