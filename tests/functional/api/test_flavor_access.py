"""Private flavors and ``os-flavor-access``, over the API and a real database."""

from typing import Any

import pytest

from tests.functional.api.harness import ADMIN, ALICE, BOB, ApiHarness

ACTION = "/v2.1/flavors/private/action"


def _add(api: ApiHarness, tenant: Any, token: str = ADMIN) -> Any:
    return api.request("POST", ACTION, {"addTenantAccess": {"tenant": tenant}}, token=token)


def _names(api: ApiHarness, token: str, query: str = "") -> list[str]:
    flavors = api.request("GET", f"/v2.1/flavors/detail{query}", token=token).json["flavors"]
    return sorted(f["id"] for f in flavors)


@pytest.mark.parametrize("value", ["True", "true", "TRUE", "False", "false", "FALSE"])
def test_is_public_as_a_string(api: ApiHarness, value: str) -> None:
    body = {"flavor": {"name": "f", "ram": 512, "vcpus": 1, "disk": 1, "id": "f"}}
    body["flavor"]["os-flavor-access:is_public"] = value
    response = api.request("POST", "/v2.1/flavors", body)
    assert response.status_int == 200
    expected = value.lower() == "true"
    assert response.json["flavor"]["os-flavor-access:is_public"] is expected
    assert api.db.flavor_get("f").is_public is expected


def test_a_private_flavor_is_seen_and_used_by_the_projects_it_is_shared_with(
    api: ApiHarness,
) -> None:
    api.flavor("public")
    api.flavor("private", is_public=False)
    assert _names(api, ALICE) == ["public"]
    assert api.request("GET", "/v2.1/flavors/private", token=ALICE).status_int == 404

    added = _add(api, "project-a")
    assert added.status_int == 200
    assert added.json == {"flavor_access": [{"flavor_id": "private", "tenant_id": "project-a"}]}
    listed = api.request("GET", "/v2.1/flavors/private/os-flavor-access").json
    assert listed == added.json

    assert _names(api, ALICE) == ["private", "public"]
    assert _names(api, ALICE, "?is_public=None") == ["private", "public"]
    assert api.request("GET", "/v2.1/flavors/private", token=ALICE).status_int == 200
    assert _names(api, BOB) == ["public"]
    assert api.request("GET", "/v2.1/flavors/private", token=BOB).status_int == 404
    body = {"server": {"name": "vm", "flavorRef": "private"}}
    assert api.request("POST", "/v2.1/servers", body, token=BOB).status_int == 400
    assert api.request("POST", "/v2.1/servers", body, token=ALICE).status_int == 202
    assert api.next_cast().method == "build_server"

    removed = api.request(
        "POST", ACTION, {"removeTenantAccess": {"tenant": "project-a"}}, token=ADMIN
    )
    assert removed.status_int == 200
    assert removed.json == {"flavor_access": []}
    assert _names(api, ALICE) == ["public"]


@pytest.mark.parametrize(
    ("path", "body", "token", "status"),
    [
        (ACTION, {"addTenantAccess": {"tenant": "project-b"}}, ALICE, 403),
        (ACTION, {"removeTenantAccess": {"tenant": "project-a"}}, ALICE, 403),
        (ACTION, {"addTenantAccess": {"tenant": "project-a"}}, ADMIN, 409),
        (ACTION, {"removeTenantAccess": {"tenant": "project-z"}}, ADMIN, 404),
        (ACTION, {"addTenantAccess": {}}, ADMIN, 400),
        (ACTION, {"addTenantAccess": {"tenant": ""}}, ADMIN, 400),
        (ACTION, {"addTenantAccess": {"tenant": "p", "x": 1}}, ADMIN, 400),
        (ACTION, {"shareWith": {"tenant": "p"}}, ADMIN, 400),
        ("/v2.1/flavors/public/action", {"addTenantAccess": {"tenant": "p"}}, ADMIN, 409),
        ("/v2.1/flavors/missing/action", {"addTenantAccess": {"tenant": "p"}}, ADMIN, 404),
    ],
)
def test_refusals_change_nothing(
    api: ApiHarness, path: str, body: Any, token: str, status: int
) -> None:
    api.flavor("public")
    api.flavor("private", is_public=False)
    _add(api, "project-a")
    before = api.snapshot()
    response = api.request("POST", path, body, token=token)
    assert response.status_int == status, response.json
    assert api.snapshot() == before


def test_listing_access_is_for_admins_and_private_flavors(api: ApiHarness) -> None:
    api.flavor("public")
    api.flavor("private", is_public=False)
    assert api.request("GET", "/v2.1/flavors/public/os-flavor-access").status_int == 404
    assert api.request("GET", "/v2.1/flavors/missing/os-flavor-access").status_int == 404
    assert (
        api.request("GET", "/v2.1/flavors/private/os-flavor-access", token=ALICE).status_int == 403
    )
    assert api.request("GET", "/v2.1/flavors/private/os-flavor-access").json == {
        "flavor_access": []
    }
