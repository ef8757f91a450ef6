"""The compute host's steps as a table: notification, driver call, report, failure report.

Nearly every compute RPC method has the same shape: send
``instance.<action>.start``, call one driver method, send ``.end``, then cast
the outcome to the conductor (or hand over to the migration's other host).
Each :class:`Step` row says what differs; :meth:`ComputeManager._step
<resize_sched.compute.manager.ComputeManager._step>` runs any of them. The
steps with a shape of their own (a revert's two hosts, a live migration's
abortable hand-over, a destroy that is never reported) stay methods of the
manager.
"""

import dataclasses
from collections.abc import Mapping
from typing import Any

from resize_sched import notifications as n
from resize_sched.compute.driver import base as driver_base


@dataclasses.dataclass(frozen=True)
class Step:
    """One driver step, as the compute manager runs it.

    The message the step is given is a ``server`` or a ``migration`` dict
    (see :mod:`resize_sched.compute.rpcapi`); the driver method gets it whole,
    or the migration's uuid when ``by_uuid``.
    """

    #: The notification action: ``instance.<action>.start`` before the driver
    #: call and ``.end`` after it, before anyone else is told.
    action: str
    #: The driver method called.
    driver: str
    #: The name a failure is reported under (``operation_failed``; one of
    #: :data:`resize_sched.conf.fake_driver.OPERATIONS`). None: a failure is
    #: not caught here, nothing is reported (the RPC server logs it).
    operation: str | None = None
    #: Whether a failure also sends ``instance.<action>.error`` (any resize
    #: step's is ``instance.resize.error``), with the fault.
    error: bool = False
    #: The conductor method cast once the step is done, with the message's
    #: ``server_uuid=`` (a server) or ``migration_uuid=`` (a migration).
    report: str | None = None
    #: Whether that report also says ``host=<this host>``.
    report_host: bool = False
    #: Fixed arguments that report also carries.
    report_args: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    #: The compute method cast to the migration's destination once the step
    #: is done (the next step of the handshake is that host's).
    forward: str | None = None
    #: Whether the driver is given the migration's uuid rather than the message.
    by_uuid: bool = False


# -- building and power ------------------------------------------------------------------

SPAWN = Step(n.CREATE, "spawn", "spawn", error=True, report="build_done")


def _power(action: str, operation: str, power_state: int) -> Step:
    """A power step: its driver method is named as its action; the report
    says the power state the server is left in."""
    return Step(
        action,
        action,
        operation,
        report="power_changed",
        report_host=True,
        report_args={"power_state": power_state},
    )


POWER_OFF = _power(n.POWER_OFF, "stop", driver_base.POWER_SHUTDOWN)
POWER_ON = _power(n.POWER_ON, "start", driver_base.POWER_RUNNING)

# -- resize (the revert is the manager's own) --------------------------------------------

PREP_RESIZE = Step(
    n.RESIZE_PREP,
    "prep_resize",
    "prep_resize",
    error=True,
    report="resize_prepared",
    report_host=True,
)
RESIZE_INSTANCE = Step(
    n.RESIZE, "migrate_disk_and_power_off", "resize", error=True, forward="finish_resize"
)
FINISH_RESIZE = Step(
    n.RESIZE_FINISH, "finish_migration", "finish_resize", error=True, report="resize_finished"
)
CONFIRM_RESIZE = Step(n.RESIZE_CONFIRM, "confirm_migration", "confirm", error=True)

# -- live migration (the hand-over and its abort are the manager's own) -------------------

PRE_LIVE_MIGRATION = Step(
    n.LIVE_MIGRATION_PRE,
    "pre_live_migration",
    "pre_live_migration",
    report="live_migration_prepared",
    report_host=True,
)
#: The source's clean-up after the hand-over.
POST_LIVE_MIGRATION = Step(
    n.LIVE_MIGRATION_POST,
    "post_live_migration",
    "post_live_migration",
    forward="post_live_migration_at_destination",
)
POST_LIVE_MIGRATION_AT_DESTINATION = Step(
    n.LIVE_MIGRATION_POST_DEST,
    "post_live_migration_at_destination",
    report="live_migration_finished",
)
ROLLBACK_LIVE_MIGRATION_AT_DESTINATION = Step(
    n.LIVE_MIGRATION_ROLLBACK_DEST, "rollback_live_migration_at_destination"
)
ROLLBACK_LIVE_MIGRATION_AT_SOURCE = Step(
    n.LIVE_MIGRATION_ROLLBACK, "rollback_live_migration_at_source"
)
LIVE_MIGRATION_FORCE_COMPLETE = Step(
    n.LIVE_MIGRATION_FORCE_COMPLETE, "live_migration_force_complete", by_uuid=True
)

# -- evacuation and shelving -------------------------------------------------------------

REBUILD_INSTANCE = Step(
    n.REBUILD, "rebuild", "rebuild", report="evacuation_rebuilt", report_host=True
)
SHELVE_INSTANCE = Step(n.SHELVE, "shelve", "shelve", report="server_shelved", report_host=True)
SHELVE_OFFLOAD_INSTANCE = Step(
    n.SHELVE_OFFLOAD,
    "shelve_offload",
    "shelve_offload",
    report="server_offloaded",
    report_host=True,
)
UNSHELVE_INSTANCE = Step(
    n.UNSHELVE, "unshelve", "unshelve", report="server_unshelved", report_host=True
)
