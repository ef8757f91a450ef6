"""Versioned notifications consumed from the bus while compute services resize.

Three real compute services (registered in the real Placement) run the
resize handshake over a real oslo.messaging transport: RabbitMQ, in a virtual
host of the test's own (skipped without RESIZE_SCHED_TEST_RABBIT_URL, failed
under CI=true), and the in-process ``fake://`` one. An oslo.messaging
notification listener on ``versioned_notifications`` records what they send.
The conductor's part is played by a small relay that sends the next step
(and, where the real conductor would find no host, calls
:func:`resize_sched.notifications.notify_resize_error` as it is meant to).
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import oslo_messaging as messaging
import pytest
from oslo_messaging import opts as messaging_opts

from resize_sched import conf as rs_conf
from resize_sched import notifications, rpc
from resize_sched.compute.rpcapi import ComputeAPI
from resize_sched.compute.service import ComputeService
from resize_sched.conductor import rpcapi as conductor_rpcapi
from resize_sched.context import RequestContext
from resize_sched.placement.embedded import PlacementInProcess
from tests.functional.fixtures.rabbit import PrivateVhost, broker_url

TIMEOUT = 20.0
OLD = {"id": "small", "name": "m1.small", "vcpus": 1, "memory_mb": 512, "root_gb": 10}
NEW = {"id": "large", "name": "m1.large", "vcpus": 2, "memory_mb": 1024, "root_gb": 20}
ENABLED = {"driver": ["messagingv2"]}


@dataclass(frozen=True)
class Event:
    """One notification as the listener received it."""

    priority: str
    publisher_id: str
    event_type: str
    payload: dict[str, Any]
    timestamp: str

    @property
    def data(self) -> dict[str, Any]:
        return self.payload["nova_object.data"]


class Recorder:
    """A notification listener endpoint that keeps every event."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._cond = threading.Condition()

    def _record(self, priority: str, publisher_id: str, event_type: str, payload, metadata):
        with self._cond:
            event = Event(priority, publisher_id, event_type, payload, metadata["timestamp"])
            self.events.append(event)
            self._cond.notify_all()

    def info(self, ctxt, publisher_id, event_type, payload, metadata) -> None:
        self._record("INFO", publisher_id, event_type, payload, metadata)

    def error(self, ctxt, publisher_id, event_type, payload, metadata) -> None:
        self._record("ERROR", publisher_id, event_type, payload, metadata)

    def wait_for(self, event_type: str, timeout: float = TIMEOUT, **data: Any) -> Event:
        """The first event of ``event_type`` whose data include ``data``."""

        def found() -> Event | None:
            for event in self.events:
                if event.event_type == event_type and data.items() <= event.data.items():
                    return event
            return None

        with self._cond:
            if not self._cond.wait_for(lambda: found() is not None, timeout):
                types = [e.event_type for e in self.events]
                pytest.fail(f"no {event_type} {data} within {timeout}s; got {types}")
            event = found()
            assert event is not None
            return event

    def of(self, server_uuid: str) -> list[Event]:
        """The events about one server, in the order they were sent."""
        with self._cond:
            mine = [e for e in self.events if e.data.get("uuid") == server_uuid]
        return sorted(mine, key=lambda e: e.timestamp)


