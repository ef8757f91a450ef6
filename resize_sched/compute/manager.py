"""Server side of the compute RPC API: one endpoint per compute host.

Each method runs one driver step and reports the outcome to the conductor
(:class:`resize_sched.conductor.rpcapi.ConductorAPI`). The manager never
touches Placement allocations or the database: the conductor is their only
writer and decides what a report means.

The resize handshake between hosts::

    conductor --prep_resize--> dest       dest   --resize_prepared--> conductor
    conductor --resize_instance--> source source --finish_resize--> dest
                                          dest   --resize_finished--> conductor
    conductor --confirm_resize--> source
    conductor --revert_resize--> dest     dest   --revert_resize--> source

A live migration's::

    conductor --pre_live_migration--> dest  dest   --live_migration_prepared--> conductor
    conductor --live_migration--> source    source --post_live_migration_at_destination--> dest
                                            dest   --live_migration_finished--> conductor

Every failure is reported with ``operation_failed`` under the operation names
of :data:`resize_sched.conf.fake_driver.OPERATIONS`.

Around each driver step the manager sends Nova's versioned notifications
(:mod:`resize_sched.notifications`): ``instance.<action>.start`` before it,
``.end`` after it (before the next host or the conductor is told, so the
events of one resize arrive in order) and, when the step fails,
``instance.resize.error`` or ``instance.create.error`` with the reason.
A revert sends its ``start`` from the destination and its ``end`` from the
source, as Nova does.
"""

from collections.abc import Callable
from typing import Any

import oslo_messaging as messaging
from oslo_log import log as logging

from resize_sched import exception, notifications, rpc
from resize_sched.compute import rpcapi as compute_rpcapi
from resize_sched.compute.driver import base as driver_base
from resize_sched.conductor import rpcapi as conductor_rpcapi
from resize_sched.context import RequestContext

LOG = logging.getLogger(__name__)


class _Reported(Exception):
    """A step's failure already reported to the conductor in its own words."""


