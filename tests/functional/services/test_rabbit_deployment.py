"""The production shape: separate processes over a real RabbitMQ.

``resize-sched-api``, ``resize-sched-conductor`` (2 workers) and three
``resize-sched-compute`` daemons run as subprocesses, sharing a RabbitMQ
virtual host of their own and one database (MariaDB when
RESIZE_SCHED_TEST_MYSQL_URL is set, else a SQLite file), beside a real
Placement served over HTTP. openstacksdk drives the API; Placement's actual
state is checked after every step; every daemon must stop cleanly on SIGTERM.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import openstack
import pytest

from resize_sched.db.api import Database
from resize_sched.placement.embedded import PlacementHTTP
from tests.functional.fixtures.database import ScratchDatabase, sqlite_url
from tests.functional.fixtures.invariants import check_invariants
from tests.functional.fixtures.rabbit import PrivateVhost, broker_url

pytestmark = pytest.mark.rabbit

# host1 is the roomiest (servers boot there), host2 the next (a resize tries
# it first, and its prep_resize is made to fail), host3 the last.
HOSTS = {"host1": 32768, "host2": 24576, "host3": 16384}
OLD = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for(predicate, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


class Daemons:
    """The subprocesses, their logs, and a clean stop."""

    def __init__(self, workdir: pathlib.Path) -> None:
        self.workdir = workdir
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, module: str, config: pathlib.Path) -> None:
        log = open(self.workdir / f"{name}.log", "a")  # noqa: SIM115
        self.procs[name] = subprocess.Popen(
            [sys.executable, "-m", module, "--config-file", str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.workdir,
        )

    def stop_one(self, name: str) -> int:
        proc = self.procs[name]
        proc.send_signal(signal.SIGTERM)
        return proc.wait(timeout=30)

    def log(self, name: str) -> str:
        return (self.workdir / f"{name}.log").read_text()

    def check_running(self) -> None:
        for name, proc in self.procs.items():
            assert proc.poll() is None, f"{name} exited {proc.returncode}:\n{self.log(name)}"

    def stop(self) -> dict[str, int | None]:
        codes: dict[str, int | None] = {}
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for name, proc in self.procs.items():
            try:
                codes[name] = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                codes[name] = None
        return codes


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    url = broker_url()
    workdir = tmp_path_factory.mktemp("rabbit-deployment")
    mysql = os.environ.get("RESIZE_SCHED_TEST_MYSQL_URL", "").strip()
    scratch = ScratchDatabase(mysql) if mysql else None
    db_url = scratch.create() if scratch else sqlite_url(workdir)
    with PrivateVhost(url) as vhost, PlacementHTTP(str(workdir / "placement")) as placement:
        api_port = _free_port()
        common = textwrap.dedent(
            f"""\
            [DEFAULT]
            transport_url = {vhost.url}
            [database]
            connection = {db_url}
            [placement]
            auth_type = admin_token
            endpoint = {placement.endpoint}
            token = admin
            [api]
            bind_host = 127.0.0.1
            bind_port = {api_port}
            auth_strategy = noauth2
            [conductor]
            workers = 2
            # A step sitting for 5 s is stuck here (they take well under 1 s).
            stuck_check_interval = 1
            stuck_after = 5
            [resize]
            claim_strategy = max_flavor
            allow_same_host = false
            [fake_driver]
            fail_on = host2:prep_resize
            """
        )
        db = Database(db_url)
        db.sync()
        daemons = Daemons(workdir)
        for name, memory in HOSTS.items():
            config = workdir / f"{name}.conf"
            config.write_text(
                common
                + f"[compute]\nvcpus = 8\nmemory_mb = {memory}\ndisk_gb = 200\n"
                + "reserved_host_memory_mb = 0\nupdate_interval = 0\n"
                + f"[DEFAULT]\nhost = {name}\n"
            )
            daemons.start(name, "resize_sched.cmd.compute", config)
        (workdir / "services.conf").write_text(common + "[DEFAULT]\nhost = control\n")
        daemons.start("conductor", "resize_sched.cmd.conductor", workdir / "services.conf")
        daemons.start("api", "resize_sched.cmd.api", workdir / "services.conf")
        client = placement.client()
        endpoint = f"http://127.0.0.1:{api_port}/v2.1"
        try:
            _wait_for(lambda: len(client.list_resource_providers()) == len(HOSTS), "computes")
            # A cast to a topic nobody consumes yet is dropped by the broker
            # (the sweep would re-send it, but only after stuck_after).
            _wait_for(lambda: vhost.consumers("conductor") != 0, "the conductor to consume")

            def api_up() -> bool:
                daemons.check_running()
                try:
                    with socket.create_connection(("127.0.0.1", api_port), timeout=0.5):
                        return True
                except OSError:
                    return False

            _wait_for(api_up, "the API")
            conn = openstack.connect(
                auth_type="admin_token",
                auth={"endpoint": endpoint, "token": "admin:admin"},
                compute_endpoint_override=endpoint,
                load_yaml_config=False,
                load_envvars=False,
            )
            hosts = {rp["name"]: rp["uuid"] for rp in client.list_resource_providers()}
            yield {
                "conn": conn,
                "client": client,
                "db": db,
                "hosts": hosts,
                "daemons": daemons,
                "check": lambda: check_invariants(db, client, hosts),
            }
        finally:
            codes = daemons.stop()
            db.dispose()
            if scratch:
                scratch.drop()
        bad = {name: code for name, code in codes.items() if code != 0}
        assert not bad, f"daemons did not stop cleanly on SIGTERM: {bad}"


def _wait_status(conn, server, *statuses: str):
    deadline = time.monotonic() + 60
    while True:
        current = conn.compute.get_server(server.id)
        if current.status in statuses and current.task_state is None:
            return current
        assert time.monotonic() < deadline, f"stuck in {current.status}/{current.task_state}"
        time.sleep(0.1)


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
    server = _wait_status(conn, server, "ACTIVE")
    deployment["check"]()
    assert server.compute_host == "host1"
    assert client.get_allocations(server.id).allocations == {hosts["host1"]: OLD}

    conn.compute.resize_server(server, f_new.id)
    server = _wait_status(conn, server, "VERIFY_RESIZE")
    deployment["check"]()
    assert server.compute_host == "host3"
    assert client.get_allocations(server.id).allocations == {hosts["host3"]: NEW}
    assert client.get_usages(hosts["host2"]) == {}
    migration = [m for m in conn.compute.migrations() if m.server_id == server.id][-1]
    assert (migration.source_compute, migration.dest_compute) == ("host1", "host3")

    if decision == "confirm":
        conn.compute.confirm_server_resize(server)
        server = _wait_status(conn, server, "ACTIVE")
        assert client.get_allocations(server.id).allocations == {hosts["host3"]: NEW}
    else:
        conn.compute.revert_server_resize(server)
        server = _wait_status(conn, server, "ACTIVE")
        assert server.compute_host == "host1"
        assert client.get_allocations(server.id).allocations == {hosts["host1"]: OLD}
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
    first = _wait_status(
        conn, conn.compute.create_server(name="hup1", flavor_id=f_old.id), "ACTIVE"
    )
    conn.compute.resize_server(first, f_new.id)
    first = _wait_status(conn, first, "VERIFY_RESIZE")
    assert db.migration_get_in_progress_for_server(first.id).claim_strategy == "max_flavor"

    config = daemons.workdir / "services.conf"
    config.write_text(
        config.read_text().replace("claim_strategy = max_flavor", "claim_strategy = legacy")
    )
    for name in ("api", "conductor"):
        daemons.procs[name].send_signal(signal.SIGHUP)
    _wait_for(lambda: "reload" in daemons.log("api").lower(), "the API to reload")

    second = _wait_status(
        conn, conn.compute.create_server(name="hup2", flavor_id=f_old.id), "ACTIVE"
    )
    conn.compute.resize_server(second, f_new.id)
    second = _wait_status(conn, second, "VERIFY_RESIZE")
    assert db.migration_get_in_progress_for_server(second.id).claim_strategy == "legacy"
    # legacy keeps old on the source for the migration consumer.
    migration = db.migration_get_in_progress_for_server(second.id)
    assert deployment["client"].get_allocations(migration.uuid).allocations == {
        deployment["hosts"]["host1"]: OLD
    }
    for server in (first, second):
        conn.compute.revert_server_resize(server)
        _wait_status(conn, server, "ACTIVE")
        deployment["check"]()
    daemons.check_running()


def test_broker_restart_between_resizes(deployment, flavors):
    """RabbitMQ restarts; every daemon reconnects and the next resize works."""
    ctl = shutil.which("rabbitmqctl")
    if ctl is None:
        pytest.skip("rabbitmqctl is not on PATH: cannot restart the broker")
    conn, client, hosts = deployment["conn"], deployment["client"], deployment["hosts"]
    f_old, f_new = flavors
    server = _wait_status(
        conn, conn.compute.create_server(name="bounce", flavor_id=f_old.id), "ACTIVE"
    )
    subprocess.run([ctl, "stop_app"], check=True, capture_output=True)
    subprocess.run([ctl, "start_app"], check=True, capture_output=True)
    subprocess.run([ctl, "await_startup"], check=True, capture_output=True)
    deployment["daemons"].check_running()
    conn.compute.resize_server(server, f_new.id)
    server = _wait_status(conn, server, "VERIFY_RESIZE")
    assert client.get_allocations(server.id).allocations == {hosts["host3"]: NEW}
    conn.compute.confirm_server_resize(server)
    server = _wait_status(conn, server, "ACTIVE")
    deployment["check"]()
    deployment["daemons"].check_running()


def test_step_lost_with_the_broker_is_taken_on_by_the_sweep(deployment, flavors):
    """host3's compute is down, so prep_resize waits in its queue; the broker
    restarts and the queued message is gone. Once host3 is back, the
    conductor's sweep sees the resize has not moved and sends the step again."""
    ctl = shutil.which("rabbitmqctl")
    if ctl is None:
        pytest.skip("rabbitmqctl is not on PATH: cannot restart the broker")
    conn, client, hosts = deployment["conn"], deployment["client"], deployment["hosts"]
    daemons, db = deployment["daemons"], deployment["db"]
    f_old, f_new = flavors
    server = _wait_status(
        conn, conn.compute.create_server(name="lost", flavor_id=f_old.id), "ACTIVE"
    )
    assert daemons.stop_one("host3") == 0
    conn.compute.resize_server(server, f_new.id)
    # host2 refuses prep_resize; the reschedule claims host3 and casts to it.
    _wait_for(
        lambda: (
            (m := db.migration_get_in_progress_for_server(server.id)) is not None
            and m.dest_host == "host3"
        ),
        "the reschedule to host3",
    )
    subprocess.run([ctl, "stop_app"], check=True, capture_output=True)
    subprocess.run([ctl, "start_app"], check=True, capture_output=True)
    subprocess.run([ctl, "await_startup"], check=True, capture_output=True)
    daemons.start("host3", "resize_sched.cmd.compute", daemons.workdir / "host3.conf")
    server = _wait_status(conn, server, "VERIFY_RESIZE")
    assert server.compute_host == "host3"
    assert client.get_allocations(server.id).allocations == {hosts["host3"]: NEW}
    assert "stuck resize" in daemons.log("conductor")
    conn.compute.confirm_server_resize(server)
    _wait_status(conn, server, "ACTIVE")
    deployment["check"]()
    daemons.check_running()


