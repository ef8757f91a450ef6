"""What operators' scripts read: hypervisor statistics, and os-services under
Nova's names with the conductor's own row.

The API runs over a fresh database and the real Placement; compute hosts
report through the conductor's report code, as in test_services.py.
"""

import datetime
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
import webob

from resize_sched.api import faults
from resize_sched.api.handlers import hypervisors
from resize_sched.api.microversion import APIVersion
from resize_sched.api.request import VERSION_KEY, ApiRequest
from resize_sched.conductor import reports
from resize_sched.conductor import rpcapi as conductor_rpcapi
from resize_sched.db import models
from resize_sched.db.host_api import COMPUTE_BINARY, CONDUCTOR_BINARY
from resize_sched.placement.client import ConsumerWrite, PlacementClient
from tests.functional.api.harness import ALICE, ApiHarness


def _statistics(api: ApiHarness, version: str, token: str = "admin:admin") -> Any:
    return api.request("GET", "/v2.1/os-hypervisors/statistics", token=token, version=version)


def test_statistics_sum_the_enabled_hypervisors(
    cloud: ApiHarness, register: Callable[..., str], placement_client: PlacementClient
) -> None:
    rp1 = register("h1", 8, 8192, 100)
    register("h2", 4, 4096, 40)
    register("h3", 16, 16384, 200)
    placement_client.put_allocations(
        str(uuid.uuid4()),
        ConsumerWrite(
            allocations={rp1: {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}},
            project_id="p",
            user_id="u",
            generation=None,
        ),
    )
    cloud.server(cloud.flavor("small"), name="vm")  # ACTIVE on h1
    h3 = cloud.db.service_get_by_host("h3")
    cloud.db.service_set_disabled(h3.uuid, True, "retired")  # left out, as in Nova

    expected = {
        "count": 2,
        "vcpus": 12,
        "memory_mb": 12288,
        "local_gb": 140,
        "vcpus_used": 2,
        "memory_mb_used": 1024,
        "local_gb_used": 10,
        "free_ram_mb": 12288 - 1024,
        "free_disk_gb": 130,
        "current_workload": 0,
        "running_vms": 1,
        "disk_available_least": 130,
    }
    # openstackclient asks at 2.1, novaclient at its negotiated version; the
    # literal path is routed before /os-hypervisors/{id} (a uuid from 2.53).
    for version in ("2.1", "2.53", "2.80"):
        response = _statistics(cloud, version)
        assert response.status_int == 200, response.json
        assert response.json == {"hypervisor_statistics": expected}
    assert _statistics(cloud, "2.80", token=ALICE).status_int == 403


def test_statistics_of_no_hypervisor_and_after_2_87(cloud: ApiHarness) -> None:
    response = _statistics(cloud, "2.1")
    assert response.json["hypervisor_statistics"]["count"] == 0
    assert set(response.json["hypervisor_statistics"]) == {"count", *hypervisors.STATISTICS_FIELDS}
    # Nova dropped the route at 2.88; we serve up to 2.80, so no client can
    # ask for 2.88 yet: the handler itself answers 404 there.
    req = ApiRequest(webob.Request.blank("/v2.1/os-hypervisors/statistics").environ)
    req.environ[VERSION_KEY] = APIVersion(2, 88)
    with pytest.raises(faults.NotFound):
        hypervisors.statistics(cloud.app.state, req)
    req.environ[VERSION_KEY] = APIVersion(2, 87)
    with pytest.raises(faults.Unauthorized):  # past the version check: no caller here
        hypervisors.statistics(cloud.app.state, req)


def _services(api: ApiHarness, query: str = "", version: str = "2.53") -> list[dict[str, Any]]:
    response = api.request("GET", f"/v2.1/os-services{query}", version=version)
    assert response.status_int == 200, response.json
    return response.json["services"]


