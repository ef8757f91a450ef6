"""Versioned notifications of the build, resize and delete paths.

The event types are Nova's (``instance.resize_prep.start`` ...) and each
payload is wrapped the way Nova wraps a versioned object::

    {"nova_object.name": "InstanceActionResizePayload",
     "nova_object.namespace": "resize_sched",
     "nova_object.version": "1.0",
     "nova_object.data": {...}}

with resize_sched's own namespace and object names; nested objects (flavors,
the fault) are wrapped the same way. A consumer checks the name and the major
version before it reads ``nova_object.data``: a minor bump only adds fields.

The compute manager emits the ``start``/``end`` pair around each driver step
and an ``error`` (priority ERROR, with a fault) when the step fails. Events that
begin in the conductor (no valid host, a failed restore, the release of a
deleted server's allocations, a build without a host) are sent with the
``notify_*`` functions. ``doc/notifications.rst`` lists every event.

The package re-exports every name of its modules, so callers use
``notifications.<name>``:

``events``
    the names: event types, actions, phases, fault kinds, publisher ids;
``payloads``
    the versioned objects and their builders;
``steps``
    how the server looks in each compute step's event;
``send``
    the guarded send and the conductor's ``notify_*`` events.

No notification ever fails the step it describes (see ``send``).
"""

from resize_sched.notifications.events import (
    COMPUTE,
    CONDUCTOR,
    CREATE,
    DELETE,
    END,
    ERROR,
    EVENT_TYPES,
    KIND_DEFERRED,
    KIND_FAILED,
    KIND_INFEASIBLE,
    KINDS,
    LIVE_MIGRATION_ABORT,
    LIVE_MIGRATION_ACTIONS,
    LIVE_MIGRATION_FORCE_COMPLETE,
    LIVE_MIGRATION_POST,
    LIVE_MIGRATION_POST_DEST,
    LIVE_MIGRATION_PRE,
    LIVE_MIGRATION_ROLLBACK,
    LIVE_MIGRATION_ROLLBACK_DEST,
    NAMESPACE,
    POWER_OFF,
    POWER_ON,
    PUBLISHER_PREFIX,
    REBUILD,
    RESIZE,
    RESIZE_CONFIRM,
    RESIZE_FINISH,
    RESIZE_OPERATIONS,
    RESIZE_PREP,
    RESIZE_REVERT,
    SHELVE,
    SHELVE_OFFLOAD,
    START,
    UNSHELVE,
    event_type,
    publisher_id,
)
from resize_sched.notifications.payloads import (
    FAULT,
    FLAVOR,
    INSTANCE_ACTION,
    INSTANCE_ACTION_RESIZE,
    PAYLOAD_OBJECTS,
    PayloadObject,
    as_migration,
    as_server,
    fault_from_exception,
    fault_payload,
    flavor_payload,
    instance_action_payload,
    instance_resize_payload,
    kind_and_reason,
    versioned,
)
from resize_sched.notifications.send import (
    emit,
    enabled,
    notify_create_error,
    notify_delete,
    notify_resize_error,
)
from resize_sched.notifications.steps import (
    INSTANCE_STEPS,
    RESIZE_STEPS,
    ResizeStep,
    instance_step_payload,
    live_migration_payload,
    resize_step_payload,
)

__all__ = [
    "NAMESPACE",
    "PUBLISHER_PREFIX",
    "COMPUTE",
    "CONDUCTOR",
    "START",
    "END",
    "ERROR",
    "CREATE",
    "DELETE",
    "POWER_OFF",
    "POWER_ON",
    "RESIZE_PREP",
    "RESIZE",
    "RESIZE_FINISH",
    "RESIZE_CONFIRM",
    "RESIZE_REVERT",
    "LIVE_MIGRATION_PRE",
    "LIVE_MIGRATION_POST",
    "LIVE_MIGRATION_POST_DEST",
    "LIVE_MIGRATION_ROLLBACK",
    "LIVE_MIGRATION_ROLLBACK_DEST",
    "LIVE_MIGRATION_ABORT",
    "LIVE_MIGRATION_FORCE_COMPLETE",
    "REBUILD",
    "SHELVE",
    "SHELVE_OFFLOAD",
    "UNSHELVE",
    "LIVE_MIGRATION_ACTIONS",
    "EVENT_TYPES",
    "KIND_DEFERRED",
    "KIND_INFEASIBLE",
    "KIND_FAILED",
    "KINDS",
    "RESIZE_OPERATIONS",
    "event_type",
    "publisher_id",
    "versioned",
    "PayloadObject",
    "FLAVOR",
    "FAULT",
    "INSTANCE_ACTION",
    "INSTANCE_ACTION_RESIZE",
    "PAYLOAD_OBJECTS",
    "flavor_payload",
    "fault_payload",
    "kind_and_reason",
    "fault_from_exception",
    "as_server",
    "as_migration",
    "instance_action_payload",
    "instance_resize_payload",
    "ResizeStep",
    "RESIZE_STEPS",
    "INSTANCE_STEPS",
    "resize_step_payload",
    "live_migration_payload",
    "instance_step_payload",
    "enabled",
    "emit",
    "notify_resize_error",
    "notify_create_error",
    "notify_delete",
]