class RelayConductor:
    """The conductor's RPC endpoint, reduced to sending each next step.

    A ``prep_resize`` that fails is sent to the next host of ``alternates``;
    with none left, the resize ends with ``notify_resize_error`` (deferred),
    as the real conductor's NoValidHost would.
    """

    target = messaging.Target(
        namespace=conductor_rpcapi.NAMESPACE, version=conductor_rpcapi.VERSION
    )

    def __init__(self, compute: ComputeAPI, notifier: messaging.Notifier) -> None:
        self.compute = compute
        self.notifier = notifier
        self.migrations: dict[str, dict[str, Any]] = {}
        self.alternates: dict[str, list[str]] = {}
        self.reports: list[tuple[str, dict[str, Any]]] = []
        self._cond = threading.Condition()

    def _report(self, method: str, **kwargs: Any) -> None:
        with self._cond:
            self.reports.append((method, kwargs))
            self._cond.notify_all()

    def wait_for(self, method: str, **match: Any) -> None:
        def seen() -> bool:
            return any(m == method and match.items() <= k.items() for m, k in self.reports)

        with self._cond:
            if not self._cond.wait_for(seen, TIMEOUT):
                pytest.fail(f"no {method} {match} within {TIMEOUT}s; got {self.reports}")

    def resize(self, ctxt: RequestContext, migration: dict[str, Any], alternates=()) -> None:
        self.migrations[migration["uuid"]] = migration
        self.alternates[migration["uuid"]] = list(alternates)
        self.compute.prep_resize(ctxt, migration["dest_host"], migration)

    # -- what compute hosts call ------------------------------------------------------

    @messaging.expose
    def build_done(self, ctxt: RequestContext, server_uuid: str) -> None:
        self._report("build_done", server_uuid=server_uuid)

    @messaging.expose
    def resize_prepared(
        self, ctxt: RequestContext, migration_uuid: str, host: str | None = None
    ) -> None:
        migration = self.migrations[migration_uuid]
        self.compute.resize_instance(ctxt, migration["source_host"], migration)

    @messaging.expose
    def resize_finished(self, ctxt: RequestContext, migration_uuid: str) -> None:
        self._report("resize_finished", migration_uuid=migration_uuid)

    @messaging.expose
    def compute_report(self, ctxt: RequestContext, **kwargs: Any) -> None:
        """A compute service's heartbeat: not part of these tests."""

    @messaging.expose
    def operation_failed(
        self,
        ctxt: RequestContext,
        operation: str,
        reason: str,
        server_uuid: str,
        migration_uuid: str | None = None,
        host: str | None = None,
    ) -> None:
        self._report("operation_failed", operation=operation, migration_uuid=migration_uuid)
        if operation != "prep_resize" or migration_uuid is None:
            return
        left = self.alternates[migration_uuid]
        migration = self.migrations[migration_uuid]
        if left:
            migration = dict(migration, dest_host=left.pop(0))
            self.migrations[migration_uuid] = migration
            self.compute.prep_resize(ctxt, migration["dest_host"], migration)
        else:
            notifications.notify_resize_error(
                self.notifier,
                ctxt,
                migration,
                notifications.KIND_DEFERRED,
                f"no host has room for {migration['new_flavor']['id']} ({reason})",
            )
            self._report("no_valid_host", migration_uuid=migration_uuid)


# -- fixtures ---------------------------------------------------------------------------


@pytest.fixture(params=["fake", pytest.param("rabbit", marks=pytest.mark.rabbit)])
def bus_url(request: pytest.FixtureRequest) -> Iterator[tuple[str, PrivateVhost | None]]:
    """The transport URL: in-process, or RabbitMQ in a private virtual host."""
    if request.param == "fake":
        yield "fake://", None
        return
    with PrivateVhost(broker_url()) as vhost:
        yield vhost.url, vhost


@dataclass
class Bus:
    """One test's deployment: its transports, exchange and configuration factory."""

    url: str
    vhost: PrivateVhost | None
    exchange: str
    placement: PlacementInProcess
    transport: messaging.Transport

    def conf(self, host: str, notify: dict[str, Any] | None = None, **groups: Any) -> Any:
        """A service's ConfigOpts on this bus (notifications as ``notify`` says)."""
        conf = rs_conf.new_conf()
        rs_conf.parse_args(conf, [], default_config_files=[])
        for group, opts in messaging_opts.list_opts():
            if group is None:
                conf.register_opts(opts)
        conf.set_override("control_exchange", self.exchange)
        conf.set_override("host", host)
        conf.set_override("update_interval", 0, group="compute")
        for group, values in groups.items():
            for name, value in values.items():
                conf.set_override(name, value, group=group)
        rpc.register_notification_opts(conf)
        conf.set_override("transport_url", self.url, group="oslo_messaging_notifications")
        for name, value in (notify or {}).items():
            conf.set_override(name, value, group="oslo_messaging_notifications")
        return self.placement.configure(conf)


