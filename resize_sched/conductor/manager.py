"""Server side of the conductor RPC API: one endpoint object, one mixin per family.

Each method is a cast handler: it runs one step of a flow (a task under
:mod:`resize_sched.conductor.tasks`) and hands the next step to a compute
host. Business failures (no valid host, a refused revert) are already
recorded on the server and migration by the task; here they are logged and
stop the flow. The families live in :mod:`resize_sched.conductor.endpoints`;
the message checks in :mod:`~resize_sched.conductor.endpoints.checks`; the
compute events in :mod:`resize_sched.conductor.compute_events`. See
:mod:`resize_sched.conductor.rpcapi` for the version history.
"""

import oslo_messaging as messaging

from resize_sched.compute.rpcapi import ComputeAPI
from resize_sched.conductor.compute_events import COMPUTE_EVENTS
from resize_sched.conductor.endpoints.builds import BuildEndpoints
from resize_sched.conductor.endpoints.checks import EXPECTED as _EXPECTED
from resize_sched.conductor.endpoints.checks import UUID as _UUID
from resize_sched.conductor.endpoints.checks import handler
from resize_sched.conductor.endpoints.checks import malformed as _malformed
from resize_sched.conductor.endpoints.compute_reports import ComputeReportEndpoints
from resize_sched.conductor.endpoints.deletes import DeleteEndpoints
from resize_sched.conductor.endpoints.evacuations import EvacuationEndpoints
from resize_sched.conductor.endpoints.failures import FailureEndpoints
from resize_sched.conductor.endpoints.live import LiveMigrationEndpoints
from resize_sched.conductor.endpoints.power import PowerEndpoints
from resize_sched.conductor.endpoints.resizes import ResizeEndpoints
from resize_sched.conductor.endpoints.shelving import ShelvingEndpoints
from resize_sched.conductor.lease import Lease
from resize_sched.conductor.rpcapi import NAMESPACE, VERSION
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.conductor.tasks.build import BuildTask
from resize_sched.conductor.tasks.delete import DELETE_EVENT, DeleteTask
from resize_sched.conductor.tasks.evacuate import EvacuationTask
from resize_sched.conductor.tasks.live_migrate import LiveMigrationTask
from resize_sched.conductor.tasks.power import PowerTask
from resize_sched.conductor.tasks.resize import ResizeTask
from resize_sched.conductor.tasks.shelve import ShelveTask, UnshelveTask

# NOTE: the names this module held before its split, for their importers.
__all__ = [
    "COMPUTE_EVENTS",
    "DELETE_EVENT",
    "ConductorManager",
    "_EXPECTED",
    "_UUID",
    "_malformed",
    "handler",
]


class ConductorManager(
    # NOTE: failures and compute reports dispatch into the families they
    # extend, so they come first (Python's method order needs it).
    FailureEndpoints,
    ComputeReportEndpoints,
    BuildEndpoints,
    ResizeEndpoints,
    LiveMigrationEndpoints,
    EvacuationEndpoints,
    PowerEndpoints,
    ShelvingEndpoints,
    DeleteEndpoints,
):
    """The conductor's RPC endpoint: every handler of every family, on one object.

    :param deps: configuration, database, Placement client, scheduler, executor.
    :param compute: the compute RPC client.
    :param notifier: versioned notifications (:mod:`resize_sched.notifications`);
        None: none.
    """

    target = messaging.Target(namespace=NAMESPACE, version=VERSION)

    def __init__(
        self, deps: TaskDeps, compute: ComputeAPI, notifier: messaging.Notifier | None = None
    ) -> None:
        self.deps = deps
        self.notifier = notifier
        self.db = deps.db
        self.compute = compute
        self.builds = BuildTask(deps)
        self.resizes = ResizeTask(deps)
        self.lives = LiveMigrationTask(deps)
        self.evacuations = EvacuationTask(deps)
        self.shelves = ShelveTask(deps)
        self.unshelves = UnshelveTask(deps)
        self.powers = PowerTask(deps)
        self.deletes = DeleteTask(deps)
        #: the sweep's lease: only its holder sweeps and reaps
        #: (:mod:`resize_sched.conductor.lease`)
        self.lease = Lease(deps.db, deps.conf.host, deps.conf.conductor.lease_duration)
