"""``os-instance-actions``: every build, resize, confirm, revert and delete
records its action and the events of its steps, through the real services.

A :class:`LiveCloud` wires the API application, the conductor's RPC endpoint
(:class:`~resize_sched.conductor.manager.ConductorManager`, with the real
scheduler and executor over the real Placement) and one
:class:`~resize_sched.compute.manager.ComputeManager` per host (the fake
driver) over an in-memory queue of messages. :meth:`LiveCloud.run` delivers
them in order, and keeps each one, so a test can deliver one again (a
duplicated RPC message) and see that nothing is recorded twice.
"""

from __future__ import annotations

import collections
import functools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import webob

from resize_sched.api.app import build_app
from resize_sched.compute.driver.fake import FakeDriver
from resize_sched.compute.manager import ComputeManager
from resize_sched.conductor.manager import ConductorManager
from tests.functional.fixtures.cloud import Cloud
from tests.functional.fixtures.openstack_cli import served_cli

ADMIN = "admin:admin"
ALICE = "alice:project-a"
BOB = "bob:project-b"

#: The positional argument of each compute cast after the host.
_COMPUTE_ARG = {
    "spawn": "server",
    "destroy": "server_uuid",
    "power_off": "server",
    "power_on": "server",
    "shelve_instance": "server",
    "shelve_offload_instance": "server",
    "unshelve_instance": "server",
}


@dataclass
class Message:
    """One cast: to the conductor (``host`` None) or to a compute host."""

    host: str | None
    method: str
    context: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


