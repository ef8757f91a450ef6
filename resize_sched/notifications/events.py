"""The names of the notifications: event types, actions, phases, fault kinds, publishers.

Nova's event types (``instance.<action>.<phase>``) under resize_sched's own
publisher ids; ``doc/notifications.rst`` lists every event.
"""

from resize_sched import exception

#: The ``nova_object.namespace`` of every payload.
NAMESPACE = "resize_sched"

#: Publisher ids are ``resize-sched-<service>:<host>``, as Nova's ``nova-compute:<host>``.
PUBLISHER_PREFIX = "resize-sched"
COMPUTE = "compute"
CONDUCTOR = "conductor"

# -- phases and actions ------------------------------------------------------------------

START = "start"
END = "end"
ERROR = "error"

CREATE = "create"
DELETE = "delete"
POWER_OFF = "power_off"
POWER_ON = "power_on"
RESIZE_PREP = "resize_prep"
RESIZE = "resize"
RESIZE_FINISH = "resize_finish"
RESIZE_CONFIRM = "resize_confirm"
RESIZE_REVERT = "resize_revert"
LIVE_MIGRATION_PRE = "live_migration_pre"
LIVE_MIGRATION_POST = "live_migration_post"
LIVE_MIGRATION_POST_DEST = "live_migration_post_dest"
LIVE_MIGRATION_ROLLBACK = "live_migration_rollback"
LIVE_MIGRATION_ROLLBACK_DEST = "live_migration_rollback_dest"
LIVE_MIGRATION_ABORT = "live_migration_abort"
LIVE_MIGRATION_FORCE_COMPLETE = "live_migration_force_complete"
#: An evacuation's rebuild on its destination.
REBUILD = "rebuild"
SHELVE = "shelve"
SHELVE_OFFLOAD = "shelve_offload"
UNSHELVE = "unshelve"
#: A live migration's actions, Nova's names; each sends ``start`` and ``end``.
LIVE_MIGRATION_ACTIONS = (
    LIVE_MIGRATION_PRE,
    LIVE_MIGRATION_POST,
    LIVE_MIGRATION_POST_DEST,
    LIVE_MIGRATION_ROLLBACK,
    LIVE_MIGRATION_ROLLBACK_DEST,
    LIVE_MIGRATION_ABORT,
    LIVE_MIGRATION_FORCE_COMPLETE,
)

#: Every event type sent, ``instance.<action>.<phase>``.
EVENT_TYPES = (
    "instance.create.start",
    "instance.create.end",
    "instance.create.error",
    "instance.delete.start",
    "instance.delete.end",
    "instance.resize_prep.start",
    "instance.resize_prep.end",
    "instance.resize.start",
    "instance.resize.end",
    "instance.resize.error",
    "instance.resize_finish.start",
    "instance.resize_finish.end",
    "instance.resize_confirm.start",
    "instance.resize_confirm.end",
    "instance.resize_revert.start",
    "instance.resize_revert.end",
    "instance.power_off.start",
    "instance.power_off.end",
    "instance.power_on.start",
    "instance.power_on.end",
    "instance.rebuild.start",
    "instance.rebuild.end",
    "instance.shelve.start",
    "instance.shelve.end",
    "instance.shelve_offload.start",
    "instance.shelve_offload.end",
    "instance.unshelve.start",
    "instance.unshelve.end",
    *(
        f"instance.{action}.{phase}"
        for action in LIVE_MIGRATION_ACTIONS
        for phase in ("start", "end")
    ),
)

#: ``kind`` of a fault: as :class:`resize_sched.exception.NoValidHost` says
#: (``deferred``: no room now; ``infeasible``: could never fit), or ``failed``
#: (a step failed).
KIND_DEFERRED = exception.NoValidHost.DEFERRED
KIND_INFEASIBLE = exception.NoValidHost.INFEASIBLE
KIND_FAILED = "failed"
KINDS = (KIND_DEFERRED, KIND_INFEASIBLE, KIND_FAILED)

#: Compute operations (as reported with ``operation_failed``) and the resize
#: action whose ``error`` they send; every one of them is ``instance.resize.error``.
RESIZE_OPERATIONS = {
    "prep_resize": RESIZE_PREP,
    "resize": RESIZE,
    "finish_resize": RESIZE_FINISH,
    "confirm": RESIZE_CONFIRM,
    "revert": RESIZE_REVERT,
}


def event_type(action: str, phase: str) -> str:
    """``instance.<action>.<phase>``; an ``error`` of any resize step is
    ``instance.resize.error``, as in Nova.

    :raises ValueError: not one of :data:`EVENT_TYPES`.
    """
    if phase == ERROR and action in RESIZE_OPERATIONS.values():
        action = RESIZE
    name = f"instance.{action}.{phase}"
    if name not in EVENT_TYPES:
        raise ValueError(f"{name} is not a resize_sched event type")
    return name


def publisher_id(service: str, host: str) -> str:
    """``resize-sched-compute:host1``, ``resize-sched-conductor:control``."""
    return f"{PUBLISHER_PREFIX}-{service}:{host}"
