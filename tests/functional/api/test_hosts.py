"""``/v2.1/os-hosts`` (up to 2.42): list, show, enable/disable, and every refusal."""

from collections.abc import Callable
from typing import Any

import pytest

from resize_sched.placement.client import DISABLED_TRAIT, PlacementClient
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT
from tests.functional.api.harness import ALICE, ApiHarness


def _call(api: ApiHarness, method: str, path: str, body: Any = None, **kw: Any) -> Any:
    kw.setdefault("version", "2.42")
    return api.request(method, f"/v2.1/os-hosts{path}", body, **kw)


def test_list_with_zones_and_show_sizes(cloud: ApiHarness, register: Callable[..., str]) -> None:
    register("h1")
    register("h2")
    flavor = cloud.flavor("m1", vcpus=2, memory_mb=1024, root_gb=10)
    cloud.server(flavor)
    cloud.server(flavor, project_id="project-b", user_id="bob")
    listed = _call(cloud, "GET", "").json["hosts"]
    assert {"host_name": "h1", "service": "compute", "zone": "nova"} in listed
    assert {"host_name": "h2", "service": "compute", "zone": "nova"} in listed
    assert _call(cloud, "GET", "?zone=nova").json["hosts"] == [
        h for h in listed if h["zone"] == "nova"
    ]
    assert _call(cloud, "GET", "?zone=").json["hosts"] == listed
    assert _call(cloud, "GET", "?zone=xxx").json["hosts"] == []
    shown = _call(cloud, "GET", "/h1")
    assert shown.status_int == 200, shown.json
    rows = {r["resource"]["project"]: r["resource"] for r in shown.json["host"]}
    assert rows["(total)"] == {
        "host": "h1",
        "project": "(total)",
        "cpu": 4,
        "memory_mb": 4096,
        "disk_gb": 40,
    }
    # NOTE: the harness's servers hold nothing in Placement: used_now is 0.
    assert (rows["(used_now)"]["cpu"], rows["(used_now)"]["memory_mb"]) == (0, 0)
    assert rows["(used_max)"] == {
        "host": "h1",
        "project": "(used_max)",
        "cpu": 4,
        "memory_mb": 2048,
        "disk_gb": 20,
    }
    assert rows["project-a"]["cpu"] == rows["project-b"]["cpu"] == 2


def test_update_status_disables_as_os_services(
    cloud: ApiHarness, register: Callable[..., str], placement_client: PlacementClient
) -> None:
    rp = register("h1")
    response = _call(cloud, "PUT", "/h1", {"status": "disable"})
    assert response.status_int == 200, response.json
    assert response.json == {"host": "h1", "status": "disabled"}
    assert cloud.db.service_get_by_host("h1").disabled is True
    assert placement_client.get_traits(rp)[0] == {DEFAULT_OWNER_TRAIT, DISABLED_TRAIT}
    assert _call(cloud, "PUT", "/h1", {"status": "Enable"}).json["status"] == "enabled"
    assert cloud.db.service_get_by_host("h1").disabled is False


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("PUT", "/h1", {"status": "invalid"}, 400),
        ("PUT", "/h1", {"maintenance_mode": "invalid"}, 400),
        ("PUT", "/h1", {}, 400),
        ("PUT", "/h1", {"status": "enable", "color": 1}, 400),
        ("PUT", "/h1", {"maintenance_mode": "enable"}, 501),
        ("PUT", "/nowhere", {"status": "enable"}, 404),
        ("GET", "/nowhere", None, 404),
        ("GET", "/h1/startup", None, 501),
        ("GET", "/h1/shutdown", None, 501),
        ("GET", "/h1/reboot", None, 501),
        ("GET", "/nowhere/startup", None, 404),
        ("GET", "/nowhere/reboot", None, 404),
    ],
)
def test_refusals_change_nothing(
    cloud: ApiHarness,
    register: Callable[..., str],
    method: str,
    path: str,
    body: Any,
    status: int,
) -> None:
    register("h1")
    before = cloud.snapshot()
    response = _call(cloud, method, path, body)
    assert response.status_int == status, response.json
    assert cloud.snapshot() == before


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "", None),
        ("GET", "/h1", None),
        ("PUT", "/h1", {"status": "disable"}),
        ("GET", "/h1/startup", None),
    ],
)
def test_admin_only_and_gone_from_2_43(
    cloud: ApiHarness, register: Callable[..., str], method: str, path: str, body: Any
) -> None:
    register("h1")
    before = cloud.snapshot()
    assert _call(cloud, method, path, body, token=ALICE).status_int == 403
    assert _call(cloud, method, path, body, version="2.43").status_int == 404
    assert cloud.snapshot() == before