def test_the_conductor_is_listed_as_nova_conductor(
    cloud: ApiHarness, register: Callable[..., str]
) -> None:
    register("h1")
    heartbeat = reports.ConductorHeartbeat(cloud.db, "ctl1", interval=3600)
    assert heartbeat.beat() and heartbeat.beat()
    row = cloud.db.service_get_by_host("ctl1", CONDUCTOR_BINARY)
    assert (row.report_count, row.topic, row.version) == (2, "conductor", conductor_rpcapi.VERSION)

    listed = {s["binary"]: s for s in _services(cloud)}
    assert set(listed) == {"nova-compute", "nova-conductor"}
    conductor = listed["nova-conductor"]
    assert (conductor["host"], conductor["zone"], conductor["state"], conductor["status"]) == (
        "ctl1",
        "internal",
        "up",
        "enabled",
    )
    assert listed["nova-compute"]["zone"] == "nova"
    for name in ("nova-conductor", CONDUCTOR_BINARY):
        assert [s["host"] for s in _services(cloud, f"?binary={name}")] == ["ctl1"]

    # Only compute services can be disabled, as in Nova.
    response = cloud.request(
        "PUT", f"/v2.1/os-services/{row.uuid}", {"status": "disabled"}, version="2.53"
    )
    assert response.status_int == 400
    assert "nova-conductor" in response.json["badRequest"]["message"]
    assert not cloud.db.service_get_by_host("ctl1", CONDUCTOR_BINARY).disabled


def test_the_heartbeat_thread_beats_until_stopped(cloud: ApiHarness) -> None:
    heartbeat = reports.ConductorHeartbeat(cloud.db, "ctl1", interval=0.01)
    heartbeat.start()
    try:
        for _ in range(500):
            if cloud.db.service_get_by_host("ctl1", CONDUCTOR_BINARY).report_count >= 3:
                break
            heartbeat._stopping.wait(0.01)
    finally:
        heartbeat.stop()
    stopped = cloud.db.service_get_by_host("ctl1", CONDUCTOR_BINARY).report_count
    assert stopped >= 3
    heartbeat._stopping.wait(0.05)
    assert cloud.db.service_get_by_host("ctl1", CONDUCTOR_BINARY).report_count == stopped


@pytest.mark.parametrize("binary", ["nova-compute", COMPUTE_BINARY])
def test_legacy_actions_take_either_name(
    cloud: ApiHarness, register: Callable[..., str], binary: str
) -> None:
    register("h1")
    body = {"host": "h1", "binary": binary}
    response = cloud.request("PUT", "/v2.1/os-services/disable", body, version="2.52")
    assert response.status_int == 200, response.json
    assert response.json == {"service": {**body, "status": "disabled"}}
    assert cloud.db.service_get_by_host("h1").disabled
    response = cloud.request("PUT", "/v2.1/os-services/enable", body, version="2.52")
    assert response.json["service"]["status"] == "enabled"
    assert not cloud.db.service_get_by_host("h1").disabled


def test_host_status_follows_the_host_s_service(api: ApiHarness) -> None:
    small = api.flavor("small")
    server = api.server(small)  # on h1
    building = api.server(small, name="new", active=False)

    def status(uuid_: str = server.uuid) -> str:
        response = api.request("GET", f"/v2.1/servers/{uuid_}", version="2.16")
        return response.json["server"]["host_status"]

    assert status() == ""  # no compute service recorded on h1
    row = api.db.service_report(host="h1", binary=COMPUTE_BINARY, topic="compute")
    assert status() == "UP"
    api.db.service_set_disabled(row.uuid, True, "maintenance")
    assert status() == "MAINTENANCE"
    api.db.service_set_disabled(row.uuid, False)
    api.conf.set_override("service_down_time", 1)
    with api.db.engine.begin() as conn:
        conn.execute(
            sa.update(models.Service).values(
                last_seen_up=models.utcnow() - datetime.timedelta(seconds=60)
            )
        )
    assert status() == "UNKNOWN"
    api.db.service_set_forced_down(row.uuid, True)
    assert status() == "DOWN"
    assert status(building.uuid) == ""
    listed = api.request("GET", "/v2.1/servers/detail?all_tenants=1", version="2.80").json[
        "servers"
    ]
    assert {s["id"]: s["host_status"] for s in listed} == {server.uuid: "DOWN", building.uuid: ""}
    # server_groups: one server's, not in lists (as Nova).
    assert all("server_groups" not in s for s in listed)
    shown = api.request("GET", f"/v2.1/servers/{server.uuid}", version="2.80").json["server"]
    assert shown["server_groups"] == []