class _Queued:
    """Every method called on it is a cast put on the queue, as the subclass's
    ``_cast`` records it."""

    def __init__(self, queue: collections.deque[Message]) -> None:
        self._queue = queue

    def __getattr__(self, method: str) -> Callable[..., None]:
        if method.startswith("_"):
            raise AttributeError(method)
        return functools.partial(self._cast, method)

    def _cast(self, method: str, ctxt: Any, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError


class _ConductorClient(_Queued):
    """Stands in for ``ConductorAPI``: every cast goes on the queue."""

    #: Whether the conductor speaks RPC 1.4 (stop_server, start_server).
    can_power = True
    #: Whether the conductor speaks RPC 1.6 (shelving).
    can_shelve = True

    def _cast(self, method: str, ctxt: Any, *args: Any, **kwargs: Any) -> None:
        self._queue.append(Message(None, method, ctxt, args, kwargs))


class _ComputeClient(_Queued):
    """Stands in for ``ComputeAPI``: every cast goes on the queue."""

    conf = None
    #: Whether the hosts speak compute RPC 1.1 (power_off, power_on).
    can_power = True
    #: Whether the hosts speak compute RPC 1.3 (shelving).
    can_shelve = True

    def _cast(  # type: ignore[override]
        self, method: str, ctxt: Any, host: str, payload: Any, **kwargs: Any
    ) -> None:
        kwargs[_COMPUTE_ARG.get(method, "migration")] = payload
        self._queue.append(Message(host, method, ctxt, (), kwargs))


class LiveCloud:
    """The API, the conductor and compute hosts over the real Placement.

    :param cloud: a :class:`Cloud` (database, Placement, configuration).
    """

    def __init__(self, cloud: Cloud) -> None:
        self.cloud = cloud
        self.db = cloud.db
        cloud.conf.set_override("auth_strategy", "noauth2", group="api")
        # NOTE: flavors larger than any host are how these tests reach the
        # scheduler's verdict; the default cores quota would refuse them first.
        cloud.conf.set_override("cores", -1, group="quota")
        self.queue: collections.deque[Message] = collections.deque()
        self.delivered: list[Message] = []
        self.conductor_client = _ConductorClient(self.queue)
        self.compute_client = _ComputeClient(self.queue)
        self.conductor = ConductorManager(cloud.deps, self.compute_client)  # type: ignore[arg-type]
        self.computes: dict[str, ComputeManager] = {}
        self.app = build_app(cloud.conf, cloud.db, self.conductor_client)  # type: ignore[arg-type]

    def add_host(
        self,
        name: str,
        vcpus: int = 4,
        memory_mb: int = 4096,
        disk_gb: int = 40,
        fail_on: tuple[str, ...] = (),
    ) -> str:
        rp = self.cloud.add_host(name, vcpus, memory_mb, disk_gb)
        self.computes[name] = ComputeManager(
            name,
            FakeDriver(name, fail_on=fail_on),
            self.conductor_client,  # type: ignore[arg-type]
            self.compute_client,  # type: ignore[arg-type]
        )
        return rp

    # -- messages ---------------------------------------------------------------------------

    def deliver(self, message: Message) -> None:
        """Deliver one message to its endpoint, as the RPC server would."""
        if message.host is None:
            getattr(self.conductor, message.method)(
                message.context, *message.args, **message.kwargs
            )
        else:
            getattr(self.computes[message.host], message.method)(message.context, **message.kwargs)

    def run(self) -> list[Message]:
        """Deliver every queued message (and those they send) in order."""
        done = []
        while self.queue:
            message = self.queue.popleft()
            self.deliver(message)
            done.append(message)
        self.delivered.extend(done)
        return done

    def sent(self, method: str) -> list[Message]:
        return [m for m in self.delivered if m.method == method]

    # -- the API ----------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str = ADMIN,
        version: str | None = None,
    ) -> webob.Response:
        req = webob.Request.blank(f"/v2.1{path}", method=method)
        req.headers["X-Auth-Token"] = token
        if version is not None:
            req.headers["OpenStack-API-Version"] = f"compute {version}"
        if body is not None:
            req.body = json.dumps(body).encode()
            req.content_type = "application/json"
        return req.get_response(self.app)

    def ok(self, method: str, path: str, body: Any = None, **kw: Any) -> webob.Response:
        response = self.request(method, path, body, **kw)
        assert response.status_int < 300, (response.status, response.text)
        return response

    def boot(self, flavor: Any, token: str = ALICE) -> tuple[str, str]:
        """Create a server through the API and run the build; (uuid, request id)."""
        response = self.ok(
            "POST",
            "/servers",
            {"server": {"name": "vm", "flavorRef": flavor.flavorid}},
            token=token,
        )
        self.run()
        return response.json["server"]["id"], response.headers["X-OpenStack-Request-ID"]

    def act(self, server: str, body: dict[str, Any], token: str = ALICE) -> str:
        """A server action through the API, run; its request id."""
        response = self.ok("POST", f"/servers/{server}/action", body, token=token)
        self.run()
        return response.headers["X-OpenStack-Request-ID"]

    def actions(self, server: str, token: str = ADMIN, version: str = "2.80") -> list[Any]:
        path = f"/servers/{server}/os-instance-actions"
        return self.ok("GET", path, token=token, version=version).json["instanceActions"]

    def action(
        self, server: str, request_id: str, token: str = ADMIN, version: str = "2.80"
    ) -> dict[str, Any]:
        path = f"/servers/{server}/os-instance-actions/{request_id}"
        return self.ok("GET", path, token=token, version=version).json["instanceAction"]

    def status(self, server: str) -> str:
        return self.db.server_get(server).status


def events(action: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(e["event"], e["result"]) for e in action["events"]]


@pytest.fixture
def live(make_cloud: Callable[..., Cloud]) -> Iterator[LiveCloud]:
    yield LiveCloud(make_cloud())


@pytest.fixture
def flavors(live: LiveCloud) -> tuple[Any, Any]:
    small = live.cloud.flavor("small", 1, 512, 5, flavorid="small")
    big = live.cloud.flavor("big", 2, 1024, 10, flavorid="big")
    return small, big


# -- each flow records its action and events ------------------------------------------------


