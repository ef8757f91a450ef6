"""``/v2.1/os-hypervisors``: list, detail, show; usage read from the real Placement."""

import datetime
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa

from resize_sched.api.handlers import hypervisors
from resize_sched.db import models
from resize_sched.placement.client import ConsumerWrite, PlacementClient
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT
from tests.functional.api.harness import ALICE, ApiHarness


@pytest.fixture
def register(register: Callable[..., str]) -> Callable[..., str]:
    """``register(host)``: 8 VCPU, 8192 MB of memory (512 reserved) and 100 GB of disk."""
    return lambda host: register(host, 8, 8192, 100, MEMORY_MB={"total": 8192, "reserved": 512})


def _claim(client: PlacementClient, rp: str, **resources: int) -> str:
    consumer = str(uuid.uuid4())
    client.put_allocations(
        consumer,
        ConsumerWrite(allocations={rp: resources}, project_id="p", user_id="u", generation=None),
    )
    return consumer


def _get(api: ApiHarness, path: str, version: str = "2.53", status: int = 200) -> Any:
    response = api.request("GET", f"/v2.1/os-hypervisors{path}", version=version)
    assert response.status_int == status, response.json
    return response.json


def test_list_at_2_53_and_2_1(cloud: ApiHarness, register: Callable[..., str]) -> None:
    rp1, rp2 = register("h1"), register("h2")
    assert _get(cloud, "") == {
        "hypervisors": [
            {"id": rp1, "hypervisor_hostname": "h1", "state": "up", "status": "enabled"},
            {"id": rp2, "hypervisor_hostname": "h2", "state": "up", "status": "enabled"},
        ]
    }
    ids = [n.id for n in cloud.db.compute_node_list()]
    assert [h["id"] for h in _get(cloud, "", version="2.1")["hypervisors"]] == ids


def test_detail_totals_from_the_node_usage_from_placement(
    cloud: ApiHarness, register: Callable[..., str], placement_client: PlacementClient
) -> None:
    rp1, _ = register("h1"), register("h2")
    _claim(placement_client, rp1, VCPU=2, MEMORY_MB=1024, DISK_GB=10)
    _claim(placement_client, rp1, VCPU=1, MEMORY_MB=512, DISK_GB=5)
    small = cloud.flavor("small")
    cloud.server(small, name="a")  # ACTIVE on h1
    busy = cloud.server(small, name="b")
    cloud.db.server_update(busy.uuid, task_state="resize_prep")
    service = cloud.db.service_get_by_host("h1")

    listed = _get(cloud, "/detail", version="2.80")["hypervisors"]
    assert [h["hypervisor_hostname"] for h in listed] == ["h1", "h2"]
    client = cloud.app.state.placement()
    client.reset_request_count()
    assert _get(cloud, "/detail", version="2.80")["hypervisors"] == listed
    assert client.request_count == 1 + 2  # our providers, then each one's usages
    client.reset_request_count()
    _get(cloud, "", version="2.80")
    assert client.request_count == 0  # the plain list reads no usage
    assert listed[0] == {
        "id": rp1,
        "hypervisor_hostname": "h1",
        "state": "up",
        "status": "enabled",
        "hypervisor_type": "fake",
        "hypervisor_version": hypervisors.HYPERVISOR_VERSION,
        "host_ip": None,
        "service": {"id": service.uuid, "host": "h1", "disabled_reason": None},
        "vcpus": 8,
        "memory_mb": 8192,
        "local_gb": 100,
        "vcpus_used": 3,
        "memory_mb_used": 1536 + 512,  # what servers hold + reserved, as Nova counts
        "local_gb_used": 15,
        "free_ram_mb": 8192 - 2048,
        "free_disk_gb": 85,
        "current_workload": 1,
        "running_vms": 2,
        "disk_available_least": 85,
        "cpu_info": {},
    }
    assert (listed[1]["vcpus_used"], listed[1]["memory_mb_used"], listed[1]["running_vms"]) == (
        0,
        512,
        0,
    )
    assert _get(cloud, "/detail", version="2.27")["hypervisors"][0]["cpu_info"] == "{}"


def test_show(
    cloud: ApiHarness, register: Callable[..., str], placement_client: PlacementClient
) -> None:
    rp = register("h1")
    _claim(placement_client, rp, VCPU=4, MEMORY_MB=2048, DISK_GB=20)
    shown = _get(cloud, f"/{rp}", version="2.80")["hypervisor"]
    assert (shown["id"], shown["vcpus_used"], shown["memory_mb_used"], shown["free_disk_gb"]) == (
        rp,
        4,
        2048 + 512,
        80,
    )
    node = cloud.db.compute_node_get(rp)
    assert _get(cloud, f"/{node.id}", version="2.1")["hypervisor"]["id"] == node.id
    _get(cloud, f"/{uuid.uuid4()}", status=404)
    _get(cloud, "/not-a-uuid", status=400)
    _get(cloud, "/12345", version="2.1", status=404)
    _get(cloud, f"/{rp}", version="2.1", status=404)


