"""``/v2.1/servers/{id}/metadata``: list, merge, replace, one item, and every refusal."""

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.functional.api.harness import ALICE, BOB, ApiHarness
from tests.functional.api.test_policy import _with_policy


def _server(api: ApiHarness, metadata: dict[str, str] | None = None, **kw: Any) -> Any:
    server = api.server(api.flavor("m1"), **kw)
    if metadata is not None:
        server = api.db.server_update(server.uuid, metadata_items=metadata)
    return server


def _path(server: Any, key: str | None = None) -> str:
    tail = "" if key is None else f"/{key}"
    return f"/v2.1/servers/{server.uuid}/metadata{tail}"


def test_list_and_show_one_item(api: ApiHarness) -> None:
    server = _server(api, {"a": "1", "b": "2"})
    listed = api.request("GET", _path(server), token=ALICE)
    assert listed.status_int == 200
    assert listed.json == {"metadata": {"a": "1", "b": "2"}}
    shown = api.request("GET", _path(server, "b"), token=ALICE)
    assert shown.status_int == 200
    assert shown.json == {"meta": {"b": "2"}}
    missing = api.request("GET", _path(server, "zz"), token=ALICE)
    assert missing.status_int == 404
    assert missing.json["itemNotFound"]["message"] == "Metadata item was not found"


def test_post_merges_and_put_replaces(api: ApiHarness) -> None:
    server = _server(api, {"a": "1", "b": "2"})
    merged = api.request("POST", _path(server), {"metadata": {"b": "3", "c": "4"}}, token=ALICE)
    assert merged.status_int == 200
    assert merged.json == {"metadata": {"a": "1", "b": "3", "c": "4"}}
    assert api.db.server_get(server.uuid).metadata_items == {"a": "1", "b": "3", "c": "4"}
    replaced = api.request("PUT", _path(server), {"metadata": {"z": "9"}}, token=ALICE)
    assert replaced.status_int == 200
    assert replaced.json == {"metadata": {"z": "9"}}
    assert api.db.server_get(server.uuid).metadata_items == {"z": "9"}
    emptied = api.request("PUT", _path(server), {"metadata": {}}, token=ALICE)
    assert emptied.json == {"metadata": {}}
    assert api.db.server_get(server.uuid).metadata_items is None
    # NOTE: the server's own view shows the same pairs.
    api.request("POST", _path(server), {"metadata": {"k": "v"}}, token=ALICE)
    shown = api.request("GET", f"/v2.1/servers/{server.uuid}", token=ALICE)
    assert shown.json["server"]["metadata"] == {"k": "v"}


def test_put_and_delete_one_item(api: ApiHarness) -> None:
    server = _server(api, {"a": "1"})
    put = api.request("PUT", _path(server, "nova"), {"meta": {"nova": "alt"}}, token=ALICE)
    assert put.status_int == 200
    assert put.json == {"meta": {"nova": "alt"}}
    assert api.db.server_get(server.uuid).metadata_items == {"a": "1", "nova": "alt"}
    deleted = api.request("DELETE", _path(server, "a"), token=ALICE)
    assert deleted.status_int == 204
    assert api.db.server_get(server.uuid).metadata_items == {"nova": "alt"}
    again = api.request("DELETE", _path(server, "a"), token=ALICE)
    assert again.status_int == 404


@pytest.mark.parametrize(
    ("method", "key", "body"),
    [
        ("POST", None, {"metadata": {"": "blank key"}}),
        ("POST", None, {"metadata": {"k" * 256: "v"}}),
        ("POST", None, {"metadata": {"k": "v" * 256}}),
        ("POST", None, {"metadata": {"k": 1}}),
        ("POST", None, {"meta": {"k": "v"}}),
        ("POST", None, {}),
        ("PUT", None, {"metadata": {"bad/key": "v"}}),
        ("PUT", None, {"metadata": None}),
        ("PUT", "k", {"meta": {"other": "v"}}),
        ("PUT", "k", {"meta": {"k": "v", "l": "w"}}),
        ("PUT", "k", {"meta": {}}),
        ("PUT", "k", {"metadata": {"k": "v"}}),
    ],
)
def test_bad_bodies_are_400_and_change_nothing(
    api: ApiHarness, method: str, key: str | None, body: Any
) -> None:
    server = _server(api, {"a": "1"})
    before = api.snapshot()
    response = api.request(method, _path(server, key), body, token=ALICE)
    assert response.status_int == 400, response.json
    assert response.json["badRequest"]["code"] == 400
    assert api.snapshot() == before


