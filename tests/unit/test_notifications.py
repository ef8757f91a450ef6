"""The versioned notification payloads, event types and the notifier factory."""

import types
from typing import Any

import pytest

from resize_sched import conf as rs_conf
from resize_sched import exception, notifications, rpc
from resize_sched.compute import rpcapi as compute_rpcapi
from resize_sched.compute.driver.fake import FakeDriver
from resize_sched.compute.manager import ComputeManager
from resize_sched.context import RequestContext

OLD = {
    "id": "small",
    "name": "m1.small",
    "vcpus": 1,
    "memory_mb": 512,
    "root_gb": 10,
    "ephemeral_gb": 0,
    "swap": 0,
    "extra_specs": {"hw:cpu_policy": "shared"},
}
NEW = {"id": "large", "vcpus": 2, "memory_mb": 1024, "root_gb": 10}


def _migration(**changes: Any) -> dict[str, Any]:
    message = {
        "uuid": "m-1",
        "server_uuid": "s-1",
        "source_host": "host1",
        "dest_host": "host2",
        "old_flavor": OLD,
        "new_flavor": NEW,
        "claim_strategy": "max_flavor",
        "project_id": "p",
        "user_id": "u",
    }
    message.update(changes)
    return message


def _server_row(**changes: Any) -> types.SimpleNamespace:
    row = types.SimpleNamespace(
        uuid="s-1",
        name="vm",
        flavor=OLD,
        project_id="p",
        user_id="u",
        host="host1",
        vm_state="active",
        task_state=None,
    )
    vars(row).update(changes)
    return row


def _data(payload: dict[str, Any]) -> dict[str, Any]:
    return payload["nova_object.data"]


