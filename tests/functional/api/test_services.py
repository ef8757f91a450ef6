"""``/v2.1/os-services``: list with up/down, disable and enable (with Placement's trait).

The API runs over a fresh database and the real Placement; compute hosts
are providers made in Placement whose reports go through the conductor's
report code (:func:`resize_sched.conductor.reports.record`), as a compute
service's would.
"""

import datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from resize_sched.cmd import manage
from resize_sched.db import models
from resize_sched.db.host_api import COMPUTE_BINARY
from resize_sched.placement.client import DISABLED_TRAIT, PlacementClient
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT, PlacementInProcess
from tests.functional.api.harness import ALICE, ApiHarness

UUID_LENGTH = 36


def _services(api: ApiHarness, query: str = "", version: str = "2.53") -> list[dict[str, Any]]:
    response = api.request("GET", f"/v2.1/os-services{query}", version=version)
    assert response.status_int == 200, response.json
    return response.json["services"]


def _put(api: ApiHarness, service_id: str, body: Any, version: str = "2.53") -> Any:
    return api.request("PUT", f"/v2.1/os-services/{service_id}", body, version=version)


def _age(api: ApiHarness, host: str, seconds: float) -> None:
    """Make ``host``'s last report ``seconds`` old."""
    then = models.utcnow() - datetime.timedelta(seconds=seconds)
    with api.db.engine.begin() as conn:
        conn.execute(
            sa.update(models.Service).where(models.Service.host == host).values(last_seen_up=then)
        )


def test_list_at_2_53_and_2_1(cloud: ApiHarness, register: Callable[..., str]) -> None:
    register("h1")
    register("h2")
    rows = {s.host: s for s in cloud.db.service_list()}
    listed = _services(cloud)
    assert [s["host"] for s in listed] == ["h1", "h2"]
    first = listed[0]
    assert first == {
        "id": rows["h1"].uuid,
        "binary": "nova-compute",
        "host": "h1",
        "zone": "nova",
        "status": "enabled",
        "state": "up",
        "updated_at": first["updated_at"],
        "disabled_reason": None,
        "forced_down": False,
    }
    assert len(first["id"]) == UUID_LENGTH and first["updated_at"].startswith("20")
    old = _services(cloud, version="2.1")
    assert [s["id"] for s in old] == [rows["h1"].id, rows["h2"].id]
    assert "forced_down" not in old[0]
    assert "forced_down" in _services(cloud, version="2.11")[0]


def test_state_follows_the_heartbeat(cloud: ApiHarness, register: Callable[..., str]) -> None:
    register("h1")
    register("h2")
    _age(cloud, "h2", cloud.conf.service_down_time + 5)
    _age(cloud, "h1", cloud.conf.service_down_time - 5)
    assert {s["host"]: s["state"] for s in _services(cloud)} == {"h1": "up", "h2": "down"}
    cloud.conf.set_override("service_down_time", 600)
    assert {s["host"]: s["state"] for s in _services(cloud)} == {"h1": "up", "h2": "up"}


def test_filters(cloud: ApiHarness, register: Callable[..., str]) -> None:
    register("h1")
    register("h2")
    assert [s["host"] for s in _services(cloud, "?host=h2")] == ["h2"]
    # Nova's name and ours both name the compute services.
    assert [s["host"] for s in _services(cloud, f"?binary={COMPUTE_BINARY}")] == ["h1", "h2"]
    assert [s["host"] for s in _services(cloud, "?binary=nova-compute")] == ["h1", "h2"]
    assert _services(cloud, "?binary=nova-scheduler") == []
    assert _services(cloud, "?host=h3") == []


def test_disable_and_enable_set_the_trait_in_placement(
    cloud: ApiHarness, register: Callable[..., str], placement_client: PlacementClient
) -> None:
    rp1, rp2 = register("h1"), register("h2")
    service = cloud.db.service_get_by_host("h1")
    response = _put(cloud, service.uuid, {"status": "disabled", "disabled_reason": "maintenance"})
    assert response.status_int == 200, response.json
    body = response.json["service"]
    assert (body["id"], body["status"], body["disabled_reason"], body["state"]) == (
        service.uuid,
        "disabled",
        "maintenance",
        "up",
    )
    assert placement_client.get_traits(rp1)[0] == {DEFAULT_OWNER_TRAIT, DISABLED_TRAIT}
    assert placement_client.get_traits(rp2)[0] == {DEFAULT_OWNER_TRAIT}
    listed = {s["host"]: s for s in _services(cloud)}
    assert (listed["h1"]["status"], listed["h1"]["disabled_reason"]) == ("disabled", "maintenance")
    assert listed["h2"]["status"] == "enabled"

    # Again: the same answer, nothing more to change.
    generation = placement_client.get_traits(rp1)[1]
    again = _put(cloud, service.uuid, {"status": "disabled", "disabled_reason": "maintenance"})
    assert again.status_int == 200 and again.json["service"]["status"] == "disabled"
    assert placement_client.get_traits(rp1)[1] == generation

    response = _put(cloud, service.uuid, {"status": "enabled"})
    assert response.status_int == 200, response.json
    assert (response.json["service"]["status"], response.json["service"]["disabled_reason"]) == (
        "enabled",
        None,
    )
    assert placement_client.get_traits(rp1)[0] == {DEFAULT_OWNER_TRAIT}


