"""Each compute RPC operation, its report to the conductor, and injected failures.

Messages go through the real oslo.messaging ``fake://`` transport to real
compute services registered in the real Placement.
"""

import uuid
from collections.abc import Callable
from typing import Any

import oslo_messaging as messaging
import pytest

from resize_sched.compute.driver.fake import RUNNING, SHUTOFF
from resize_sched.compute.rpcapi import ComputeAPI
from resize_sched.compute.service import ComputeService
from resize_sched.context import RequestContext
from tests.functional.compute.conftest import RecordingConductor, parsed_conf, wait_until

OLD = {"id": "small", "vcpus": 1, "memory_mb": 512, "root_gb": 10}
NEW = {"id": "large", "vcpus": 2, "memory_mb": 1024, "root_gb": 10}
INJECTED = "resize_sched.compute.injected_failure"


@pytest.fixture
def api(transport: messaging.Transport) -> ComputeAPI:
    return ComputeAPI(parsed_conf(), transport)


@pytest.fixture
def ctxt() -> RequestContext:
    return RequestContext(user_id="u", project_id="p")


def _server() -> dict[str, Any]:
    return {"uuid": str(uuid.uuid4()), "name": "vm", "flavor": OLD}


def _migration(server: dict[str, Any], source: str, dest: str) -> dict[str, Any]:
    return {
        "uuid": str(uuid.uuid4()),
        "server_uuid": server["uuid"],
        "source_host": source,
        "dest_host": dest,
        "old_flavor": OLD,
        "new_flavor": NEW,
    }


def _state(service: ComputeService, server_uuid: str) -> tuple[Any, ...] | None:
    instance = service.driver.get_instance(server_uuid)  # type: ignore[attr-defined]
    return None if instance is None else (instance.flavor["id"], instance.power_state)


def test_spawn_reports_build_done_and_destroy_removes(
    make_compute: Callable[..., ComputeService],
    conductor: RecordingConductor,
    api: ComputeAPI,
    ctxt: RequestContext,
) -> None:
    c1 = make_compute("c1")
    server = _server()
    api.spawn(ctxt, "c1", server)
    report = conductor.wait_for("build_done", server_uuid=server["uuid"])
    assert report.request_id == ctxt.request_id  # the context travels with the reports
    assert _state(c1, server["uuid"]) == ("small", RUNNING)

    api.spawn(ctxt, "c1", server)  # re-sent after a conductor restart: harmless
    wait_until(lambda: len(conductor.reports) == 2)
    assert c1.driver.list_instances() == [server["uuid"]]

    api.destroy(ctxt, "c1", server["uuid"])
    wait_until(lambda: c1.driver.list_instances() == [])
    assert [r.method for r in conductor.settle()] == ["build_done", "build_done"]


def test_resize_to_another_host_then_confirm(
    make_compute: Callable[..., ComputeService],
    conductor: RecordingConductor,
    api: ComputeAPI,
    ctxt: RequestContext,
) -> None:
    c1, c2 = make_compute("c1"), make_compute("c2")
    server = _server()
    api.spawn(ctxt, "c1", server)
    conductor.wait_for("build_done")
    migration = _migration(server, "c1", "c2")

    api.prep_resize(ctxt, "c2", migration)
    conductor.wait_for("resize_prepared", migration_uuid=migration["uuid"])

    # The source powers off and hands over; the destination finishes and reports.
    api.resize_instance(ctxt, "c1", migration)
    conductor.wait_for("resize_finished", migration_uuid=migration["uuid"])
    assert _state(c1, server["uuid"]) == ("small", SHUTOFF)
    assert _state(c2, server["uuid"]) == ("large", RUNNING)

    api.confirm_resize(ctxt, "c1", migration)
    wait_until(lambda: c1.driver.list_instances() == [])
    assert _state(c2, server["uuid"]) == ("large", RUNNING)
    methods = [r.method for r in conductor.settle()]
    assert methods == ["build_done", "resize_prepared", "resize_finished"]


def test_resize_to_another_host_then_revert(
    make_compute: Callable[..., ComputeService],
    conductor: RecordingConductor,
    api: ComputeAPI,
    ctxt: RequestContext,
) -> None:
    c1, c2 = make_compute("c1"), make_compute("c2")
    server = _server()
    migration = _migration(server, "c1", "c2")
    api.spawn(ctxt, "c1", server)
    api.resize_instance(ctxt, "c1", migration)
    conductor.wait_for("resize_finished")

    # To the destination only: it destroys its copy and hands over to the source.
    api.revert_resize(ctxt, "c2", migration)
    wait_until(lambda: _state(c1, server["uuid"]) == ("small", RUNNING))
    assert c2.driver.list_instances() == []
    assert "operation_failed" not in {r.method for r in conductor.settle()}