def test_build_resize_confirm_revert_delete_record_actions_and_events(
    live: LiveCloud, flavors: tuple[Any, Any]
) -> None:
    small, big = flavors
    live.add_host("h1")
    live.add_host("h2")
    server, create_id = live.boot(small)
    assert live.status(server) == "ACTIVE"

    create = live.action(server, create_id)
    assert create["action"] == "create"
    assert create["instance_uuid"] == server
    assert (create["user_id"], create["project_id"]) == ("alice", "project-a")
    assert create["message"] is None
    assert events(create) == [
        ("conductor_schedule_and_build_instances", "Success"),
        ("compute_build_and_run_instance", "Success"),
    ]
    spawned = create["events"][1]
    assert spawned["host"] == live.db.server_get(server).host
    assert spawned["finish_time"] >= spawned["start_time"]

    resize_id = live.act(server, {"resize": {"flavorRef": "big"}})
    assert live.status(server) == "VERIFY_RESIZE"
    resize = live.action(server, resize_id)
    assert resize["action"] == "resize" and resize["message"] is None
    assert events(resize) == [
        ("conductor_migrate_server", "Success"),
        ("compute_prep_resize", "Success"),
        ("compute_resize_instance", "Success"),
        ("compute_finish_resize", "Success"),
    ]
    migration = live.db.migration_list(server_uuid=server)[-1]
    hosts = {e["event"]: e["host"] for e in resize["events"]}
    assert hosts["compute_prep_resize"] == migration.dest_host
    assert hosts["compute_resize_instance"] == migration.source_host
    assert hosts["compute_finish_resize"] == migration.dest_host

    confirm_id = live.act(server, {"confirmResize": None})
    assert live.status(server) == "ACTIVE"
    assert events(live.action(server, confirm_id)) == [("conductor_confirm_resize", "Success")]

    live.act(server, {"resize": {"flavorRef": "small"}})
    revert_id = live.act(server, {"revertResize": None})
    assert live.status(server) == "ACTIVE"
    revert = live.action(server, revert_id)
    assert revert["action"] == "revertResize"
    assert events(revert) == [("conductor_revert_resize", "Success")]

    response = live.ok("DELETE", f"/servers/{server}", token=ALICE)
    delete_id = response.headers["X-OpenStack-Request-ID"]
    live.run()
    # NOTE: a deleted server's actions are readable from 2.21, as in Nova.
    listed = live.actions(server)
    assert [a["action"] for a in listed] == [
        "delete",
        "revertResize",
        "resize",
        "confirmResize",
        "resize",
        "create",
    ]
    assert listed[0]["request_id"] == delete_id
    assert events(live.action(server, delete_id)) == [("conductor_delete_server", "Success")]
    assert (
        live.request("GET", f"/servers/{server}/os-instance-actions", version="2.20").status_int
        == 404
    )


def test_fields_follow_the_microversion(live: LiveCloud, flavors: tuple[Any, Any]) -> None:
    small, _ = flavors
    live.add_host("h1")
    server, create_id = live.boot(small)
    keys = {
        "action",
        "instance_uuid",
        "request_id",
        "user_id",
        "project_id",
        "start_time",
        "message",
    }
    assert set(live.actions(server, version="2.1")[0]) == keys
    assert set(live.actions(server, version="2.58")[0]) == keys | {"updated_at"}

    # Before 2.51 only the events rule (admins) shows events; from 2.62 hostId.
    assert "events" not in live.action(server, create_id, token=ALICE, version="2.50")
    admin_old = live.action(server, create_id, version="2.50")["events"][0]
    assert set(admin_old) == {"event", "start_time", "finish_time", "result", "traceback"}
    admin_new = live.action(server, create_id, version="2.62")["events"][1]
    assert set(admin_new) == {
        "event",
        "start_time",
        "finish_time",
        "result",
        "traceback",
        "host",
        "hostId",
    }
    owner = live.action(server, create_id, token=ALICE, version="2.62")["events"][1]
    assert set(owner) == {"event", "start_time", "finish_time", "result", "hostId"}
    shown = live.ok("GET", f"/servers/{server}", token=ALICE, version="2.62").json["server"]
    assert owner["hostId"] == shown["hostId"] != ""

    assert (
        live.request("GET", f"/servers/{server}/os-instance-actions/req-unknown").status_int == 404
    )


