"""Durable delivery: RabbitMQ quorum queues through oslo.messaging's own options.

Two deployments of real daemons (see :mod:`tests.functional.fixtures.deployment`),
each on a private virtual host: one with ``[oslo_messaging_rabbit]
rabbit_quorum_queue = true``, one with oslo.messaging's defaults (classic,
non-durable queues). In both, a resize's ``prep_resize`` is cast to a compute
service that is down, so it waits in that host's queue, and the broker
restarts. With quorum queues the message is still in the queue after the
restart and the compute runs it as soon as it is back; with classic queues
the broker dropped the queue and its message, and only the conductor's sweep
(turned off here: ``stuck_after`` far beyond the test) could take it on.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.functional.fixtures.deployment import (
    queues,
    rabbit_deployment,
    rabbitmqctl,
    restart_broker,
    wait_for,
    wait_status,
)

pytestmark = [pytest.mark.rabbit, pytest.mark.slow]

# host1 is the roomiest (servers boot there: free memory alone ranks the
# hosts, as Nova's other default weighers would favour the emptier host2
# once host1 holds a server); with allow_same_host off every resize goes to
# host2.
HOSTS = {"host1": 32768, "host2": 16384}
NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}
PREP_QUEUE = "compute.host2"

OPTIONS = """\
[conductor]
workers = 1
# The sweep must not be what delivers the step: nothing is stuck for 10 min here.
stuck_check_interval = 1
stuck_after = 600
[resize]
claim_strategy = max_flavor
allow_same_host = false
[filter_scheduler]
weight_classes = RAMWeigher
"""

QUORUM = """\
[oslo_messaging_rabbit]
rabbit_quorum_queue = true
"""


@pytest.fixture(scope="module", params=["quorum", "classic"])
def deployment(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict]:
    rabbitmqctl()  # the test restarts the broker: skip early where it cannot
    workdir = tmp_path_factory.mktemp(f"queues-{request.param}")
    options = OPTIONS + (QUORUM if request.param == "quorum" else "")
    with rabbit_deployment(workdir, HOSTS, options) as deployed:
        deployed["kind"] = request.param
        yield deployed


def test_queues_declared_as_configured(deployment):
    """Every daemon passes [oslo_messaging_rabbit] to its transport: the RPC
    queues of the API-facing conductor and of each compute are quorum queues
    (durable) with the option on, classic non-durable ones without it."""
    declared = queues(deployment["vhost"])
    for name in ("conductor", "conductor.control", "compute.host1", PREP_QUEUE):
        assert name in declared, f"{name} not declared: {sorted(declared)}"
        if deployment["kind"] == "quorum":
            assert (declared[name]["type"], declared[name]["durable"]) == ("quorum", "true")
        else:
            assert (declared[name]["type"], declared[name]["durable"]) == ("classic", "false")


def test_step_cast_across_a_broker_restart(deployment):
    """prep_resize waits in host2's queue while host2 is down; the broker
    restarts; host2 comes back. Quorum: the step is delivered and the resize
    reaches VERIFY_RESIZE without the sweep. Classic: the queue came back
    empty, and the resize stays where it was with its consumer back."""
    conn, client, hosts = deployment["conn"], deployment["client"], deployment["hosts"]
    daemons, db, vhost = deployment["daemons"], deployment["db"], deployment["vhost"]
    kind = deployment["kind"]
    old = conn.compute.create_flavor(name=f"old-{kind}", vcpus=1, ram=1024, disk=10)
    new = conn.compute.create_flavor(name=f"new-{kind}", vcpus=2, ram=2048, disk=20)
    server = wait_status(
        conn, conn.compute.create_server(name=f"durable-{kind}", flavor_id=old.id), "ACTIVE"
    )
    assert server.compute_host == "host1"

    assert daemons.stop_one("host2") == 0
    conn.compute.resize_server(server, new.id)
    wait_for(
        lambda: queues(vhost).get(PREP_QUEUE, {}).get("messages") == "1",
        "prep_resize to wait in host2's queue",
    )
    waiting = db.migration_get_in_progress_for_server(server.id)
    assert waiting.dest_host == "host2"

    restart_broker()
    if kind == "quorum":
        # NOTE: a quorum queue's counts come back a moment after the restart.
        wait_for(
            lambda: queues(vhost).get(PREP_QUEUE, {}).get("messages") == "1",
            "the queued prep_resize to be counted again",
        )
    else:
        # The broker dropped the non-durable queue and the message with it.
        assert PREP_QUEUE not in queues(vhost)
    daemons.start("host2", "resize_sched.cmd.compute", daemons.workdir / "host2.conf")
    wait_for(lambda: vhost.consumers(PREP_QUEUE) != 0, "host2 to consume again")

    if kind == "quorum":
        server = wait_status(conn, server, "VERIFY_RESIZE")
        assert server.compute_host == "host2"
        assert client.get_allocations(server.id).allocations == {hosts["host2"]: NEW}
        assert "Sweep took on" not in daemons.log("conductor")
        deployment["check"]()
        conn.compute.confirm_server_resize(server)
        wait_status(conn, server, "ACTIVE")
    else:
        # host2 declared a new, empty queue: nothing can deliver the step now.
        assert queues(vhost)[PREP_QUEUE]["messages"] == "0"
        migration = db.migration_get_in_progress_for_server(server.id)
        assert (migration.dest_host, migration.status) == ("host2", waiting.status)
        assert conn.compute.get_server(server.id).task_state == "resize_prep"
        assert "Sweep took on" not in daemons.log("conductor")
        deployment["check"]()
    conn.compute.delete_server(server)
    conn.compute.wait_for_delete(server, wait=60, interval=0.1)
    deployment["check"]()
    daemons.check_running()