@pytest.fixture
def bus(bus_url: tuple[str, PrivateVhost | None], placement: PlacementInProcess) -> Iterator[Bus]:
    url, vhost = bus_url
    exchange = f"notif_tests_{uuid.uuid4().hex[:8]}"
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    transport = rpc.get_transport(conf, url=url, exchange=exchange)
    yield Bus(url, vhost, exchange, placement, transport)
    transport.cleanup()


@pytest.fixture
def listener(bus: Bus) -> Iterator[Recorder]:
    """Records what arrives on ``versioned_notifications`` (and on oslo's default
    ``notifications``, which nothing of ours may use)."""
    recorder = Recorder()
    conf = bus.conf("listener")
    transport = rpc.get_notification_transport(conf)
    targets = [
        messaging.Target(topic="versioned_notifications"),
        messaging.Target(topic="notifications"),
    ]
    server = messaging.get_notification_listener(
        transport, targets, [recorder], executor="threading"
    )
    server.start()
    yield recorder
    server.stop()
    server.wait()
    transport.cleanup()


@dataclass
class Deployment:
    conductor: RelayConductor
    compute: ComputeAPI
    services: dict[str, ComputeService]


@pytest.fixture
def deploy(bus: Bus, listener: Recorder) -> Iterator[Callable[..., Deployment]]:
    """``deploy(notify)``: hosts 1-3 (host2 fails prep_resize) and the relay."""
    started: list[Any] = []

    def factory(notify: dict[str, Any] | None) -> Deployment:
        control = bus.conf("control", notify)
        compute = ComputeAPI(control, bus.transport)
        conductor_notifier = rpc.get_notifier(
            control, notifications.publisher_id(notifications.CONDUCTOR, "control")
        )
        relay = RelayConductor(compute, conductor_notifier)
        target = messaging.Target(topic=conductor_rpcapi.TOPIC, server="control")
        server = rpc.get_server(bus.transport, target, [relay])
        server.start()
        started.append(server)
        started.append(conductor_notifier.transport)
        services = {}
        for host in ("host1", "host2", "host3"):
            conf = bus.conf(host, notify, fake_driver={"fail_on": ["host2:prep_resize"]})
            service = ComputeService(conf, transport=bus.transport)
            service.start()
            started.append(service)
            services[host] = service
        return Deployment(relay, compute, services)

    yield factory

    def stop(thing: Any) -> None:
        if isinstance(thing, ComputeService):
            thing.stop()
        elif isinstance(thing, messaging.MessageHandlingServer):
            thing.stop()
            thing.wait()
        else:
            thing.cleanup()

    with concurrent.futures.ThreadPoolExecutor() as pool:
        for future in [pool.submit(stop, thing) for thing in started]:
            future.result()


def _server(name: str) -> dict[str, Any]:
    return {
        "uuid": str(uuid.uuid4()),
        "name": name,
        "flavor": OLD,
        "project_id": "project-a",
        "user_id": "user-a",
        "host": "host1",
        "vm_state": "building",
        "task_state": "spawning",
    }


def _migration(server: dict[str, Any], dest: str, strategy: str) -> dict[str, Any]:
    return {
        "uuid": str(uuid.uuid4()),
        "server_uuid": server["uuid"],
        "source_host": "host1",
        "dest_host": dest,
        "old_flavor": OLD,
        "new_flavor": NEW,
        "claim_strategy": strategy,
        "project_id": server["project_id"],
        "user_id": server["user_id"],
        "server": server,
    }


def _boot(d: Deployment, ctxt: RequestContext, name: str) -> dict[str, Any]:
    server = _server(name)
    d.compute.spawn(ctxt, "host1", server)
    d.conductor.wait_for("build_done", server_uuid=server["uuid"])
    return server


def _flavor_id(payload: dict[str, Any] | None) -> str | None:
    return None if payload is None else payload["nova_object.data"]["flavorid"]


# -- tests ------------------------------------------------------------------------------