def test_more_than_128_items_is_403_and_changes_nothing(api: ApiHarness) -> None:
    server = _server(api, {f"k{i}": "v" for i in range(127)})
    before = api.snapshot()
    response = api.request("POST", _path(server), {"metadata": {"x": "1", "y": "2"}}, token=ALICE)
    assert response.status_int == 403
    assert "128" in response.json["forbidden"]["message"]
    assert api.snapshot() == before
    # NOTE: one more fits; replacing with 129 does not.
    assert (
        api.request("POST", _path(server), {"metadata": {"x": "1"}}, token=ALICE).status_int == 200
    )
    many = {"metadata": {f"n{i}": "v" for i in range(129)}}
    before = api.snapshot()
    assert api.request("PUT", _path(server), many, token=ALICE).status_int == 403
    assert api.snapshot() == before


@pytest.mark.parametrize(
    ("method", "key", "body"),
    [
        ("GET", None, None),
        ("POST", None, {"metadata": {"k": "v"}}),
        ("PUT", None, {"metadata": {"k": "v"}}),
        ("GET", "a", None),
        ("PUT", "a", {"meta": {"a": "v"}}),
        ("DELETE", "a", None),
    ],
)
def test_another_projects_or_unknown_server_is_404(
    api: ApiHarness, method: str, key: str | None, body: Any
) -> None:
    server = _server(api, {"a": "1"})
    before = api.snapshot()
    response = api.request(method, _path(server, key), body, token=BOB)
    assert response.status_int == 404
    unknown = api.request(method, f"/v2.1/servers/nope/metadata{'/a' if key else ''}", body)
    assert unknown.status_int == 404
    assert api.snapshot() == before
    # NOTE: an administrator reaches any project's server.
    assert api.request(method, _path(server, key), body).status_int in (200, 204)


def test_each_change_has_its_own_rule(api: ApiHarness, tmp_path: Path) -> None:
    # NOTE: noauth2 gives a token's user every role; a policy file that
    # refuses one rule stands in for a caller without it.
    server = _server(api, {"a": "1"})
    _with_policy(api, tmp_path, {"os_compute_api:server-metadata:create": "!"})
    before = api.snapshot()
    refused = api.request("POST", _path(server), {"metadata": {"b": "2"}}, token=ALICE)
    assert refused.status_int == 403
    assert api.snapshot() == before
    assert api.request("GET", _path(server), token=ALICE).status_int == 200
    assert api.request("PUT", _path(server), {"metadata": {}}, token=ALICE).status_int == 200


@pytest.mark.parametrize(
    "state",
    [
        {"status": "BUILD", "vm_state": "building", "task_state": "scheduling"},
        {"status": "RESIZE", "vm_state": "active", "task_state": "resize_prep"},
        {"status": "VERIFY_RESIZE", "vm_state": "resized", "task_state": None},
        {"status": "ERROR", "vm_state": "error", "task_state": None},
    ],
)
def test_a_change_in_the_wrong_state_is_409_and_changes_nothing(
    api: ApiHarness, state: dict[str, Any]
) -> None:
    server = _server(api, {"a": "1"})
    api.db.server_update(server.uuid, **state)
    before = api.snapshot()
    for method, key, body in (
        ("POST", None, {"metadata": {"b": "2"}}),
        ("PUT", None, {"metadata": {}}),
        ("PUT", "a", {"meta": {"a": "2"}}),
        ("DELETE", "a", None),
    ):
        response = api.request(method, _path(server, key), body, token=ALICE)
        assert response.status_int == 409, (method, key, response.json)
    assert api.snapshot() == before
    # NOTE: reading works in any state.
    assert api.request("GET", _path(server, "a"), token=ALICE).json == {"meta": {"a": "1"}}


def test_a_stopped_servers_metadata_changes(api: ApiHarness) -> None:
    server = _server(api)
    api.db.server_update(server.uuid, status="SHUTOFF", vm_state="stopped")
    response = api.request("PUT", _path(server, "k"), {"meta": {"k": "v"}}, token=ALICE)
    assert response.status_int == 200
    assert api.db.server_get(server.uuid).metadata_items == {"k": "v"}


def test_concurrent_merges_lose_nothing(api: ApiHarness) -> None:
    server = _server(api)
    errors: list[Any] = []

    def merge(i: int) -> None:
        body = {"metadata": {f"k{i}": str(i)}}
        response = api.request("POST", _path(server), body, token=ALICE)
        if response.status_int != 200:
            errors.append(response.json)

    threads = [threading.Thread(target=merge, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert api.db.server_get(server.uuid).metadata_items == {f"k{i}": str(i) for i in range(4)}