def test_same_host_resize_revert_and_confirm(
    make_compute: Callable[..., ComputeService],
    conductor: RecordingConductor,
    api: ComputeAPI,
    ctxt: RequestContext,
) -> None:
    c1 = make_compute("c1")
    server = _server()
    migration = _migration(server, "c1", "c1")
    api.spawn(ctxt, "c1", server)
    api.prep_resize(ctxt, "c1", migration)
    conductor.wait_for("resize_prepared")
    api.resize_instance(ctxt, "c1", migration)
    conductor.wait_for("resize_finished")
    assert _state(c1, server["uuid"]) == ("large", RUNNING)

    api.revert_resize(ctxt, "c1", migration)
    wait_until(lambda: _state(c1, server["uuid"]) == ("small", RUNNING))

    second = _migration(server, "c1", "c1")
    api.resize_instance(ctxt, "c1", second)
    conductor.wait_for("resize_finished", migration_uuid=second["uuid"])
    api.confirm_resize(ctxt, "c1", second)
    api.destroy(ctxt, "c1", "no-such-server")  # serialised behind the confirm: a marker
    assert _state(c1, server["uuid"]) == ("large", RUNNING)
    assert "operation_failed" not in {r.method for r in conductor.settle()}


# -- injected failures -------------------------------------------------------------------
#
# c1 fails the operation; c2 is healthy. Each case sends the message that makes
# c1 run the operation and expects exactly one report: that failure.


#: Each failure case: the operation c1 fails, the compute API call that makes
#: it run, the migration's source and destination (none for a spawn), and the
#: host the call goes to. A finish and a revert on the source are reached
#: through c2, which does its part and hands over to c1.
_FAILURE_CASES = [
    pytest.param("spawn", "spawn", None, None, "c1", id="spawn"),
    pytest.param("prep_resize", "prep_resize", "c2", "c1", "c1", id="prep_resize"),
    pytest.param("resize", "resize_instance", "c1", "c2", "c1", id="resize"),
    pytest.param("finish_resize", "resize_instance", "c2", "c1", "c2", id="finish_resize"),
    pytest.param("confirm", "confirm_resize", "c1", "c2", "c1", id="confirm"),
    pytest.param("revert", "revert_resize", "c2", "c1", "c1", id="revert-on-destination"),
    pytest.param("revert", "revert_resize", "c1", "c2", "c2", id="revert-on-source"),
]


@pytest.mark.parametrize(("operation", "call", "source", "dest", "to"), _FAILURE_CASES)
def test_fail_on_fails_exactly_that_operation_on_that_host(
    make_compute: Callable[..., ComputeService],
    conductor: RecordingConductor,
    api: ComputeAPI,
    ctxt: RequestContext,
    operation: str,
    call: str,
    source: str | None,
    dest: str | None,
    to: str,
) -> None:
    make_compute("c1", fake_driver={"fail_on": [f"c1:{operation}", f"c2:{_other(operation)}"]})
    make_compute("c2")
    server = _server()
    migration = _migration(server, source, dest) if source else None
    getattr(api, call)(ctxt, to, migration or server)

    report = conductor.wait_for("operation_failed")
    assert report.kwargs["operation"] == operation
    assert report.kwargs["server_uuid"] == server["uuid"]
    assert report.kwargs["migration_uuid"] == (migration["uuid"] if migration else None)
    assert INJECTED in report.kwargs["reason"] and "c1" in report.kwargs["reason"]
    assert conductor.settle() == [report]  # nothing went on after the failure


def _other(operation: str) -> str:
    """An operation other than ``operation``, for the c1 item that must not apply to c2."""
    return "spawn" if operation != "spawn" else "confirm"


def test_fail_on_another_operation_or_host_does_not_fail(
    make_compute: Callable[..., ComputeService],
    conductor: RecordingConductor,
    api: ComputeAPI,
    ctxt: RequestContext,
) -> None:
    make_compute("c1", fake_driver={"fail_on": ["c1:confirm", "c2:spawn"]})
    server = _server()
    api.spawn(ctxt, "c1", server)
    conductor.wait_for("build_done", server_uuid=server["uuid"])


def test_revert_sent_to_an_unrelated_host_is_reported(
    make_compute: Callable[..., ComputeService],
    conductor: RecordingConductor,
    api: ComputeAPI,
    ctxt: RequestContext,
) -> None:
    make_compute("c3")
    server = _server()
    migration = _migration(server, "c1", "c2")
    api.revert_resize(ctxt, "c3", migration)
    report = conductor.wait_for("operation_failed", migration_uuid=migration["uuid"])
    assert report.kwargs["operation"] == "revert"
    assert "was sent to c3" in report.kwargs["reason"]
