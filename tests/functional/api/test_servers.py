"""``/v2.1/servers``: create, show, list and delete, and every refusal."""

from typing import Any

import pytest

from resize_sched.db.host_api import COMPUTE_BINARY
from tests.functional.api.harness import ADMIN, ALICE, BOB, ApiHarness


def _create(api: ApiHarness, server: dict[str, Any], token: str = ALICE, **extra: Any) -> Any:
    return api.request("POST", "/v2.1/servers", {"server": server, **extra}, token=token)


def test_create_records_the_server_and_casts_build(api: ApiHarness) -> None:
    api.flavor("small", vcpus=2, memory_mb=1024, extra_specs={"trait:HW_CPU_X86_AVX2": "required"})
    response = _create(api, {"name": "web", "flavorRef": "small"})
    assert response.status_int == 202
    body = response.json["server"]
    assert body["links"][0] == {
        "rel": "self",
        "href": f"http://localhost/v2.1/servers/{body['id']}",
    }
    assert response.location == f"http://localhost/v2.1/servers/{body['id']}"
    # NOTE: as Nova (enable_instance_password): one generated when not given.
    assert body["adminPass"]

    server = api.db.server_get(body["id"])
    assert (server.name, server.project_id, server.user_id) == ("web", "project-a", "alice")
    assert (server.status, server.vm_state, server.task_state) == (
        "BUILD",
        "building",
        "scheduling",
    )
    assert server.flavor["id"] == "small"
    spec = api.db.request_spec_get(server.uuid)
    assert spec.resources == {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 1}
    assert spec.required_traits == ["HW_CPU_X86_AVX2"]

    cast = api.next_cast()
    assert (cast.method, cast.kwargs) == ("build_server", {"server_uuid": server.uuid})
    assert (cast.context.user_id, cast.context.project_id) == ("alice", "project-a")
    assert cast.context.request_id == response.headers["x-openstack-request-id"]
    assert cast.context.is_admin is False


def test_create_accepts_what_clients_send_and_ignores_it(api: ApiHarness) -> None:
    api.flavor("small")
    server = {
        "name": "web",
        "flavorRef": "http://localhost/v2.1/flavors/small",
        "imageRef": "",
        "networks": "auto",
        "min_count": 1,
        "max_count": "1",
        "metadata": {},
        "OS-DCF:diskConfig": "AUTO",
    }
    response = _create(api, server)
    assert response.status_int == 202, response.json
    assert api.next_cast().method == "build_server"
    response = _create(api, {"name": "db", "flavorRef": "small", "networks": [{"uuid": "x"}]})
    assert response.status_int == 202
    assert api.next_cast().method == "build_server"


@pytest.mark.parametrize(
    ("server", "extra"),
    [
        ({"flavorRef": "small"}, {}),
        ({"name": "web"}, {}),
        ({"name": "", "flavorRef": "small"}, {}),
        ({"name": "web", "flavorRef": ""}, {}),
        ({"name": "web", "flavorRef": "small", "min_count": 2, "max_count": 1}, {}),
        ({"name": "web", "flavorRef": "small", "max_count": 0}, {}),
        ({"name": "web", "flavorRef": "small", "networks": "some"}, {}),
        ({"name": "web", "flavorRef": "small", "personality": []}, {}),
        ({"name": "web", "flavorRef": "small"}, {"os:scheduler_hints": {"group": "x"}}),
        ({"name": "web", "flavorRef": "small"}, {"unexpected": 1}),
        ({"name": "web", "flavorRef": "no-such-flavor"}, {}),
        ({"name": "web", "flavorRef": "private"}, {}),
    ],
)
def test_create_refuses_bad_requests(api: ApiHarness, server: dict, extra: dict) -> None:
    api.flavor("small")
    api.flavor("private", is_public=False)
    before = api.snapshot()
    response = _create(api, server, **extra)
    assert response.status_int == 400, response.json
    assert response.json["badRequest"]["code"] == 400
    assert api.snapshot() == before
    api.assert_no_cast()


