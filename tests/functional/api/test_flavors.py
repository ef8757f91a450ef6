"""``/v2.1/flavors``: list, show, create and delete, and every refusal."""

from typing import Any

import pytest

from tests.functional.api.harness import ALICE, ApiHarness

FLAVOR = {"name": "m1.small", "ram": 2048, "vcpus": 2, "disk": 20}


def _create(api: ApiHarness, token: str = "admin:admin", **values: Any) -> Any:
    return api.request("POST", "/v2.1/flavors", {"flavor": {**FLAVOR, **values}}, token=token)


def test_create_answers_the_flavor(api: ApiHarness) -> None:
    response = _create(
        api,
        id="m1",
        swap=512,
        **{"OS-FLV-EXT-DATA:ephemeral": 5, "os-flavor-access:is_public": False},
    )
    assert response.status_int == 200
    flavor = response.json["flavor"]
    assert flavor["id"] == "m1"
    assert (flavor["ram"], flavor["vcpus"], flavor["disk"], flavor["swap"]) == (2048, 2, 20, 512)
    assert flavor["OS-FLV-EXT-DATA:ephemeral"] == 5
    assert flavor["os-flavor-access:is_public"] is False
    stored = api.db.flavor_get("m1")
    assert (stored.memory_mb, stored.root_gb, stored.ephemeral_gb) == (2048, 20, 5)
    assert stored.is_public is False


def test_create_generates_an_id_and_takes_nova_spellings(api: ApiHarness) -> None:
    response = _create(api, ram="1024", vcpus="1", swap="", rxtx_factor=1.0)
    assert response.status_int == 200
    flavor = response.json["flavor"]
    assert api.db.flavor_get(flavor["id"]).memory_mb == 1024
    assert flavor["swap"] == 0
    assert _create(api, name="by-int", id=42).json["flavor"]["id"] == "42"


@pytest.mark.parametrize(
    ("sent", "stored"),
    [("True", True), ("false", False), ("NO", False), ("on", True), ("1", True), ("0", False)],
)
def test_create_takes_nova_spellings_of_is_public(
    api: ApiHarness, sent: str, stored: bool
) -> None:
    # NOTE: as Nova's boolean parameter (Tempest sends "True" and "False").
    response = _create(api, id="spelt", **{"os-flavor-access:is_public": sent})
    assert response.status_int == 200, response.json
    assert response.json["flavor"]["os-flavor-access:is_public"] is stored
    assert api.db.flavor_get("spelt").is_public is stored


@pytest.mark.parametrize(
    "body",
    [
        {"flavor": {"ram": 1, "vcpus": 1, "disk": 0}},
        {"flavor": {**FLAVOR, "ram": 0}},
        {"flavor": {**FLAVOR, "ram": "0"}},
        {"flavor": {**FLAVOR, "vcpus": "two"}},
        {"flavor": {**FLAVOR, "vcpus": True}},
        {"flavor": {**FLAVOR, "disk": -1}},
        {"flavor": {**FLAVOR, "id": "bad/id"}},
        {"flavor": {**FLAVOR, "name": " padded "}},
        {"flavor": {**FLAVOR, "os-flavor-access:is_public": "maybe"}},
        {"flavor": {**FLAVOR, "os-flavor-access:is_public": 1}},
        {"flavor": {**FLAVOR, "os-flavor-access:is_public": None}},
        {"flavor": {**FLAVOR, "color": "blue"}},
        {"flavor": FLAVOR, "extra": 1},
        {"flavor": None},
        [],
    ],
)
def test_create_refuses_bad_bodies(api: ApiHarness, body: Any) -> None:
    before = api.snapshot()
    response = api.request("POST", "/v2.1/flavors", body)
    assert response.status_int == 400, response.json
    assert response.json["badRequest"]["code"] == 400
    assert api.snapshot() == before


