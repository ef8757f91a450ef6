"""The payloads of the notifications: Nova-style versioned objects built from our rows.

Each payload is wrapped as Nova wraps a versioned object (``nova_object.name``,
``namespace``, ``version``, ``data``), nested objects (flavors, the fault)
the same way. The builders take a database row or the dict a compute host
receives in its RPC message alike.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from resize_sched import exception
from resize_sched.compute import rpcapi as compute_rpcapi
from resize_sched.notifications.events import KIND_FAILED, KINDS, NAMESPACE


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


def as_server(server: Any) -> dict[str, Any]:
    if isinstance(server, Mapping):
        return dict(server)
    return compute_rpcapi.server_message(server)


def as_migration(migration: Any) -> dict[str, Any]:
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
    s = as_server(server)
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
    m = as_migration(migration)
    if server is not None:
        s = as_server(server)
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