def test_state_and_status_follow_the_service(
    cloud: ApiHarness, register: Callable[..., str]
) -> None:
    rp = register("h1")
    service = cloud.db.service_get_by_host("h1")
    cloud.db.service_set_disabled(service.uuid, True, "maintenance")
    then = models.utcnow() - datetime.timedelta(seconds=cloud.conf.service_down_time + 1)
    with cloud.db.engine.begin() as conn:
        conn.execute(sa.update(models.Service).values(last_seen_up=then))
    shown = _get(cloud, f"/{rp}")["hypervisor"]
    assert (shown["state"], shown["status"], shown["service"]["disabled_reason"]) == (
        "down",
        "disabled",
        "maintenance",
    )


def test_usage_only_from_providers_of_ours(
    cloud: ApiHarness, register: Callable[..., str], placement_client: PlacementClient
) -> None:
    rp = register("h1")
    _claim(placement_client, rp, VCPU=2)
    # The provider is someone else's now: its usage is not read.
    placement_client.update_traits(rp, remove=[DEFAULT_OWNER_TRAIT])
    shown = _get(cloud, f"/{rp}", version="2.80")["hypervisor"]
    assert (shown["vcpus"], shown["vcpus_used"]) == (8, 0)


def test_paging_pattern_and_servers(cloud: ApiHarness, register: Callable[..., str]) -> None:
    rps = [register(name) for name in ("alpha1", "alpha2", "beta1")]
    page = _get(cloud, "?limit=2")
    assert [h["id"] for h in page["hypervisors"]] == rps[:2]
    assert f"marker={rps[1]}" in page["hypervisors_links"][0]["href"]
    rest = _get(cloud, f"?limit=2&marker={rps[1]}")
    assert [h["id"] for h in rest["hypervisors"]] == rps[2:]
    assert "hypervisors_links" not in rest

    matched = _get(cloud, "?hypervisor_hostname_pattern=alpha")["hypervisors"]
    assert [h["hypervisor_hostname"] for h in matched] == ["alpha1", "alpha2"]
    _get(cloud, "?hypervisor_hostname_pattern=gamma", status=404)
    _get(cloud, "?hypervisor_hostname_pattern=alpha&limit=1", status=400)
    _get(cloud, "?marker=nope", status=400)

    server = cloud.server(cloud.flavor("small"), name="vm")
    cloud.db.server_update(server.uuid, host="beta1", node="beta1")
    with_servers = _get(cloud, "?with_servers=true", version="2.80")["hypervisors"]
    by_name = {h["hypervisor_hostname"]: h for h in with_servers}
    assert by_name["beta1"]["servers"] == [{"name": "vm", "uuid": server.uuid}]
    assert by_name["alpha1"]["servers"] == []  # from 2.75, even when empty
    assert "servers" not in _get(cloud, "?with_servers=true", version="2.74")["hypervisors"][0]
    _get(cloud, "?with_servers=maybe", status=400)


def test_uptime_aggregates_and_admin_only(cloud: ApiHarness, register: Callable[..., str]) -> None:
    rp = register("h1")
    response = cloud.request("GET", f"/v2.1/os-hypervisors/{rp}/uptime", version="2.53")
    assert response.status_int == 501
    assert cloud.request("GET", "/v2.1/os-aggregates").json == {"aggregates": []}
    for path in (
        "/os-hypervisors",
        "/os-hypervisors/detail",
        f"/os-hypervisors/{rp}",
        "/os-aggregates",
    ):
        response = cloud.request("GET", f"/v2.1{path}", token=ALICE, version="2.53")
        assert response.status_int == 403, path


def test_search_and_servers_below_2_53(cloud: ApiHarness, register: Callable[..., str]) -> None:
    register("h1")
    register("h2")
    register("spare")
    on_h1 = cloud.server(cloud.flavor("m1"))  # on h1
    nodes = {n.host: n.id for n in cloud.db.compute_node_list()}
    found = _get(cloud, "/h/search", version="2.52")["hypervisors"]
    assert found == [
        {"id": nodes["h1"], "hypervisor_hostname": "h1", "state": "up", "status": "enabled"},
        {"id": nodes["h2"], "hypervisor_hostname": "h2", "state": "up", "status": "enabled"},
    ]
    listed = _get(cloud, "/h/servers", version="2.1")["hypervisors"]
    assert [h["hypervisor_hostname"] for h in listed] == ["h1", "h2"]
    assert listed[0]["servers"] == [{"name": "vm", "uuid": on_h1.uuid}]
    # NOTE: as Nova, a hypervisor without servers has no "servers" key.
    assert "servers" not in listed[1]


@pytest.mark.parametrize("route", ["search", "servers"])
def test_search_and_servers_refusals(
    cloud: ApiHarness, register: Callable[..., str], route: str
) -> None:
    register("h1")
    missing = _get(cloud, f"/nowhere/{route}", version="2.52", status=404)
    assert missing["itemNotFound"]["message"] == "No hypervisor matching 'nowhere' could be found."
    # NOTE: Nova removed both at 2.53.
    _get(cloud, f"/h1/{route}", version="2.53", status=404)
    refused = cloud.request("GET", f"/v2.1/os-hypervisors/h1/{route}", token=ALICE, version="2.52")
    assert refused.status_int == 403
