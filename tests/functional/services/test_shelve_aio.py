"""Shelving through the deployed services (the all-in-one in-process):
openstacksdk asks the API, the conductor and the fake compute hosts run the
steps over oslo.messaging (conductor RPC 1.6, compute RPC 1.3), and
Placement's state is asserted after each.
"""

from typing import Any

FLAVOR = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}


def _action(d: Any, server: Any, body: Any, version: str = "2.77") -> Any:
    return d.conn.compute.post(f"/servers/{server.id}/action", json=body, microversion=version)


def test_shelve_offload_unshelve_over_rpc(deploy):
    d = deploy("[DEFAULT]\nshelved_offload_time = -1\n")
    flavor = d.flavor("small", vcpus=2, ram=1024, disk=10)
    server = d.boot("vm", flavor)
    host = server.compute_host
    other = "host2" if host == "host1" else "host1"
    assert d.holds(server.id) == d.on(host, **FLAVOR)

    d.conn.compute.shelve_server(server)
    server = d.wait(server, "SHELVED")
    d.check()
    assert (server.vm_state, server.power_state, server.compute_host) == ("shelved", 4, host)
    assert d.holds(server.id) == d.on(host, **FLAVOR)

    d.conn.compute.shelve_offload_server(server)
    server = d.wait(server, "SHELVED_OFFLOADED")
    d.check()
    assert server.compute_host is None
    assert d.holds(server.id) == {}
    assert d.usage(host) == {}

    # Keep the server off its old host: the scheduler must choose the other.
    d.aio.db.service_set_disabled(d.aio.db.service_get_by_host(host).uuid, True, "drain")
    assert _action(d, server, {"unshelve": None}).status_code == 202
    server = d.wait(server, "ACTIVE")
    d.check()
    assert server.compute_host == other
    assert d.holds(server.id) == d.on(other, **FLAVOR)
    assert d.usage(host) == {}

    actions = [a.action for a in d.conn.compute.server_actions(server)]
    assert actions[:3] == ["unshelve", "shelveOffload", "shelve"]
