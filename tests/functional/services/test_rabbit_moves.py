"""Live migration and evacuation in the production shape: separate daemons
over a real RabbitMQ (see :mod:`tests.functional.services.test_rabbit_deployment`).

A live migration the scheduler sends to host2, whose ``pre_live_migration``
fails, rolls back to exactly the source; one named to host3 completes. Then
host3's compute daemon is stopped and its service forced down; the server
is evacuated, and when the daemon starts again its first report removes its
copy and gives its room back. Placement's state is checked after each step.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.functional.fixtures.deployment import rabbit_deployment, wait_for, wait_status

pytestmark = [pytest.mark.rabbit, pytest.mark.slow]

HOSTS = {"host1": 32768, "host2": 24576, "host3": 16384}
SMALL = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
OPTIONS = """\
[resize]
claim_strategy = legacy
[fake_driver]
fail_on = host2:pre_live_migration
"""


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    workdir = tmp_path_factory.mktemp("rabbit-moves")
    with rabbit_deployment(workdir, HOSTS, OPTIONS) as deployed:
        deployed["workdir"] = workdir
        # NOTE: a compute's first report, sent before the conductor consumed,
        # is dropped and none follows ([compute] update_interval = 0): start
        # those computes again so that their services are recorded (and up).
        for name in HOSTS:
            _restart(deployed, name)
        yield deployed


def _restart(deployment: dict, name: str) -> None:
    """Stop ``name``'s compute daemon and start it again; wait for its report."""
    db = deployment["db"]
    before = _seen(db, name)
    if deployment["daemons"].procs[name].poll() is None:
        assert deployment["daemons"].stop_one(name) == 0
    config = deployment["workdir"] / f"{name}.conf"
    deployment["daemons"].start(name, "resize_sched.cmd.compute", config)
    wait_for(lambda: _seen(db, name) not in (None, before), f"{name}'s report")


def _seen(db: object, name: str) -> object:
    services = db.service_list(host=name)  # type: ignore[attr-defined]
    return services[0].last_seen_up if services else None


def _migration(deployment: dict, server_id: str, kind: str) -> object:
    found = [
        m
        for m in deployment["db"].migration_list(server_uuid=server_id)
        if m.migration_type == kind
    ]
    return found[-1]


def test_live_migrate_then_evacuate_across_a_compute_restart(deployment: dict) -> None:
    conn, client, hosts, db = (
        deployment["conn"],
        deployment["client"],
        deployment["hosts"],
        deployment["db"],
    )
    flavor = conn.compute.create_flavor(name="small", vcpus=1, ram=1024, disk=10)
    server = wait_status(
        conn, conn.compute.create_server(name="vm", flavor_id=flavor.id), "ACTIVE"
    )
    assert server.compute_host == "host1"
    live = {"os-migrateLive": {"host": None, "block_migration": "auto"}}
    path = f"/servers/{server.id}/action"

    # The scheduler's choice, host2, fails to prepare: rolled back exactly.
    assert conn.compute.post(path, json=live, microversion="2.30").status_code == 202
    wait_for(
        lambda: _migration(deployment, server.id, "live-migration").status == "error", "rollback"
    )
    server = wait_status(conn, server, "ACTIVE")
    assert server.compute_host == "host1"
    assert client.get_allocations(server.id).allocations == {hosts["host1"]: SMALL}
    assert client.get_usages(hosts["host2"]) == {}
    deployment["check"]()

    # Named: host3.
    live["os-migrateLive"]["host"] = "host3"
    named = conn.compute.post(path, json=live, microversion="2.30")
    assert named.status_code == 202, named.text
    wait_for(
        lambda: _migration(deployment, server.id, "live-migration").status == "completed", "done"
    )
    server = wait_status(conn, server, "ACTIVE")
    assert server.compute_host == "host3"
    migration = _migration(deployment, server.id, "live-migration")
    assert client.get_allocations(migration.uuid).allocations == {}
    assert client.get_allocations(server.id).allocations == {hosts["host3"]: SMALL}
    deployment["check"]()

    # host3 dies: evacuation is refused while it is up, then done.
    evacuate = {"evacuate": {}}
    assert conn.compute.post(path, json=evacuate, microversion="2.29").status_code == 409
    assert deployment["daemons"].stop_one("host3") == 0
    service = db.service_get_by_host("host3").uuid
    down = conn.compute.put(
        f"/os-services/{service}", json={"forced_down": True}, microversion="2.53"
    )
    assert down.status_code == 200
    assert conn.compute.post(path, json=evacuate, microversion="2.29").status_code == 200
    wait_for(lambda: _migration(deployment, server.id, "evacuation").status == "done", "rebuild")
    server = wait_status(conn, server, "ACTIVE")
    assert server.compute_host in ("host1", "host2")
    evacuation = _migration(deployment, server.id, "evacuation")
    assert client.get_allocations(evacuation.uuid).allocations == {hosts["host3"]: SMALL}
    deployment["check"]()

    # host3's daemon starts again: its first report gives the room back.
    conn.compute.put(f"/os-services/{service}", json={"forced_down": False}, microversion="2.53")
    _restart(deployment, "host3")
    wait_for(
        lambda: _migration(deployment, server.id, "evacuation").status == "completed",
        "the source given back",
    )
    assert client.get_allocations(evacuation.uuid).allocations == {}
    assert client.get_usages(hosts["host3"]) == {}
    assert client.get_allocations(server.id).allocations == {hosts[server.compute_host]: SMALL}
    deployment["check"]()
    deployment["daemons"].check_running()