class RecordingNotifier:
    """The two oslo.messaging Notifier methods the module calls, recorded."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.sent: list[tuple[str, str, dict[str, Any]]] = []

    def is_enabled(self) -> bool:
        return self.enabled

    def info(self, ctxt: Any, event_type: str, payload: dict[str, Any]) -> None:
        self.sent.append(("INFO", event_type, payload))

    def error(self, ctxt: Any, event_type: str, payload: dict[str, Any]) -> None:
        self.sent.append(("ERROR", event_type, payload))


# -- the wrapper and the small objects -----------------------------------------------------


def test_versioned_wrapper_has_nova_keys_and_our_namespace() -> None:
    assert notifications.versioned("X", "1.2", {"a": 1}) == {
        "nova_object.name": "X",
        "nova_object.namespace": "resize_sched",
        "nova_object.version": "1.2",
        "nova_object.data": {"a": 1},
    }


def test_every_payload_object_has_a_version() -> None:
    names = [obj.name for obj in notifications.PAYLOAD_OBJECTS]
    assert len(set(names)) == len(names)
    for obj in notifications.PAYLOAD_OBJECTS:
        major, minor = obj.version.split(".")
        assert major.isdigit() and minor.isdigit(), obj


def test_flavor_payload() -> None:
    payload = notifications.flavor_payload(OLD)
    assert payload["nova_object.name"] == "FlavorPayload"
    assert payload["nova_object.version"] == notifications.FLAVOR.version
    assert _data(payload) == {
        "flavorid": "small",
        "name": "m1.small",
        "vcpus": 1,
        "memory_mb": 512,
        "root_gb": 10,
        "ephemeral_gb": 0,
        "swap": 0,
        "extra_specs": {"hw:cpu_policy": "shared"},
    }
    # a snapshot lacking sizes: None, not an error
    assert _data(notifications.flavor_payload(NEW))["ephemeral_gb"] is None
    assert notifications.flavor_payload(None) is None


def test_fault_payload_kinds_and_exception() -> None:
    exc = exception.InjectedFailure(host="h", operation="prep_resize")
    payload = notifications.fault_payload("failed", "boom", operation="prep_resize", exc=exc)
    assert payload["nova_object.name"] == "FaultPayload"
    assert _data(payload) == {
        "kind": "failed",
        "reason": "boom",
        "operation": "prep_resize",
        "exception": "InjectedFailure",
        "code": exc.code,
    }
    assert _data(notifications.fault_payload("deferred", "no room"))["exception"] is None
    with pytest.raises(ValueError, match="not one of"):
        notifications.fault_payload("oops", "x")


def test_fault_from_no_valid_host_keeps_its_kind_and_reason() -> None:
    exc = exception.NoValidHost(kind="infeasible", reason="flavor larger than any host")
    data = _data(notifications.fault_from_exception(exc))
    assert (data["kind"], data["reason"], data["exception"]) == (
        "infeasible",
        "flavor larger than any host",
        "NoValidHost",
    )
    assert data["code"] == "resize_sched.no_valid_host"
    assert _data(notifications.fault_from_exception(RuntimeError("x")))["kind"] == "failed"
    restore = exception.RestoreFailed(server_id="s-1", source="host1", reason="Placement down")
    assert notifications.kind_and_reason(restore) == ("failed", restore.message)
    assert notifications.kind_and_reason(exc) == ("infeasible", "flavor larger than any host")


def test_event_types_and_publisher() -> None:
    assert notifications.event_type("resize_prep", "start") == "instance.resize_prep.start"
    # every resize step fails as instance.resize.error, as in Nova
    for action in notifications.RESIZE_OPERATIONS.values():
        assert notifications.event_type(action, "error") == "instance.resize.error"
    assert notifications.event_type("create", "error") == "instance.create.error"
    with pytest.raises(ValueError):
        notifications.event_type("delete", "error")
    assert notifications.publisher_id("compute", "host1") == "resize-sched-compute:host1"
    assert notifications.publisher_id("conductor", "c") == "resize-sched-conductor:c"


# -- instance and resize payloads -----------------------------------------------------------


def test_instance_action_payload_from_a_row_and_from_a_message() -> None:
    row = _server_row()
    from_row = notifications.instance_action_payload(
        row, host="host1", state="active", task_state=None
    )
    from_message = notifications.instance_action_payload(
        compute_rpcapi.server_message(row), host="host1", state="active", task_state=None
    )
    assert from_row == from_message
    assert from_row["nova_object.name"] == "InstanceActionPayload"
    data = _data(from_row)
    assert tuple(data) == notifications.INSTANCE_ACTION.fields
    assert (data["uuid"], data["display_name"], data["tenant_id"], data["user_id"]) == (
        "s-1",
        "vm",
        "p",
        "u",
    )
    assert _data(data["flavor"])["flavorid"] == "small"
    assert data["fault"] is None
    # an old sender's message: only uuid, name, flavor
    old = notifications.instance_action_payload(
        {"uuid": "s-1", "name": "vm", "flavor": OLD}, host="h", state=None, task_state=None
    )
    assert _data(old)["tenant_id"] is None


@pytest.mark.parametrize(
    ("action", "phase", "state", "task_state", "host", "flavor"),
    [
        ("resize_prep", "start", "active", "resize_prep", "host1", "small"),
        ("resize_prep", "end", "active", "resize_prep", "host1", "small"),
        ("resize", "start", "active", "resize_migrating", "host1", "small"),
        ("resize", "end", "active", "resize_migrated", "host2", "small"),
        ("resize_finish", "start", "active", "resize_finish", "host2", "large"),
        ("resize_finish", "end", "resized", None, "host2", "large"),
        ("resize_confirm", "start", "resized", "resize_confirming", "host2", "large"),
        ("resize_confirm", "end", "active", None, "host2", "large"),
        ("resize_revert", "start", "resized", "resize_reverting", "host2", "large"),
        ("resize_revert", "end", "active", None, "host1", "small"),
        ("resize_prep", "error", "active", "resize_prep", "host1", "small"),
    ],
)
def test_resize_step_payload(
    action: str, phase: str, state: str, task_state: str | None, host: str, flavor: str
) -> None:
    payload = notifications.resize_step_payload(action, phase, _migration())
    assert payload["nova_object.name"] == "InstanceActionResizePayload"
    assert payload["nova_object.version"] == notifications.INSTANCE_ACTION_RESIZE.version
    data = _data(payload)
    assert tuple(data) == notifications.INSTANCE_ACTION_RESIZE.fields
    assert (data["state"], data["task_state"], data["host"]) == (state, task_state, host)
    assert _data(data["flavor"])["flavorid"] == flavor
    assert data["claim_strategy"] == "max_flavor"
    assert (data["source_host"], data["dest_host"]) == ("host1", "host2")
    assert _data(data["old_flavor"])["flavorid"] == "small"
    assert _data(data["new_flavor"])["flavorid"] == "large"
    assert (data["uuid"], data["migration_uuid"], data["tenant_id"]) == ("s-1", "m-1", "p")


def test_resize_payload_takes_the_server_name_from_the_message() -> None:
    message = _migration(server=compute_rpcapi.server_message(_server_row(name="web")))
    data = _data(notifications.resize_step_payload("resize", "start", message))
    assert data["display_name"] == "web"
    # an old sender's message: no strategy, no server
    old = {k: v for k, v in _migration().items() if k not in ("claim_strategy", "project_id")}
    data = _data(notifications.resize_step_payload("resize", "start", old))
    assert (data["claim_strategy"], data["tenant_id"], data["display_name"]) == (None, None, None)


def test_migration_message_is_a_compatible_extension() -> None:
    row = types.SimpleNamespace(
        uuid="m-1",
        server_uuid="s-1",
        source_host="host1",
        dest_host="host2",
        old_flavor=OLD,
        new_flavor=NEW,
        claim_strategy="legacy",
        project_id="p",
        user_id="u",
    )
    message = compute_rpcapi.migration_message(row)
    assert {"uuid", "server_uuid", "source_host", "dest_host", "old_flavor", "new_flavor"} <= set(
        message
    )
    assert message["claim_strategy"] == "legacy"
    assert "server" not in message
    assert compute_rpcapi.migration_message(row, _server_row())["server"]["name"] == "vm"


# -- the conductor's functions --------------------------------------------------------------


def test_notify_resize_error_carries_kind_and_reason() -> None:
    notifier = RecordingNotifier()
    exc = exception.NoValidHost(kind="deferred", reason="no room on any host")
    row = types.SimpleNamespace(**_migration())
    notifications.notify_resize_error(
        notifier,
        RequestContext(),
        row,
        exc.kind,
        exc.reason,
        server=_server_row(),
        exc=exc,
    )
    ((priority, event, payload),) = notifier.sent
    assert (priority, event) == ("ERROR", "instance.resize.error")
    data = _data(payload)
    assert (data["claim_strategy"], data["host"], data["state"]) == (
        "max_flavor",
        "host1",
        "active",
    )
    assert _data(data["fault"]) == {
        "kind": "deferred",
        "reason": "no room on any host",
        "operation": None,
        "exception": "NoValidHost",
        "code": "resize_sched.no_valid_host",
    }


def test_notify_resize_error_without_the_server() -> None:
    notifier = RecordingNotifier()
    notifications.notify_resize_error(
        notifier, RequestContext(), _migration(), "failed", "restore failed"
    )
    data = _data(notifier.sent[0][2])
    assert (data["host"], data["state"], data["display_name"]) == ("host1", None, None)
    assert _data(data["flavor"])["flavorid"] == "small"
    assert _data(data["fault"])["kind"] == "failed"


def test_notify_create_error_and_delete() -> None:
    notifier = RecordingNotifier()
    ctxt = RequestContext()
    row = _server_row(host=None, vm_state="error")
    notifications.notify_create_error(notifier, ctxt, row, "infeasible", "too big")
    notifications.notify_delete(notifier, ctxt, _server_row(), "start")
    notifications.notify_delete(notifier, ctxt, _server_row(), "end")
    assert [(p, e) for p, e, _ in notifier.sent] == [
        ("ERROR", "instance.create.error"),
        ("INFO", "instance.delete.start"),
        ("INFO", "instance.delete.end"),
    ]
    create, start, end = (_data(p) for _, _, p in notifier.sent)
    assert (create["state"], _data(create["fault"])["kind"]) == ("error", "infeasible")
    assert (start["state"], start["task_state"]) == ("active", "deleting")
    assert (end["state"], end["task_state"]) == ("deleted", None)
    with pytest.raises(ValueError):
        notifications.notify_delete(notifier, ctxt, row, "error")


def test_disabled_or_missing_notifier_builds_nothing() -> None:
    def build() -> dict[str, Any]:
        raise AssertionError("built a payload nobody sends")

    for notifier in (None, RecordingNotifier(enabled=False)):
        notifications.emit(notifier, RequestContext(), "create", "start", build)  # type: ignore[arg-type]


def test_emit_never_raises() -> None:
    notifier = RecordingNotifier()

    def build() -> dict[str, Any]:
        raise KeyError("uuid")

    notifications.emit(notifier, RequestContext(), "create", "start", build)  # type: ignore[arg-type]
    assert notifier.sent == []


# -- configuration -------------------------------------------------------------------------


def _conf(**notification_options: Any) -> Any:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    rpc.register_notification_opts(conf)
    for name, value in notification_options.items():
        conf.set_override(name, value, group="oslo_messaging_notifications")
    return conf


def test_defaults_are_off_and_the_versioned_topic() -> None:
    conf = _conf()
    assert conf.oslo_messaging_notifications.driver == ["noop"]
    assert conf.oslo_messaging_notifications.topics == ["versioned_notifications"]
    assert not rpc.notifications_enabled(conf)
    notifier = rpc.get_notifier(conf, "resize-sched-compute:h")
    assert not notifier.is_enabled()
    assert notifier.publisher_id == "resize-sched-compute:h"
    # registering again (oslo.messaging's Notifier does) is harmless
    rpc.register_notification_opts(conf)


def test_our_defaults_stay_on_our_conf() -> None:
    from oslo_config import cfg

    _conf()
    other = cfg.ConfigOpts()
    other([], default_config_files=[])
    other.register_opts(rpc._notifier_opts(), group="oslo_messaging_notifications")
    assert other.oslo_messaging_notifications.topics == ["notifications"]


def test_enabled_notifier_on_an_in_memory_transport() -> None:
    conf = _conf(driver=["messagingv2"], transport_url="fake://")
    assert rpc.notifications_enabled(conf)
    notifier = rpc.get_notifier(conf, "resize-sched-conductor:c")
    try:
        assert notifier.is_enabled()
        assert notifier._topics == ["versioned_notifications"]
    finally:
        notifier.transport.cleanup()


def test_compute_manager_builds_its_notifier_from_the_service_conf() -> None:
    conf = _conf()
    compute_api = types.SimpleNamespace(conf=conf)
    manager = ComputeManager("h", FakeDriver("h"), None, compute_api)  # type: ignore[arg-type]
    assert manager.notifier is not None and not manager.notifier.is_enabled()
    assert manager.notifier.publisher_id == "resize-sched-compute:h"
    # nothing to build it from: none, and nothing is sent
    assert ComputeManager("h", FakeDriver("h"), None, object()).notifier is None  # type: ignore[arg-type]


# -- the compute manager's events -----------------------------------------------------------


class _Recorder:
    """Stands in for the conductor and the other compute host: records calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> None:
            self.calls.append((name, args, kwargs))

        return record


