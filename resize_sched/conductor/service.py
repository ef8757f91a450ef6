"""One conductor worker: database, Placement client, tasks and an RPC server.

Usable in-process (the all-in-one and the tests run it on the ``fake://``
transport) and as a worker of the ``resize-sched-conductor`` daemon.
"""

import threading

import oslo_messaging as messaging
from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc

from resize_sched import checks, exception, notifications, rpc
from resize_sched.compute.rpcapi import ComputeAPI
from resize_sched.conductor import recovery, reports
from resize_sched.conductor.manager import ConductorManager
from resize_sched.conductor.rpcapi import TOPIC
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.db import ERRORS as DB_ERRORS
from resize_sched.db.api import Database
from resize_sched.placement.client import PlacementClient

LOG = logging.getLogger(__name__)


class ConductorService:
    """A conductor RPC server and the state it needs.

    :param conf: parsed configuration.
    :param transport: the RPC transport (shared by everything in one process
        on ``fake://``); built from ``[DEFAULT] transport_url`` when None.
    :param recover: run crash recovery at start (one worker per process does).
    """

    def __init__(
        self,
        conf: cfg.ConfigOpts,
        transport: messaging.Transport | None = None,
        *,
        recover: bool = True,
    ) -> None:
        self.conf = conf
        self.transport = transport or rpc.get_transport(conf)
        self.db = Database.from_conf(conf)
        self.client = PlacementClient.from_conf(conf)
        self.deps = TaskDeps.build(conf, self.db, self.client)
        # NOTE: fail at start, naming the installed strategies (and filters
        # and weighers), rather than at the first resize.
        self.deps.configured_strategy()
        self.deps.scheduler.load_plugins()
        self.notifier = rpc.get_notifier(
            conf, notifications.publisher_id(notifications.CONDUCTOR, conf.host)
        )
        self.manager = ConductorManager(self.deps, ComputeAPI(conf, self.transport), self.notifier)
        self._recover = recover
        self.server: messaging.MessageHandlingServer | None = None
        self.recovery_report: recovery.RecoveryReport | None = None
        self._stopping = threading.Event()
        self._sweeper: threading.Thread | None = None
        self.heartbeat = reports.ConductorHeartbeat(self.db, conf.host, conf.report_interval)

    def start(self) -> None:
        """Recover in-flight resizes, then serve the conductor topic and report
        this conductor's heartbeat (its ``os-services`` row)."""
        # NOTE: recover first: what recovery sends out is answered by casts
        # that wait in the queue until the server below takes them.
        if self._recover:
            self.recovery_report = recovery.recover(self.manager)
        target = messaging.Target(topic=TOPIC, server=self.conf.host)
        self.server = rpc.get_server(self.transport, target, [self.manager])
        self.server.start()
        self.heartbeat.start()
        interval = self.conf.conductor.stuck_check_interval
        if self._recover and interval > 0:
            self._sweeper = threading.Thread(
                target=self._sweep_loop, args=(interval,), name="conductor-sweep", daemon=True
            )
            self._sweeper.start()
        LOG.info(
            "Conductor on %s serving topic %s (claim strategy %s)",
            self.conf.host,
            TOPIC,
            self.conf.resize.claim_strategy,
        )

    def sweep(self) -> recovery.RecoveryReport:
        """Take on the resizes and builds that stopped moving (see ``[conductor]
        stuck_after``), offload the servers shelved for ``[DEFAULT]
        shelved_offload_time``, then run the reaper when due. The loop calls it only
        while this conductor holds the sweep's lease."""
        report = recovery.recover(self.manager, idle_for=self.conf.conductor.stuck_after)
        if report.found:
            LOG.warning(
                "Sweep took on %d stuck resize(s) and build(s): %s", report.found, report.resumed
            )
        self.manager.offload_shelved()
        return report

    def _sweep_loop(self, interval: float) -> None:
        lease = self.manager.lease
        if lease.duration <= 2 * interval:
            LOG.warning(
                "[conductor] lease_duration (%ss) is not above twice stuck_check_interval "
                "(%ss): the sweep's lease may expire between two sweeps, and several "
                "conductors sweep in one interval",
                lease.duration,
                interval,
            )
        while not self._stopping.wait(interval):
            try:
                # NOTE: of every conductor of the deployment only the lease's
                # holder sweeps (resize_sched.conductor.lease).
                if lease.hold():
                    self.sweep()
            except (
                exception.ResizeSchedException,
                sa_exc.OperationalError,
                db_exc.DBConnectionError,
            ) as exc:
                # NOTE: Placement or the database down: expected, and the next
                # sweep catches up; no traceback for it.
                LOG.warning("Sweep for stuck resizes failed, trying again later: %s", exc)
            except Exception:
                LOG.exception("Sweep for stuck resizes failed; trying again later")

    def reload(self) -> None:
        """Re-read mutable options (SIGHUP); new resizes use the new strategy,
        filters and weighers.

        A strategy that is not installed is refused (ERROR, naming those that
        are) and the current one kept: see :func:`resize_sched.checks.reload_config`;
        so is a filter or weigher list naming one that is not installed.
        """
        strategy = checks.reload_config(self.conf, load=self.deps.strategy)
        if strategy is not None:
            self.deps.scheduler.reload_plugins()
        if strategy is not None:
            LOG.info("Configuration reloaded; new resizes use claim strategy %s", strategy)

    def stop(self) -> None:
        """Stop taking messages, finish those in hand, release connections."""
        self._stopping.set()
        self.heartbeat.stop()
        if self._sweeper is not None:
            self._sweeper.join(timeout=30)
            self._sweeper = None
            try:
                self.manager.lease.release()
            except DB_ERRORS as exc:
                LOG.warning("Sweep lease not given up (it expires by itself): %s", exc)
        if self.server is not None:
            self.server.stop()
            self.server.wait()
            self.server = None
        self.db.dispose()
        self.notifier.transport.cleanup()
        LOG.info("Conductor on %s stopped", self.conf.host)