def test_create_refuses_malformed_json(api: ApiHarness) -> None:
    before = api.snapshot()
    response = api.request("POST", "/v2.1/servers", raw=b"{'server': {}}", token=ALICE)
    assert response.status_int == 400
    assert api.snapshot() == before
    api.assert_no_cast()


def test_admin_may_boot_a_private_flavor(api: ApiHarness) -> None:
    api.flavor("private", is_public=False)
    assert _create(api, {"name": "x", "flavorRef": "private"}, token=ADMIN).status_int == 202


def test_show(api: ApiHarness) -> None:
    small = api.flavor("small", memory_mb=512)
    server = api.server(small)
    body = api.request("GET", f"/v2.1/servers/{server.uuid}", token=ALICE).json["server"]
    assert body["id"] == server.uuid
    assert (body["status"], body["tenant_id"], body["user_id"]) == ("ACTIVE", "project-a", "alice")
    assert body["OS-EXT-STS:vm_state"] == "active"
    assert body["OS-EXT-STS:task_state"] is None
    assert (body["addresses"], body["image"]) == ({}, "")
    assert body["created"].endswith("Z") and body["updated"].endswith("Z")
    assert body["flavor"] == {
        "id": "small",
        "links": [{"rel": "bookmark", "href": "http://localhost/flavors/small"}],
    }
    assert body["hostId"]
    assert not any(k.startswith("OS-EXT-SRV-ATTR:") for k in body)
    assert "fault" not in body

    admin = api.request("GET", f"/v2.1/servers/{server.uuid}").json["server"]
    assert admin["OS-EXT-SRV-ATTR:host"] == "h1"
    assert admin["OS-EXT-SRV-ATTR:hypervisor_hostname"] == "h1"


def test_show_follows_the_microversion(api: ApiHarness) -> None:
    server = api.server(api.flavor("small", memory_mb=512, extra_specs={"custom:x": "1"}))
    api.db.service_report(host="h1", binary=COMPUTE_BINARY, topic="compute")  # h1 is up
    path = f"/v2.1/servers/{server.uuid}"
    old = api.request("GET", path, version="2.46").json["server"]
    assert set(old["flavor"]) == {"id", "links"}
    assert old["locked"] is False and "locked_reason" not in old
    new = api.request("GET", path, version="2.80").json["server"]
    assert new["flavor"] == {
        "original_name": "small",
        "vcpus": 1,
        "ram": 512,
        "disk": 1,
        "ephemeral": 0,
        "swap": 0,
        "extra_specs": {"custom:x": "1"},
    }
    assert (new["locked_reason"], new["tags"], new["host_status"]) == (None, [], "UP")
    base = api.request("GET", path).json["server"]
    assert "locked" not in base and "OS-EXT-SRV-ATTR:hostname" not in base


def test_show_error_server_has_a_fault(api: ApiHarness) -> None:
    server = api.server(api.flavor("small"), active=False)
    api.db.server_update(
        server.uuid,
        status="ERROR",
        vm_state="error",
        task_state=None,
        fault_message="No valid host was found",
        fault_code=500,
    )
    body = api.request("GET", f"/v2.1/servers/{server.uuid}", token=ALICE).json["server"]
    assert body["status"] == "ERROR"
    assert body["fault"]["code"] == 500
    assert body["fault"]["message"] == "No valid host was found"
    assert body["fault"]["created"].endswith("Z")


def test_other_projects_servers_are_404(api: ApiHarness) -> None:
    server = api.server(api.flavor("small"))
    response = api.request("GET", f"/v2.1/servers/{server.uuid}", token=BOB)
    assert response.status_int == 404
    assert response.json["itemNotFound"]["message"] == f"Server {server.uuid} could not be found."
    assert api.request("GET", "/v2.1/servers/nope", token=ALICE).status_int == 404