def test_create_refuses_malformed_json_and_other_media(api: ApiHarness) -> None:
    before = api.snapshot()
    response = api.request("POST", "/v2.1/flavors", raw=b'{"flavor": {')
    assert response.status_int == 400
    assert "Malformed" in response.json["badRequest"]["message"]
    assert api.request("POST", "/v2.1/flavors", raw=b"").status_int == 400
    response = api.request(
        "POST",
        "/v2.1/flavors",
        raw=b"name=x",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status_int == 415
    assert api.snapshot() == before


def test_create_is_admin_only(api: ApiHarness) -> None:
    before = api.snapshot()
    response = _create(api, token=ALICE)
    assert response.status_int == 403
    assert response.json["forbidden"]["code"] == 403
    assert api.snapshot() == before


def test_create_refuses_a_taken_name_or_id(api: ApiHarness) -> None:
    api.flavor("m1.small", flavorid="taken")
    before = api.snapshot()
    response = _create(api)
    assert response.status_int == 409
    assert "conflictingRequest" in response.json
    assert _create(api, name="other", id="taken").status_int == 409
    assert api.snapshot() == before


def test_list_and_detail(api: ApiHarness) -> None:
    api.flavor("tiny", memory_mb=256)
    api.flavor("big", memory_mb=4096, vcpus=4)
    index = api.request("GET", "/v2.1/flavors", token=ALICE).json["flavors"]
    assert [f["name"] for f in index] == ["tiny", "big"]
    assert set(index[0]) == {"id", "name", "links"}
    assert index[0]["links"][0] == {"rel": "self", "href": "http://localhost/v2.1/flavors/tiny"}
    detail = api.request("GET", "/v2.1/flavors/detail", token=ALICE).json["flavors"]
    assert [(f["id"], f["ram"], f["vcpus"]) for f in detail] == [
        ("tiny", 256, 1),
        ("big", 4096, 4),
    ]


def test_private_flavors_are_for_admins(api: ApiHarness) -> None:
    api.flavor("public")
    api.flavor("private", is_public=False)

    def names(token: str, query: str = "") -> list[str]:
        response = api.request("GET", f"/v2.1/flavors/detail{query}", token=token)
        assert response.status_int == 200
        return sorted(f["name"] for f in response.json["flavors"])

    assert names(ALICE, "?is_public=None") == ["public"]
    assert names(ALICE, "?is_public=false") == ["public"]
    assert names("admin:admin") == ["public"]
    assert names("admin:admin", "?is_public=None") == ["private", "public"]
    assert names("admin:admin", "?is_public=false") == ["private"]
    assert api.request("GET", "/v2.1/flavors/private", token=ALICE).status_int == 404
    assert api.request("GET", "/v2.1/flavors/private").status_int == 200
    assert api.request("GET", "/v2.1/flavors?is_public=maybe").status_int == 400


def test_list_filters_sorts_and_pages(api: ApiHarness) -> None:
    for name, ram in (("a", 512), ("b", 1024), ("c", 2048)):
        api.flavor(name, memory_mb=ram, root_gb=ram // 512)

    def ids(query: str) -> list[str]:
        response = api.request("GET", f"/v2.1/flavors{query}")
        assert response.status_int == 200, response.json
        return [f["id"] for f in response.json["flavors"]]

    assert ids("?minRam=1024") == ["b", "c"]
    assert ids("?minDisk=4") == ["c"]
    assert ids("?sort_key=name&sort_dir=desc") == ["c", "b", "a"]
    page = api.request("GET", "/v2.1/flavors?limit=2").json
    assert [f["id"] for f in page["flavors"]] == ["a", "b"]
    (link,) = page["flavors_links"]
    assert link["rel"] == "next" and "marker=b" in link["href"]
    assert ids("?limit=2&marker=b") == ["c"]
    for query in ("?minRam=x", "?limit=-1", "?marker=zzz", "?sort_key=color", "?sort_dir=up"):
        assert api.request("GET", f"/v2.1/flavors{query}").status_int == 400, query


def test_fields_follow_the_microversion(api: ApiHarness) -> None:
    api.flavor("gpu", extra_specs={"resources:VGPU": "1"})
    old = api.request("GET", "/v2.1/flavors/gpu", version="2.54").json["flavor"]
    assert "description" not in old and "extra_specs" not in old
    mid = api.request("GET", "/v2.1/flavors/gpu", version="2.55").json["flavor"]
    assert mid["description"] is None and "extra_specs" not in mid
    new = api.request("GET", "/v2.1/flavors/gpu", version="2.61").json["flavor"]
    assert new["extra_specs"] == {"resources:VGPU": "1"}


def test_show_unknown_is_404(api: ApiHarness) -> None:
    response = api.request("GET", "/v2.1/flavors/nope")
    assert response.status_int == 404
    assert response.json["itemNotFound"]["message"] == "Flavor nope could not be found."


def test_delete(api: ApiHarness) -> None:
    api.flavor("doomed")
    before = api.snapshot()
    assert api.request("DELETE", "/v2.1/flavors/doomed", token=ALICE).status_int == 403
    assert api.request("DELETE", "/v2.1/flavors/nope").status_int == 404
    assert api.snapshot() == before
    response = api.request("DELETE", "/v2.1/flavors/doomed")
    assert response.status_int == 202
    assert response.body == b""
    assert api.request("GET", "/v2.1/flavors/doomed").status_int == 404
    assert api.request("DELETE", "/v2.1/flavors/doomed").status_int == 404


def test_create_refuses_a_huge_body(api: ApiHarness) -> None:
    before = api.snapshot()
    body = {"flavor": {**FLAVOR, "name": "x" * 200_000}}
    response = api.request("POST", "/v2.1/flavors", body)
    assert response.status_int == 413
    assert response.json["overLimit"]["code"] == 413
    assert api.snapshot() == before
