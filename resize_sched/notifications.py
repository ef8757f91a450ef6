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
``notify_*`` functions at the end of this module. ``doc/notifications.rst``
lists every event.

Nothing here raises: a notification that cannot be built or sent is logged
and dropped, so it never fails the step it describes. With the default
``[oslo_messaging_notifications] driver = noop`` no payload is even built.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import oslo_messaging as messaging
from oslo_log import log as logging

from resize_sched import exception
from resize_sched.compute import rpcapi as compute_rpcapi
from resize_sched.context import RequestContext

LOG = logging.getLogger(__name__)

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


# -- payload objects ---------------------------------------------------------------------


def versioned(name: str, version: str, data: dict[str, Any]) -> dict[str, Any]:
    """Wrap ``data`` as the versioned object ``name`` at ``version``."""
    return {
        "nova_object.name": name,
        "nova_object.namespace": NAMESPACE,
        "nova_object.version": version,
        "nova_object.data": data,
    }


@dataclass(frozen=True)
class PayloadObject:
    """A payload object's name, version and fields (for the docs and the tests)."""

    name: str
    version: str
    fields: tuple[str, ...]


#: A flavor snapshot (the dict a server or migration records).
FLAVOR = PayloadObject(
    "FlavorPayload",
    "1.0",
    ("flavorid", "name", "vcpus", "memory_mb", "root_gb", "ephemeral_gb", "swap", "extra_specs"),
)
#: Why an action failed.
FAULT = PayloadObject("FaultPayload", "1.0", ("kind", "reason", "operation", "exception", "code"))
#: A server, for the create and delete events.
INSTANCE_ACTION = PayloadObject(
    "InstanceActionPayload",
    "1.0",
    (
        "uuid",
        "display_name",
        "host",
        "flavor",
        "state",
        "task_state",
        "tenant_id",
        "user_id",
        "fault",
    ),
)
#: A server and its resize, for every resize event.
INSTANCE_ACTION_RESIZE = PayloadObject(
    "InstanceActionResizePayload",
    "1.0",
    INSTANCE_ACTION.fields
    + ("migration_uuid", "claim_strategy", "source_host", "dest_host", "old_flavor", "new_flavor"),
)
PAYLOAD_OBJECTS = (FLAVOR, FAULT, INSTANCE_ACTION, INSTANCE_ACTION_RESIZE)


def _wrap(obj: PayloadObject, data: dict[str, Any]) -> dict[str, Any]:
    assert tuple(data) == obj.fields, f"{obj.name} fields drifted: {tuple(data)}"
    return versioned(obj.name, obj.version, data)


