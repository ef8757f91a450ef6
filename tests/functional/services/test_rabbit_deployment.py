"""The production shape: separate processes over a real RabbitMQ.

``resize-sched-api``, ``resize-sched-conductor`` (2 workers) and three
``resize-sched-compute`` daemons run as subprocesses, sharing a RabbitMQ
virtual host of their own and one database (MariaDB when
RESIZE_SCHED_TEST_MYSQL_URL is set, else a SQLite file), beside a real
Placement served over HTTP. openstacksdk drives the API; Placement's actual
state is checked after every step; every daemon must stop cleanly on SIGTERM.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from tests.functional.fixtures.deployment import (
    rabbit_deployment,
    restart_broker,
    wait_for,
    wait_status,
)

pytestmark = pytest.mark.rabbit

# host1 is the roomiest (servers boot there), host2 the next (a resize tries
# it first, and its prep_resize is made to fail), host3 the last. Free memory
# alone ranks them: with Nova's default weighers free vCPUs and disk count
# too, and host1, holding the servers, would fall behind host2.
HOSTS = {"host1": 32768, "host2": 24576, "host3": 16384}
OLD = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}

OPTIONS = """\
[conductor]
workers = 2
# A step sitting for 5 s is stuck here (they take well under 1 s).
stuck_check_interval = 1
stuck_after = 5
[resize]
claim_strategy = max_flavor
allow_same_host = false
[filter_scheduler]
weight_classes = RAMWeigher
[fake_driver]
fail_on = host2:prep_resize
"""


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    workdir = tmp_path_factory.mktemp("rabbit-deployment")
    with rabbit_deployment(workdir, HOSTS, OPTIONS) as deployed:
        yield deployed


@pytest.fixture(scope="module")
def flavors(deployment):
    conn = deployment["conn"]
    return (
        conn.compute.create_flavor(name="old", vcpus=1, ram=1024, disk=10),
        conn.compute.create_flavor(name="new", vcpus=2, ram=2048, disk=20),
    )


@pytest.mark.parametrize("decision", ["confirm", "revert"])
def test_resize_with_prep_failure_rescheduled(deployment, flavors, decision):
    """Boot on host1; the resize picks host2, whose prep_resize fails, and is
    rescheduled to host3; then confirm or revert."""
    conn, client, hosts = deployment["conn"], deployment["client"], deployment["hosts"]
    f_old, f_new = flavors
    server = conn.compute.create_server(name=f"vm-{decision}", flavor_id=f_old.id)
    server = wait_status(conn, server, "ACTIVE")
    deployment["check"]()
    assert server.compute_host == "host1"
    assert client.get_allocations(server.id).allocations == {hosts["host1"]: OLD}

    conn.compute.resize_server(server, f_new.id)
    server = wait_status(conn, server, "VERIFY_RESIZE")
    deployment["check"]()
    assert server.compute_host == "host3"
    assert client.get_allocations(server.id).allocations == {hosts["host3"]: NEW}
    assert client.get_usages(hosts["host2"]) == {}
    migration = [m for m in conn.compute.migrations() if m.server_id == server.id][-1]
    assert (migration.source_compute, migration.dest_compute) == ("host1", "host3")

    if decision == "confirm":
        conn.compute.confirm_server_resize(server)
        server = wait_status(conn, server, "ACTIVE")
        assert client.get_allocations(server.id).allocations == {hosts["host3"]: NEW}
    else:
        conn.compute.revert_server_resize(server)
        server = wait_status(conn, server, "ACTIVE")
        assert server.compute_host == "host1"
        assert client.get_allocations(server.id).allocations == {hosts["host1"]: OLD}
    deployment["check"]()
    conn.compute.delete_server(server)
    conn.compute.wait_for_delete(server, wait=60, interval=0.1)
    deployment["check"]()
    deployment["daemons"].check_running()


@pytest.mark.parametrize("decision", ["confirm", pytest.param("revert", marks=pytest.mark.slow)])
def test_cold_migration_with_prep_failure_rescheduled(deployment, flavors, decision):
    """Boot on host1 and migrate it; host2's prep_resize fails, so it is
    rescheduled to host3; the migration holds host1 until the decision."""
    conn, client, hosts, db = (
        deployment["conn"],
        deployment["client"],
        deployment["hosts"],
        deployment["db"],
    )
    f_old, _ = flavors
    server = conn.compute.create_server(name=f"cold-{decision}", flavor_id=f_old.id)
    server = wait_status(conn, server, "ACTIVE")
    assert server.compute_host == "host1"

    conn.compute.migrate_server(server)
    server = wait_status(conn, server, "VERIFY_RESIZE")
    deployment["check"]()
    assert server.compute_host == "host3"
    migration = db.migration_get_in_progress_for_server(server.id)
    assert (migration.migration_type, migration.source_host) == ("migration", "host1")
    assert client.get_allocations(server.id).allocations == {hosts["host3"]: OLD}
    assert client.get_allocations(migration.uuid).allocations == {hosts["host1"]: OLD}
    assert client.get_usages(hosts["host2"]) == {}

    if decision == "confirm":
        conn.compute.confirm_server_resize(server)
        server = wait_status(conn, server, "ACTIVE")
        assert server.compute_host == "host3"
        assert client.get_allocations(server.id).allocations == {hosts["host3"]: OLD}
    else:
        conn.compute.revert_server_resize(server)
        server = wait_status(conn, server, "ACTIVE")
        assert server.compute_host == "host1"
        assert client.get_allocations(server.id).allocations == {hosts["host1"]: OLD}
    assert client.get_allocations(migration.uuid).allocations == {}
    deployment["check"]()
    conn.compute.delete_server(server)
    conn.compute.wait_for_delete(server, wait=60, interval=0.1)
    deployment["check"]()
    deployment["daemons"].check_running()


def test_sighup_switches_the_strategy_for_new_resizes_only(deployment, flavors):
    """Edit the config, SIGHUP the API and conductor: a resize in VERIFY_RESIZE
    keeps the strategy it began with; a new one takes the new strategy."""
    conn, db, daemons = deployment["conn"], deployment["db"], deployment["daemons"]
    f_old, f_new = flavors
    first = wait_status(
        conn, conn.compute.create_server(name="hup1", flavor_id=f_old.id), "ACTIVE"
    )
    conn.compute.resize_server(first, f_new.id)
    first = wait_status(conn, first, "VERIFY_RESIZE")
    assert db.migration_get_in_progress_for_server(first.id).claim_strategy == "max_flavor"

    config = daemons.workdir / "services.conf"
    config.write_text(
        config.read_text().replace("claim_strategy = max_flavor", "claim_strategy = legacy")
    )
    for name in ("api", "conductor"):
        daemons.procs[name].send_signal(signal.SIGHUP)
    wait_for(lambda: "reload" in daemons.log("api").lower(), "the API to reload")

    second = wait_status(
        conn, conn.compute.create_server(name="hup2", flavor_id=f_old.id), "ACTIVE"
    )
    conn.compute.resize_server(second, f_new.id)
    second = wait_status(conn, second, "VERIFY_RESIZE")
    assert db.migration_get_in_progress_for_server(second.id).claim_strategy == "legacy"
    # legacy keeps old on the source for the migration consumer.
    migration = db.migration_get_in_progress_for_server(second.id)
    assert deployment["client"].get_allocations(migration.uuid).allocations == {
        deployment["hosts"]["host1"]: OLD
    }
    for server in (first, second):
        conn.compute.revert_server_resize(server)
        wait_status(conn, server, "ACTIVE")
        deployment["check"]()
    daemons.check_running()


@pytest.mark.slow  # a fault injected: the faults env runs it
def test_broker_restart_between_resizes(deployment, flavors):
    """RabbitMQ restarts; every daemon reconnects and the next resize works."""
    conn, client, hosts = deployment["conn"], deployment["client"], deployment["hosts"]
    f_old, f_new = flavors
    server = wait_status(
        conn, conn.compute.create_server(name="bounce", flavor_id=f_old.id), "ACTIVE"
    )
    restart_broker()
    deployment["daemons"].check_running()
    conn.compute.resize_server(server, f_new.id)
    server = wait_status(conn, server, "VERIFY_RESIZE")
    assert client.get_allocations(server.id).allocations == {hosts["host3"]: NEW}
    conn.compute.confirm_server_resize(server)
    server = wait_status(conn, server, "ACTIVE")
    deployment["check"]()
    deployment["daemons"].check_running()


@pytest.mark.slow  # a fault injected: the faults env runs it
def test_step_lost_with_the_broker_is_taken_on_by_the_sweep(deployment, flavors):
    """host3's compute is down, so prep_resize waits in its queue; the broker
    restarts and the queued message is gone. Once host3 is back, the
    conductor's sweep sees the resize has not moved and sends the step again."""
    conn, client, hosts = deployment["conn"], deployment["client"], deployment["hosts"]
    daemons, db = deployment["daemons"], deployment["db"]
    f_old, f_new = flavors
    server = wait_status(
        conn, conn.compute.create_server(name="lost", flavor_id=f_old.id), "ACTIVE"
    )
    assert daemons.stop_one("host3") == 0
    swept = daemons.log("conductor").count("stuck resize")
    conn.compute.resize_server(server, f_new.id)
    # host2 refuses prep_resize; the reschedule claims host3 and casts to it.
    wait_for(
        lambda: (
            (m := db.migration_get_in_progress_for_server(server.id)) is not None
            and m.dest_host == "host3"
        ),
        "the reschedule to host3",
    )
    restart_broker()
    # NOTE: host3 comes back only once the sweep has taken the resize on.
    # Started earlier, it could declare its queue before the conductor's
    # cast, retried across the restart, is published, and then nothing is
    # lost for the sweep to take on.
    wait_for(
        lambda: daemons.log("conductor").count("stuck resize") > swept,
        "the sweep taking it on",
    )
    daemons.start("host3", "resize_sched.cmd.compute", daemons.workdir / "host3.conf")
    server = wait_status(conn, server, "VERIFY_RESIZE")
    assert server.compute_host == "host3"
    assert client.get_allocations(server.id).allocations == {hosts["host3"]: NEW}
    conn.compute.confirm_server_resize(server)
    wait_status(conn, server, "ACTIVE")
    deployment["check"]()
    daemons.check_running()


@pytest.mark.slow  # a fault injected: the faults env runs it
def test_build_lost_while_the_conductor_is_down_is_recovered_at_its_start(deployment, flavors):
    """The conductor is down and the broker restarts, so no conductor queue
    exists: the API's build_server cast is dropped. The conductor's start-up
    recovery finds the server still BUILD/scheduling and builds it."""
    conn, client, hosts = deployment["conn"], deployment["client"], deployment["hosts"]
    daemons = deployment["daemons"]
    f_old, _ = flavors
    assert daemons.stop_one("conductor") == 0
    restart_broker()
    server = conn.compute.create_server(name="orphan", flavor_id=f_old.id)
    assert conn.compute.get_server(server.id).task_state == "scheduling"
    daemons.start("conductor", "resize_sched.cmd.conductor", daemons.workdir / "services.conf")
    server = wait_status(conn, server, "ACTIVE")
    assert client.get_allocations(server.id).allocations == {hosts[server.compute_host]: OLD}
    assert f"{server.id}': 'scheduled again, spawn sent to" in daemons.log("conductor")
    deployment["check"]()
    daemons.check_running()