def test_resize_confirm_revert_and_errors_are_notified_in_order(
    deploy: Callable[..., Deployment], listener: Recorder, bus: Bus
) -> None:
    d = deploy(ENABLED)
    if bus.vhost is not None:  # on RabbitMQ: the listener consumes Nova's versioned queues
        assert bus.vhost.consumers("versioned_notifications.info") == 1
        assert bus.vhost.consumers("versioned_notifications.error") == 1
    ctxt = RequestContext(user_id="user-a", project_id="project-a")

    # A resize whose first destination (host2) fails prep_resize: it goes on
    # to host3; then confirm; then delete on host3.
    first = _boot(d, ctxt, "first")
    resize = _migration(first, "host2", "max_flavor")
    d.conductor.resize(ctxt, resize, alternates=["host3"])
    d.conductor.wait_for("resize_finished", migration_uuid=resize["uuid"])
    d.compute.confirm_resize(ctxt, "host1", dict(resize, dest_host="host3"))
    listener.wait_for("instance.resize_confirm.end", uuid=first["uuid"])
    d.compute.destroy(ctxt, "host3", first["uuid"], server=dict(first, vm_state="active"))
    listener.wait_for("instance.delete.end", uuid=first["uuid"])

    # A resize to host3, reverted.
    second = _boot(d, ctxt, "second")
    revert = _migration(second, "host3", "drop_and_reclaim")
    d.conductor.resize(ctxt, revert)
    d.conductor.wait_for("resize_finished", migration_uuid=revert["uuid"])
    d.compute.revert_resize(ctxt, "host3", revert)
    listener.wait_for("instance.resize_revert.end", uuid=second["uuid"])

    # A resize whose only host fails: the conductor finds no valid host.
    third = _boot(d, ctxt, "third")
    stuck = _migration(third, "host2", "legacy")
    d.conductor.resize(ctxt, stuck)
    d.conductor.wait_for("no_valid_host", migration_uuid=stuck["uuid"])
    listener.wait_for("instance.resize.error", uuid=third["uuid"], host="host1")

    time.sleep(0.3)  # nothing more may arrive
    compute = "resize-sched-compute"
    assert [(e.event_type, e.publisher_id) for e in listener.of(first["uuid"])] == [
        ("instance.create.start", f"{compute}:host1"),
        ("instance.create.end", f"{compute}:host1"),
        ("instance.resize_prep.start", f"{compute}:host2"),
        ("instance.resize.error", f"{compute}:host2"),
        ("instance.resize_prep.start", f"{compute}:host3"),
        ("instance.resize_prep.end", f"{compute}:host3"),
        ("instance.resize.start", f"{compute}:host1"),
        ("instance.resize.end", f"{compute}:host1"),
        ("instance.resize_finish.start", f"{compute}:host3"),
        ("instance.resize_finish.end", f"{compute}:host3"),
        ("instance.resize_confirm.start", f"{compute}:host1"),
        ("instance.resize_confirm.end", f"{compute}:host1"),
        ("instance.delete.start", f"{compute}:host3"),
        ("instance.delete.end", f"{compute}:host3"),
    ]
    assert [(e.event_type, e.publisher_id) for e in listener.of(second["uuid"])][2:] == [
        ("instance.resize_prep.start", f"{compute}:host3"),
        ("instance.resize_prep.end", f"{compute}:host3"),
        ("instance.resize.start", f"{compute}:host1"),
        ("instance.resize.end", f"{compute}:host1"),
        ("instance.resize_finish.start", f"{compute}:host3"),
        ("instance.resize_finish.end", f"{compute}:host3"),
        ("instance.resize_revert.start", f"{compute}:host3"),
        ("instance.resize_revert.end", f"{compute}:host1"),
    ]
    assert [(e.event_type, e.publisher_id) for e in listener.of(third["uuid"])][2:] == [
        ("instance.resize_prep.start", f"{compute}:host2"),
        ("instance.resize.error", f"{compute}:host2"),
        ("instance.resize.error", "resize-sched-conductor:control"),
    ]

    # Every payload: our namespace, the object's name and version.
    for event in listener.events:
        assert event.payload["nova_object.namespace"] == "resize_sched"
        assert event.priority == ("ERROR" if event.event_type.endswith(".error") else "INFO")
        if event.event_type.startswith(("instance.create", "instance.delete")):
            expected = notifications.INSTANCE_ACTION
        else:
            expected = notifications.INSTANCE_ACTION_RESIZE
        assert event.payload["nova_object.name"] == expected.name
        assert event.payload["nova_object.version"] == expected.version == "1.0"
        assert tuple(event.data) == expected.fields

    # Key fields of the resize events.
    for event in listener.of(first["uuid"])[4:12]:
        data = event.data
        assert data["claim_strategy"] == "max_flavor"
        assert (data["source_host"], data["dest_host"]) == ("host1", "host3")
        assert (_flavor_id(data["old_flavor"]), _flavor_id(data["new_flavor"])) == (
            "small",
            "large",
        )
        assert (data["tenant_id"], data["user_id"], data["display_name"]) == (
            "project-a",
            "user-a",
            "first",
        )
        assert data["migration_uuid"] == resize["uuid"]
    finish_end = listener.of(first["uuid"])[9].data
    assert (finish_end["state"], finish_end["host"], _flavor_id(finish_end["flavor"])) == (
        "resized",
        "host3",
        "large",
    )
    revert_end = listener.of(second["uuid"])[-1].data
    assert revert_end["claim_strategy"] == "drop_and_reclaim"
    assert (revert_end["state"], revert_end["host"], _flavor_id(revert_end["flavor"])) == (
        "active",
        "host1",
        "small",
    )

    # The errors: kind and reason.
    compute_error = listener.of(first["uuid"])[3]
    assert compute_error.data["dest_host"] == "host2"
    fault = compute_error.data["fault"]
    assert fault["nova_object.name"] == "FaultPayload"
    assert fault["nova_object.version"] == notifications.FAULT.version
    assert fault["nova_object.data"]["kind"] == "failed"
    assert fault["nova_object.data"]["operation"] == "prep_resize"
    assert fault["nova_object.data"]["exception"] == "InjectedFailure"
    assert "Injected failure of prep_resize on host host2" in fault["nova_object.data"]["reason"]

    no_host = listener.of(third["uuid"])[-1].data
    assert no_host["claim_strategy"] == "legacy"
    assert no_host["fault"]["nova_object.data"]["kind"] == "deferred"
    assert no_host["fault"]["nova_object.data"]["reason"].startswith("no host has room for large")

    create_end, delete_end = (
        listener.of(first["uuid"])[1].data,
        listener.of(first["uuid"])[-1].data,
    )
    assert (create_end["state"], create_end["host"], _flavor_id(create_end["flavor"])) == (
        "active",
        "host1",
        "small",
    )
    assert (delete_end["state"], delete_end["task_state"]) == ("deleted", None)