def _manager(host: str, fail_on: tuple[str, ...] = ()) -> tuple[ComputeManager, Any, Any]:
    notifier = RecordingNotifier()
    peers = _Recorder()
    manager = ComputeManager(host, FakeDriver(host, fail_on=fail_on), peers, peers, notifier)  # type: ignore[arg-type]
    return manager, notifier, peers


def test_failed_prep_resize_sends_start_then_error_then_reports() -> None:
    manager, notifier, peers = _manager("host2", fail_on=("prep_resize",))
    manager.prep_resize(RequestContext(), migration=_migration())
    assert [(p, e) for p, e, _ in notifier.sent] == [
        ("INFO", "instance.resize_prep.start"),
        ("ERROR", "instance.resize.error"),
    ]
    fault = _data(_data(notifier.sent[1][2])["fault"])
    assert (fault["kind"], fault["operation"], fault["exception"]) == (
        "failed",
        "prep_resize",
        "InjectedFailure",
    )
    (call,) = peers.calls
    assert call[0] == "operation_failed"
    assert call[1][2] == fault["reason"]  # the conductor is told the same reason


def test_revert_start_on_the_destination_end_on_the_source() -> None:
    migration = _migration()
    dest, dest_sent, dest_peers = _manager("host2")
    source, source_sent, _ = _manager("host1")
    dest.revert_resize(RequestContext(), migration=migration)
    source.revert_resize(RequestContext(), migration=migration)
    assert [e for _, e, _ in dest_sent.sent] == ["instance.resize_revert.start"]
    assert [e for _, e, _ in source_sent.sent] == ["instance.resize_revert.end"]
    assert dest_peers.calls[0][0] == "revert_resize"
    same, same_sent, _ = _manager("host1")
    same.revert_resize(RequestContext(), migration=_migration(dest_host="host1"))
    assert [e for _, e, _ in same_sent.sent] == [
        "instance.resize_revert.start",
        "instance.resize_revert.end",
    ]


def test_destroy_sends_delete_start_and_end() -> None:
    manager, notifier, _ = _manager("host1")
    manager.destroy(RequestContext(), server_uuid="s-1")  # an old sender: no server
    manager.destroy(
        RequestContext(),
        server_uuid="s-1",
        server=compute_rpcapi.server_message(_server_row()),
    )
    events = [(e, _data(p)["state"], _data(p)["host"]) for _, e, p in notifier.sent]
    assert events == [
        ("instance.delete.start", None, "host1"),
        ("instance.delete.end", "deleted", "host1"),
        ("instance.delete.start", "active", "host1"),
        ("instance.delete.end", "deleted", "host1"),
    ]


def test_every_step_a_compute_host_notifies_has_an_event_type() -> None:
    """An evacuation's rebuild sent instance.rebuild.* although the names were
    missing from EVENT_TYPES: with notifications on, the host logged a
    traceback and sent nothing. Every step the tables describe must be a
    known event type."""
    steps = [*notifications.INSTANCE_STEPS, *notifications.RESIZE_STEPS]
    for action, phase in steps:
        assert notifications.event_type(action, phase) == f"instance.{action}.{phase}"
