"""Multiple create end to end in the all-in-one: one ``POST /servers`` with
``min_count`` 2 boots both members of a server group (as Tempest's
``test_servers_on_multinodes`` does), each built on its own against the
real Placement; the exact allocations per provider are asserted."""

from typing import Any

import pytest
import requests

RES = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 5}


def _api(d: Any, method: str, path: str, body: Any = None, version: str = "2.64") -> Any:
    return requests.request(
        method,
        d.aio.api_endpoint.rstrip("/") + path,
        json=body,
        headers={"X-Auth-Token": "admin:admin", "OpenStack-API-Version": f"compute {version}"},
        timeout=30,
    )


@pytest.mark.parametrize("group_policy", ["affinity", "anti-affinity"])
def test_two_group_members_in_one_request(deploy: Any, group_policy: str) -> None:
    d = deploy()
    flavor = d.flavor("small", vcpus=1, ram=512, disk=5)
    response = _api(
        d, "POST", "/os-server-groups", {"server_group": {"name": "g", "policy": group_policy}}
    )
    assert response.status_code == 200, response.text
    group = response.json()["server_group"]["id"]
    body = {
        "server": {
            "name": "member",
            "flavorRef": flavor.id,
            "min_count": 2,
            "return_reservation_id": True,
        },
        "os:scheduler_hints": {"group": group},
    }
    response = _api(d, "POST", "/servers", body)
    assert response.status_code == 202, response.text
    reservation = response.json()["reservation_id"]
    assert set(response.json()) == {"reservation_id"}
    listed = _api(d, "GET", f"/servers/detail?reservation_id={reservation}").json()["servers"]
    assert sorted(s["name"] for s in listed) == ["member-1", "member-2"]
    servers = [d.wait(d.conn.compute.get_server(s["id"]), "ACTIVE") for s in listed]
    d.check()
    hosts = [s.compute_host for s in servers]
    if group_policy == "affinity":
        assert hosts[0] == hosts[1]
    else:
        assert hosts[0] != hosts[1]
    for server in servers:
        assert d.holds(server.id) == d.on(server.compute_host, **RES)
    for host in d.hosts:
        on_host = hosts.count(host)
        # NOTE: Placement reports nothing for a host that holds nothing.
        expected = {rc: amount * on_host for rc, amount in RES.items()} if on_host else {}
        assert d.usage(host) == expected
    shown = _api(d, "GET", f"/servers/{servers[0].id}").json()["server"]
    assert shown["OS-EXT-SRV-ATTR:reservation_id"] == reservation
    members = _api(d, "GET", f"/os-server-groups/{group}").json()["server_group"]["members"]
    assert sorted(members) == sorted(s.id for s in servers)
