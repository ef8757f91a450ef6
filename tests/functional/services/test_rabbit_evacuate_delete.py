"""A delete racing an evacuation in the production shape: separate daemons
over a real RabbitMQ (see :mod:`tests.functional.fixtures.deployment`).

Every fake driver operation takes ``[fake_driver] delay_s``, so the delete
lands while host2 rebuilds the server evacuated from host1 (its daemon
stopped, its service forced down). The delete wins: nothing is held for the
server or its migration on any provider, host2's late rebuild report is a
no-op, and when host1's daemon starts again its report changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

import openstack.exceptions
import pytest

from tests.functional.fixtures.deployment import rabbit_deployment, wait_for, wait_status
from tests.functional.services.test_rabbit_moves import _migration, _restart

pytestmark = [pytest.mark.rabbit, pytest.mark.slow]

# RAMWeigher alone: the host with the most free memory ranks first.
HOSTS = {"host1": 32768, "host2": 16384}
SMALL = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
OPTIONS = """\
[filter_scheduler]
weight_classes = RAMWeigher
[fake_driver]
delay_s = 2.0
"""


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    workdir = tmp_path_factory.mktemp("rabbit-evacuate-delete")
    with rabbit_deployment(workdir, HOSTS, OPTIONS) as deployed:
        deployed["workdir"] = workdir
        # NOTE: as in test_rabbit_moves: a compute's first report may be
        # dropped before the conductor consumes; start each again.
        for name in HOSTS:
            _restart(deployed, name)
        yield deployed


def test_a_delete_racing_an_evacuation_leaves_nothing_held(deployment: dict) -> None:
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
    assert client.get_allocations(server.id).allocations == {hosts["host1"]: SMALL}

    assert deployment["daemons"].stop_one("host1") == 0
    service = db.service_get_by_host("host1").uuid
    down = {"forced_down": True}
    assert conn.compute.put(f"/os-services/{service}", json=down, microversion="2.53").ok
    path = f"/servers/{server.id}/action"
    assert conn.compute.post(path, json={"evacuate": {}}, microversion="2.29").status_code == 200

    # host2 is claimed and rebuilding (for delay_s): the migration holds host1.
    wait_for(
        lambda: _migration(deployment, server.id, "evacuation").status == "pre-migrating",
        "the claim on host2",
    )
    migration = _migration(deployment, server.id, "evacuation")
    assert migration.dest_host == "host2"
    assert client.get_allocations(migration.uuid).allocations == {hosts["host1"]: SMALL}
    assert client.get_allocations(server.id).allocations == {hosts["host2"]: SMALL}

    conn.compute.delete_server(server)
    conn.compute.wait_for_delete(server, wait=60)
    with pytest.raises(openstack.exceptions.NotFoundException):
        conn.compute.get_server(server.id)
    migration = _migration(deployment, server.id, "evacuation")
    assert (migration.status, migration.error_reason) == ("error", "server deleted")
    # host2 ends its rebuild after the delete: its report is not due.
    late = f"{migration.uuid}: rebuild report from host2 is not due"
    wait_for(
        lambda: late in deployment["daemons"].log("conductor"),
        "host2's late rebuild report",
        detail=lambda: deployment["daemons"].log("host2")[-3000:],
    )
    assert client.get_allocations(server.id).allocations == {}
    assert client.get_allocations(migration.uuid).allocations == {}
    assert {name: client.get_usages(rp) for name, rp in hosts.items()} == {
        "host1": {},
        "host2": {},
    }
    deployment["check"]()

    # host1's daemon starts again: nothing is given back twice or held again.
    up = {"forced_down": False}
    assert conn.compute.put(f"/os-services/{service}", json=up, microversion="2.53").ok
    _restart(deployment, "host1")
    assert _migration(deployment, server.id, "evacuation").status == "error"
    assert client.get_allocations(server.id).allocations == {}
    assert client.get_allocations(migration.uuid).allocations == {}
    assert {name: client.get_usages(rp) for name, rp in hosts.items()} == {
        "host1": {},
        "host2": {},
    }
    deployment["check"]()
    deployment["daemons"].check_running()
