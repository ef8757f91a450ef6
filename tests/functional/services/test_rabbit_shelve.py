"""Shelve, shelveOffload and unshelve in the production shape: separate
daemons over a real RabbitMQ (see :mod:`tests.functional.fixtures.deployment`).

``[DEFAULT] shelved_offload_time = -1`` keeps a shelved server on its host,
so each state is seen: SHELVED holds exactly the flavor on its host,
SHELVED_OFFLOADED holds nothing anywhere, and an unshelve holds exactly the
flavor on the host the scheduler chose. An unshelve whose chosen host fails
its spawn (``[fake_driver] fail_on = host3:unshelve``) is not rescheduled:
it stays SHELVED_OFFLOADED holding nothing, as a build's spawn failure is
not either. Placement's allocations per provider are checked after each step.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.functional.fixtures.deployment import rabbit_deployment, wait_status
from tests.functional.services.test_rabbit_moves import _restart

pytestmark = [pytest.mark.rabbit, pytest.mark.slow]

# RAMWeigher alone: the host with the most free memory ranks first.
HOSTS = {"host1": 32768, "host2": 24576, "host3": 16384}
SMALL = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
OPTIONS = """\
[DEFAULT]
shelved_offload_time = -1
[filter_scheduler]
weight_classes = RAMWeigher
[fake_driver]
fail_on = host3:unshelve
"""


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    workdir = tmp_path_factory.mktemp("rabbit-shelve")
    with rabbit_deployment(workdir, HOSTS, OPTIONS) as deployed:
        deployed["workdir"] = workdir
        # NOTE: as in test_rabbit_moves: a compute's first report may be
        # dropped before the conductor consumes; start each again.
        for name in HOSTS:
            _restart(deployed, name)
        deployed["flavor"] = deployed["conn"].compute.create_flavor(
            name="small", vcpus=1, ram=1024, disk=10
        )
        yield deployed


def _act(deployment: dict, server: Any, body: dict) -> None:
    response = deployment["conn"].compute.post(
        f"/servers/{server.id}/action", json=body, microversion="2.1"
    )
    assert response.status_code == 202, response.text


def _enable(deployment: dict, host: str, enabled: bool) -> None:
    service = deployment["db"].service_get_by_host(host).uuid
    body = {"status": "enabled" if enabled else "disabled"}
    response = deployment["conn"].compute.put(
        f"/os-services/{service}", json=body, microversion="2.53"
    )
    assert response.status_code == 200, response.text


def _usages(deployment: dict) -> dict[str, dict[str, int]]:
    client, hosts = deployment["client"], deployment["hosts"]
    return {name: client.get_usages(hosts[name]) for name in HOSTS}


def _held(deployment: dict, server: Any) -> dict[str, dict[str, int]]:
    return deployment["client"].get_allocations(server.id).allocations


def _offloaded(deployment: dict) -> Any:
    """A new server on host1 (the emptiest), shelved then offloaded, each
    step's allocations checked."""
    conn, hosts = deployment["conn"], deployment["hosts"]
    server = conn.compute.create_server(name="vm", flavor_id=deployment["flavor"].id)
    server = wait_status(conn, server, "ACTIVE")
    assert server.compute_host == "host1"
    assert _held(deployment, server) == {hosts["host1"]: SMALL}

    _act(deployment, server, {"shelve": None})
    server = wait_status(conn, server, "SHELVED", "SHELVED_OFFLOADED")
    assert (server.status, server.vm_state, server.compute_host) == (
        "SHELVED",
        "shelved",
        "host1",
    )
    assert _held(deployment, server) == {hosts["host1"]: SMALL}
    assert _usages(deployment) == {"host1": SMALL, "host2": {}, "host3": {}}
    deployment["check"]()

    _act(deployment, server, {"shelveOffload": None})
    server = wait_status(conn, server, "SHELVED_OFFLOADED")
    assert (server.vm_state, server.compute_host) == ("shelved_offloaded", None)
    assert _held(deployment, server) == {}
    assert _usages(deployment) == {"host1": {}, "host2": {}, "host3": {}}
    deployment["check"]()
    return server


def test_shelve_offload_and_unshelve_on_a_scheduled_host(deployment: dict) -> None:
    conn, hosts = deployment["conn"], deployment["hosts"]
    server = _offloaded(deployment)

    # host1 disabled: the scheduler's choice is host2, the emptiest left.
    _enable(deployment, "host1", False)
    try:
        _act(deployment, server, {"unshelve": None})
        server = wait_status(conn, server, "ACTIVE", "SHELVED_OFFLOADED")
    finally:
        _enable(deployment, "host1", True)
    assert (server.status, server.vm_state, server.compute_host) == ("ACTIVE", "active", "host2")
    assert _held(deployment, server) == {hosts["host2"]: SMALL}
    assert _usages(deployment) == {"host1": {}, "host2": SMALL, "host3": {}}
    deployment["check"]()

    conn.compute.delete_server(server)
    conn.compute.wait_for_delete(server, wait=60)
    assert _held(deployment, server) == {}
    assert _usages(deployment) == {"host1": {}, "host2": {}, "host3": {}}
    deployment["check"]()
    deployment["daemons"].check_running()


def test_an_unshelve_whose_spawn_fails_stays_offloaded_holding_nothing(deployment: dict) -> None:
    conn = deployment["conn"]
    server = _offloaded(deployment)

    # Only host3 is enabled: it is chosen and its spawn fails.
    _enable(deployment, "host1", False)
    _enable(deployment, "host2", False)
    try:
        _act(deployment, server, {"unshelve": None})
        # The API sets the task (unshelving) before it answers: wait for none.
        server = wait_status(conn, server, "ACTIVE", "SHELVED_OFFLOADED")
    finally:
        _enable(deployment, "host1", True)
        _enable(deployment, "host2", True)
    assert (server.status, server.vm_state, server.compute_host) == (
        "SHELVED_OFFLOADED",
        "shelved_offloaded",
        None,
    )
    fault = deployment["db"].server_get(server.id).fault_message
    assert fault.startswith("Unshelving the server on host host3 failed: Injected failure")
    assert "SHELVED_OFFLOADED and holds nothing" in fault
    assert _held(deployment, server) == {}
    assert _usages(deployment) == {"host1": {}, "host2": {}, "host3": {}}
    deployment["check"]()

    # Asked again with room elsewhere: host1, the emptiest, takes it.
    _act(deployment, server, {"unshelve": None})
    server = wait_status(conn, server, "ACTIVE")
    assert server.compute_host == "host1"
    assert _held(deployment, server) == {deployment["hosts"]["host1"]: SMALL}
    assert _usages(deployment) == {"host1": SMALL, "host2": {}, "host3": {}}
    deployment["check"]()
    deployment["daemons"].check_running()
