"""Expected races are logged for an operator: no ERROR, no traceback.

Two deliveries of ``delete_server`` for the same server (a redelivery, or the
sweep finishing a delete whose first cast was only slow) overlap on the real
Placement: the second runs inside the first's Placement write, before it is
sent or once it has landed. Both must end quietly with the server deleted and
nothing leaked; an exception here would reach oslo.messaging, which logs it
at ERROR with its traceback.
"""

import logging

import pytest

from resize_sched.context import admin_context
from tests.functional.fixtures.flows import PLACES, STRATEGIES, fresh_run


def _interleave(run, when):
    """Deliver a second delete_server from inside the first Placement write."""
    client = run.cloud.client
    real = {"put": client.put_allocations, "post": client.post_allocations}
    done = []

    def wrap(kind):
        def call(*args, **kwargs):
            if done:
                return real[kind](*args, **kwargs)
            done.append(kind)
            if when == "before":
                run.manager.delete_server(admin_context(), run.server.uuid)
                return real[kind](*args, **kwargs)
            result = real[kind](*args, **kwargs)
            run.manager.delete_server(admin_context(), run.server.uuid)
            return result

        return call

    client.put_allocations = wrap("put")
    client.post_allocations = wrap("post")
    return done


def _loud(caplog):
    return [
        f"{r.levelname} {r.name}: {r.getMessage()}"
        for r in caplog.records
        if r.levelno >= logging.ERROR or r.exc_info
    ]


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_delete_racing_a_delete_is_quiet(strategy, place, when, caplog):
    with fresh_run(strategy, place, "confirm") as run:
        steps = run.messages()
        for _, deliver in steps[:-1]:  # the resize waits in VERIFY_RESIZE
            deliver()
        run.record_delete()
        done = _interleave(run, when)
        with caplog.at_level(logging.DEBUG):
            run.manager.delete_server(admin_context(), run.server.uuid)
        assert done, "the race never happened: no Placement write"
        run.assert_deleted_without_leaks()
    assert _loud(caplog) == []


def test_delete_of_a_server_in_build_racing_a_delete_is_quiet(make_cloud, caplog):
    from tests.functional.conductor.test_recovery import _manager

    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    server = cloud.boot("vm", cloud.flavor("old", 1, 1024, 10))
    manager = _manager(cloud)
    run = type("Run", (), {"cloud": cloud, "manager": manager, "server": server})()
    done = _interleave(run, "before")
    with caplog.at_level(logging.DEBUG):
        manager.delete_server(admin_context(), server.uuid)
    assert done
    assert cloud.holds(server.uuid) == {}
    assert cloud.db.server_get(server.uuid, read_deleted=True).deleted_at is not None
    cloud.check()
    assert _loud(caplog) == []