def test_list_shows_only_the_callers_project(api: ApiHarness) -> None:
    small = api.flavor("small")
    first = api.server(small, name="one")
    second = api.server(small, name="two", active=False)
    api.server(small, name="theirs", project_id="project-b", user_id="bob")

    index = api.request("GET", "/v2.1/servers", token=ALICE).json["servers"]
    assert [s["id"] for s in index] == [second.uuid, first.uuid]
    assert set(index[0]) == {"id", "name", "links"}
    detail = api.request("GET", "/v2.1/servers/detail", token=ALICE).json["servers"]
    assert [s["status"] for s in detail] == ["BUILD", "ACTIVE"]
    assert api.request("GET", "/v2.1/servers", token=BOB).json["servers"][0]["name"] == "theirs"


def test_list_filters(api: ApiHarness) -> None:
    small, big = api.flavor("small"), api.flavor("big", memory_mb=1024)
    api.server(small, name="web-1")
    api.server(big, name="web-2", active=False)
    api.server(small, name="db-1")

    def names(query: str, token: str = ALICE) -> list[str]:
        response = api.request("GET", f"/v2.1/servers/detail{query}", token=token)
        assert response.status_int == 200, response.json
        return sorted(s["name"] for s in response.json["servers"])

    assert names("?status=active") == ["db-1", "web-1"]
    assert names("?name=^web") == ["web-1", "web-2"]
    assert names("?flavor=big") == ["web-2"]
    assert names("?limit=1") == ["db-1"]
    assert api.request("GET", "/v2.1/servers?name=(", token=ALICE).status_int == 400


def test_all_tenants_is_for_admins(api: ApiHarness) -> None:
    small = api.flavor("small")
    api.server(small, name="a")
    api.server(small, name="b", project_id="project-b", user_id="bob")
    assert api.request("GET", "/v2.1/servers").json["servers"] == []
    everyone = api.request("GET", "/v2.1/servers?all_tenants=1").json["servers"]
    assert sorted(s["name"] for s in everyone) == ["a", "b"]
    one = api.request("GET", "/v2.1/servers?all_tenants=true&project_id=project-b").json
    assert [s["name"] for s in one["servers"]] == ["b"]
    assert api.request("GET", "/v2.1/servers?all_tenants=1", token=ALICE).status_int == 403
    assert api.request("GET", "/v2.1/servers?host=h1", token=ALICE).status_int == 403
    assert api.request("GET", "/v2.1/servers?all_tenants=perhaps").status_int == 400


def test_delete_marks_deleting_and_casts(api: ApiHarness) -> None:
    server = api.server(api.flavor("small"))
    response = api.request("DELETE", f"/v2.1/servers/{server.uuid}", token=ALICE)
    assert response.status_int == 204
    assert response.body == b""
    assert api.db.server_get(server.uuid).task_state == "deleting"
    cast = api.next_cast()
    assert (cast.method, cast.kwargs) == ("delete_server", {"server_uuid": server.uuid})
    assert cast.context.project_id == "project-a"

    # Again: nothing changes, the cast is repeated (a lost cast is retried).
    before = api.snapshot()
    assert api.request("DELETE", f"/v2.1/servers/{server.uuid}", token=ALICE).status_int == 204
    assert api.snapshot() == before
    assert api.next_cast().method == "delete_server"


def test_delete_during_a_resize_is_allowed(api: ApiHarness) -> None:
    small, big = api.flavor("small"), api.flavor("big", memory_mb=1024)
    server = api.server(small)
    api.verify_resize(server, big)
    assert api.request("DELETE", f"/v2.1/servers/{server.uuid}", token=ADMIN).status_int == 204
    assert api.db.server_get(server.uuid).task_state == "deleting"
    assert api.next_cast().method == "delete_server"


def test_delete_refusals_change_nothing(api: ApiHarness) -> None:
    server = api.server(api.flavor("small"))
    before = api.snapshot()
    assert api.request("DELETE", f"/v2.1/servers/{server.uuid}", token=BOB).status_int == 404
    assert api.request("DELETE", "/v2.1/servers/nope", token=ALICE).status_int == 404
    assert api.snapshot() == before
    api.assert_no_cast()