def flavor_payload(flavor: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A ``FlavorPayload`` from a flavor snapshot; None for None.

    Sizes the snapshot lacks are None; ``flavorid`` is the snapshot's ``id``.
    """
    if flavor is None:
        return None
    return _wrap(
        FLAVOR,
        {
            "flavorid": flavor.get("id", flavor.get("flavorid")),
            "name": flavor.get("name"),
            "vcpus": flavor.get("vcpus"),
            "memory_mb": flavor.get("memory_mb"),
            "root_gb": flavor.get("root_gb"),
            "ephemeral_gb": flavor.get("ephemeral_gb"),
            "swap": flavor.get("swap"),
            "extra_specs": dict(flavor.get("extra_specs") or {}),
        },
    )


def fault_payload(
    kind: str,
    reason: str,
    *,
    operation: str | None = None,
    exc: BaseException | None = None,
) -> dict[str, Any]:
    """A ``FaultPayload``.

    :param kind: one of :data:`KINDS`.
    :param reason: what went wrong, for a person.
    :param operation: the compute operation that failed (``prep_resize`` ...), if any.
    :param exc: the exception, if there is one: its class name and, for our
        own errors, its stable ``code``.
    :raises ValueError: an unknown ``kind``.
    """
    if kind not in KINDS:
        raise ValueError(f"fault kind {kind!r} is not one of {', '.join(KINDS)}")
    return _wrap(
        FAULT,
        {
            "kind": kind,
            "reason": reason,
            "operation": operation,
            "exception": type(exc).__name__ if exc is not None else None,
            "code": getattr(exc, "code", None) if exc is not None else None,
        },
    )


def kind_and_reason(exc: BaseException) -> tuple[str, str]:
    """The fault ``kind`` and ``reason`` of ``exc``: a NoValidHost's own kind and
    reason; ``failed`` and the message for anything else (a RestoreFailed...)."""
    if isinstance(exc, exception.NoValidHost):
        return exc.kind, exc.reason or str(exc)
    return KIND_FAILED, str(exc)


def fault_from_exception(exc: BaseException, *, operation: str | None = None) -> dict[str, Any]:
    """A ``FaultPayload`` for ``exc``, as :func:`kind_and_reason` describes it."""
    kind, reason = kind_and_reason(exc)
    return fault_payload(kind, reason, operation=operation, exc=exc)


def _as_server(server: Any) -> dict[str, Any]:
    if isinstance(server, Mapping):
        return dict(server)
    return compute_rpcapi.server_message(server)


def _as_migration(migration: Any) -> dict[str, Any]:
    if isinstance(migration, Mapping):
        return dict(migration)
    return compute_rpcapi.migration_message(migration)


def instance_action_payload(
    server: Any,
    *,
    host: str | None,
    state: str | None,
    task_state: str | None,
    fault: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An ``InstanceActionPayload``.

    :param server: a server row, or the ``server`` dict compute hosts receive
        (:func:`resize_sched.compute.rpcapi.server_message`; the keys it may
        lack are None).
    :param host: where the server is.
    :param state: its ``vm_state``.
    :param task_state: its task state.
    :param fault: a :func:`fault_payload`, on ``error``.
    """
    s = _as_server(server)
    return _wrap(
        INSTANCE_ACTION,
        {
            "uuid": s["uuid"],
            "display_name": s.get("name"),
            "host": host,
            "flavor": flavor_payload(s.get("flavor")),
            "state": state,
            "task_state": task_state,
            "tenant_id": s.get("project_id"),
            "user_id": s.get("user_id"),
            "fault": fault,
        },
    )


def instance_resize_payload(
    migration: Any,
    *,
    host: str | None,
    state: str | None,
    task_state: str | None,
    flavor: Mapping[str, Any] | None,
    server: Any = None,
    fault: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An ``InstanceActionResizePayload``.

    :param migration: a migration row, or the ``migration`` dict compute hosts
        receive (:func:`resize_sched.compute.rpcapi.migration_message`).
    :param host: where the server is.
    :param state: its ``vm_state``.
    :param task_state: its task state.
    :param flavor: the flavor it runs with now (old or new).
    :param server: a server row or dict, for its name; else the migration's
        ``server`` entry, if it has one.
    :param fault: a :func:`fault_payload`, on ``error``.
    """
    m = _as_migration(migration)
    if server is not None:
        s = _as_server(server)
    else:
        s = dict(m.get("server") or {})
    return _wrap(
        INSTANCE_ACTION_RESIZE,
        {
            "uuid": m["server_uuid"],
            "display_name": s.get("name"),
            "host": host,
            "flavor": flavor_payload(flavor),
            "state": state,
            "task_state": task_state,
            "tenant_id": m.get("project_id", s.get("project_id")),
            "user_id": m.get("user_id", s.get("user_id")),
            "fault": fault,
            "migration_uuid": m["uuid"],
            "claim_strategy": m.get("claim_strategy"),
            "source_host": m.get("source_host"),
            "dest_host": m.get("dest_host"),
            "old_flavor": flavor_payload(m.get("old_flavor")),
            "new_flavor": flavor_payload(m.get("new_flavor")),
        },
    )


# -- what each compute step reports ------------------------------------------------------


@dataclass(frozen=True)
class ResizeStep:
    """The server as a resize event shows it, as Nova's task states go.

    :ivar host: ``source`` or ``dest``: where the server is.
    :ivar flavor: ``old`` or ``new``: what it runs with.
    """

    state: str
    task_state: str | None
    host: str
    flavor: str


#: (action, phase) -> how the server looks. An ``error`` shows the ``start`` of its step.
RESIZE_STEPS: dict[tuple[str, str], ResizeStep] = {
    (RESIZE_PREP, START): ResizeStep("active", "resize_prep", "source", "old"),
    (RESIZE_PREP, END): ResizeStep("active", "resize_prep", "source", "old"),
    (RESIZE, START): ResizeStep("active", "resize_migrating", "source", "old"),
    (RESIZE, END): ResizeStep("active", "resize_migrated", "dest", "old"),
    (RESIZE_FINISH, START): ResizeStep("active", "resize_finish", "dest", "new"),
    (RESIZE_FINISH, END): ResizeStep("resized", None, "dest", "new"),
    (RESIZE_CONFIRM, START): ResizeStep("resized", "resize_confirming", "dest", "new"),
    (RESIZE_CONFIRM, END): ResizeStep("active", None, "dest", "new"),
    (RESIZE_REVERT, START): ResizeStep("resized", "resize_reverting", "dest", "new"),
    (RESIZE_REVERT, END): ResizeStep("active", None, "source", "old"),
}

#: (action, phase) -> (state, task_state) of the create, delete and power events sent
#: by a compute host; None for a delete's start state means "as the server
#: snapshot in the message says".
INSTANCE_STEPS: dict[tuple[str, str], tuple[str | None, str | None]] = {
    (CREATE, START): ("building", "spawning"),
    (CREATE, END): ("active", None),
    (CREATE, ERROR): ("building", "spawning"),
    (DELETE, START): (None, "deleting"),
    (DELETE, END): ("deleted", None),
    (POWER_OFF, START): ("active", "powering-off"),
    (POWER_OFF, END): ("stopped", None),
    (POWER_ON, START): ("stopped", "powering-on"),
    (POWER_ON, END): ("active", None),
    (REBUILD, START): (None, "rebuilding"),
    (REBUILD, END): (None, None),
    (SHELVE, START): (None, "shelving"),
    (SHELVE, END): ("shelved", None),
    (SHELVE_OFFLOAD, START): ("shelved", "shelving_offloading"),
    (SHELVE_OFFLOAD, END): ("shelved_offloaded", None),
    (UNSHELVE, START): (None, "spawning"),
    (UNSHELVE, END): ("active", None),
}


def resize_step_payload(
    action: str, phase: str, migration: Mapping[str, Any], fault: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The payload of a compute host's resize event: :data:`RESIZE_STEPS` applied
    to the ``migration`` message (an ``error`` shows its step's ``start``)."""
    step = RESIZE_STEPS[(action, START if phase == ERROR else phase)]
    return instance_resize_payload(
        migration,
        host=migration.get(f"{step.host}_host"),
        state=step.state,
        task_state=step.task_state,
        flavor=migration.get(f"{step.flavor}_flavor"),
        fault=fault,
    )


def live_migration_payload(
    action: str, phase: str, server: Mapping[str, Any], migration: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``InstanceActionPayload`` of a live migration's event, as Nova
    sends it: the server ``active`` and ``migrating`` on its source until
    the hand-over ends, on its destination and idle after."""
    arrived = action in (LIVE_MIGRATION_POST_DEST,) and phase == END
    stays = action in (LIVE_MIGRATION_ROLLBACK, LIVE_MIGRATION_ROLLBACK_DEST) and phase == END
    host = migration.get("dest_host") if arrived else migration.get("source_host")
    return instance_action_payload(
        {**dict(server), "flavor": server.get("flavor") or migration.get("old_flavor")},
        host=host,
        state="active",
        task_state=None if arrived or stays else "migrating",
    )


def instance_step_payload(
    action: str,
    phase: str,
    server: Mapping[str, Any],
    host: str,
    fault: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The payload of a compute host's create, delete or power event (:data:`INSTANCE_STEPS`)."""
    state, task_state = INSTANCE_STEPS[(action, phase)]
    if state is None:
        state = server.get("vm_state")
    return instance_action_payload(
        server, host=host, state=state, task_state=task_state, fault=fault
    )


# -- sending -----------------------------------------------------------------------------


def enabled(notifier: messaging.Notifier | None) -> bool:
    """Whether ``notifier`` sends anything (False for None or ``noop``)."""
    return notifier is not None and notifier.is_enabled()


def emit(
    notifier: messaging.Notifier | None,
    ctxt: RequestContext,
    action: str,
    phase: str,
    build: Any,
) -> None:
    """Send ``instance.<action>.<phase>`` with the payload ``build()`` returns.

    ``error`` goes at priority ERROR, the rest at INFO. ``build`` is only
    called when the notifier is enabled. Never raises.
    """
    if not enabled(notifier):
        return
    assert notifier is not None
    try:
        name = event_type(action, phase)
        payload = build()
        if phase == ERROR:
            notifier.error(ctxt, name, payload)
        else:
            notifier.info(ctxt, name, payload)
    except Exception:
        LOG.exception("Could not send the %s.%s notification", action, phase)


# -- for the conductor -------------------------------------------------------------------


def notify_resize_error(
    notifier: messaging.Notifier | None,
    ctxt: RequestContext,
    migration: Any,
    kind: str,
    reason: str,
    *,
    server: Any = None,
    exc: BaseException | None = None,
) -> None:
    """``instance.resize.error`` from the conductor: the resize ended without
    a host (``deferred``/``infeasible``) or failed there (``failed``: a
    restore or Placement failure).

    :param migration: the migration row (or its message dict).
    :param kind: one of :data:`KINDS`; for a NoValidHost, its ``kind``.
    :param reason: for a person; for a NoValidHost, its ``reason``.
    :param server: the server row as it is now, for its name and states;
        without it the states are None.
    :param exc: the exception, for its class name and code.
    """

    def build() -> dict[str, Any]:
        m = _as_migration(migration)
        s = _as_server(server) if server is not None else {}
        return instance_resize_payload(
            m,
            host=s.get("host", m.get("source_host")),
            state=s.get("vm_state"),
            task_state=s.get("task_state"),
            flavor=s.get("flavor", m.get("old_flavor")),
            server=server,
            fault=fault_payload(kind, reason, exc=exc),
        )

    emit(notifier, ctxt, RESIZE, ERROR, build)


def notify_create_error(
    notifier: messaging.Notifier | None,
    ctxt: RequestContext,
    server: Any,
    kind: str,
    reason: str,
    *,
    exc: BaseException | None = None,
) -> None:
    """``instance.create.error`` from the conductor: a build found no host.

    :param server: the server row (as it is after the failure is recorded).
    :param kind: one of :data:`KINDS`; for a NoValidHost, its ``kind``.
    :param reason: for a person.
    :param exc: the exception, for its class name and code.
    """

    def build() -> dict[str, Any]:
        s = _as_server(server)
        return instance_action_payload(
            s,
            host=s.get("host"),
            state=s.get("vm_state"),
            task_state=s.get("task_state"),
            fault=fault_payload(kind, reason, exc=exc),
        )

    emit(notifier, ctxt, CREATE, ERROR, build)


def notify_delete(
    notifier: messaging.Notifier | None, ctxt: RequestContext, server: Any, phase: str
) -> None:
    """``instance.delete.start`` (before the conductor releases a deleted
    server's allocations) or ``instance.delete.end`` (after).

    :param server: the server row; ``start`` shows its state then,
        ``end`` shows ``deleted``.
    :param phase: :data:`START` or :data:`END`.
    :raises ValueError: another phase.
    """
    if phase not in (START, END):
        raise ValueError(f"a delete notification is start or end, not {phase!r}")

    def build() -> dict[str, Any]:
        s = _as_server(server)
        if phase == START:
            state, task_state = s.get("vm_state"), "deleting"
        else:
            state, task_state = "deleted", None
        return instance_action_payload(s, host=s.get("host"), state=state, task_state=task_state)

    emit(notifier, ctxt, DELETE, phase, build)
