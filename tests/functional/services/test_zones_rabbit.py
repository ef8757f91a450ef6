"""A server in a one-host availability zone on a full host, resized under each
claim strategy, with the daemons as separate processes over RabbitMQ.

host1 (2 VCPU) is alone in zone ``az1``; host2 has room but is in the
default zone. The zone is made through the API (``os-aggregates``), so
host1's provider joins the aggregate in Placement; the server is booted
into ``az1``. ``legacy`` fails as Nova does (the migration in error, the old
flavor restored on host1) though host2 could take the new flavor;
``drop_and_reclaim`` and ``max_flavor`` resize in place. Placement's
allocations are asserted after every step.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.functional.fixtures.deployment import rabbit_deployment, wait_for, wait_status

pytestmark = pytest.mark.rabbit

HOSTS = {"host1": 8192, "host2": 16384}
OLD = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}

OPTIONS = """\
[resize]
claim_strategy = legacy
"""


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    workdir = tmp_path_factory.mktemp("zones-rabbit")
    with rabbit_deployment(workdir, HOSTS, OPTIONS, vcpus=2) as deployed:
        conn, db = deployed["conn"], deployed["db"]
        # NOTE: a host is a compute host once its first report reached the conductor.
        wait_for(
            lambda: {s.host for s in db.service_list()} >= set(HOSTS), "the computes' reports"
        )
        agg = conn.compute.create_aggregate(name="rack1", availability_zone="az1")
        conn.compute.add_host_to_aggregate(agg, "host1")
        deployed["aggregate"] = conn.compute.get_aggregate(agg)
        deployed["flavors"] = (
            conn.compute.create_flavor(name="old", vcpus=1, ram=1024, disk=10),
            conn.compute.create_flavor(name="new", vcpus=2, ram=2048, disk=20),
        )
        deployed["strategy"] = "legacy"
        yield deployed


def _set_strategy(deployment: dict, name: str) -> None:
    """Edit the services' config and SIGHUP the API (which picks a new
    resize's strategy) and the conductor."""
    daemons = deployment["daemons"]
    config = daemons.workdir / "services.conf"
    config.write_text(
        config.read_text().replace(
            f"claim_strategy = {deployment['strategy']}", f"claim_strategy = {name}"
        )
    )
    reloads = daemons.log("api").lower().count("reload")
    for process in ("api", "conductor"):
        daemons.procs[process].send_signal(signal.SIGHUP)
    wait_for(lambda: daemons.log("api").lower().count("reload") > reloads, "the API to reload")
    deployment["strategy"] = name


def _migration(conn: Any, server: Any, *statuses: str) -> Any:
    deadline = time.monotonic() + 60
    while True:
        found = [m for m in conn.compute.migrations() if m.server_id == server.id]
        if found and found[-1].status in statuses:
            return found[-1]
        assert time.monotonic() < deadline, found and found[-1].status
        time.sleep(0.1)


def test_the_zone_is_mirrored_into_placement(deployment: dict) -> None:
    client, hosts, agg = deployment["client"], deployment["hosts"], deployment["aggregate"]
    assert agg.availability_zone == "az1" and agg.hosts == ["host1"]
    assert client.get_aggregates(hosts["host1"])[0] == {agg.uuid}
    assert client.get_aggregates(hosts["host2"])[0] == frozenset()
    zones = deployment["conn"].compute.availability_zones()
    assert sorted(z.name for z in zones) == ["az1", "nova"]


@pytest.mark.parametrize("strategy", ["legacy", "drop_and_reclaim", "max_flavor"])
def test_full_one_host_zone(deployment: dict, strategy: str) -> None:
    conn, client, hosts = deployment["conn"], deployment["client"], deployment["hosts"]
    f_old, f_new = deployment["flavors"]
    if deployment["strategy"] != strategy:
        _set_strategy(deployment, strategy)
    server = conn.compute.create_server(
        name=f"vm-{strategy}", flavor_id=f_old.id, availability_zone="az1"
    )
    server = wait_status(conn, server, "ACTIVE")
    deployment["check"]()
    assert (server.compute_host, server.availability_zone) == ("host1", "az1")
    assert client.get_allocations(server.id).allocations == {hosts["host1"]: OLD}

    conn.compute.resize_server(server, f_new.id)
    if strategy == "legacy":
        migration = _migration(conn, server, "error")
        server = wait_status(conn, server, "ACTIVE")
        deployment["check"]()
        assert server.compute_host == "host1"
        assert client.get_allocations(server.id).allocations == {hosts["host1"]: OLD}
        assert client.get_allocations(migration.uuid).allocations == {}
        assert client.get_usages(hosts["host2"]) == {}
    else:
        server = wait_status(conn, server, "VERIFY_RESIZE")
        deployment["check"]()
        assert server.compute_host == "host1"
        assert client.get_allocations(server.id).allocations == {hosts["host1"]: NEW}
        assert client.get_usages(hosts["host2"]) == {}
        conn.compute.confirm_server_resize(server)
        server = wait_status(conn, server, "ACTIVE")
        deployment["check"]()
        assert client.get_allocations(server.id).allocations == {hosts["host1"]: NEW}
        assert server.availability_zone == "az1"
    conn.compute.delete_server(server)
    conn.compute.wait_for_delete(server, wait=60, interval=0.1)
    deployment["check"]()
    assert client.get_usages(hosts["host1"]) == {}
    deployment["daemons"].check_running()
