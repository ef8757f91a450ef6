"""What Nova's Compute API accepts (and refuses) that Tempest sends: each case
was refused, ignored or shaped differently here before."""

import json
from typing import Any

import pytest

from tests.functional.api.harness import ADMIN, ALICE, BOB, ApiHarness

#: A project id Nova's ``/v2.1/{project_id}/...`` routes take (hex and dashes).
HEX_PROJECT = "0123abcd-ef"
HEX_TOKEN = f"carol:{HEX_PROJECT}"


def _create(api: ApiHarness, server: dict[str, Any], token: str = ALICE) -> Any:
    return api.request("POST", "/v2.1/servers", {"server": server}, token=token)


# -- 1. adminPass, accessIPv4, accessIPv6, metadata on create --------------------------


def test_create_takes_admin_pass_and_access_ips_and_shows_them(api: ApiHarness) -> None:
    api.flavor("small")
    server = {
        "name": "web",
        "flavorRef": "small",
        "adminPass": "s3cret",
        "accessIPv4": "192.0.2.10",
        "accessIPv6": "2001:db8::10",
        "metadata": {"role": "web"},
    }
    response = _create(api, server)
    assert response.status_int == 202, response.json
    created = response.json["server"]
    assert created["adminPass"] == "s3cret"
    shown = api.request("GET", f"/v2.1/servers/{created['id']}", token=ALICE).json["server"]
    assert (shown["accessIPv4"], shown["accessIPv6"]) == ("192.0.2.10", "2001:db8::10")
    assert shown["metadata"] == {"role": "web"}
    api.next_cast()


def test_an_ipv6_access_address_is_kept_in_its_short_form(api: ApiHarness) -> None:
    # NOTE: Tempest sends this 41-character form and expects the short one
    # back; stored as sent it overflows the 39-character column on MariaDB.
    api.flavor("small")
    long_form = "0000:0000:0000:0000:0000:babe:220.12.22.2"
    response = _create(api, {"name": "v6", "flavorRef": "small", "accessIPv6": long_form})
    assert response.status_int == 202, response.json
    uuid = response.json["server"]["id"]
    shown = api.request("GET", f"/v2.1/servers/{uuid}", token=ALICE).json["server"]
    assert shown["accessIPv6"] == "::babe:dc0c:1602"
    assert api.db.server_get(uuid).access_ip_v6 == "::babe:dc0c:1602"
    server = api.db.server_get(uuid)
    renamed = api.request(
        "PUT",
        f"/v2.1/servers/{uuid}",
        {"server": {"accessIPv6": "2001:0DB8:0000:0000:0000:0000:0000:0001"}},
        token=ALICE,
    )
    assert renamed.status_int == 200, renamed.json
    assert api.db.server_get(server.uuid).access_ip_v6 == "2001:db8::1"
    api.next_cast()


def test_create_generates_an_admin_pass_unless_disabled(api: ApiHarness) -> None:
    api.flavor("small")
    first = _create(api, {"name": "a", "flavorRef": "small"}).json["server"]["adminPass"]
    second = _create(api, {"name": "b", "flavorRef": "small"}).json["server"]["adminPass"]
    assert len(first) >= 12 and first != second
    api.conf.set_override("enable_instance_password", False, group="api")
    body = _create(api, {"name": "c", "flavorRef": "small", "adminPass": "x"}).json["server"]
    assert "adminPass" not in body
    for _ in range(3):
        api.next_cast()


@pytest.mark.parametrize(
    "extra",
    [
        {"accessIPv4": "2001:db8::1"},
        {"accessIPv4": "300.1.1.1"},
        {"accessIPv4": ""},
        {"accessIPv6": "192.0.2.1"},
        {"adminPass": 12},
        {"metadata": {"k": "v" * 256}},
        {"metadata": {"k" * 256: "v"}},
        {"metadata": {"": "v"}},
        {"metadata": {"bad/key": "v"}},
        {"metadata": {"k": 1}},
        {"metadata": []},
    ],
)
def test_create_refuses_what_nova_refuses(api: ApiHarness, extra: dict[str, Any]) -> None:
    api.flavor("small")
    before = api.snapshot()
    response = _create(api, {"name": "web", "flavorRef": "small", **extra})
    assert response.status_int == 400, response.json
    assert api.snapshot() == before


def test_create_refuses_more_metadata_items_than_the_quota(api: ApiHarness) -> None:
    api.flavor("small")
    metadata = {f"k{i}": "v" for i in range(129)}
    response = _create(api, {"name": "web", "flavorRef": "small", "metadata": metadata})
    assert response.status_int == 403, response.json
    metadata.pop("k0")
    assert (
        _create(api, {"name": "web", "flavorRef": "small", "metadata": metadata}).status_int == 202
    )
    api.next_cast()


