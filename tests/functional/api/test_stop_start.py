"""``os-stop`` and ``os-start`` through the API, the conductor and the fake
hypervisor, and a stopped server's resize (it stays SHUTOFF, as in Nova)."""

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.functional.api.harness import ALICE, BOB, ApiHarness
from tests.functional.api.test_instance_actions import LiveCloud, events
from tests.functional.fixtures.cloud import Cloud


@pytest.fixture
def live(make_cloud: Callable[..., Cloud]) -> Iterator[LiveCloud]:
    yield LiveCloud(make_cloud())


@pytest.fixture
def flavors(live: LiveCloud) -> tuple[Any, Any]:
    small = live.cloud.flavor("small", 1, 512, 5, flavorid="small")
    big = live.cloud.flavor("big", 2, 1024, 10, flavorid="big")
    return small, big


def _state(live: LiveCloud, server: str) -> tuple[Any, ...]:
    body = live.ok("GET", f"/servers/{server}").json["server"]
    return (
        body["status"],
        body["OS-EXT-STS:vm_state"],
        body["OS-EXT-STS:power_state"],
        body["OS-EXT-STS:task_state"],
    )


def _powered(live: LiveCloud, server: str) -> str:
    host = live.db.server_get(server).host
    instance = live.computes[host].driver.get_instance(server)  # type: ignore[attr-defined]
    return instance.power_state


def test_stop_and_start(live: LiveCloud, flavors: tuple[Any, Any]) -> None:
    live.add_host("h1")
    server, _ = live.boot(flavors[0])
    stop_id = live.act(server, {"os-stop": None})
    assert _state(live, server) == ("SHUTOFF", "stopped", 4, None)
    assert _powered(live, server) == "shutoff"
    assert events(live.action(server, stop_id)) == [("compute_stop_instance", "Success")]
    assert live.action(server, stop_id)["action"] == "stop"
    listed = live.ok("GET", "/servers/detail?status=SHUTOFF", token=ALICE).json["servers"]
    assert [s["id"] for s in listed] == [server]

    start_id = live.act(server, {"os-start": {}})
    assert _state(live, server) == ("ACTIVE", "active", 1, None)
    assert _powered(live, server) == "running"
    assert events(live.action(server, start_id)) == [("compute_start_instance", "Success")]


def test_stop_and_start_refusals(live: LiveCloud, flavors: tuple[Any, Any]) -> None:
    live.add_host("h1")
    server, _ = live.boot(flavors[0])
    assert live.request("POST", f"/servers/{server}/action", {"os-start": None}).status_int == 409
    live.act(server, {"os-stop": None})
    assert live.request("POST", f"/servers/{server}/action", {"os-stop": None}).status_int == 409
    other = live.request("POST", f"/servers/{server}/action", {"os-start": None}, token=BOB)
    assert other.status_int == 404
    assert not live.queue


@pytest.mark.parametrize("decision", ["confirmResize", "revertResize"])
def test_a_stopped_server_resizes_and_stays_shutoff(
    live: LiveCloud, flavors: tuple[Any, Any], decision: str
) -> None:
    small, big = flavors
    live.add_host("h1")
    live.add_host("h2")
    server, _ = live.boot(small)
    live.act(server, {"os-stop": None})
    live.act(server, {"resize": {"flavorRef": "big"}})
    assert _state(live, server)[:3] == ("VERIFY_RESIZE", "resized", 4)
    assert _powered(live, server) == "shutoff"
    live.act(server, {decision: None})
    assert _state(live, server) == ("SHUTOFF", "stopped", 4, None)
    assert _powered(live, server) == "shutoff"
    flavor = live.db.server_get(server).flavor["id"]
    assert flavor == ("big" if decision == "confirmResize" else "small")
    live.act(server, {"os-start": None})
    assert _state(live, server) == ("ACTIVE", "active", 1, None)


def test_a_failed_stop_leaves_the_server_running(
    live: LiveCloud, flavors: tuple[Any, Any]
) -> None:
    live.add_host("h1", fail_on=("stop",))
    server, _ = live.boot(flavors[0])
    stop_id = live.act(server, {"os-stop": None})
    assert _state(live, server) == ("ACTIVE", "active", 1, None)
    ((event, result),) = events(live.action(server, stop_id))
    assert (event, result) == ("compute_stop_instance", "Error")


def test_a_host_capped_below_compute_rpc_1_1_is_not_asked(
    live: LiveCloud, flavors: tuple[Any, Any]
) -> None:
    live.add_host("h1")
    server, _ = live.boot(flavors[0])
    live.compute_client.can_power = False
    stop_id = live.act(server, {"os-stop": None})
    assert not live.sent("power_off")
    assert _state(live, server) == ("ACTIVE", "active", 1, None)
    action = live.action(server, stop_id)
    assert events(action) == [("compute_stop_instance", "Error")]
    assert "1.1" in action["events"][0]["traceback"]


def test_the_api_casts_stop_and_start(api: ApiHarness) -> None:
    server = api.server(api.flavor("small"))
    path = f"/v2.1/servers/{server.uuid}/action"
    assert api.request("POST", path, {"os-stop": {}}, token=ALICE).status_int == 202
    cast = api.next_cast()
    assert (cast.method, cast.kwargs) == ("stop_server", {"server_uuid": server.uuid})
    assert api.db.server_get(server.uuid).task_state == "powering-off"
    assert api.request("POST", path, {"os-stop": {}}, token=ALICE).status_int == 409
    api.assert_no_cast()


def test_an_error_server_on_a_host_can_be_stopped(api: ApiHarness) -> None:
    flavor = api.flavor("small")
    server = api.server(flavor)
    api.db.server_update(server.uuid, status="ERROR", vm_state="error")
    path = f"/v2.1/servers/{server.uuid}/action"
    assert api.request("POST", path, {"os-stop": None}, token=ALICE).status_int == 202
    assert api.next_cast().method == "stop_server"
    hostless = api.server(flavor, active=False)
    api.db.server_update(hostless.uuid, status="ERROR", vm_state="error", task_state=None)
    before = api.snapshot()
    path = f"/v2.1/servers/{hostless.uuid}/action"
    assert api.request("POST", path, {"os-stop": None}, token=ALICE).status_int == 409
    assert api.snapshot() == before


def test_stop_and_start_send_novas_power_notifications(
    live: LiveCloud, flavors: tuple[Any, Any]
) -> None:
    from tests.unit.test_notifications import RecordingNotifier

    live.add_host("h1")
    notifier = RecordingNotifier()
    live.computes["h1"].notifier = notifier  # type: ignore[assignment]
    server, _ = live.boot(flavors[0])
    notifier.sent.clear()
    live.act(server, {"os-stop": None})
    live.act(server, {"os-start": None})
    sent = [(event, p["nova_object.data"]["state"]) for _, event, p in notifier.sent]
    assert sent == [
        ("instance.power_off.start", "active"),
        ("instance.power_off.end", "stopped"),
        ("instance.power_on.start", "stopped"),
        ("instance.power_on.end", "active"),
    ]