def test_list_pages_by_request_id_from_2_58(live: LiveCloud, flavors: tuple[Any, Any]) -> None:
    small, big = flavors
    live.add_host("h1")
    server, create_id = live.boot(small)
    resize_id = live.act(server, {"resize": {"flavorRef": "big"}})
    path = f"/servers/{server}/os-instance-actions"
    first = live.ok("GET", f"{path}?limit=1", version="2.58").json
    assert [a["request_id"] for a in first["instanceActions"]] == [resize_id]
    assert "marker=" + resize_id in first["links"][0]["href"]
    rest = live.ok("GET", f"{path}?limit=1&marker={resize_id}", version="2.58").json
    assert [a["request_id"] for a in rest["instanceActions"]] == [create_id]
    assert live.request("GET", f"{path}?marker=req-nope", version="2.58").status_int == 400


# -- failures: the event says why ---------------------------------------------------------------


def _error_event(action: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [e for e in action["events"] if e["event"] == name and e["result"] == "Error"]
    return found


def test_deferred_resize_shows_an_error_event_with_the_reason(
    live: LiveCloud, flavors: tuple[Any, Any]
) -> None:
    small, big = flavors
    live.add_host("h1", vcpus=2, memory_mb=2048, disk_gb=20)
    live.add_host("h2", vcpus=2, memory_mb=2048, disk_gb=20)
    server, _ = live.boot(small)
    # Fill every host: the big flavor would fit on an empty one (deferred).
    for host in ("h1", "h2"):
        used = live.cloud.usage(host)
        live.cloud.squat(host, VCPU=2 - used.get("VCPU", 0))
    resize_id = live.act(server, {"resize": {"flavorRef": "big"}})
    assert live.status(server) == "ACTIVE"
    assert live.db.migration_list(server_uuid=server)[-1].error_kind == "deferred"

    resize = live.action(server, resize_id)
    assert resize["message"] == "Error"
    assert events(resize) == [("conductor_migrate_server", "Error")]
    event = _error_event(resize, "conductor_migrate_server")
    reason = live.db.migration_list(server_uuid=server)[-1].error_reason
    assert event["traceback"].startswith(
        "No host could take the resize to flavor big (deferred): "
    )
    assert reason in event["traceback"]
    assert event["finish_time"] is not None

    # The owner sees that it failed, not the traceback.
    owner = live.action(server, resize_id, token=ALICE)
    assert owner["message"] == "Error"
    assert owner["events"][0]["result"] == "Error"
    assert "traceback" not in owner["events"][0]


def test_infeasible_resize_shows_an_error_event_with_the_reason(
    live: LiveCloud, flavors: tuple[Any, Any]
) -> None:
    small, _ = flavors
    live.cloud.flavor("huge", 64, 1024, 10, flavorid="huge")
    live.add_host("h1")
    server, _ = live.boot(small)
    resize_id = live.act(server, {"resize": {"flavorRef": "huge"}})
    assert live.status(server) == "ACTIVE"
    migration = live.db.migration_list(server_uuid=server)[-1]
    assert migration.error_kind == "infeasible"
    resize = live.action(server, resize_id)
    assert resize["message"] == "Error"
    event = _error_event(resize, "conductor_migrate_server")
    assert event["traceback"].startswith(
        "No host could take the resize to flavor huge (infeasible): "
    )
    assert migration.error_reason in event["traceback"]


def test_prep_failure_shows_the_host_and_its_reason(
    make_cloud: Callable[..., Cloud],
) -> None:
    live = LiveCloud(make_cloud(resize={"allow_same_host": False}))
    small = live.cloud.flavor("small", 1, 512, 5, flavorid="small")
    live.cloud.flavor("big", 2, 1024, 10, flavorid="big")
    live.add_host("h1")
    server, _ = live.boot(small)
    assert live.db.server_get(server).host == "h1"
    live.add_host("h2", fail_on=("prep_resize",))
    resize_id = live.act(server, {"resize": {"flavorRef": "big"}})
    assert live.status(server) == "ACTIVE"

    resize = live.action(server, resize_id, version="2.62")
    assert resize["message"] == "Error"
    assert events(resize) == [
        ("conductor_migrate_server", "Success"),
        ("compute_prep_resize", "Error"),
        ("conductor_migrate_server", "Error"),
    ]
    prep = _error_event(resize, "compute_prep_resize")
    assert prep["host"] == "h2"
    assert "prep_resize" in prep["traceback"]
    again = _error_event(resize, "conductor_migrate_server")
    assert again["traceback"].startswith("No host could take the resize to flavor big (")


def test_spawn_failure_is_an_error_event_and_a_fault(
    make_cloud: Callable[..., Cloud],
) -> None:
    live = LiveCloud(make_cloud())
    small = live.cloud.flavor("small", 1, 512, 5, flavorid="small")
    live.add_host("h1", fail_on=("spawn",))
    server, create_id = live.boot(small)
    assert live.status(server) == "ERROR"
    create = live.action(server, create_id)
    assert create["message"] == "Error"
    assert events(create) == [
        ("conductor_schedule_and_build_instances", "Success"),
        ("compute_build_and_run_instance", "Error"),
    ]
    assert "spawn" in create["events"][1]["traceback"]
    # The server's fault, as Nova shows it: code, message, created.
    fault = live.ok("GET", f"/servers/{server}", token=ALICE).json["server"]["fault"]
    assert fault["code"] == 500
    assert "spawn" in fault["message"]
    assert fault["created"].endswith("Z")


def test_no_valid_host_at_build_is_an_error_event_and_a_fault(
    live: LiveCloud, flavors: tuple[Any, Any]
) -> None:
    huge = live.cloud.flavor("huge", 64, 1024, 10, flavorid="huge")
    live.add_host("h1")
    server, create_id = live.boot(huge)
    assert live.status(server) == "ERROR"
    create = live.action(server, create_id)
    assert events(create) == [("conductor_schedule_and_build_instances", "Error")]
    assert create["events"][0]["traceback"].startswith(
        "No host could take the server with flavor huge (infeasible): "
    )
    fault = live.ok("GET", f"/servers/{server}", token=ALICE).json["server"]["fault"]
    assert fault["code"] == 500
    assert "infeasible" in fault["message"]


def test_confirm_and_revert_failures_on_a_host_are_error_events(
    make_cloud: Callable[..., Cloud],
) -> None:
    live = LiveCloud(make_cloud(resize={"allow_same_host": False}))
    small = live.cloud.flavor("small", 1, 512, 5, flavorid="small")
    live.cloud.flavor("big", 2, 1024, 10, flavorid="big")
    live.add_host("h1", fail_on=("confirm",))
    server, _ = live.boot(small)
    live.add_host("h2", fail_on=("revert",))
    live.act(server, {"resize": {"flavorRef": "big"}})
    confirm_id = live.act(server, {"confirmResize": None})
    confirm = live.action(server, confirm_id, version="2.62")
    assert confirm["message"] == "Error"
    assert events(confirm) == [
        ("conductor_confirm_resize", "Success"),
        ("compute_confirm_resize", "Error"),
    ]
    assert confirm["events"][1]["host"] == "h1"
    assert "confirm" in confirm["events"][1]["traceback"]

    # Back from h2 to h1, reverted: the source (h2) fails its part.
    live.act(server, {"resize": {"flavorRef": "small"}})
    revert_id = live.act(server, {"revertResize": None})
    revert = live.action(server, revert_id, version="2.62")
    assert revert["message"] == "Error"
    assert events(revert) == [
        ("conductor_revert_resize", "Success"),
        ("compute_finish_revert_resize", "Error"),
    ]
    assert revert["events"][1]["host"] == "h2"


# -- duplicates -----------------------------------------------------------------------


def test_duplicated_messages_record_nothing_twice(
    live: LiveCloud, flavors: tuple[Any, Any]
) -> None:
    small, big = flavors
    live.add_host("h1")
    live.add_host("h2")
    server, create_id = live.boot(small)
    resize_id = live.act(server, {"resize": {"flavorRef": "big"}})
    confirm_id = live.act(server, {"confirmResize": None})
    before = {rid: live.action(server, rid) for rid in (create_id, resize_id, confirm_id)}
    # Every conductor message of these flows, delivered again (the compute
    # casts they send are dropped: the hosts would only report again).
    again = [m for m in live.delivered if m.host is None]
    assert {m.method for m in again} >= {
        "build_server",
        "build_done",
        "resize_server",
        "resize_prepared",
        "resize_finished",
        "confirm_resize",
    }
    for message in again:
        live.deliver(message)
        live.queue.clear()
    after = {rid: live.action(server, rid) for rid in before}
    assert after == before
    assert all(a["message"] is None for a in after.values())
    assert live.status(server) == "ACTIVE"


def test_a_stale_prep_failure_report_adds_no_error(
    live: LiveCloud, flavors: tuple[Any, Any]
) -> None:
    small, big = flavors
    live.add_host("h1")
    server, _ = live.boot(small)
    response = live.ok("POST", f"/servers/{server}/action", {"resize": {"flavorRef": "big"}})
    resize_id = response.headers["X-OpenStack-Request-ID"]
    # Run the conductor's resize_server: the destination is claimed and
    # prep_resize is on its way to it.
    live.deliver(live.queue.popleft())
    assert live.queue[0].method == "prep_resize"
    migration = live.db.migration_list(server_uuid=server)[-1]
    assert migration.status == "migrating"
    # A host the resize is not going to reports a prep failure (late, from
    # an earlier attempt): the reschedule step is not due.
    live.conductor.operation_failed(
        None,
        "prep_resize",
        "late",
        server_uuid=server,
        migration_uuid=migration.uuid,
        host="elsewhere",
    )
    assert live.db.migration_get(migration.uuid).status == "migrating"
    live.run()
    assert live.status(server) == "VERIFY_RESIZE"
    resize = live.action(server, resize_id)
    assert resize["message"] is None
    assert events(resize) == [
        ("conductor_migrate_server", "Success"),
        ("compute_prep_resize", "Success"),
        ("compute_resize_instance", "Success"),
        ("compute_finish_resize", "Success"),
    ]


# -- who sees what --------------------------------------------------------------------


def test_another_project_sees_nothing(live: LiveCloud, flavors: tuple[Any, Any]) -> None:
    small, _ = flavors
    live.add_host("h1")
    server, create_id = live.boot(small)
    assert (
        live.request("GET", f"/servers/{server}/os-instance-actions", token=BOB).status_int == 404
    )
    assert (
        live.request(
            "GET", f"/servers/{server}/os-instance-actions/{create_id}", token=BOB
        ).status_int
        == 404
    )
    assert len(live.actions(server, token=ALICE)) == 1


# -- the operators' CLI ---------------------------------------------------------------


@pytest.mark.slow
def test_openstack_server_event_list_and_show(live: LiveCloud, flavors: tuple[Any, Any]) -> None:
    small, _ = flavors
    live.cloud.flavor("huge", 64, 1024, 10, flavorid="huge")
    live.add_host("h1")
    server, create_id = live.boot(small)
    resize_id = live.act(server, {"resize": {"flavorRef": "huge"}})
    with served_cli(live.app, ADMIN) as run:
        listed = run("server", "event", "list", server)
        assert [(e["Request ID"], e["Action"]) for e in listed] == [
            (resize_id, "resize"),
            (create_id, "create"),
        ]
        shown = run("server", "event", "show", server, resize_id)
        assert shown["message"] == "Error"
        (event,) = shown["events"]
        assert (event["event"], event["result"]) == ("conductor_migrate_server", "Error")
        assert event["traceback"].startswith(
            "No host could take the resize to flavor huge (infeasible): "
        )