# -- 2. confirmResize / revertResize with {} ------------------------------------------


@pytest.mark.parametrize(("action", "status"), [("confirmResize", 204), ("revertResize", 202)])
def test_confirm_and_revert_take_an_empty_object(
    api: ApiHarness, action: str, status: int
) -> None:
    old, new = api.flavor("small"), api.flavor("large", vcpus=2)
    server = api.server(old)
    api.verify_resize(server, new)
    response = api.request(
        "POST", f"/v2.1/servers/{server.uuid}/action", {action: {}}, token=ALICE
    )
    assert response.status_int == status, response.json
    api.next_cast()


# -- 4, 5, 6. list filters ---------------------------------------------------------------


def _listed(api: ApiHarness, query: str, token: str = ALICE) -> Any:
    return api.request("GET", f"/v2.1/servers/detail?{query}", token=token)


def test_list_filters_by_image(api: ApiHarness) -> None:
    flavor = api.flavor("small")
    a = api.server(flavor, name="a")
    b = api.server(flavor, name="b")
    api.db.server_update(a.uuid, image_ref="image-1")
    api.db.server_update(b.uuid, image_ref="image-2")
    for path in ("/v2.1/servers?image=image-1", "/v2.1/servers/detail?image=image-1"):
        servers = api.request("GET", path, token=ALICE).json["servers"]
        assert [s["id"] for s in servers] == [a.uuid]
    assert _listed(api, "image=nothing").json["servers"] == []


def test_limit_zero_is_an_empty_page(api: ApiHarness) -> None:
    api.server(api.flavor("small"))
    response = _listed(api, "limit=0")
    assert response.status_int == 200, response.json
    assert response.json == {"servers": []}
    assert _listed(api, "limit=-1").status_int == 400


def test_all_tenants_present_and_empty_means_true(api: ApiHarness) -> None:
    flavor = api.flavor("small")
    mine = api.server(flavor)
    theirs = api.server(flavor, project_id="project-b", user_id="bob")
    ids = {s["id"] for s in _listed(api, "all_tenants=", token=ADMIN).json["servers"]}
    assert ids == {mine.uuid, theirs.uuid}
    # NOTE: a non-admin asking for every project is refused, as Nova's policy does.
    assert _listed(api, "all_tenants=", token=BOB).status_int == 403


# -- 7. os-simple-tenant-usage ---------------------------------------------------------


def test_usage_with_an_empty_tenant_id_is_not_found(api: ApiHarness) -> None:
    response = api.request("GET", "/v2.1/os-simple-tenant-usage/", token=ADMIN)
    assert response.status_int == 404, response.json


def test_usage_without_dates_is_the_current_instant(api: ApiHarness) -> None:
    server = api.server(api.flavor("small"))
    api.db.server_update(server.uuid, launched_at=server.created_at)
    response = api.request("GET", "/v2.1/os-simple-tenant-usage", token=ADMIN)
    assert response.status_int == 200, response.json
    (usage,) = response.json["tenant_usages"]
    assert usage["tenant_id"] == "project-a"
    response = api.request("GET", "/v2.1/os-simple-tenant-usage/project-a", token=ALICE)
    assert response.status_int == 200, response.json
    assert response.json["tenant_usage"]["tenant_id"] == "project-a"


# -- 12. bodies Nova refuses, and the project id in the URL ---------------------------


@pytest.mark.parametrize(
    "raw",
    [
        json.dumps({"server": {"name": "web", "flavorRef": "small"}}).encode("utf-16"),
        json.dumps({"server": {"name": "web", "flavorRef": "small"}}).encode("utf-16-le"),
        json.dumps({"server": {"name": "web", "flavorRef": "small"}}).encode("utf-32"),
        b"\xef\xbb\xbf" + json.dumps({"server": {"name": "web", "flavorRef": "small"}}).encode(),
    ],
)
def test_bodies_not_in_utf8_are_refused(api: ApiHarness, raw: bytes) -> None:
    api.flavor("small")
    before = api.snapshot()
    response = api.request("POST", "/v2.1/servers", raw=raw, token=ALICE)
    assert response.status_int == 400, response.json
    assert api.snapshot() == before


def test_the_project_id_url_form_is_served(api: ApiHarness) -> None:
    api.server(api.flavor("small"), project_id=HEX_PROJECT, user_id="carol")
    response = api.request("GET", f"/v2.1/{HEX_PROJECT}/servers", token=HEX_TOKEN)
    assert response.status_int == 200, response.json
    assert len(response.json["servers"]) == 1
    response = api.request("GET", f"/v2.1/{HEX_PROJECT}/flavors/small", token=HEX_TOKEN)
    assert response.status_int == 200, response.json


