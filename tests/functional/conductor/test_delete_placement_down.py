"""A delete Placement cannot answer is left to the sweep, quietly.

The conductor's ``delete_server`` meets a Placement answering 503 to every
request (a :class:`~tests.functional.fixtures.fault_proxy.FaultProxy` in front
of the real one). The delete is already recorded, so the sweep finishes it:
the handler says so in one WARNING and raises the failure as an expected one
(oslo.messaging logs those at DEBUG, without a traceback), and once Placement
answers again the sweep deletes the server and gives back what it held.
"""

import logging

import oslo_messaging as messaging
import pytest

from resize_sched import exception
from resize_sched.conductor import recovery
from resize_sched.context import admin_context
from tests.functional.conductor.test_placement_faults import proxied_run

#: no keystoneauth retries: each request meets its 503 once
_NO_RETRIES = {"connect_retries": 0, "status_code_retries": 0}


def test_a_delete_placement_cannot_answer_is_finished_by_the_sweep(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with proxied_run("max_flavor", "other", "confirm", options=_NO_RETRIES) as (run, proxy):
        server_uuid = run.server.uuid
        assert run.cloud.holds(server_uuid) != {}
        run.record_delete()
        proxy.arm({n: "503" for n in range(1, 1000)})
        with caplog.at_level(logging.DEBUG):
            with pytest.raises(messaging.ExpectedException) as raised:
                run.manager.delete_server(admin_context(), server_uuid)
        assert isinstance(raised.value.exc_info[1], exception.PlacementUnavailable)
        assert proxy.injected, "Placement was never asked"
        loud = [
            f"{r.levelname} {r.name}: {r.getMessage()}"
            for r in caplog.records
            if r.levelno >= logging.ERROR or r.exc_info
        ]
        assert loud == []
        warnings = [
            r.getMessage()
            for r in caplog.records
            if r.levelno == logging.WARNING and r.name == "resize_sched.conductor.manager"
        ]
        assert len(warnings) == 1, warnings
        assert server_uuid in warnings[0] and "sweep" in warnings[0]
        row = run.cloud.db.server_get(server_uuid)
        assert (row.deleted_at, row.task_state) == (None, "deleting")

        proxy.arm()
        report = recovery.recover(run.manager, idle_for=0)
        assert report.failed == {}
        assert report.resumed[server_uuid] == "delete completed"
        run.assert_deleted_without_leaks()