def test_build_lost_while_the_conductor_is_down_is_recovered_at_its_start(deployment, flavors):
    """The conductor is down and the broker restarts, so no conductor queue
    exists: the API's build_server cast is dropped. The conductor's start-up
    recovery finds the server still BUILD/scheduling and builds it."""
    ctl = shutil.which("rabbitmqctl")
    if ctl is None:
        pytest.skip("rabbitmqctl is not on PATH: cannot restart the broker")
    conn, client, hosts = deployment["conn"], deployment["client"], deployment["hosts"]
    daemons = deployment["daemons"]
    f_old, _ = flavors
    assert daemons.stop_one("conductor") == 0
    subprocess.run([ctl, "stop_app"], check=True, capture_output=True)
    subprocess.run([ctl, "start_app"], check=True, capture_output=True)
    subprocess.run([ctl, "await_startup"], check=True, capture_output=True)
    server = conn.compute.create_server(name="orphan", flavor_id=f_old.id)
    assert conn.compute.get_server(server.id).task_state == "scheduling"
    daemons.start("conductor", "resize_sched.cmd.conductor", daemons.workdir / "services.conf")
    server = _wait_status(conn, server, "ACTIVE")
    assert client.get_allocations(server.id).allocations == {hosts[server.compute_host]: OLD}
    assert f"{server.id}': 'scheduled again, spawn sent to" in daemons.log("conductor")
    deployment["check"]()
    daemons.check_running()
