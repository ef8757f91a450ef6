"""Version documents, microversion negotiation, request ids, unknown paths."""

import pytest

from resize_sched.api import microversion
from tests.functional.api.harness import ApiHarness

MAX = str(microversion.MAX_VERSION)


@pytest.mark.parametrize("path", ["/v2.1", "/v2.1/"])
def test_version_document_needs_no_token(api: ApiHarness, path: str) -> None:
    response = api.request("GET", path, token=None)
    assert response.status_int == 200
    version = response.json["version"]
    assert version["id"] == "v2.1"
    assert version["status"] == "CURRENT"
    assert (version["min_version"], version["version"]) == ("2.1", MAX)
    assert {"rel": "self", "href": "http://localhost/v2.1/"} in version["links"]


def test_root_lists_versions(api: ApiHarness) -> None:
    response = api.request("GET", "/", token=None)
    assert response.status_int == 200
    (version,) = response.json["versions"]
    assert (version["id"], version["version"]) == ("v2.1", MAX)


def test_version_documents_are_read_only(api: ApiHarness) -> None:
    response = api.request("POST", "/v2.1", {}, token=None)
    assert response.status_int == 405
    assert response.json["badMethod"]["code"] == 405


def test_every_response_carries_a_request_id(api: ApiHarness) -> None:
    for path in ("/", "/v2.1/flavors", "/nowhere"):
        response = api.request("GET", path)
        assert response.headers["x-openstack-request-id"].startswith("req-")
        assert (
            response.headers["x-compute-request-id"]
            == (response.headers["x-openstack-request-id"])
        )


def test_unknown_paths_are_404(api: ApiHarness) -> None:
    assert api.request("GET", "/v3/servers").status_int == 404
    response = api.request("GET", "/v2.1/os-no-such-resource")
    assert response.status_int == 404
    assert response.json["itemNotFound"]["code"] == 404


def test_wrong_method_is_405_with_allow(api: ApiHarness) -> None:
    response = api.request("PUT", "/v2.1/flavors")
    assert response.status_int == 405
    assert response.headers["Allow"] == "GET, POST"


def test_versioned_calls_need_a_token(api: ApiHarness) -> None:
    response = api.request("GET", "/v2.1/flavors", token=None)
    assert response.status_int == 401
    assert response.json["unauthorized"]["code"] == 401


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, "2.1"),
        ({"OpenStack-API-Version": "compute 2.47"}, "2.47"),
        ({"OpenStack-API-Version": "compute latest"}, MAX),
        ({"OpenStack-API-Version": "image 2.5, compute 2.60"}, "2.60"),
        ({"X-OpenStack-Nova-API-Version": "2.53"}, "2.53"),
        ({"OpenStack-API-Version": "image 2.5"}, "2.1"),
    ],
)
def test_microversion_is_echoed(api: ApiHarness, headers: dict, expected: str) -> None:
    response = api.request("GET", "/v2.1/flavors", headers=headers)
    assert response.status_int == 200
    assert response.headers["OpenStack-API-Version"] == f"compute {expected}"
    assert response.headers["X-OpenStack-Nova-API-Version"] == expected
    assert "OpenStack-API-Version" in response.headers["Vary"]


@pytest.mark.parametrize("version", ["2.0", "2.81", "3.1"])
def test_unsupported_microversion_is_406(api: ApiHarness, version: str) -> None:
    response = api.request("GET", "/v2.1/flavors", version=version)
    assert response.status_int == 406
    assert MAX in response.json["computeFault"]["message"]


@pytest.mark.parametrize("version", ["two", "2", "2.x", "2.01a"])
def test_malformed_microversion_is_400(api: ApiHarness, version: str) -> None:
    response = api.request("GET", "/v2.1/flavors", version=version)
    assert response.status_int == 400
    assert "badRequest" in response.json