class ComputeManager:
    """The RPC endpoint of one compute host.

    :param host: this host's name (``[DEFAULT] host``).
    :param driver: the hypervisor driver of this host.
    :param conductor_api: where to report outcomes.
    :param compute_api: how to reach the other host of a resize.
    :param notifier: where to send notifications. When None, one is built from
        the configuration ``compute_api`` was built with
        (``[oslo_messaging_notifications]``; off by default), or none is sent
        if that is not known.
    """

    target = messaging.Target(namespace=compute_rpcapi.NAMESPACE, version=compute_rpcapi.VERSION)

    def __init__(
        self,
        host: str,
        driver: driver_base.ComputeDriver,
        conductor_api: conductor_rpcapi.ConductorAPI,
        compute_api: compute_rpcapi.ComputeAPI,
        notifier: messaging.Notifier | None = None,
    ) -> None:
        self.host = host
        self.driver = driver
        self.conductor_api = conductor_api
        self.compute_api = compute_api
        if notifier is None:
            conf = getattr(compute_api, "conf", None)
            if conf is not None:
                notifier = rpc.get_notifier(
                    conf, notifications.publisher_id(notifications.COMPUTE, host)
                )
        self.notifier = notifier

    # -- the RPC API ------------------------------------------------------------------

    @messaging.expose
    def spawn(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """Create ``server``; report ``build_done`` or ``operation_failed("spawn")``."""
        server = kwargs["server"]

        def step() -> None:
            self._notify_server(ctxt, notifications.CREATE, notifications.START, server)
            self.driver.spawn(server)
            self._notify_server(ctxt, notifications.CREATE, notifications.END, server)
            self.conductor_api.build_done(ctxt, server_uuid=server["uuid"])

        def failed(fault: dict[str, Any]) -> None:
            self._notify_server(ctxt, notifications.CREATE, notifications.ERROR, server, fault)

        self._run(ctxt, "spawn", step, server["uuid"], on_failure=failed)

    @messaging.expose
    def prep_resize(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the destination: accept ``migration``; report ``resize_prepared``."""
        migration = kwargs["migration"]

        def step() -> None:
            self._notify_resize(ctxt, notifications.RESIZE_PREP, notifications.START, migration)
            self.driver.prep_resize(migration)
            self._notify_resize(ctxt, notifications.RESIZE_PREP, notifications.END, migration)
            self.conductor_api.resize_prepared(
                ctxt, migration_uuid=migration["uuid"], host=self.host
            )

        self._run_migration(ctxt, "prep_resize", step, migration)

    @messaging.expose
    def resize_instance(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the source: power off and hand over; cast ``finish_resize`` to the destination."""
        migration = kwargs["migration"]

        def step() -> None:
            self._notify_resize(ctxt, notifications.RESIZE, notifications.START, migration)
            self.driver.migrate_disk_and_power_off(migration)
            self._notify_resize(ctxt, notifications.RESIZE, notifications.END, migration)
            self.compute_api.finish_resize(ctxt, migration["dest_host"], migration)

        self._run_migration(ctxt, "resize", step, migration)

    @messaging.expose
    def finish_resize(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the destination: start with the new flavor; report ``resize_finished``."""
        migration = kwargs["migration"]

        def step() -> None:
            self._notify_resize(ctxt, notifications.RESIZE_FINISH, notifications.START, migration)
            self.driver.finish_migration(migration)
            self._notify_resize(ctxt, notifications.RESIZE_FINISH, notifications.END, migration)
            self.conductor_api.resize_finished(ctxt, migration_uuid=migration["uuid"])

        self._run_migration(ctxt, "finish_resize", step, migration)

    @messaging.expose
    def confirm_resize(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the source: drop the old copy; only a failure is reported."""
        migration = kwargs["migration"]

        def step() -> None:
            self._notify_resize(ctxt, notifications.RESIZE_CONFIRM, notifications.START, migration)
            self.driver.confirm_migration(migration)
            self._notify_resize(ctxt, notifications.RESIZE_CONFIRM, notifications.END, migration)

        self._run_migration(ctxt, "confirm", step, migration)

    @messaging.expose
    def revert_resize(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """Destination: destroy the new copy, then cast to the source; source:
        restart with the old flavor. Same host: the source part only. Only a
        failure is reported."""
        migration = kwargs["migration"]
        source, dest = migration["source_host"], migration["dest_host"]

        def step() -> None:
            revert = notifications.RESIZE_REVERT
            if self.host == dest and dest != source:
                self._notify_resize(ctxt, revert, notifications.START, migration)
                self.driver.revert(migration)
                self.compute_api.revert_resize(ctxt, source, migration)
            elif self.host == source:
                if dest == source:
                    self._notify_resize(ctxt, revert, notifications.START, migration)
                self.driver.finish_revert(migration)
                self._notify_resize(ctxt, revert, notifications.END, migration)
            else:
                raise exception.Invalid(
                    reason=f"revert of migration {migration['uuid']} ({source} -> {dest}) "
                    f"was sent to {self.host}"
                )

        self._run_migration(ctxt, "revert", step, migration)

    # -- live migration -----------------------------------------------------------------

    @messaging.expose
    def pre_live_migration(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the destination: make ready; report ``live_migration_prepared``."""
        migration = kwargs["migration"]

        def step() -> None:
            self._notify_live(
                ctxt, notifications.LIVE_MIGRATION_PRE, notifications.START, migration
            )
            self.driver.pre_live_migration(migration)
            self._notify_live(ctxt, notifications.LIVE_MIGRATION_PRE, notifications.END, migration)
            self.conductor_api.live_migration_prepared(
                ctxt, migration_uuid=migration["uuid"], host=self.host
            )

        self._run(ctxt, "pre_live_migration", step, migration["server_uuid"], migration["uuid"])

    @messaging.expose
    def live_migration(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the source: hand over (abortable), clean up, tell the destination.

        An abort is reported as ``live_migration_abort``; a failure of the
        clean-up after the hand-over as ``post_live_migration`` (the server
        then already runs on the destination).
        """
        migration = kwargs["migration"]
        server_uuid, migration_uuid = migration["server_uuid"], migration["uuid"]

        def hand_over() -> None:
            try:
                self.driver.live_migration(migration)
            except exception.LiveMigrationAborted as exc:
                self._notify_live(
                    ctxt, notifications.LIVE_MIGRATION_ABORT, notifications.END, migration
                )
                self.conductor_api.operation_failed(
                    ctxt,
                    "live_migration_abort",
                    f"{exc.message} [{exc.code}]",
                    server_uuid=server_uuid,
                    migration_uuid=migration_uuid,
                    host=self.host,
                )
                raise _Reported() from exc

        def post() -> None:
            self._notify_live(
                ctxt, notifications.LIVE_MIGRATION_POST, notifications.START, migration
            )
            self.driver.post_live_migration(migration)
            self._notify_live(
                ctxt, notifications.LIVE_MIGRATION_POST, notifications.END, migration
            )
            self.compute_api.post_live_migration_at_destination(
                ctxt, migration["dest_host"], migration
            )

        try:
            if not self._run(ctxt, "live_migration", hand_over, server_uuid, migration_uuid):
                return
        except _Reported:
            return
        self._run(ctxt, "post_live_migration", post, server_uuid, migration_uuid)

    @messaging.expose
    def live_migration_abort(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the source: stop the hand-over; the running step reports it."""
        migration = kwargs["migration"]
        self._notify_live(ctxt, notifications.LIVE_MIGRATION_ABORT, notifications.START, migration)
        self.driver.live_migration_abort(migration["uuid"])

    @messaging.expose
    def live_migration_force_complete(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the source: end the hand-over now."""
        migration = kwargs["migration"]
        action = notifications.LIVE_MIGRATION_FORCE_COMPLETE
        self._notify_live(ctxt, action, notifications.START, migration)
        self.driver.live_migration_force_complete(migration["uuid"])
        self._notify_live(ctxt, action, notifications.END, migration)

    @messaging.expose
    def post_live_migration_at_destination(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the destination: the server is this host's; report ``live_migration_finished``."""
        migration = kwargs["migration"]
        action = notifications.LIVE_MIGRATION_POST_DEST
        self._notify_live(ctxt, action, notifications.START, migration)
        self.driver.post_live_migration_at_destination(migration)
        self._notify_live(ctxt, action, notifications.END, migration)
        self.conductor_api.live_migration_finished(ctxt, migration_uuid=migration["uuid"])

    @messaging.expose
    def rollback_live_migration_at_destination(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the destination: remove what pre_live_migration made; nothing is reported."""
        migration = kwargs["migration"]
        action = notifications.LIVE_MIGRATION_ROLLBACK_DEST
        self._notify_live(ctxt, action, notifications.START, migration)
        self.driver.rollback_live_migration_at_destination(migration)
        self._notify_live(ctxt, action, notifications.END, migration)

    @messaging.expose
    def rollback_live_migration_at_source(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the source: the hand-over stopped; the server runs on here."""
        migration = kwargs["migration"]
        action = notifications.LIVE_MIGRATION_ROLLBACK
        self._notify_live(ctxt, action, notifications.START, migration)
        self.driver.rollback_live_migration_at_source(migration)
        self._notify_live(ctxt, action, notifications.END, migration)

    # -- evacuation -----------------------------------------------------------------------

    @messaging.expose
    def rebuild_instance(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On an evacuation's destination: rebuild; report ``evacuation_rebuilt``."""
        migration = kwargs["migration"]
        server = migration.get("server") or {"uuid": migration["server_uuid"]}

        def step() -> None:
            self._notify_server(ctxt, notifications.REBUILD, notifications.START, server)
            self.driver.rebuild(migration)
            self._notify_server(ctxt, notifications.REBUILD, notifications.END, server)
            self.conductor_api.evacuation_rebuilt(
                ctxt, migration_uuid=migration["uuid"], host=self.host
            )

        self._run(ctxt, "rebuild", step, migration["server_uuid"], migration["uuid"])

    @messaging.expose
    def power_off(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """Stop ``server``; report ``power_changed`` or ``operation_failed("stop")``."""
        self._power(ctxt, kwargs["server"], on=False)

    @messaging.expose
    def power_on(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """Start ``server``; report ``power_changed`` or ``operation_failed("start")``."""
        self._power(ctxt, kwargs["server"], on=True)

    def _power(self, ctxt: RequestContext, server: dict[str, Any], *, on: bool) -> None:
        action = notifications.POWER_ON if on else notifications.POWER_OFF

        def step() -> None:
            self._notify_server(ctxt, action, notifications.START, server)
            if on:
                self.driver.power_on(server)
            else:
                self.driver.power_off(server)
            self._notify_server(ctxt, action, notifications.END, server)
            self.conductor_api.power_changed(
                ctxt,
                server_uuid=server["uuid"],
                power_state=driver_base.POWER_RUNNING if on else driver_base.POWER_SHUTDOWN,
                host=self.host,
            )

        self._run(ctxt, "start" if on else "stop", step, server["uuid"])

    # -- shelving ----------------------------------------------------------------------

    @messaging.expose
    def shelve_instance(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """Power ``server`` off for a shelve; report ``server_shelved``."""
        server = kwargs["server"]

        def step() -> None:
            self._notify_server(ctxt, notifications.SHELVE, notifications.START, server)
            self.driver.shelve(server)
            self._notify_server(ctxt, notifications.SHELVE, notifications.END, server)
            self.conductor_api.server_shelved(ctxt, server_uuid=server["uuid"], host=self.host)

        self._run(ctxt, "shelve", step, server["uuid"])

    @messaging.expose
    def shelve_offload_instance(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """Remove the shelved ``server`` from this host; report ``server_offloaded``."""
        server = kwargs["server"]

        def step() -> None:
            self._notify_server(ctxt, notifications.SHELVE_OFFLOAD, notifications.START, server)
            self.driver.shelve_offload(server)
            self._notify_server(ctxt, notifications.SHELVE_OFFLOAD, notifications.END, server)
            self.conductor_api.server_offloaded(ctxt, server_uuid=server["uuid"], host=self.host)

        self._run(ctxt, "shelve_offload", step, server["uuid"])

    @messaging.expose
    def unshelve_instance(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """Start the shelved ``server`` here; report ``server_unshelved``."""
        server = kwargs["server"]

        def step() -> None:
            self._notify_server(ctxt, notifications.UNSHELVE, notifications.START, server)
            self.driver.unshelve(server)
            self._notify_server(ctxt, notifications.UNSHELVE, notifications.END, server)
            self.conductor_api.server_unshelved(ctxt, server_uuid=server["uuid"], host=self.host)

        self._run(ctxt, "unshelve", step, server["uuid"])

    @messaging.expose
    def destroy(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """Remove ``server_uuid`` from this host; nothing is reported.

        ``server`` (optional: older senders do not send it) fills the delete
        notifications; without it they carry the uuid and host only.
        """
        server_uuid = kwargs["server_uuid"]
        server = kwargs.get("server") or {"uuid": server_uuid}
        try:
            self._notify_server(ctxt, notifications.DELETE, notifications.START, server)
            self.driver.destroy(server_uuid)
            self._notify_server(ctxt, notifications.DELETE, notifications.END, server)
        except Exception:
            # NOTE: the conductor has already released the allocations; there is
            # no report for a destroy, so the log is all an operator gets.
            LOG.exception("Destroying server %s on %s failed", server_uuid, self.host)

    # -- helpers ------------------------------------------------------------------------

    def _notify_server(
        self,
        ctxt: RequestContext,
        action: str,
        phase: str,
        server: dict[str, Any],
        fault: dict[str, Any] | None = None,
    ) -> None:
        notifications.emit(
            self.notifier,
            ctxt,
            action,
            phase,
            lambda: notifications.instance_step_payload(action, phase, server, self.host, fault),
        )

    def _notify_resize(
        self,
        ctxt: RequestContext,
        action: str,
        phase: str,
        migration: dict[str, Any],
        fault: dict[str, Any] | None = None,
    ) -> None:
        notifications.emit(
            self.notifier,
            ctxt,
            action,
            phase,
            lambda: notifications.resize_step_payload(action, phase, migration, fault),
        )

    def _notify_live(
        self, ctxt: RequestContext, action: str, phase: str, migration: dict[str, Any]
    ) -> None:
        server = migration.get("server") or {"uuid": migration["server_uuid"]}
        notifications.emit(
            self.notifier,
            ctxt,
            action,
            phase,
            lambda: notifications.live_migration_payload(action, phase, server, migration),
        )

    def _run_migration(
        self,
        ctxt: RequestContext,
        operation: str,
        step: Callable[[], None],
        migration: dict[str, Any],
    ) -> None:
        action = notifications.RESIZE_OPERATIONS[operation]

        def failed(fault: dict[str, Any]) -> None:
            self._notify_resize(ctxt, action, notifications.ERROR, migration, fault)

        self._run(
            ctxt, operation, step, migration["server_uuid"], migration["uuid"], on_failure=failed
        )

    def _run(
        self,
        ctxt: RequestContext,
        operation: str,
        step: Callable[[], None],
        server_uuid: str,
        migration_uuid: str | None = None,
        on_failure: Callable[[dict[str, Any]], None] | None = None,
    ) -> bool:
        """Run ``step``; report any failure to the conductor as ``operation``,
        after ``on_failure`` (which sends the error notification) is given
        the fault.

        :returns: whether ``step`` succeeded.
        """
        LOG.debug(
            "%s of server %s (migration %s) on %s",
            operation,
            server_uuid,
            migration_uuid,
            self.host,
        )
        try:
            step()
        except _Reported:
            raise
        except exception.ResizeSchedException as exc:
            LOG.warning("%s of server %s on %s failed: %s", operation, server_uuid, self.host, exc)
            reason = f"{exc.message} [{exc.code}]"
            error: Exception = exc
        except Exception as exc:
            LOG.exception(
                "%s of server %s on %s failed unexpectedly", operation, server_uuid, self.host
            )
            reason = f"unexpected error on host {self.host}: {type(exc).__name__}: {exc}"
            error = exc
        else:
            return True
        if on_failure is not None and notifications.enabled(self.notifier):
            on_failure(
                notifications.fault_payload(
                    notifications.KIND_FAILED, reason, operation=operation, exc=error
                )
            )
        try:
            self.conductor_api.operation_failed(
                ctxt,
                operation,
                reason,
                server_uuid=server_uuid,
                migration_uuid=migration_uuid,
                host=self.host,
            )
        except Exception as exc:
            # NOTE: the broker is down, most likely; the conductor's sweep takes
            # the resize on after [conductor] stuck_after, so no traceback.
            LOG.warning(
                "Could not report the failed %s of server %s to the conductor "
                "(its sweep will take the resize on): %s",
                operation,
                server_uuid,
                exc,
            )
        return False