def test_a_project_id_in_the_url_not_the_tokens_is_refused(api: ApiHarness) -> None:
    api.flavor("small")
    response = api.request("GET", "/v2.1/abcdef/servers", token=HEX_TOKEN)
    assert response.status_int == 400
    assert "doesn't match" in response.json["badRequest"]["message"]
    assert api.request("GET", "/v2.1/abcdef/nothing", token=HEX_TOKEN).status_int == 404


# -- 9. PUT /servers/{id} ----------------------------------------------------------------


def _put(api: ApiHarness, server: Any, body: Any, token: str = ALICE, **kw: Any) -> Any:
    return api.request("PUT", f"/v2.1/servers/{server.uuid}", body, token=token, **kw)


def test_update_renames_and_sets_access_addresses(api: ApiHarness) -> None:
    server = api.server(api.flavor("small"))
    body = {"server": {"name": "renamed", "accessIPv4": "192.0.2.7", "accessIPv6": "::1"}}
    response = _put(api, server, body)
    assert response.status_int == 200, response.json
    shown = response.json["server"]
    assert (shown["name"], shown["accessIPv4"], shown["accessIPv6"]) == (
        "renamed",
        "192.0.2.7",
        "::1",
    )
    # NOTE: as Nova below 2.75: no extension fields in the answer.
    assert "OS-EXT-STS:vm_state" not in shown
    assert "OS-EXT-STS:vm_state" in _put(api, server, body, version="2.75").json["server"]
    stored = api.db.server_get(server.uuid)
    assert (stored.name, stored.access_ip_v4) == ("renamed", "192.0.2.7")
    described = _put(api, server, {"server": {"description": "web"}}, version="2.19")
    assert described.json["server"]["description"] == "web"


@pytest.mark.parametrize(
    ("body", "version", "token", "status"),
    [
        ({"server": {"accessIPv4": "::1"}}, None, ALICE, 400),
        ({"server": {"name": ""}}, None, ALICE, 400),
        ({"server": {"description": "x"}}, "2.18", ALICE, 400),
        ({"server": {"hostname": "x"}}, None, ALICE, 400),
        ({"name": "x"}, None, ALICE, 400),
        ({"server": {"name": "x"}}, None, BOB, 404),
    ],
)
def test_update_refusals_change_nothing(
    api: ApiHarness, body: Any, version: str | None, token: str, status: int
) -> None:
    server = api.server(api.flavor("small"))
    before = api.snapshot()
    response = _put(api, server, body, token=token, version=version)
    assert response.status_int == status, response.json
    assert api.snapshot() == before


# -- 11. os-resetState -----------------------------------------------------------------


def _action(api: ApiHarness, server: Any, body: Any, token: str = ADMIN) -> Any:
    return api.request("POST", f"/v2.1/servers/{server.uuid}/action", body, token=token)


@pytest.mark.parametrize(
    ("wanted", "status", "vm_state"), [("error", "ERROR", "error"), ("active", "ACTIVE", "active")]
)
def test_reset_state_sets_the_state_and_records_the_action(
    api: ApiHarness, wanted: str, status: str, vm_state: str
) -> None:
    server = api.server(api.flavor("small"))
    api.db.server_update(server.uuid, status="BUILD", vm_state="building", task_state="scheduling")
    response = _action(api, server, {"os-resetState": {"state": wanted}})
    assert response.status_int == 202, response.json
    stored = api.db.server_get(server.uuid)
    assert (stored.status, stored.vm_state, stored.task_state) == (status, vm_state, None)
    assert stored.host == "h1"
    listed = api.request("GET", f"/v2.1/servers/{server.uuid}/os-instance-actions").json
    assert [a["action"] for a in listed["instanceActions"]] == ["resetState"]
    api.assert_no_cast()


def test_reset_state_to_active_waits_for_a_resize_in_flight(api: ApiHarness) -> None:
    small, large = api.flavor("small"), api.flavor("large", vcpus=2)
    server = api.server(small)
    api.verify_resize(server, large)
    before = api.snapshot()
    assert _action(api, server, {"os-resetState": {"state": "active"}}).status_int == 409
    assert api.snapshot() == before
    assert _action(api, server, {"os-resetState": {"state": "error"}}).status_int == 202
    assert api.db.server_get(server.uuid).status == "ERROR"


@pytest.mark.parametrize(
    ("body", "token", "status"),
    [
        ({"os-resetState": {"state": "stopped"}}, ADMIN, 400),
        ({"os-resetState": {}}, ADMIN, 400),
        ({"os-resetState": None}, ADMIN, 400),
        ({"os-resetState": {"state": "error"}}, ALICE, 403),
    ],
)
def test_reset_state_refusals_change_nothing(
    api: ApiHarness, body: Any, token: str, status: int
) -> None:
    server = api.server(api.flavor("small"))
    before = api.snapshot()
    assert _action(api, server, body, token=token).status_int == status
    assert api.snapshot() == before
