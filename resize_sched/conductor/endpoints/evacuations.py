"""The conductor's endpoints of an evacuation: schedule, the destination's
rebuilt report, a failed rebuild, and the source given back once its host
reports again."""

from resize_sched import exception
from resize_sched.conductor.endpoints.base import Endpoint
from resize_sched.conductor.endpoints.checks import LOG, handler
from resize_sched.context import RequestContext
from resize_sched.db import action_api, models


class EvacuationEndpoints(Endpoint):
    """``evacuate_server`` and ``evacuation_rebuilt``."""

    @handler
    def evacuate_server(self, ctxt: RequestContext, migration_uuid: str) -> None:
        """Schedule and claim an evacuation, then ask the destination to rebuild."""
        dest = self._schedule_move(
            self.evacuations, migration_uuid, lambda exc: self._evacuation_ended(migration_uuid)
        )
        if dest is not None:
            self._rebuild(ctxt, migration_uuid)

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
        if migration.status in (*models.FINAL_STATUSES, models.MIGRATION_DONE):
            self.db.action_finish(migration.server_uuid, (action_api.EVACUATE,))

    @handler
    def evacuation_rebuilt(self, ctxt: RequestContext, migration_uuid: str, host: str) -> None:
        migration = self.evacuations.rebuilt(migration_uuid, host)
        if migration is None:
            return
        self._compute_event("rebuild", migration.server_uuid, host, result=action_api.SUCCESS)
        self.db.action_finish(migration.server_uuid, (action_api.EVACUATE,))

    def _evacuation_failed(
        self,
        ctxt: RequestContext,
        operation: str,
        reason: str,
        server_uuid: str,
        migration_uuid: str,
        host: str | None,
    ) -> None:
        said = self._said(operation, host, reason, migration_uuid)
        migration = self.db.migration_get(migration_uuid)
        if host is not None and host != migration.dest_host:
            LOG.info("Rebuild failure of %s from %s, not its destination", migration_uuid, host)
            return
        try:
            ended = self.evacuations.fail_rebuild(migration_uuid, said)
        except exception.RestoreFailed as exc:
            LOG.warning("Evacuation %s: restore refused: %s", migration_uuid, exc)
            ended = self.db.migration_get(migration_uuid)
        if ended is None:
            return
        self._compute_event("rebuild", server_uuid, host, reason=said)
        self.compute.destroy(ctxt, ended.dest_host, server_uuid)
        self.db.action_finish(server_uuid, (action_api.EVACUATE,))

    def _sources_back(self, ctxt: RequestContext, host: str) -> None:
        """``host`` reported: it is back. Each server evacuated from it has
        its copy there removed and the room it held there given back."""
        for migration in self.db.migration_list(statuses=(models.MIGRATION_DONE,)):
            if (
                migration.migration_type != models.MIGRATION_TYPE_EVACUATION
                or migration.source_host != host
            ):
                continue
            try:
                done = self.evacuations.source_back(migration.uuid)
            except exception.PlacementError as exc:
                LOG.warning("Evacuation %s: source not given back yet: %s", migration.uuid, exc)
                continue
            if done is None:
                continue
            server = self.db.server_get(migration.server_uuid, read_deleted=True)
            if server.host != host:
                LOG.info(
                    "Host %s is back: removing its copy of evacuated server %s",
                    host,
                    server.uuid,
                )
                self.compute.destroy(ctxt, host, server.uuid)