def test_default_configuration_sends_nothing(
    deploy: Callable[..., Deployment], listener: Recorder, bus: Bus
) -> None:
    """``[oslo_messaging_notifications]`` left alone (driver noop): a build, a
    resize with a failed prep, a confirm and a conductor-side error go by and
    nothing reaches either topic."""
    d = deploy(None)
    ctxt = RequestContext(user_id="user-a", project_id="project-a")
    server = _boot(d, ctxt, "quiet")
    resize = _migration(server, "host2", "max_flavor")
    d.conductor.resize(ctxt, resize, alternates=["host3"])
    d.conductor.wait_for("resize_finished", migration_uuid=resize["uuid"])
    d.compute.confirm_resize(ctxt, "host1", dict(resize, dest_host="host3"))
    stuck = _migration(_boot(d, ctxt, "stuck"), "host2", "legacy")
    d.conductor.resize(ctxt, stuck)
    d.conductor.wait_for("no_valid_host", migration_uuid=stuck["uuid"])
    d.compute.destroy(ctxt, "host3", server["uuid"])
    d.conductor.wait_for("operation_failed", operation="prep_resize")
    time.sleep(1.0)
    assert listener.events == []

    # The listener was live all along: an enabled notifier on the same bus is heard.
    probe = rpc.get_notifier(bus.conf("probe", ENABLED), "probe")
    try:
        notifications.notify_delete(probe, ctxt, server, notifications.START)
        assert listener.wait_for("instance.delete.start").publisher_id == "probe"
    finally:
        probe.transport.cleanup()
