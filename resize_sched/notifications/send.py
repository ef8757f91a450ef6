"""Sending the notifications: the noop check, one guarded send, the conductor's events.

Nothing here raises: a notification that cannot be built or sent is logged
and dropped, so it never fails the step it describes. With the default
``[oslo_messaging_notifications] driver = noop`` no payload is even built.
"""

from typing import Any

import oslo_messaging as messaging
from oslo_log import log as logging

from resize_sched.context import RequestContext
from resize_sched.notifications.events import CREATE, DELETE, END, ERROR, RESIZE, START, event_type
from resize_sched.notifications.payloads import (
    as_migration,
    as_server,
    fault_payload,
    instance_action_payload,
    instance_resize_payload,
)

LOG = logging.getLogger(__name__)


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
        m = as_migration(migration)
        s = as_server(server) if server is not None else {}
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
        s = as_server(server)
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
        s = as_server(server)
        if phase == START:
            state, task_state = s.get("vm_state"), "deleting"
        else:
            state, task_state = "deleted", None
        return instance_action_payload(s, host=s.get("host"), state=state, task_state=task_state)

    emit(notifier, ctxt, DELETE, phase, build)
