"""Server side of the compute RPC API: one endpoint per compute host.

Each method runs one driver step and reports the outcome to the conductor
(:class:`resize_sched.conductor.rpcapi.ConductorAPI`). The manager never
touches Placement allocations or the database: the conductor is their only
writer and decides what a report means. Most methods are one row of the
table in :mod:`resize_sched.compute.steps`, run by :meth:`ComputeManager._step`;
a revert, a live migration's hand-over and its abort, and a destroy have
shapes of their own and are written out here.

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
from resize_sched.compute import steps
from resize_sched.compute.driver import base as driver_base
from resize_sched.conductor import rpcapi as conductor_rpcapi
from resize_sched.context import RequestContext

LOG = logging.getLogger(__name__)


class _Reported(Exception):
    """A step's failure already reported to the conductor in its own words."""


def _uuids(message: dict[str, Any]) -> tuple[str, str | None]:
    """The server's and the migration's uuid of a ``server`` or ``migration`` message.

    NOTE: a migration message always has ``server_uuid``; a server message never does.
    """
    if "server_uuid" in message:
        return message["server_uuid"], message["uuid"]
    return message["uuid"], None


def _server_of(message: dict[str, Any]) -> dict[str, Any]:
    """The server a message is about: itself, or the one a migration carries
    (older senders send only its uuid)."""
    if "server_uuid" not in message:
        return message
    return message.get("server") or {"uuid": message["server_uuid"]}


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

    # -- the RPC API: most methods run one row of compute/steps.py ---------------------

    @messaging.expose
    def spawn(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """Create ``server``; report ``build_done`` or ``operation_failed("spawn")``."""
        self._step(ctxt, steps.SPAWN, kwargs["server"])

    @messaging.expose
    def prep_resize(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the destination: accept ``migration``; report ``resize_prepared``."""
        self._step(ctxt, steps.PREP_RESIZE, kwargs["migration"])

    @messaging.expose
    def resize_instance(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the source: power off and hand over; cast ``finish_resize`` to the destination."""
        self._step(ctxt, steps.RESIZE_INSTANCE, kwargs["migration"])

    @messaging.expose
    def finish_resize(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the destination: start with the new flavor; report ``resize_finished``."""
        self._step(ctxt, steps.FINISH_RESIZE, kwargs["migration"])

    @messaging.expose
    def confirm_resize(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the source: drop the old copy; only a failure is reported."""
        self._step(ctxt, steps.CONFIRM_RESIZE, kwargs["migration"])

    @messaging.expose
    def revert_resize(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """Destination: destroy the new copy, then cast to the source; source:
        restart with the old flavor. Same host: the source part only. Only a
        failure is reported."""
        migration = kwargs["migration"]
        source, dest = migration["source_host"], migration["dest_host"]
        revert = notifications.RESIZE_REVERT

        def step() -> None:
            if self.host == dest and dest != source:
                self._notify(ctxt, revert, notifications.START, migration)
                self.driver.revert(migration)
                self.compute_api.revert_resize(ctxt, source, migration)
            elif self.host == source:
                if dest == source:
                    self._notify(ctxt, revert, notifications.START, migration)
                self.driver.finish_revert(migration)
                self._notify(ctxt, revert, notifications.END, migration)
            else:
                raise exception.Invalid(
                    reason=f"revert of migration {migration['uuid']} ({source} -> {dest}) "
                    f"was sent to {self.host}"
                )

        self._run(ctxt, "revert", step, migration, error_action=revert)

    @messaging.expose
    def power_off(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """Stop ``server``; report ``power_changed`` or ``operation_failed("stop")``."""
        self._step(ctxt, steps.POWER_OFF, kwargs["server"])

    @messaging.expose
    def power_on(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """Start ``server``; report ``power_changed`` or ``operation_failed("start")``."""
        self._step(ctxt, steps.POWER_ON, kwargs["server"])

    # -- live migration -----------------------------------------------------------------

    @messaging.expose
    def pre_live_migration(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the destination: make ready; report ``live_migration_prepared``."""
        self._step(ctxt, steps.PRE_LIVE_MIGRATION, kwargs["migration"])

    @messaging.expose
    def live_migration(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the source: hand over (abortable), clean up, tell the destination.

        An abort is reported as ``live_migration_abort``; a failure of the
        clean-up after the hand-over as ``post_live_migration`` (the server
        then already runs on the destination).
        """
        migration = kwargs["migration"]

        def hand_over() -> None:
            try:
                self.driver.live_migration(migration)
            except exception.LiveMigrationAborted as exc:
                abort = notifications.LIVE_MIGRATION_ABORT
                self._notify(ctxt, abort, notifications.END, migration)
                self.conductor_api.operation_failed(
                    ctxt,
                    "live_migration_abort",
                    f"{exc.message} [{exc.code}]",
                    server_uuid=migration["server_uuid"],
                    migration_uuid=migration["uuid"],
                    host=self.host,
                )
                raise _Reported() from exc

        try:
            if not self._run(ctxt, "live_migration", hand_over, migration):
                return
        except _Reported:
            return
        self._step(ctxt, steps.POST_LIVE_MIGRATION, migration)

    @messaging.expose
    def live_migration_abort(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the source: stop the hand-over; the running step reports it (and sends the end)."""
        migration = kwargs["migration"]
        self._notify(ctxt, notifications.LIVE_MIGRATION_ABORT, notifications.START, migration)
        self.driver.live_migration_abort(migration["uuid"])

    @messaging.expose
    def live_migration_force_complete(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the source: end the hand-over now."""
        self._step(ctxt, steps.LIVE_MIGRATION_FORCE_COMPLETE, kwargs["migration"])

    @messaging.expose
    def post_live_migration_at_destination(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the destination: the server is this host's; report ``live_migration_finished``."""
        self._step(ctxt, steps.POST_LIVE_MIGRATION_AT_DESTINATION, kwargs["migration"])

    @messaging.expose
    def rollback_live_migration_at_destination(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the destination: remove what pre_live_migration made; nothing is reported."""
        self._step(ctxt, steps.ROLLBACK_LIVE_MIGRATION_AT_DESTINATION, kwargs["migration"])

    @messaging.expose
    def rollback_live_migration_at_source(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On the source: the hand-over stopped; the server runs on here."""
        self._step(ctxt, steps.ROLLBACK_LIVE_MIGRATION_AT_SOURCE, kwargs["migration"])

    # -- evacuation, shelving, deleting ---------------------------------------------------

    @messaging.expose
    def rebuild_instance(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """On an evacuation's destination: rebuild; report ``evacuation_rebuilt``."""
        self._step(ctxt, steps.REBUILD_INSTANCE, kwargs["migration"])

    @messaging.expose
    def shelve_instance(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """Power ``server`` off for a shelve; report ``server_shelved``."""
        self._step(ctxt, steps.SHELVE_INSTANCE, kwargs["server"])

    @messaging.expose
    def shelve_offload_instance(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """Remove the shelved ``server`` from this host; report ``server_offloaded``."""
        self._step(ctxt, steps.SHELVE_OFFLOAD_INSTANCE, kwargs["server"])

    @messaging.expose
    def unshelve_instance(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """Start the shelved ``server`` here; report ``server_unshelved``."""
        self._step(ctxt, steps.UNSHELVE_INSTANCE, kwargs["server"])

    @messaging.expose
    def destroy(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """Remove ``server_uuid`` from this host; nothing is reported.

        ``server`` (optional: older senders do not send it) fills the delete
        notifications; without it they carry the uuid and host only.
        """
        server_uuid = kwargs["server_uuid"]
        server = kwargs.get("server") or {"uuid": server_uuid}
        try:
            self._notify(ctxt, notifications.DELETE, notifications.START, server)
            self.driver.destroy(server_uuid)
            self._notify(ctxt, notifications.DELETE, notifications.END, server)
        except Exception:
            # NOTE: the conductor has already released the allocations; there is
            # no report for a destroy, so the log is all an operator gets.
            LOG.exception("Destroying server %s on %s failed", server_uuid, self.host)

    # -- running a step ------------------------------------------------------------------

    def _step(self, ctxt: RequestContext, step: steps.Step, message: dict[str, Any]) -> bool:
        """Run one row of :mod:`resize_sched.compute.steps` on ``message``.

        :returns: whether the step succeeded (a step whose failures are not
            caught raises them).
        """

        def run() -> None:
            self._notify(ctxt, step.action, notifications.START, message)
            call = getattr(self.driver, step.driver)
            call(message["uuid"] if step.by_uuid else message)
            self._notify(ctxt, step.action, notifications.END, message)
            if step.report is not None:
                server_uuid, migration_uuid = _uuids(message)
                subject = (
                    {"server_uuid": server_uuid}
                    if migration_uuid is None
                    else {"migration_uuid": migration_uuid}
                )
                host = {"host": self.host} if step.report_host else {}
                report = getattr(self.conductor_api, step.report)
                report(ctxt, **subject, **step.report_args, **host)
            if step.forward is not None:
                forward = getattr(self.compute_api, step.forward)
                forward(ctxt, message["dest_host"], message)

        if step.operation is None:
            run()
            return True
        error_action = step.action if step.error else None
        return self._run(ctxt, step.operation, run, message, error_action=error_action)

    def _notify(
        self,
        ctxt: RequestContext,
        action: str,
        phase: str,
        message: dict[str, Any],
        fault: dict[str, Any] | None = None,
    ) -> None:
        """Send ``instance.<action>.<phase>`` about ``message``, with the
        payload its kind of action carries: a resize step's, a live
        migration's, or the server's own."""

        def build() -> dict[str, Any]:
            if action in notifications.RESIZE_OPERATIONS.values():
                return notifications.resize_step_payload(action, phase, message, fault)
            if action in notifications.LIVE_MIGRATION_ACTIONS:
                server = _server_of(message)
                return notifications.live_migration_payload(action, phase, server, message)
            return notifications.instance_step_payload(
                action, phase, _server_of(message), self.host, fault
            )

        notifications.emit(self.notifier, ctxt, action, phase, build)

    def _run(
        self,
        ctxt: RequestContext,
        operation: str,
        step: Callable[[], None],
        message: dict[str, Any],
        error_action: str | None = None,
    ) -> bool:
        """Run ``step``; report any failure to the conductor as ``operation``,
        after sending ``instance.<error_action>.error`` (when given) with the
        fault.

        :returns: whether ``step`` succeeded.
        """
        server_uuid, migration_uuid = _uuids(message)
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
        if error_action is not None and notifications.enabled(self.notifier):
            fault = notifications.fault_payload(
                notifications.KIND_FAILED, reason, operation=operation, exc=error
            )
            self._notify(ctxt, error_action, notifications.ERROR, message, fault)
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