def test_legacy_disable_and_enable_before_2_53(
    cloud: ApiHarness, register: Callable[..., str], placement_client: PlacementClient
) -> None:
    rp = register("h1")
    host = {"host": "h1", "binary": COMPUTE_BINARY}
    response = cloud.request(
        "PUT", "/v2.1/os-services/disable-log-reason", {**host, "disabled_reason": "bios"}
    )
    assert response.status_int == 200, response.json
    assert response.json == {"service": {**host, "status": "disabled", "disabled_reason": "bios"}}
    assert DISABLED_TRAIT in placement_client.get_traits(rp)[0]

    response = cloud.request("PUT", "/v2.1/os-services/enable", host)
    assert response.json == {"service": {**host, "status": "enabled"}}
    assert DISABLED_TRAIT not in placement_client.get_traits(rp)[0]

    response = cloud.request("PUT", "/v2.1/os-services/disable", host)
    assert response.json == {"service": {**host, "status": "disabled"}}
    assert cloud.db.service_get_by_host("h1").disabled_reason is None

    # Superseded from 2.53; unknown services are 404s.
    assert cloud.request("PUT", "/v2.1/os-services/enable", host, version="2.53").status_int == 404
    unknown = {"host": "h9", "binary": COMPUTE_BINARY}
    assert cloud.request("PUT", "/v2.1/os-services/enable", unknown).status_int == 404


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"status": "enabled", "disabled_reason": "x"}, 400),
        ({"disabled_reason": "x"}, 400),
        ({"status": "off"}, 400),
        ({"status": "disabled", "disabled_reason": ""}, 400),
        ({"status": "disabled", "colour": "red"}, 400),
        ({}, 400),
        ([], 400),
    ],
)
def test_refused_updates_change_nothing(
    cloud: ApiHarness,
    register: Callable[..., str],
    placement_client: PlacementClient,
    body: Any,
    status: int,
) -> None:
    rp = register("h1")
    service = cloud.db.service_get_by_host("h1")
    before = (cloud.snapshot(), placement_client.get_traits(rp))
    response = _put(cloud, service.uuid, body)
    assert response.status_int == status, response.json
    assert (cloud.snapshot(), placement_client.get_traits(rp)) == before


def test_unknown_ids_and_old_microversions(
    cloud: ApiHarness, register: Callable[..., str]
) -> None:
    register("h1")
    service = cloud.db.service_get_by_host("h1")
    body = {"status": "disabled"}
    assert _put(cloud, "3f0c6c3e-8c31-4f7e-9a56-0d1b1b2f9e11", body).status_int == 404
    assert _put(cloud, "not-a-uuid", body).status_int == 400
    assert _put(cloud, service.uuid, body, version="2.52").status_int == 404
    assert not cloud.db.service_get_by_host("h1").disabled


def test_admin_only(cloud: ApiHarness, register: Callable[..., str]) -> None:
    register("h1")
    service = cloud.db.service_get_by_host("h1")
    assert cloud.request("GET", "/v2.1/os-services", token=ALICE).status_int == 403
    response = cloud.request(
        "PUT",
        f"/v2.1/os-services/{service.uuid}",
        {"status": "disabled"},
        token=ALICE,
        version="2.53",
    )
    assert response.status_int == 403
    legacy = {"host": "h1", "binary": COMPUTE_BINARY}
    assert cloud.request("PUT", "/v2.1/os-services/disable", legacy, token=ALICE).status_int == 403
    assert not cloud.db.service_get_by_host("h1").disabled


def test_a_host_with_no_provider_of_ours_is_disabled_in_the_database_only(
    cloud: ApiHarness,
    register: Callable[..., str],
    placement: PlacementInProcess,
    placement_client: PlacementClient,
) -> None:
    rp = register("h1")
    placement_client.delete_resource_provider(rp)
    # Someone else's provider of the same name is never touched.
    theirs = placement.add_host("h1", 2, 2048, 20, owner="CUSTOM_SOMEONE_ELSE")
    before = placement_client.get_traits(theirs)
    service = cloud.db.service_get_by_host("h1")
    response = _put(cloud, service.uuid, {"status": "disabled"})
    assert response.status_int == 200, response.json
    assert cloud.db.service_get_by_host("h1").disabled
    assert placement_client.get_traits(theirs) == before


def test_placement_down_changes_nothing(
    cloud: ApiHarness, register: Callable[..., str], placement: PlacementInProcess
) -> None:
    register("h1")
    service = cloud.db.service_get_by_host("h1")
    placement.configure(cloud.conf, endpoint="http://127.0.0.1:9/placement", connect_retries=0)
    cloud.app.state._placement = None
    before = cloud.snapshot()
    response = _put(cloud, service.uuid, {"status": "disabled"})
    assert response.status_int == 503, response.json
    assert "nothing was changed" in response.json["serviceUnavailable"]["message"]
    assert cloud.snapshot() == before


def test_manage_host_disable_agrees_with_os_services(
    cloud: ApiHarness,
    register: Callable[..., str],
    placement: PlacementInProcess,
    placement_client: PlacementClient,
    tmp_path: Path,
) -> None:
    rp = register("h1")
    config = tmp_path / "manage.conf"
    config.write_text(
        f"[database]\nconnection = {cloud.db.engine.url.render_as_string(hide_password=False)}\n"
        f"[placement]\nauth_type = admin_token\nendpoint = {placement.endpoint}\n"
        "token = admin\n"
    )
    argv = ["--config-file", str(config), "host"]
    assert manage.main([*argv, "disable", "h1", "--reason", "disk swap"]) == 0
    [listed] = _services(cloud)
    assert (listed["status"], listed["disabled_reason"]) == ("disabled", "disk swap")
    assert DISABLED_TRAIT in placement_client.get_traits(rp)[0]
    assert manage.main([*argv, "enable", "h1"]) == 0
    [listed] = _services(cloud)
    assert (listed["status"], listed["disabled_reason"]) == ("enabled", None)
    assert DISABLED_TRAIT not in placement_client.get_traits(rp)[0]
